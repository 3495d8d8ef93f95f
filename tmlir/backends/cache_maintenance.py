"""Inspecting, bounding, pruning and verifying the artifact cache (`tmlir.backends.cache`).

What the cache directory holds, as a `scan` sorts it:

- *entries* ``<key><suffix>`` (64 hex digits, then ``.so``, ``.ptx``, ``.cubin``,
  ``.ptxas.txt``, ``.stats.json``, ``.compile.zip``, or a ``.pch`` folder), each with its
  record ``<key><suffix>.sha256``; an entry without one is never used (*unrecorded*);
- *temporary files and folders* ``.<key[:16]>-*`` of builds in progress or killed
  (*stale* when older than `STALE_SECONDS`), and ``.tuning_records.jsonl-*``;
- *orphan records* whose entry is gone;
- *other files* (the tuning records, ``tuning_records.jsonl``), never removed here;
- ``.sweep``: the entries' bytes as the last sweep counted them (`recent_total`).

The functions `cache_info`, `clear_cache`, `prune_cache` and `verify_cache` are what
``tm-cache info|clear|prune|verify`` run; `sweep` is what each process runs at its first
write (see `tmlir.backends.cache`). The last use of an entry is the later of its mtime
(set when written and on hits) and its atime.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tmlir.backends.cache import (
    EVICT_TO,
    RECORD_SUFFIX,
    STALE_SECONDS,
    cache_dir,
    check_entry,
    directory_lock,
    max_bytes,
    record_path,
    remove_entry,
)

ENTRY_NAME = re.compile(r"[0-9a-f]{64}(\.[A-Za-z0-9_.]+)")
TEMP_NAME = re.compile(r"\.(?:[0-9a-f]{16}|tuning_records\.jsonl|sweep)-.+", re.DOTALL)
#: Where a sweep leaves the entries' bytes for the processes that start after it.
SWEEP_STATE = ".sweep"


@dataclass(frozen=True)
class Item:
    """One thing in the cache directory: its path, bytes (an entry's with its record's),
    the time of its last use (an entry) or modification, and an entry's kind (its suffix)."""

    path: Path
    bytes: int
    last_used: float
    kind: str = ""
    recorded: bool = True


@dataclass(frozen=True)
class Scan:
    """The cache directory sorted into entries, temporary files, orphan records and others."""

    directory: Path
    entries: tuple[Item, ...]
    temps: tuple[Item, ...]
    orphan_records: tuple[Item, ...]
    others: tuple[Item, ...]

    @property
    def entry_bytes(self) -> int:
        """The bytes of the entries with their records (what the bound counts)."""
        return sum(e.bytes for e in self.entries)


def _size_and_time(item: os.DirEntry) -> tuple[int, float]:
    """Bytes and last use of a file, or of a folder and the files in it."""
    stat = item.stat(follow_symlinks=False)
    if not item.is_dir(follow_symlinks=False):
        return stat.st_size, max(stat.st_mtime, stat.st_atime)
    size, used = 0, max(stat.st_mtime, stat.st_atime)
    for inner in Path(item.path).rglob("*"):
        try:
            inner_stat = inner.lstat()
        except OSError:
            continue
        if not inner.is_dir():
            size += inner_stat.st_size
        used = max(used, inner_stat.st_mtime, inner_stat.st_atime)
    return size, used


def scan(directory: Path) -> Scan:
    """Sort what `directory` holds (one listing; entries vanishing meanwhile are skipped)."""
    found: dict[str, tuple[int, float]] = {}
    with os.scandir(directory) as listing:
        for item in listing:
            if item.name == SWEEP_STATE:
                continue
            try:
                found[item.name] = _size_and_time(item)
            except OSError:
                continue
    entries, temps, orphans, others = [], [], [], []
    for name, (size, used) in found.items():
        path = directory / name
        if name.endswith(RECORD_SUFFIX) and ENTRY_NAME.fullmatch(name[:-len(RECORD_SUFFIX)]):
            if name[:-len(RECORD_SUFFIX)] not in found:
                orphans.append(Item(path, size, used))
        elif match := ENTRY_NAME.fullmatch(name):
            record = found.get(name + RECORD_SUFFIX)
            entries.append(Item(path, size + (record[0] if record else 0), used, match[1],
                                record is not None))
        elif TEMP_NAME.fullmatch(name):
            temps.append(Item(path, size, used))
        else:
            others.append(Item(path, size, used))
    return Scan(directory, tuple(entries), tuple(temps), tuple(orphans), tuple(others))


def recent_total(directory: Path) -> int | None:
    """The entries' bytes the last sweep of `directory` (by any process) counted, when it
    was less than `STALE_SECONDS` ago; None otherwise."""
    try:
        state = directory / SWEEP_STATE
        if time.time() - state.stat().st_mtime < STALE_SECONDS:
            return int(state.read_text())
    except (OSError, ValueError):
        pass
    return None


def _save_total(directory: Path, total: int) -> None:
    """Leave the entries' bytes for the next process (`recent_total`)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".sweep-", dir=directory)
        with os.fdopen(fd, "w") as file:
            file.write(f"{total}\n")
        os.replace(tmp, directory / SWEEP_STATE)
    except OSError:
        pass


@dataclass
class Removal:
    """What a clear, prune or sweep removed: entries (with their records), temporary files
    and folders, orphan records, and the bytes freed in all."""

    entries: int = 0
    temps: int = 0
    records: int = 0
    bytes: int = 0


def _remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _remove_leftovers(found: Scan, removal: Removal, older_than: float) -> None:
    """Remove temporary files and orphan records last modified `older_than` seconds ago or
    more (a record alone may be one being published: its entry follows within the lock)."""
    now = time.time()
    for items, attribute in ((found.temps, "temps"), (found.orphan_records, "records")):
        for item in items:
            if now - item.last_used >= older_than:
                if attribute == "records" and Path(str(item.path)[:-len(RECORD_SUFFIX)]).exists():
                    continue
                _remove_path(item.path)
                setattr(removal, attribute, getattr(removal, attribute) + 1)
                removal.bytes += item.bytes


def _evict(found: Scan, removal: Removal, target: int, keep: Path | None = None) -> int:
    """Remove unrecorded entries, then the least recently used ones, until the entries'
    bytes are at most `target`; the entries' bytes left."""
    total = found.entry_bytes
    if total <= target:
        return total
    order = sorted(found.entries, key=lambda e: (e.recorded, e.last_used))
    with directory_lock(found.directory):
        for entry in order:
            if total <= target:
                break
            if entry.path == keep:
                continue
            remove_entry(entry.path)
            total -= entry.bytes
            removal.entries += 1
            removal.bytes += entry.bytes
    return total


def sweep(directory: Path, bound: int, keep: Path | None = None) -> int:
    """Remove stale temporary files and orphan records and, when the entries pass `bound`
    (0: unbounded), the least recently used entries down to `EVICT_TO` of it, never `keep`;
    the entries' bytes left."""
    found = scan(directory)
    removal = Removal()
    _remove_leftovers(found, removal, STALE_SECONDS)
    total = found.entry_bytes
    if bound and total > bound:
        total = _evict(found, removal, int(bound * EVICT_TO), keep)
    _save_total(directory, total)
    return total


@dataclass(frozen=True)
class CacheInfo:
    """What the cache holds: its directory and bound, entries by kind (count, bytes),
    unrecorded entries, temporary files (stale ones among them), orphan records, other
    files; sizes in bytes."""

    directory: Path
    max_bytes: int
    kinds: dict[str, tuple[int, int]] = field(default_factory=dict)
    unrecorded: tuple[int, int] = (0, 0)
    temps: tuple[int, int] = (0, 0)
    stale_temps: tuple[int, int] = (0, 0)
    orphan_records: tuple[int, int] = (0, 0)
    others: tuple[int, int] = (0, 0)

    @property
    def entry_bytes(self) -> int:
        """The bytes of all entries with their records (what the bound counts)."""
        return sum(b for _, b in self.kinds.values()) + self.unrecorded[1]

    @property
    def total_bytes(self) -> int:
        """Everything in the directory."""
        return self.entry_bytes + self.temps[1] + self.orphan_records[1] + self.others[1]


def _tally(items: list[Item] | tuple[Item, ...]) -> tuple[int, int]:
    return len(items), sum(i.bytes for i in items)


def cache_info() -> CacheInfo:
    """Inspect the cache (`cache_dir`); nothing is changed. CacheError if the directory or
    `$TMLIR_CACHE_MAX_BYTES` is unusable."""
    bound = max_bytes()
    found = scan(cache_dir())
    kinds: dict[str, list[Item]] = {}
    for entry in found.entries:
        if entry.recorded:
            kinds.setdefault(entry.kind, []).append(entry)
    now = time.time()
    return CacheInfo(
        found.directory, bound, {k: _tally(v) for k, v in sorted(kinds.items())},
        _tally([e for e in found.entries if not e.recorded]), _tally(found.temps),
        _tally([t for t in found.temps if now - t.last_used >= STALE_SECONDS]),
        _tally(found.orphan_records), _tally(found.others))


def clear_cache() -> Removal:
    """Remove every entry, record and temporary file of the cache (other files, such as the
    tuning records, stay). Safe while nothing else uses the cache: a build in progress
    would lose its temporary file."""
    found = scan(cache_dir())
    removal = Removal()
    _remove_leftovers(found, removal, 0.0)
    with directory_lock(found.directory):
        for entry in found.entries:
            removal.bytes += remove_entry(entry.path)
            removal.entries += 1
    _save_total(found.directory, 0)
    return removal


def prune_cache(max_bytes_: int | None = None, older_than_days: float | None = None) -> Removal:
    """Remove stale temporary files, orphan records and unrecorded entries, entries not used
    for `older_than_days` days, then the least recently used entries until the entries take
    at most `max_bytes_` (default: the bound, `max_bytes()`; 0: no limit). Safe while other
    processes use the cache. ValueError for a negative argument."""
    if max_bytes_ is not None and max_bytes_ < 0:
        raise ValueError(f"max_bytes must be at least 0, got {max_bytes_}")
    if older_than_days is not None and not older_than_days >= 0:
        raise ValueError(f"older_than_days must be at least 0, got {older_than_days}")
    bound = max_bytes() if max_bytes_ is None else max_bytes_
    found = scan(cache_dir())
    removal = Removal()
    _remove_leftovers(found, removal, STALE_SECONDS)
    cutoff = None if older_than_days is None else time.time() - older_than_days * 86400
    kept = []
    with directory_lock(found.directory):
        for entry in found.entries:
            unrecorded = not entry.recorded and not record_path(entry.path).exists()
            if unrecorded or (cutoff is not None and entry.last_used < cutoff):
                removal.bytes += remove_entry(entry.path)
                removal.entries += 1
            else:
                kept.append(entry)
    left = Scan(found.directory, tuple(kept), (), (), ())
    _save_total(found.directory, _evict(left, removal, bound) if bound else left.entry_bytes)
    return removal


@dataclass(frozen=True)
class Verification:
    """What `verify_cache` found: the entries checked, and each bad one (deleted) with why."""

    checked: int
    bad: tuple[tuple[Path, str], ...]
    bytes: int


def verify_cache() -> Verification:
    """Check every entry against its record (hashing it), deleting the bad ones (truncated,
    changed, unrecorded); safe while other processes use the cache."""
    found = scan(cache_dir())
    bad, freed = [], 0
    for entry in sorted(found.entries, key=lambda e: e.path.name):
        why = check_entry(entry.path, fresh=True)
        if why in (None, "absent"):
            continue
        with directory_lock(found.directory):  # again under the lock: a writer may have won
            why = check_entry(entry.path, fresh=True)
            if why in (None, "absent"):
                continue
            freed += remove_entry(entry.path)
        bad.append((entry.path, why))
    return Verification(len(found.entries), tuple(bad), freed)
