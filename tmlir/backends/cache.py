"""On-disk cache of compiled artifacts (PTX, CUBIN, ptxas logs, emu shared objects).

Entries are keyed by a SHA-256 of everything that determines the artifact: the source
text, the compiler and its flags, and the tmlir version. The directory is
`$TMLIR_CACHE_DIR` when set, else `$XDG_CACHE_HOME/tmlir` (default `~/.cache/tmlir`).

An entry ``<key><suffix>`` (a file, or a folder such as the emu's ``.pch``) is trusted
only with its *record* ``<key><suffix>.sha256``: the SHA-256 and byte length of its
content, written before the entry is renamed into place. Every load checks the entry
against its record; an entry that is truncated, changed, or has no record is reported by
one `CacheWarning`, deleted and rebuilt. Artifacts are built under a temporary name
(``.<key[:16]>-*``) in the same directory and renamed into place, so a crash or a
concurrent writer never leaves a partial entry under its final name; the record and the
entry are renamed under a lock on the directory, so concurrent writers never pair one's
record with the other's artifact.

The entries are bounded (`max_bytes`: 2 GiB, `$TMLIR_CACHE_MAX_BYTES`, 0 = unbounded):
a process sweeps the directory at its first write (unless another process did less than
`STALE_SECONDS` ago: then it starts from that sweep's total), after every `RESCAN_WRITES`
writes, and when its running total passes the bound: temporary files older than
`STALE_SECONDS` are removed and, over the bound, the least recently used entries. A hit
marks its entry used (its mtime, at most once per `TOUCH_SECONDS`). Inspecting, pruning
and verifying the whole cache: `tmlir.backends.cache_maintenance` and ``tm-cache``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tmlir import __version__

#: Part of every key: format 1 entries had no records, so they are never looked up.
CACHE_FORMAT = "tmlir-cache-2"
#: The suffix of an entry's record (appended to the entry's name).
RECORD_SUFFIX = ".sha256"
#: Environment variable bounding the entries' bytes (``2G``, ``500M``, ``0`` = unbounded).
MAX_BYTES_ENV = "TMLIR_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 2 << 30
#: Temporary files and folders older than this are left over from a killed build.
STALE_SECONDS = 3600.0
#: A hit marks its entry used when it was last marked longer ago than this.
TOUCH_SECONDS = 600.0
#: A process rescans the directory after this many writes (other processes write too).
RESCAN_WRITES = 256
#: A scan over the bound evicts down to this fraction of it.
EVICT_TO = 0.9


class CacheError(OSError):
    """The cache directory cannot be used; one line naming it and where it came from."""


class CacheWarning(UserWarning):
    """A cache entry failed its check on load (truncated, changed, or without a record)
    and was deleted, to be rebuilt."""


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


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_bytes(text: str) -> int:
    """A byte count written as an integer with an optional binary unit (``500M``, ``2G``,
    ``1.5GiB``); ValueError naming the text otherwise."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:I?B)?\s*", text, re.IGNORECASE)
    if not match:
        raise ValueError(f"expected a byte count such as 2147483648, 500M or 2G, got '{text}'")
    return int(float(match[1]) * _UNITS[match[2].upper()])


def max_bytes() -> int:
    """The bound on the entries' bytes: `$TMLIR_CACHE_MAX_BYTES` when set, else 2 GiB;
    0 means unbounded. CacheError (one line) when the variable is not a byte count."""
    text = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise CacheError(f"${MAX_BYTES_ENV}: {exc}") from None


def cache_key(*parts: str | bytes) -> str:
    """A hex digest of `parts`, the tmlir version and the cache format (parts are
    length-prefixed)."""
    digest = hashlib.sha256()
    for part in (__version__, CACHE_FORMAT, *parts):
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


# -- records --------------------------------------------------------------------------------

def record_path(entry: Path) -> Path:
    """Where the record of `entry` lies."""
    return entry.with_name(entry.name + RECORD_SUFFIX)


def _files(entry: Path) -> list[Path]:
    """The files whose bytes an entry holds: itself, or a folder's files (sorted)."""
    if entry.is_dir():
        return sorted(p for p in entry.rglob("*") if p.is_file() and not p.is_symlink())
    return [entry]


def digest_of(entry: Path) -> tuple[str, int]:
    """The SHA-256 (hex) and byte length of a file, or of a folder's files with their
    relative names; OSError if it cannot be read."""
    if not entry.is_dir():
        with open(entry, "rb") as file:
            digest = hashlib.file_digest(file, "sha256")
            return digest.hexdigest(), os.fstat(file.fileno()).st_size
    digest, size = hashlib.sha256(), 0
    for path in _files(entry):
        with open(path, "rb") as file:
            inner = hashlib.file_digest(file, "sha256")
            length = os.fstat(file.fileno()).st_size
        digest.update(f"{path.relative_to(entry).as_posix()}\0{length}\0{inner.hexdigest()}\0".encode())
        size += length
    return digest.hexdigest(), size


def read_record(entry: Path) -> tuple[str, int] | None:
    """The digest and length the record of `entry` holds; None when it has none, ValueError
    when it is unreadable."""
    try:
        text = record_path(entry).read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"record unreadable ({exc})") from None
    match = re.fullmatch(r"([0-9a-f]{64}) ([0-9]+)\n", text)
    if not match:
        raise ValueError("record unreadable")
    return match[1], int(match[2])


def _signature(entry: Path) -> tuple[int, ...] | None:
    """What a check is remembered by: inode, size and times of the entry's files and of its
    record (None if any is missing)."""
    try:
        stats = [os.stat(p) for p in (record_path(entry), entry, *(
            _files(entry) if entry.is_dir() else ()))]
    except OSError:
        return None
    return tuple(v for s in stats for v in (s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns))


# Entries this process found good, by path, with the signature they had then.
_checked: dict[str, tuple[int, ...]] = {}


def check_entry(entry: Path, *, fresh: bool = False) -> str | None:
    """Why `entry` cannot be trusted (``"absent"`` when it is not there, ``"record missing"``,
    ``"truncated (N of M bytes)"``, ...), None when it matches its record. An entry this
    process found good is not hashed again while its files' inode, size and times are the
    same, unless `fresh`."""
    if not entry.exists():
        return "absent"
    signature = _signature(entry)
    if not fresh and signature is not None and _checked.get(str(entry)) == signature:
        return None
    try:
        record = read_record(entry)
    except ValueError as exc:
        return str(exc)
    if record is None:
        return "record missing"
    try:
        digest, size = digest_of(entry)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if size < record[1]:
        return f"truncated ({size} of {record[1]} bytes)"
    if size != record[1]:
        return f"size changed ({size} bytes, recorded {record[1]})"
    if digest != record[0]:
        return "digest mismatch (content changed)"
    if signature is not None:
        _checked[str(entry)] = signature
    return None


@contextlib.contextmanager
def directory_lock(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on `directory` (flock on the folder itself): publishing and
    deleting entries take it, reading does not."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # not lockable: writers still rename atomically
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def remove_entry(entry: Path) -> int:
    """Delete an entry and its record (the entry first, so no entry is ever left without
    its record); the bytes freed."""
    freed = 0
    for path in (entry, record_path(entry)):
        try:
            freed += sum(p.stat().st_size for p in _files(path)) if path.exists() else 0
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            pass
    _checked.pop(str(entry), None)
    return freed


def _discard(entry: Path) -> bool:
    """Delete a bad entry, with one CacheWarning, unless checked again under the lock it is
    good (a concurrent writer published it meanwhile): then False."""
    with directory_lock(entry.parent):
        why = check_entry(entry) or ""
        if why in ("", "absent"):
            return why == "absent"
        action = "deleted, it will be rebuilt"
        try:
            remove_entry(entry)
        except OSError as exc:  # a read-only cache: the entry is still never used
            action = f"not used (cannot delete it: {exc.strerror or exc})"
    warnings.warn(f"tmlir cache: {entry} {why}; {action}", CacheWarning, stacklevel=4)
    return True


def mark_used(entry: Path) -> None:
    """Record a use of `entry` for least-recently-used eviction: its mtime, updated when
    older than `TOUCH_SECONDS` (a read-only cache is left as it is)."""
    with contextlib.suppress(OSError):
        if time.time() - entry.stat().st_mtime > TOUCH_SECONDS:
            os.utime(entry)
            if str(entry) in _checked:  # the content is the same, only its times changed
                _checked[str(entry)] = _signature(entry) or ()


def _trusted(entry: Path) -> bool:
    """Whether `entry` is there and matches its record; a bad one is warned about and
    deleted."""
    why = check_entry(entry)
    if why == "absent" or (why is not None and _discard(entry)):
        return False
    mark_used(entry)
    return True


# -- lookups and writes ---------------------------------------------------------------------

def cached_path(key: str, suffix: str) -> Path | None:
    """The cached entry for `key` if there is a good one (no build); a bad one is reported
    by a CacheWarning, deleted, and None returned."""
    final = cache_dir() / f"{key}{suffix}"
    return final if _trusted(final) else None


def cached_file(key: str, suffix: str, build: Callable[[Path], None]) -> Path:
    """Return the cached file for `key`, calling `build(tmp_path)` to produce it if absent.

    `build` must write the artifact to the path it is given; on success the file and its
    record are renamed to their final names. On failure nothing is left in the cache. An
    entry that fails its check is reported by a CacheWarning, deleted and built again.
    """
    final = cache_dir() / f"{key}{suffix}"
    if _trusted(final):
        return final
    max_bytes()  # a bad $TMLIR_CACHE_MAX_BYTES is reported before the build, not after
    fd, tmp_name = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=suffix, dir=final.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        build(tmp)
        publish(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()
    return final


def publish(tmp: Path, final: Path) -> bool:
    """Record the file or folder `tmp` and rename it to `final` (in the same directory),
    under the directory's lock. A folder is not put over an existing one (another process
    published it first): then `tmp` stays and False is returned."""
    digest, size = digest_of(tmp)
    fd, record_tmp = tempfile.mkstemp(prefix=f".{final.name[:16]}-", suffix=RECORD_SUFFIX,
                                      dir=final.parent)
    try:
        with os.fdopen(fd, "w") as file:
            file.write(f"{digest} {size}\n")
        with directory_lock(final.parent):
            if tmp.is_dir() and final.exists():
                return False
            os.replace(record_tmp, record_path(final))
            os.replace(tmp, final)
    finally:
        if os.path.exists(record_tmp):
            os.unlink(record_tmp)
    _count_write(final.parent, size, final)
    return True


@dataclass
class _Account:
    total: int  # the entries' bytes at the last scan plus those written since
    writes: int  # writes since the last scan


_accounts: dict[Path, _Account] = {}
_accounts_lock = threading.Lock()


def _count_write(directory: Path, size: int, written: Path) -> None:
    """Count a write. Sweep the directory (remove stale temporary files, evict past the
    bound) at the first write of a process unless another process swept it recently, then
    every `RESCAN_WRITES` writes and whenever the running total passes the bound."""
    from tmlir.backends.cache_maintenance import recent_total, sweep  # they build on this module

    bound = max_bytes()
    with _accounts_lock:
        account = _accounts.get(directory)
        if account is None:
            total = recent_total(directory)
            account = _accounts[directory] = (
                _Account(total, 0) if total is not None else _Account(0, RESCAN_WRITES))
        account.total += size
        account.writes += 1
        if account.writes < RESCAN_WRITES and not (bound and account.total > bound):
            return
        account.writes = -RESCAN_WRITES  # this thread sweeps; others keep counting
    total = sweep(directory, bound, keep=written)
    with _accounts_lock:
        _accounts[directory] = _Account(total, 0)
