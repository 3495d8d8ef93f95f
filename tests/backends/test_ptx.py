"""CUDA C -> PTX/CUBIN through NVRTC and nvcc, ptxas statistics, and the compile cache."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from tmlir.backends import ptx
from tmlir.backends.ptx import (
    CudaCompileError,
    KernelStats,
    compile_cubin,
    compile_jobs,
    compile_kernels_ptx,
    compile_ptx,
    parse_ptxas_log,
    ptx_kernel_names,
    ptxas_stats,
)

VECTOR_ADD = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""

BLOCK_SUM = r"""
extern "C" __global__ void block_sum(const float* x, float* y) {
  __shared__ float s[256];
  s[threadIdx.x] = x[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = s[0];
}
"""

LOCAL_ARRAY = r"""
extern "C" __global__ void gather_local(const int* idx, float* y) {
  float a[512];
  for (int i = 0; i < 512; ++i) a[i] = y[i] * i;
  y[threadIdx.x] = a[idx[threadIdx.x]];
}
"""

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
needs_nvrtc = pytest.mark.skipif(ptx.nvrtc_version() is None, reason="NVRTC does not load")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(cache))
    return cache


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("compiler", [
    pytest.param("nvrtc", marks=needs_nvrtc), pytest.param("nvcc", marks=needs_nvcc)])
def test_compile_ptx(compiler: str, arch: str) -> None:
    text = compile_ptx(VECTOR_ADD + BLOCK_SUM, arch, compiler=compiler)
    assert f".target {arch}" in text
    assert ptx_kernel_names(text) == ["vector_add", "block_sum"]
    assert ".shared" in text
    assert "\0" not in text


@needs_nvrtc
def test_nvrtc_version() -> None:
    version = ptx.nvrtc_version()
    assert version is not None and version >= (12, 0)


def test_auto_prefers_nvrtc(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(ptx, "_run_nvrtc", lambda *a: calls.append("nvrtc") or b"// nvrtc")
    monkeypatch.setattr(ptx, "_run_nvcc", lambda *a: calls.append("nvcc") or (b"// nvcc", ""))
    monkeypatch.setattr(ptx, "_nvcc_version", lambda nvcc: "test")
    monkeypatch.setattr(ptx, "_nvcc_path", lambda: "nvcc")
    monkeypatch.setattr(ptx, "nvrtc_version", lambda: (13, 0))
    assert compile_ptx(VECTOR_ADD) == "// nvrtc"
    monkeypatch.setattr(ptx, "nvrtc_version", lambda: None)
    assert compile_ptx(VECTOR_ADD) == "// nvcc"
    assert calls == ["nvrtc", "nvcc"]


@pytest.mark.parametrize("compiler", [
    pytest.param("nvrtc", marks=needs_nvrtc), pytest.param("nvcc", marks=needs_nvcc)])
def test_compile_cubin(compiler: str) -> None:
    cubin = compile_cubin(VECTOR_ADD, "sm_90", compiler=compiler)
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("compiler", [
    pytest.param("nvrtc", marks=needs_nvrtc), pytest.param("nvcc", marks=needs_nvcc)])
def test_syntax_error(compiler: str, _private_cache: Path) -> None:
    bad = 'extern "C" __global__ void broken(float* x) { x[0] = undefined_name; }'
    with pytest.raises(CudaCompileError) as info:
        compile_ptx(bad, "sm_90", compiler=compiler, name="broken.cu")
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"{'NVRTC' if compiler == 'nvrtc' else 'nvcc'} failed to compile "
                            "broken.cu for sm_90: ")
    assert "undefined_name" in first and "error" in first
    assert "undefined_name" in info.value.log
    assert not list(_private_cache.glob("*.ptx"))  # failures are not cached


@pytest.mark.parametrize("arch", ["sm_70", "compute_90", "sm_91", ""])
def test_bad_arch(arch: str) -> None:
    with pytest.raises(ValueError, match="sm_80, sm_86, sm_87, sm_89, sm_90"):
        compile_ptx(VECTOR_ADD, arch)
    with pytest.raises(ValueError, match="unsupported CUDA arch"):
        ptxas_stats(VECTOR_ADD, arch)


def test_bad_compiler() -> None:
    with pytest.raises(ValueError, match="unknown compiler"):
        compile_ptx(VECTOR_ADD, compiler="clang")  # type: ignore[arg-type]


@needs_nvrtc
def test_cache_hit_does_not_recompile(monkeypatch: pytest.MonkeyPatch,
                                      _private_cache: Path) -> None:
    calls: list[str] = []
    real = ptx._run_nvrtc

    def counting(*args: object) -> bytes:
        calls.append("nvrtc")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ptx, "_run_nvrtc", counting)
    first = compile_ptx(VECTOR_ADD, "sm_90", compiler="nvrtc")
    assert compile_ptx(VECTOR_ADD, "sm_90", compiler="nvrtc") == first
    assert calls == ["nvrtc"]
    assert len(list(_private_cache.glob("*.ptx"))) == 1
    compile_ptx(VECTOR_ADD, "sm_80", compiler="nvrtc")  # another arch is another entry
    compile_ptx(VECTOR_ADD + "\n", "sm_90", compiler="nvrtc")  # so is another source
    assert calls == ["nvrtc"] * 3


@needs_nvcc
def test_ptxas_stats_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = ptx._run_nvcc

    def counting(*args: object, **kwargs: object) -> tuple[bytes, str]:
        calls.append("nvcc")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ptx, "_run_nvcc", counting)
    assert ptxas_stats(VECTOR_ADD) == ptxas_stats(VECTOR_ADD)
    assert calls == ["nvcc"]


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptxas_stats_shared(arch: str) -> None:
    stats = ptxas_stats(VECTOR_ADD + BLOCK_SUM, arch)
    assert set(stats) == {"vector_add", "block_sum"}
    block = stats["block_sum"]
    assert block.registers > 0
    assert block.spill_bytes == 0
    assert block.shared_bytes == 256 * 4
    assert block.local_bytes == 0
    assert stats["vector_add"].shared_bytes == 0


@needs_nvcc
def test_ptxas_stats_local_and_spills() -> None:
    stats = ptxas_stats(LOCAL_ARRAY, "sm_90")["gather_local"]
    assert stats.local_bytes >= 512 * 4  # dynamically indexed: the array lives on the stack
    assert stats.shared_bytes == 0
    squeezed = ptxas_stats(LOCAL_ARRAY, "sm_90", max_registers=16)["gather_local"]
    assert squeezed.spill_bytes > 0
    assert squeezed.local_bytes >= stats.local_bytes


PTXAS_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'old_style' for 'sm_80'
ptxas info    : Function properties for old_style
    72 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads
ptxas info    : Used 255 registers, 16384 bytes smem, 368 bytes cmem[0]
ptxas info    : Compiling entry function 'new_style' for 'sm_90'
ptxas info    : Function properties for _Z6helperv
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Function properties for new_style
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compile time = 5.028 ms
"""


def test_parse_ptxas_log() -> None:
    assert parse_ptxas_log(PTXAS_LOG) == {
        "old_style": KernelStats(registers=255, spill_bytes=76, shared_bytes=16384,
                                 local_bytes=72),
        "new_style": KernelStats(registers=12, spill_bytes=0, shared_bytes=1024, local_bytes=0),
    }


def test_ptx_kernel_names() -> None:
    text = ".visible .entry a(\n)\n{\n}\n.entry b_2(\n)\n.weak .entry c$d()\n.func helper()\n"
    assert ptx_kernel_names(text) == ["a", "b_2", "c$d"]



# ----------------------------------------------------------------------------- per kernel

KERNELS = [("vector_add", VECTOR_ADD), ("block_sum", BLOCK_SUM)]


def _fake_nvrtc(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Replace NVRTC by a stub returning `// <file name>`; record (file name, thread name)."""
    calls: list[tuple[str, str]] = []

    def fake(source: str, name: str, arch: str, output: str) -> bytes:
        calls.append((name, threading.current_thread().name))
        return f"// {name}".encode()

    monkeypatch.setattr(ptx, "_run_nvrtc", fake)
    monkeypatch.setattr(ptx, "nvrtc_version", lambda: (13, 0))
    return calls


@pytest.mark.parametrize("compiler", [
    pytest.param("nvrtc", marks=needs_nvrtc), pytest.param("nvcc", marks=needs_nvcc)])
def test_compile_kernels_ptx(compiler: str) -> None:
    texts = compile_kernels_ptx(KERNELS, "sm_80", compiler=compiler, jobs=2)
    assert list(texts) == ["vector_add", "block_sum"]
    for name, text in texts.items():
        assert ptx_kernel_names(text) == [name]  # each kernel alone in its PTX
        assert ".target sm_80" in text and "\0" not in text


@needs_nvrtc
def test_program_kernels_compile_alone() -> None:
    from models import mlp

    from tmlir.runtime.session import compile_model

    program, _ = compile_model(mlp(2, [8, 16, 4]))
    names = [k.signature.name for k in program.kernels]
    assert len(names) == 2
    # The program's source is the kernels' own functions, in order, between header (with the
    # primitives they use: the SIMT matmul's cp.async) and host code; a kernel's own source
    # is its primitives, then its function.
    functions = [k.source[k.source.index(f"// Kernel {n}:"):] for n, k in zip(names, program.kernels)]
    assert "\n".join(functions) in program.source
    assert all(k.source.startswith(("// Kernel", "// Tensor-core primitives")) for k in program.kernels)
    texts = compile_kernels_ptx(program, "sm_90")
    assert {n: ptx_kernel_names(t) for n, t in texts.items()} == {n: [n] for n in names}


def test_kernels_cached_without_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_nvrtc(monkeypatch)
    first = compile_kernels_ptx(KERNELS, jobs=2)
    assert first == {"vector_add": "// vector_add.cu", "block_sum": "// block_sum.cu"}
    assert sorted(name for name, _ in calls) == ["block_sum.cu", "vector_add.cu"]
    assert all(thread.startswith("tmlir-ptx") for _, thread in calls)  # on the worker pool

    def no_pool(*args: object) -> None:
        raise AssertionError("a worker pool was started for cached kernels")

    monkeypatch.setattr(ptx, "ThreadPoolExecutor", no_pool)
    assert compile_kernels_ptx(KERNELS, jobs=2) == first
    assert len(calls) == 2  # both served from the cache


def test_kernel_change_recompiles_that_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_nvrtc(monkeypatch)
    compile_kernels_ptx(KERNELS, jobs=1)
    assert [thread for _, thread in calls] == ["MainThread"] * 2  # one job: no pool
    changed = [KERNELS[0], ("block_sum", BLOCK_SUM.replace("k >>= 1", "k /= 2"))]
    compile_kernels_ptx(changed, jobs=2)
    assert [name for name, _ in calls] == ["block_sum.cu", "vector_add.cu", "block_sum.cu"]
    compile_kernels_ptx(changed, "sm_80", jobs=2)  # another arch: every kernel again
    assert len(calls) == 5


@needs_nvrtc
def test_kernel_compile_error_names_kernel(_private_cache: Path) -> None:
    bad = 'extern "C" __global__ void broken(float* x) { x[0] = undefined_name; }'
    with pytest.raises(CudaCompileError) as info:
        compile_kernels_ptx([*KERNELS, ("broken", bad)], "sm_90", jobs=2)
    first = str(info.value).splitlines()[0]
    assert first.startswith("NVRTC failed to compile broken.cu for sm_90: ")
    assert "undefined_name" in first


def test_kernel_list_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_nvrtc(monkeypatch)
    with pytest.raises(ValueError, match="kernel 'vector_add' is given twice"):
        compile_kernels_ptx([*KERNELS, KERNELS[0]])
    with pytest.raises(ValueError, match="kernel 'empty' has no CUDA C source"):
        compile_kernels_ptx([("empty", "\n")])
    with pytest.raises(ValueError, match="unsupported CUDA arch"):
        compile_kernels_ptx(KERNELS, "sm_70")
    assert compile_kernels_ptx([]) == {}


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "2 cores"])
def test_tmlir_jobs_must_be_positive(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_nvrtc(monkeypatch)
    monkeypatch.setenv("TMLIR_JOBS", value)
    with pytest.raises(ValueError, match=rf"^TMLIR_JOBS must be a positive integer, got '{value}'$"):
        compile_kernels_ptx(KERNELS)


def test_compile_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMLIR_JOBS", raising=False)
    assert compile_jobs() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("TMLIR_JOBS", " 3 ")
    assert compile_jobs() == 3
    assert compile_jobs(1) == 1  # an explicit count wins over $TMLIR_JOBS
    for bad in (0, -2, True, 1.5):
        with pytest.raises(ValueError, match="jobs must be a positive integer"):
            compile_jobs(bad)  # type: ignore[arg-type]
