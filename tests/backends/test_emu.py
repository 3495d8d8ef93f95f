"""The emu backend runs emitted CUDA C on the CPU with real CUDA semantics."""

from __future__ import annotations

import shutil
import subprocess
import time
from math import erf
from pathlib import Path

import numpy as np
import pytest

from tmlir.backends.emu import EmuError, EmuModule, compile_emu
from tmlir.backends.emu.emu import CXX, HEADER, _launch_wrapper, cxxflags
from tmlir.backends.kernel_abi import KernelParam, KernelSignature

HOST_GUARD = "#if defined(__CUDACC__) && !defined(__CUDACC_RTC__)"

VADD = f"""
extern "C" __global__ void __launch_bounds__(256) vadd(const float* __restrict__ a,
    const float* __restrict__ b, float* __restrict__ c, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    c[i] = a[i] + b[i];
  }}
}}

{HOST_GUARD}
#include <cuda_runtime.h>
void launch_vadd(const float* a, const float* b, float* c, int n) {{
  vadd<<<(n + 255) / 256, 256>>>(a, b, c, n);
}}
#endif
"""

STORE_BARRIER = "__syncthreads();  // tiles stored"
MATMUL = f"""
__device__ __forceinline__ float load_or_zero(const float* p, int i, bool ok) {{
  return ok ? __ldg(p + i) : 0.0f;
}}

extern "C" __global__ void __launch_bounds__(256) matmul(const float* __restrict__ A,
    const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {{
  __shared__ float As[16][16];
  __shared__ float Bs[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += 16) {{
    As[ty][tx] = load_or_zero(A, row * K + k0 + tx, row < M && k0 + tx < K);
    Bs[ty][tx] = load_or_zero(B, (k0 + ty) * N + col, k0 + ty < K && col < N);
    {STORE_BARRIER}
#pragma unroll
    for (int k = 0; k < 16; ++k) {{
      acc += As[ty][k] * Bs[k][tx];
    }}
    __syncthreads();
  }}
  if (row < M && col < N) {{
    C[row * N + col] = acc;
  }}
}}
"""
MATMUL_RACY = MATMUL.replace(STORE_BARRIER, "/* barrier removed */")

INDEX3D = """
extern "C" __global__ void index3d(int* __restrict__ out) {
  int bid = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  int tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  int nthreads = blockDim.x * blockDim.y * blockDim.z;
  out[bid * nthreads + tid] = bid * 1000 + threadIdx.z * 100 + threadIdx.y * 10 + threadIdx.x;
}
"""

# 32 rounds of "store, barrier, read the neighbour's slot, barrier": 64 barriers per block.
ROTATE = """
extern "C" __global__ void __launch_bounds__(256) rotate(int* __restrict__ out, int rounds) {
  __shared__ int slots[256];
  int t = threadIdx.x;
  int v = blockIdx.x * 256 + t;
  for (int r = 0; r < rounds; ++r) {
    slots[t] = v;
    __syncthreads();
    v = slots[(t + 1) % 256] + 1;
    __syncthreads();
  }
  out[blockIdx.x * 256 + t] = v;
}
"""

DEADLOCK = """
extern "C" __global__ void early_exit(float* __restrict__ x) {
  if (threadIdx.x == 3) {
    return;
  }
  x[threadIdx.x] = 1.0f;
  __syncthreads();
}
"""

MATH = """
extern "C" __global__ void math(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) {
    return;
  }
  float v = x[i];
  float r[12] = {expf(v), tanhf(v), fmaxf(v, 0.5f), fminf(v, 0.5f), sqrtf(fabsf(v)),
                 logf(fabsf(v) + 1.0f), powf(fabsf(v), 1.5f), erff(v), rsqrtf(fabsf(v) + 1.0f),
                 floorf(v) + ceilf(v), __expf(v) + __fdividef(v, 3.0f),
                 __int_as_float(__float_as_int(v)) + (float)max(i, 2) + min(v, 0.0f)};
#pragma unroll
  for (int k = 0; k < 12; ++k) {
    y[k * n + i] = r[k];
  }
}
"""

WARP_SUM = """
extern "C" __global__ void __launch_bounds__(128) warp_sum(const float* __restrict__ x,
    float* __restrict__ xor_sums, float* __restrict__ down_sums) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float a = x[i];
  float b = a;
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, m);
    b += __shfl_down_sync(0xffffffffu, b, m);
  }
  __syncwarp();
  xor_sums[i] = a;
  if (threadIdx.x % 32 == 0) {
    down_sums[i / 32] = b;
  }
}
"""


def sig(name: str, *params: str) -> KernelSignature:
    """A KernelSignature from "ctype name" strings."""
    return KernelSignature(name, tuple(KernelParam(p.rsplit(" ", 1)[1], p.rsplit(" ", 1)[0])
                                       for p in params))


VADD_SIG = sig("vadd", "const float* a", "const float* b", "float* c", "int n")
MATMUL_SIG = sig("matmul", "const float* A", "const float* B", "float* C", "int M", "int N",
                 "int K")
ALL_SOURCES = {"vadd": VADD, "matmul": MATMUL, "matmul_racy": MATMUL_RACY, "index3d": INDEX3D,
               "rotate": ROTATE, "early_exit": DEADLOCK, "math": MATH, "warp_sum": WARP_SUM}


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test compiles into its own cache directory."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(cache))
    return cache


def run_matmul(source: str, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """C = A @ B through the emulated kernel, and the float64 reference."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.zeros((m, n), np.float32)
    module = compile_emu(source, [MATMUL_SIG])
    module.launch("matmul", ((n + 15) // 16, (m + 15) // 16), (16, 16), [a, b, c, m, n, k])
    return c, a.astype(np.float64) @ b.astype(np.float64)


def test_vadd_tail_guard() -> None:
    n, padded = 1000, 1024  # 4 blocks of 256: the last 24 threads must do nothing
    rng = np.random.default_rng(1)
    a = rng.standard_normal(padded, dtype=np.float32)
    b = rng.standard_normal(padded, dtype=np.float32)
    c = np.full(padded, -7.0, np.float32)
    compile_emu(VADD, [VADD_SIG]).launch("vadd", (n + 255) // 256, 256, [a, b, c, n])
    np.testing.assert_array_equal(c[:n], a[:n] + b[:n])
    assert np.all(c[n:] == -7.0)


def test_tiled_matmul_matches_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMLIR_EMU_THREADS", "4")  # blocks in parallel even on one core
    c, ref = run_matmul(MATMUL, 33, 65, 17)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
    c, ref = run_matmul(MATMUL, 17, 33, 65)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def test_missing_barrier_is_a_real_race() -> None:
    c, ref = run_matmul(MATMUL_RACY, 33, 65, 17)
    assert np.abs(c - ref).max() > 1.0


def test_multidimensional_grid_and_block() -> None:
    grid, block = (3, 2, 2), (4, 2, 3)
    nblocks, nthreads = int(np.prod(grid)), int(np.prod(block))
    out = np.full(nblocks * nthreads, -1, np.int32)
    compile_emu(INDEX3D, [sig("index3d", "int* out")]).launch("index3d", grid, block, [out])
    tz, ty, tx = np.indices(block[::-1]).reshape(3, -1)
    expected = np.arange(nblocks)[:, None] * 1000 + (tz * 100 + ty * 10 + tx)[None, :]
    np.testing.assert_array_equal(out, expected.ravel())


def test_barrier_heavy_grid_is_fast() -> None:
    """1000 blocks x 256 threads x 64 barriers: 16M fiber suspensions."""
    module = compile_emu(ROTATE, [sig("rotate", "int* out", "int rounds")])
    out = np.zeros(1000 * 256, np.int32)
    start = time.perf_counter()
    module.launch("rotate", 1000, 256, [out, 32])
    elapsed = time.perf_counter() - start
    t = np.arange(256)
    expected = np.arange(1000)[:, None] * 256 + (t + 32) % 256 + 32
    np.testing.assert_array_equal(out.reshape(1000, 256), expected)
    assert elapsed < 20.0, f"barrier-heavy grid took {elapsed:.2f}s"


def test_ucontext_fallback_matches(tmp_path: Path) -> None:
    """The portable ucontext fiber switch (used off x86-64) gives the same results.

    Loaded after a module with the default switch, this also checks that two loaded kernel
    files share no runtime state (their worker layouts differ).
    """
    run_matmul(MATMUL, 20, 20, 20)
    library = tmp_path / "matmul_ucontext.so"
    subprocess.run([CXX, *cxxflags(), "-DTMLIR_EMU_UCONTEXT", "-include", str(HEADER), "-x", "c++",
                    "-", "-o", str(library)], input=MATMUL + _launch_wrapper(MATMUL_SIG),
                   text=True, check=True)
    m, n, k = 40, 24, 50
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.zeros((m, n), np.float32)
    EmuModule(library, [MATMUL_SIG]).launch("matmul", (2, 3), (16, 16), [a, b, c, m, n, k])
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_deadlock_is_reported_and_module_stays_usable() -> None:
    module = compile_emu(DEADLOCK, [sig("early_exit", "float* x")])
    x = np.zeros(64, np.float32)
    with pytest.raises(EmuError, match=r"'early_exit'.*deadlock.*63 thread\(s\) wait at "
                                        r"__syncthreads\(\).*1 of 64 exited"):
        module.launch("early_exit", 2, 64, [x])
    vadd = compile_emu(VADD, [VADD_SIG])
    a = np.ones(300, np.float32)
    c = np.zeros(300, np.float32)
    vadd.launch("vadd", 2, 256, [a, a, c, 300])
    assert np.all(c == 2.0)


def test_math_intrinsics() -> None:
    n = 200
    x = np.linspace(-3.0, 3.0, n, dtype=np.float32)
    y = np.zeros(12 * n, np.float32)
    compile_emu(MATH, [sig("math", "const float* x", "float* y", "int n")]).launch(
        "math", 2, 128, [x, y, n])
    v = x.astype(np.float64)
    expected = [np.exp(v), np.tanh(v), np.maximum(v, 0.5), np.minimum(v, 0.5),
                np.sqrt(np.abs(v)), np.log(np.abs(v) + 1), np.abs(v) ** 1.5,
                np.vectorize(erf)(v), 1 / np.sqrt(np.abs(v) + 1), np.floor(v) + np.ceil(v),
                np.exp(v) + v / 3, v + np.maximum(np.arange(n), 2) + np.minimum(v, 0)]
    np.testing.assert_allclose(y.reshape(12, n), np.stack(expected), rtol=1e-5, atol=1e-5)


def test_warp_shuffle_reductions() -> None:
    x = np.random.default_rng(2).standard_normal(3 * 128, dtype=np.float32)
    xor_sums = np.zeros_like(x)
    down_sums = np.zeros(x.size // 32, np.float32)
    kernel = sig("warp_sum", "const float* x", "float* xor_sums", "float* down_sums")
    compile_emu(WARP_SUM, [kernel]).launch("warp_sum", 3, 128, [x, xor_sums, down_sums])
    warp_totals = x.astype(np.float64).reshape(-1, 32).sum(axis=1)
    np.testing.assert_allclose(xor_sums.reshape(-1, 32),
                               np.repeat(warp_totals[:, None], 32, axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(down_sums, warp_totals, rtol=1e-5, atol=1e-5)


def count_compiles(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record every compiler invocation that builds a shared object."""
    calls: list[list[str]] = []
    real_run = subprocess.run

    def spy(cmd, *args, **kwargs):  # type: ignore[no-untyped-def]
        if "-shared" in cmd:
            calls.append(list(cmd))
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    return calls


def test_cache_hit_skips_compiler(monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> None:
    calls = count_compiles(monkeypatch)
    first = compile_emu(VADD, [VADD_SIG])
    second = compile_emu(VADD, [VADD_SIG])
    assert len(calls) == 1
    assert first.path == second.path and first.path.parent == isolated_cache
    assert [p.name for p in isolated_cache.iterdir() if p.suffix not in (".pch", ".sha256")
            and p.name != ".sweep"] == [first.path.name]  # records and the sweep's total aside
    assert isinstance(second, EmuModule)


def test_compile_error_is_clear_and_leaves_no_file(isolated_cache: Path) -> None:
    bad = 'extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {' \
          " c[0] = undefined_thing; }"
    with pytest.raises(EmuError) as info:
        compile_emu(bad, [VADD_SIG])
    message = str(info.value)
    assert message.startswith("g++ failed to compile the kernel source")
    assert "undefined_thing" in message
    assert len(message.splitlines()) <= 22
    assert [p for p in isolated_cache.iterdir()  # no .so, no temp
            if p.suffix not in (".pch", ".sha256") and p.name != ".sweep"] == []


@pytest.mark.parametrize(("args", "grid", "block", "error"), [
    ("float64", 1, 32, r"kernel 'vadd': parameter 'a' \(const float\*\) expects dtype float32"),
    ("count", 1, 32, r"kernel 'vadd' takes 4 arguments \(a, b, c, n\), got 3"),
    ("strided", 1, 32, r"parameter 'b' .* C-contiguous"),
    ("readonly", 1, 32, r"parameter 'c' .* read-only"),
    ("float_n", 1, 32, r"parameter 'n' \(int\) expects an int, got float"),
    ("list", 1, 32, r"parameter 'a' .* expects a numpy array, got list"),
    ("ok", 0, 32, r"grid dimension x is 0"),
    ("ok", 1, (32, 33), r"block \(32, 33, 1\) has more than 1024 threads"),
    ("ok", 1, (1, 1, 65), r"block dimension z is 65"),
])
def test_launch_validation(args: str, grid: object, block: object, error: str) -> None:
    a = np.zeros(64, np.float32)
    readonly = np.zeros(64, np.float32)
    readonly.flags.writeable = False
    arg_lists = {
        "ok": [a, a, a.copy(), 64],
        "float64": [a.astype(np.float64), a, a.copy(), 64],
        "count": [a, a, a.copy()],
        "strided": [a, np.zeros(128, np.float32)[::2], a.copy(), 64],
        "readonly": [a, a, readonly, 64],
        "float_n": [a, a, a.copy(), 64.0],
        "list": [[0.0] * 64, a, a.copy(), 64],
    }
    module = compile_emu(VADD, [VADD_SIG])
    with pytest.raises(EmuError, match=error):
        module.launch("vadd", grid, block, arg_lists[args])  # type: ignore[arg-type]


def test_unknown_kernel_and_bad_signature() -> None:
    module = compile_emu(VADD, [VADD_SIG])
    with pytest.raises(EmuError, match=r"unknown kernel 'vsub' \(this module has: vadd\)"):
        module.launch("vsub", 1, 1, [])
    with pytest.raises(EmuError, match=r"parameter 'x' has unsupported C type 'char\*'"):
        compile_emu(VADD, [sig("vadd", "char* x")])


@pytest.mark.parametrize("name", sorted(ALL_SOURCES))
def test_sources_compile_with_nvcc(name: str, tmp_path: Path) -> None:
    """Every kernel the emulator runs in these tests is valid CUDA for a real GPU."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH; cannot check the sources compile as real CUDA")
    source = tmp_path / f"{name}.cu"
    source.write_text(ALL_SOURCES[name])
    result = subprocess.run([nvcc, "-ptx", "-arch=sm_90", "-x", "cu", str(source),
                             "-o", str(tmp_path / f"{name}.ptx")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def mapping_count() -> int:
    """How many memory mappings this process has (each fiber stack is two)."""
    return len(Path("/proc/self/maps").read_text().splitlines())


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
def test_close_unmaps_fiber_stacks() -> None:
    """Loading, running and closing many modules does not accumulate memory mappings."""
    out = np.zeros(2 * 256, np.int32)
    before = mapping_count()
    for _ in range(30):
        with compile_emu(ROTATE, [sig("rotate", "int* out", "int rounds")]) as module:
            module.launch("rotate", 2, 256, [out, 1])  # barriers keep 256 fibers alive
            while_loaded = mapping_count()
    assert while_loaded - before >= 2 * 256  # a block's stacks, each with its guard page
    assert mapping_count() - before < 64


def test_closed_module_refuses_launches() -> None:
    module = compile_emu(VADD, [VADD_SIG])
    module.close()
    module.close()  # idempotent
    with pytest.raises(EmuError, match=r"kernel 'vadd': emu module .*\.so is closed"):
        module.launch("vadd", 1, 64, [np.ones(64, np.float32)] * 3 + [64])


def test_precompiled_header_is_built_once_and_optional(isolated_cache: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The header is precompiled into the cache on first use and reused; when that fails,
    the plain header is included and kernels still compile."""
    from tmlir.backends.emu import emu

    first = emu._precompiled_header(emu.emu_header(), emu.cxxflags())
    assert first.parent.parent == isolated_cache and first.with_suffix(".h.gch").is_file()
    assert emu._precompiled_header(emu.emu_header(), emu.cxxflags()) == first
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(isolated_cache / "other"))

    run = subprocess.run

    def header_fails(cmd, *args, **kwargs):
        if "c++-header" in cmd:
            return subprocess.CompletedProcess(cmd, 1, b"", b"cc1plus: out of memory")
        return run(cmd, *args, **kwargs)

    monkeypatch.setattr(emu.subprocess, "run", header_fails)
    assert emu._precompiled_header(emu.emu_header(), emu.cxxflags()) == HEADER
    module = compile_emu(VADD, [VADD_SIG])
    a, b, c = (np.arange(8, dtype=np.float32) for _ in range(3))
    module.launch("vadd", 1, 8, [a, b, c, 8])
    np.testing.assert_array_equal(c, 2 * a)


def test_optimization_level_comes_from_the_environment(isolated_cache: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """$TMLIR_EMU_OPT replaces -O2 (unset: CXXFLAGS as is), each level builds its own
    cached module with the same results, and a bad level is one clear error."""
    from tmlir.backends.emu import emu

    monkeypatch.delenv(emu.OPT_ENV, raising=False)
    assert emu.cxxflags() == emu.CXXFLAGS and "-O2" in emu.CXXFLAGS
    paths = set()
    for level in ("0", "2"):
        monkeypatch.setenv(emu.OPT_ENV, level)
        assert f"-O{level}" in emu.cxxflags() and len(emu.cxxflags()) == len(emu.CXXFLAGS)
        with compile_emu(VADD, [VADD_SIG]) as module:
            a, b, c = (np.arange(8, dtype=np.float32) for _ in range(3))
            module.launch("vadd", 1, 8, [a, b, c, 8])
            np.testing.assert_array_equal(c, 2 * a)
            paths.add(module.path)
    assert len(paths) == 2
    monkeypatch.setenv(emu.OPT_ENV, "fast")
    with pytest.raises(EmuError, match=r"^\$TMLIR_EMU_OPT='fast' is not an optimization level; "
                                       r"expected one of 0, 1, 2, 3, s$"):
        compile_emu(VADD, [VADD_SIG])
