"""torch.compile's caches (inductor's FX graphs and autotuning results, triton's kernels),
carried from one GPU call to the next.

The suite points ``TORCHINDUCTOR_CACHE_DIR`` and ``TRITON_CACHE_DIR`` into one folder
(``--torch-cache``). After a run on a GPU, `pack_cache` writes it as a gzipped tar into the
results folder when the archive is small enough to carry back to the machine (the device
call carries at most 64 MiB in all, the wheels included), and records its sizes either
way; `unpack_cache` restores such an archive before a later call's first step, so that
its torch.compile steps, max-autotune's above all, find their work done.
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any


def folder_size(folder: Path) -> tuple[int, int]:
    """(bytes, files) of every file under `folder` (0, 0 when it does not exist)."""
    files = [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
    return sum(p.stat().st_size for p in files), len(files)


def pack_cache(folder: Path, archive: Path, limit_mib: float) -> dict[str, Any]:
    """Sizes of the caches in `folder`, per cache and in all; the archive written to
    `archive` when its compressed size is at most `limit_mib`, else why not."""
    record: dict[str, Any] = {"folder": folder.name}
    for part in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        size, files = folder_size(part)
        record[part.name] = {"bytes": size, "files": files}
    record["bytes"], record["files"] = folder_size(folder)
    if not record["files"]:
        record["archive"] = "not written: the caches are empty"
        return record
    with tarfile.open(archive, "w:gz", compresslevel=6) as tar:
        tar.add(folder, arcname=".")
    packed = archive.stat().st_size
    record["archive_bytes"] = packed
    if packed > limit_mib * 2**20:
        archive.unlink()
        record["archive"] = f"not written: {packed / 2**20:.1f} MiB compressed, over {limit_mib:g} MiB"
    else:
        record["archive"] = archive.name
    return record


def unpack_cache(archive: Path, folder: Path) -> dict[str, Any]:
    """Extract `archive` (from `pack_cache`) into `folder`; what it held, or why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(folder, filter="data")
    except (OSError, tarfile.TarError) as exc:
        return {"archive": archive.name, "status": f"not unpacked: {exc}"}
    size, files = folder_size(folder)
    return {"archive": archive.name, "status": "ok", "bytes": size, "files": files}
