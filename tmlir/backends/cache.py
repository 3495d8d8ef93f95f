"""On-disk cache of compiled artifacts (PTX, CUBIN, emu shared objects).

Entries are keyed by a SHA-256 of everything that determines the artifact: the source
text, the compiler and its flags, and the tmlir version. Files are written to a temporary
name in the same directory and renamed into place, so a crash or a concurrent writer can
never leave a truncated entry behind. The directory is `$TMLIR_CACHE_DIR` when set, else
`$XDG_CACHE_HOME/tmlir` (default `~/.cache/tmlir`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from tmlir import __version__


class CacheError(OSError):
    """The cache directory cannot be used; one line naming it and where it came from."""


def cache_dir() -> Path:
    """The cache directory, created on first use; a CacheError if it cannot be (a file is
    in its place, no permission)."""
    root = os.environ.get("TMLIR_CACHE_DIR")
    if root:
        path, origin = Path(root), "$TMLIR_CACHE_DIR"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
        path, origin = Path(xdg) / "tmlir", "the default; set $TMLIR_CACHE_DIR to choose another"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = "it is not a directory" if path.exists() or isinstance(exc, FileExistsError) else (
            exc.strerror or str(exc))
        raise CacheError(f"cache directory '{path}' ({origin}) cannot be used: {why}") from None
    return path


def cache_key(*parts: str | bytes) -> str:
    """A hex digest of `parts` and the tmlir version (parts are length-prefixed)."""
    digest = hashlib.sha256()
    for part in (__version__, *parts):
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def cached_path(key: str, suffix: str) -> Path | None:
    """The cached file for `key` if there is one (no build)."""
    final = cache_dir() / f"{key}{suffix}"
    return final if final.is_file() else None


def cached_file(key: str, suffix: str, build: Callable[[Path], None]) -> Path:
    """Return the cached file for `key`, calling `build(tmp_path)` to produce it if absent.

    `build` must write the artifact to the path it is given; on success the file is
    atomically renamed to its final name. On failure nothing is left in the cache.
    """
    final = cache_dir() / f"{key}{suffix}"
    if final.exists():
        return final
    fd, tmp_name = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=suffix, dir=final.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        build(tmp)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()
    return final
