"""The artifact cache checks every entry against its record on load: a truncated, changed
or unrecorded entry is reported by one CacheWarning, deleted and rebuilt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from tmlir.backends import ptx
from tmlir.backends.cache import (
    RECORD_SUFFIX,
    CacheWarning,
    cache_key,
    cached_file,
    cached_path,
    check_entry,
    publish,
    record_path,
)
from tmlir.backends.emu import compile_emu
from tmlir.backends.kernel_abi import KernelParam, KernelSignature

ADD_ONE = """extern "C" __global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
"""
ADD_ONE_SIG = KernelSignature("add_one", (KernelParam("x", "float*"), KernelParam("n", "int")))


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test has its own cache directory."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(directory))
    return directory


class Builder:
    """A build function that writes `data` and counts its calls."""

    def __init__(self, data: bytes) -> None:
        self.data, self.calls = data, 0

    def __call__(self, path: Path) -> None:
        self.calls += 1
        path.write_bytes(self.data)


def one_warning(caught: list[warnings.WarningMessage], *words: str) -> str:
    """The single CacheWarning among `caught`, checked to contain `words`."""
    ours = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(ours) == 1, ours
    assert "\n" not in ours[0] and all(word in ours[0] for word in words), ours[0]
    return ours[0]


def test_an_entry_is_written_with_its_record_and_a_hit_does_not_build() -> None:
    build = Builder(b"artifact bytes")
    path = cached_file(cache_key("t"), ".bin", build)
    assert path.read_bytes() == b"artifact bytes" and record_path(path).is_file()
    assert cached_file(cache_key("t"), ".bin", build) == path and build.calls == 1
    assert cached_path(cache_key("t"), ".bin") == path
    assert sorted(p.name for p in path.parent.iterdir()) == [".sweep", path.name, path.name + RECORD_SUFFIX]


@pytest.mark.parametrize("damage, words", [
    ("truncate", ("truncated (7 of 14 bytes)",)),
    ("same_length", ("digest mismatch",)),
    ("grow", ("size changed",)),
    ("record_missing", ("record missing",)),
    ("record_garbage", ("record unreadable",)),
])
def test_a_damaged_entry_is_reported_deleted_and_rebuilt(damage: str, words: tuple[str, ...]) -> None:
    build = Builder(b"artifact bytes")
    path = cached_file(cache_key("t"), ".bin", build)
    if damage == "truncate":
        os.truncate(path, 7)
    elif damage == "same_length":
        path.write_bytes(b"ARTIFACT bytes")
    elif damage == "grow":
        path.write_bytes(b"artifact bytes and more")
    elif damage == "record_missing":
        record_path(path).unlink()
    else:
        record_path(path).write_text("not a record\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cached_file(cache_key("t"), ".bin", build) == path
    one_warning(caught, str(path), *words)
    assert build.calls == 2 and path.read_bytes() == b"artifact bytes"
    assert check_entry(path) is None


def test_cached_path_returns_none_for_a_bad_entry_and_deletes_it() -> None:
    path = cached_file(cache_key("t"), ".ptx", Builder(b"// ptx text"))
    os.truncate(path, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cached_path(cache_key("t"), ".ptx") is None
    one_warning(caught, "truncated")
    assert not path.exists() and not record_path(path).exists()
    assert cached_path(cache_key("t"), ".ptx") is None  # gone: no second warning


def test_a_failed_build_leaves_nothing() -> None:
    def fail(path: Path) -> None:
        path.write_bytes(b"half")
        raise RuntimeError("compiler crashed")

    with pytest.raises(RuntimeError):
        cached_file(cache_key("t"), ".bin", fail)
    assert list(Path(os.environ["TMLIR_CACHE_DIR"]).iterdir()) == []


def test_a_truncated_emu_shared_object_is_rebuilt_and_runs(cache: Path) -> None:
    compile_emu(ADD_ONE, [ADD_ONE_SIG]).close()  # built, loaded and unloaded
    (path,) = cache.glob("*.so")
    os.truncate(path, path.stat().st_size // 2)  # as a full disk or a killed copy leaves it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = compile_emu(ADD_ONE, [ADD_ONE_SIG])
    one_warning(caught, str(path), "truncated")
    assert module.path == path and check_entry(path) is None
    x = np.arange(5, dtype=np.float32)
    module.launch("add_one", 1, 32, [x, 5])
    np.testing.assert_array_equal(x, np.arange(1, 6, dtype=np.float32))
    module.close()


def test_a_folder_entry_is_recorded_and_checked(cache: Path) -> None:
    cache.mkdir()
    tmp, final = cache / ".0123456789abcdef-tmp", cache / f"{cache_key('folder')}.pch"
    tmp.mkdir()
    (tmp / "a.h").write_text("header")
    (tmp / "a.h.gch").write_bytes(b"precompiled" * 100)
    assert publish(tmp, final) and not tmp.exists()
    assert cached_path(cache_key("folder"), ".pch") == final
    tmp.mkdir()  # a second writer loses the race: its folder is not put over the first
    assert not publish(tmp, final) and tmp.exists()
    os.truncate(final / "a.h.gch", 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cached_path(cache_key("folder"), ".pch") is None
    one_warning(caught, str(final), "truncated (16 of 1106 bytes)")
    assert not final.exists() and not record_path(final).exists()


@pytest.mark.slow
def test_a_truncated_precompiled_header_is_rebuilt(cache: Path) -> None:
    compile_emu(ADD_ONE, [ADD_ONE_SIG]).close()
    (folder,) = cache.glob("*.pch")
    gch = folder / "tmlir_emu.h.gch"
    os.truncate(gch, 1000)  # g++ fails on such a file: every later emu compile would fail
    for so in cache.glob("*.so"):
        so.unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = compile_emu(ADD_ONE, [ADD_ONE_SIG])
    one_warning(caught, ".pch", "truncated")
    assert gch.stat().st_size > 1000 and check_entry(folder) is None
    x = np.zeros(3, dtype=np.float32)
    module.launch("add_one", 1, 32, [x, 3])
    np.testing.assert_array_equal(x, np.ones(3, dtype=np.float32))
    module.close()


def _ptx_compiler() -> str | None:
    if ptx.nvrtc_version() is not None:
        return "nvrtc"
    return "nvcc" if shutil.which("nvcc") else None


@pytest.mark.skipif(_ptx_compiler() is None, reason="neither NVRTC nor nvcc is available")
def test_a_truncated_ptx_entry_is_rebuilt(cache: Path) -> None:
    source = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n'
    compiler = _ptx_compiler()
    good = ptx.compile_ptx(source, compiler=compiler)
    (entry,) = cache.glob("*.ptx")
    os.truncate(entry, len(good) // 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = ptx.compile_kernels_ptx([("k", source)], compiler=compiler)
    one_warning(caught, ".ptx", "truncated")
    assert again == {"k": good} and entry.read_text() == good


WORKER = """
import sys, warnings
from pathlib import Path
from tmlir.backends.cache import cache_key, cached_file, check_entry
warnings.simplefilter("error")
def build(path):
    path.write_bytes(b"x" * 200_000)
for round in range(20):
    path = cached_file(cache_key("shared", str(round % 4)), ".bin", build)
    assert path.read_bytes() == b"x" * 200_000, round
    assert check_entry(path, fresh=True) is None
print("ok")
"""


def test_processes_sharing_one_cache_build_and_check_the_same_keys(cache: Path) -> None:
    workers = [subprocess.Popen([sys.executable, "-c", WORKER], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "TMLIR_CACHE_DIR": str(cache)})
               for _ in range(4)]
    results = [w.communicate(timeout=120) for w in workers]
    assert [w.returncode for w in workers] == [0] * 4, [err for _, err in results]
    assert all(out.strip() == "ok" for out, _ in results)
    names = sorted(p.name for p in cache.iterdir() if p.name != ".sweep")
    assert len(names) == 8 and all(n.endswith(".bin") or n.endswith(".bin.sha256") for n in names)
