"""``tm-cache info|clear|prune|verify``: their reports and exit statuses, and one line for
every failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tmlir.backends.cache import cache_key, cached_file, record_path
from tmlir.tools.tm_cache import human, main


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(directory))
    monkeypatch.setenv("TMLIR_CACHE_MAX_BYTES", "1M")
    return directory


def put(name: str, size: int, suffix: str = ".so", age_days: float = 0.0) -> Path:
    path = cached_file(cache_key(name), suffix, lambda p: p.write_bytes(b"x" * size))
    then = time.time() - age_days * 86400
    os.utime(path, (then, then))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def test_info_reports_the_directory_kinds_bytes_bound_and_temporary_files(cache, capsys) -> None:
    put("a", 2048)
    put("b", 100, ".ptx")
    put("c", 100, ".compile.zip")
    stale = cache / ".0123456789abcdef-x.so"
    stale.write_bytes(b"123")
    os.utime(stale, (time.time() - 7200,) * 2)
    status, out, err = run(capsys, "info")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"directory: {cache}"
    assert lines[1] == "bound: 1.0 MiB (1048576 bytes); set $TMLIR_CACHE_MAX_BYTES to change it"
    assert lines[2].startswith("entries: 3 (2.4 KiB, 0.2% of the bound)")
    assert [line.split()[:2] for line in lines[3:6]] == [[".compile.zip", "1"], [".ptx", "1"], [".so", "1"]]
    assert "temporary files: 1 (3 B), stale: 1 (3 B)" in lines
    status, out, _ = run(capsys, "info", "--json")
    data = json.loads(out)
    assert status == 0 and data["kinds"][".so"]["count"] == 1 and data["stale_temps"]["count"] == 1
    assert data["max_bytes"] == 1 << 20 and data["directory"] == str(cache)


def test_clear_removes_the_entries(cache, capsys) -> None:
    put("a", 100)
    (cache / "tuning_records.jsonl").write_text("{}\n")
    status, out, err = run(capsys, "clear")
    assert status == 0 and err == ""
    assert out.startswith("removed 1 entries, 0 temporary files and 0 orphan records (")
    assert not list(cache.glob("*.so")) and (cache / "tuning_records.jsonl").exists()


def test_prune_by_age_and_size(cache, capsys) -> None:
    old, recent, newest = put("old", 1000, age_days=40), put("recent", 1000, age_days=1), put("new", 1000)
    status, out, _ = run(capsys, "prune", "--older-than", "30")
    assert status == 0 and out.startswith("removed 1 entries") and "2 entries left" in out
    assert not old.exists() and recent.exists()
    status, out, _ = run(capsys, "prune", "--max-bytes", "1500")
    assert status == 0 and not recent.exists() and newest.exists() and "1 entries left" in out


def test_verify_reports_and_deletes_bad_entries_with_exit_status_1(cache, capsys) -> None:
    good, bad = put("good", 100), put("bad", 100, ".ptx")
    os.truncate(bad, 40)
    status, out, _ = run(capsys, "verify")
    assert status == 1
    assert out.splitlines() == [f"bad: {bad}: truncated (40 of 100 bytes) (deleted)",
                                f"checked 2 entries: 1 bad, deleted ({40 + record_path(good).stat().st_size} B)"]
    assert good.exists() and not bad.exists()
    assert run(capsys, "verify")[:2] == (0, "checked 1 entries: all good\n")


@pytest.mark.parametrize("argv, message", [
    ((), "tm-cache: error: the following arguments are required: command"),
    (("shrink",), "tm-cache: error: argument command: invalid choice: 'shrink'"),
    (("prune", "--max-bytes", "big"), "tm-cache prune: error: argument --max-bytes: expected a byte count"),
    (("prune", "--older-than", "-2"), "tm-cache prune: error: argument --older-than: expected a number of days"),
    (("info", "--verbose"), "tm-cache: error: unrecognized arguments: --verbose"),
])
def test_bad_options_are_one_line_and_exit_status_2(capsys, argv, message) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == "" and err.startswith(message) and err.count("\n") == 1


def test_an_unusable_cache_is_one_line_and_exit_status_1(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(tmp_path / "file"))
    status, out, err = run(capsys, "info")
    assert status == 1 and out == ""
    assert err == (f"tm-cache: error: cache directory '{tmp_path / 'file'}' ($TMLIR_CACHE_DIR) "
                   "cannot be used: it is not a directory\n")
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TMLIR_CACHE_MAX_BYTES", "-5")
    status, _, err = run(capsys, "prune")
    assert status == 1 and err.startswith("tm-cache: error: $TMLIR_CACHE_MAX_BYTES: ") and err.count("\n") == 1


def test_human_sizes() -> None:
    assert [human(n) for n in (0, 1023, 1024, 1536 << 10, 3 << 30)] == [
        "0 B", "1023 B", "1.0 KiB", "1.5 MiB", "3.0 GiB"]


def test_the_console_script_runs(cache) -> None:
    done = subprocess.run([sys.executable, "-m", "tmlir.tools.tm_cache", "verify"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "checked 0 entries: all good\n", done.stderr
