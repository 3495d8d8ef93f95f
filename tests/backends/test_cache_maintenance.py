"""The artifact cache's upkeep: stale temporary files removed, the size bound kept by
evicting the least recently used entries, and `cache_info`, `clear_cache`, `prune_cache`,
`verify_cache`."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tmlir.backends import cache as cache_module
from tmlir.backends.cache import (
    DEFAULT_MAX_BYTES,
    CacheError,
    cache_key,
    cached_file,
    max_bytes,
    parse_bytes,
    record_path,
)
from tmlir.backends.cache_maintenance import (
    SWEEP_STATE,
    cache_info,
    clear_cache,
    prune_cache,
    recent_total,
    verify_cache,
)

HOUR = 3600.0


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test has its own cache directory, and no bound unless it sets one."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(directory))
    monkeypatch.setenv("TMLIR_CACHE_MAX_BYTES", "0")
    return directory


def put(name: str, size: int = 1000, suffix: str = ".so", age: float = 0.0) -> Path:
    """An entry of `size` bytes, last used `age` seconds ago."""
    path = cached_file(cache_key(name), suffix, lambda p: p.write_bytes(b"x" * size))
    if age:
        then = time.time() - age
        os.utime(path, (then, then))
    return path


def aged(path: Path, age: float, data: bytes | None = None) -> Path:
    """`path` (written with `data` if given) last modified `age` seconds ago."""
    if data is not None:
        path.write_bytes(data)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def stored(path: Path) -> int:
    """The bytes of an entry with its record."""
    return path.stat().st_size + record_path(path).stat().st_size


def test_stale_temporary_files_are_removed_at_a_process_first_write_and_fresh_ones_kept(
        cache: Path) -> None:
    cache.mkdir()
    stale_file = aged(cache / ".0123456789abcdef-k1l2m3.so", 2 * HOUR, b"half a shared object")
    stale_dir = cache / ".fedcba9876543210-pch"
    stale_dir.mkdir()
    aged(stale_dir / "tmlir_emu.h", 2 * HOUR, b"x")
    aged(stale_dir, 2 * HOUR)
    fresh = aged(cache / ".00112233aabbccdd-x.ptx", 0, b"a build in progress")
    records = aged(cache / "tuning_records.jsonl", 2 * HOUR, b"{}\n")
    put("first write")
    assert not stale_file.exists() and not stale_dir.exists()
    assert fresh.exists() and records.exists()


def test_a_process_starts_from_a_recent_sweep_instead_of_scanning(cache: Path) -> None:
    entry = put("a", 5000)  # the first write of this process in this directory sweeps it
    assert recent_total(cache) == stored(entry)
    cache_module._accounts.clear()  # as a new process
    stale = aged(cache / ".0123456789abcdef-x.so", 2 * HOUR, b"x")
    put("b")
    assert stale.exists()  # no scan: another process swept less than an hour ago
    aged(cache / SWEEP_STATE, 2 * HOUR)
    cache_module._accounts.clear()
    put("c")
    assert not stale.exists()


def test_the_bound_evicts_the_least_recently_used_entries(cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMLIR_CACHE_MAX_BYTES", "5000")
    paths = [put(name, 1000, age=age) for name, age in
             (("a", 4 * HOUR), ("b", 3 * HOUR), ("c", 2 * HOUR), ("d", HOUR))]
    assert put("a") == paths[0]  # a hit: "a" is now the most recently used
    put("e")  # 5 entries of ~1071 bytes: over the bound, evicted down to 90% of it
    left = sorted(p.name for p in cache.glob("*.so"))
    assert left == sorted(cached_file(cache_key(n), ".so", pytest.fail).name for n in "acde")
    assert not paths[1].exists() and not record_path(paths[1]).exists()
    assert cache_info().entry_bytes <= 5000


def test_unbounded_when_zero(cache: Path) -> None:
    for name in "abcdef":
        put(name, 10_000)
    assert len(list(cache.glob("*.so"))) == 6


def test_the_bound_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMLIR_CACHE_MAX_BYTES")
    assert max_bytes() == DEFAULT_MAX_BYTES == 2 << 30
    for text, value in (("500M", 500 << 20), ("2G", 2 << 30), ("1.5GiB", 3 << 29), ("123", 123)):
        monkeypatch.setenv("TMLIR_CACHE_MAX_BYTES", text)
        assert max_bytes() == value
    monkeypatch.setenv("TMLIR_CACHE_MAX_BYTES", "lots")
    with pytest.raises(CacheError, match=r"^\$TMLIR_CACHE_MAX_BYTES: expected a byte count .* got 'lots'$"):
        max_bytes()
    with pytest.raises(ValueError):
        parse_bytes("-1")


def test_a_cache_directory_that_is_a_file_is_one_line(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(tmp_path / "file"))
    with pytest.raises(CacheError, match=r"^cache directory '.*file' \(\$TMLIR_CACHE_DIR\) cannot be "
                                         r"used: it is not a directory$"):
        cache_info()


def fill(cache: Path) -> dict[str, Path]:
    """A cache with entries of four kinds, an unrecorded entry, temporary files, an orphan
    record and the tuning records."""
    made = {"so": put("so", 1000), "ptx": put("ptx", 300, ".ptx"),
            "zip": put("zip", 200, ".compile.zip"), "old": put("old", 100, ".ptx", age=40 * 86400)}
    made["unrecorded"] = cache / f"{cache_key('unrecorded')}.so"
    made["unrecorded"].write_bytes(b"y" * 50)
    made["stale"] = aged(cache / ".0123456789abcdef-a.so", 2 * HOUR, b"z" * 7)
    made["fresh"] = aged(cache / ".0123456789abcdef-b.so", 0, b"z" * 3)
    made["orphan"] = aged(cache / f"{cache_key('gone')}.so.sha256", 2 * HOUR, f"{'0' * 64} 5\n".encode())
    made["records"] = aged(cache / "tuning_records.jsonl", 0, b"{}\n")
    return made


def test_info_counts_entries_by_kind_and_everything_else(cache: Path) -> None:
    made = fill(cache)
    info = cache_info()
    assert info.directory == cache and info.max_bytes == 0
    assert info.kinds == {".compile.zip": (1, stored(made["zip"])),
                          ".ptx": (2, stored(made["ptx"]) + stored(made["old"])),
                          ".so": (1, stored(made["so"]))}
    assert info.unrecorded == (1, 50) and info.temps == (2, 10) and info.stale_temps == (1, 7)
    assert info.orphan_records == (1, 67) and info.others == (1, 3)
    assert info.total_bytes == info.entry_bytes + 10 + 67 + 3


def test_clear_removes_every_entry_and_temporary_file_but_not_the_tuning_records(cache: Path) -> None:
    made = fill(cache)
    removal = clear_cache()
    assert (removal.entries, removal.temps, removal.records) == (5, 2, 1)
    assert sorted(p.name for p in cache.iterdir()) == [SWEEP_STATE, made["records"].name]


def test_prune_removes_leftovers_unrecorded_and_old_entries(cache: Path) -> None:
    made = fill(cache)
    removal = prune_cache(older_than_days=30)
    assert (removal.entries, removal.temps, removal.records) == (2, 1, 1)
    gone = {"old", "unrecorded", "stale", "orphan"}
    assert all(path.exists() != (name in gone) for name, path in made.items())
    assert not record_path(made["old"]).exists()


def test_prune_to_a_size_keeps_the_most_recently_used(cache: Path) -> None:
    made = {name: put(name, 1000, age=age) for name, age in (("a", 3 * HOUR), ("b", HOUR),
                                                             ("c", 2 * HOUR))}
    removal = prune_cache(max_bytes_=2200)
    assert removal.entries == 1 and not made["a"].exists() and made["b"].exists() and made["c"].exists()
    with pytest.raises(ValueError, match="max_bytes must be at least 0"):
        prune_cache(max_bytes_=-1)


def test_verify_deletes_bad_entries_and_reports_why(cache: Path) -> None:
    made = fill(cache)
    os.truncate(made["ptx"], 10)
    made["so"].write_bytes(b"X" * 1000)
    report = verify_cache()
    assert report.checked == 5
    assert sorted((p.name, why) for p, why in report.bad) == sorted([
        (made["ptx"].name, "truncated (10 of 300 bytes)"),
        (made["so"].name, "digest mismatch (content changed)"),
        (made["unrecorded"].name, "record missing")])
    assert made["zip"].exists() and made["old"].exists() and not made["ptx"].exists()
    assert verify_cache().bad == ()


def test_a_bad_bound_is_reported_before_building(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMLIR_CACHE_MAX_BYTES", "2 gigs")
    with pytest.raises(CacheError, match="TMLIR_CACHE_MAX_BYTES"):
        cached_file(cache_key("x"), ".so", pytest.fail)
