"""Hand-written CUDA C kernels that exercise the tensor-core primitives, with numpy references.

Each `TcKernel` holds a complete source (the primitives' prelude included, so NVRTC, nvcc
and the emu compile it as is), its `KernelSignature`, its launch shape, the inputs to pass
and the output array with its expected value. `cases()` lists them all; the emu tests
run them and a GPU runner can run the very same kernels:

    for case in cases():
        outputs = run_on_gpu(case.source, case.signature, case.grid, case.block, case.args())
        case.check(outputs, on_gpu=True)   # raises AssertionError on a mismatch

Fragments are loaded by the formulas of docs/tensor_cores.md, so a kernel computes the
right answer only if the primitive's layout is the contract's. Where the expected output
relies on the emu's deterministic cp.async timing (a GPU may or may not have finished a
copy that was not waited for), ``check(args, on_gpu=True)`` compares only the part a GPU
must match (`TcKernel.gpu_checked`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tmlir.backends.kernel_abi import KernelParam, KernelSignature
from tmlir.backends.tensor_core import prelude_for

SENTINEL = -1.0  # what shared memory holds before a cp.async lands


@dataclass(frozen=True)
class TcKernel:
    """One test kernel: source, signature, launch shape, inputs and expected outputs."""

    body: str                          # the kernel, without the primitives' prelude
    signature: KernelSignature
    block: int
    inputs: tuple[np.ndarray, ...]
    output: np.ndarray                 # its shape and dtype; args() passes a zeroed copy
    expected: np.ndarray
    compare: Callable[[np.ndarray, np.ndarray], None]
    #: How many leading output elements a GPU must match too (None: all). The rest depend
    #: on when an unwaited cp.async lands, which the emu fixes (never before its wait).
    gpu_checked: int | None = None

    @property
    def name(self) -> str:
        return self.signature.name

    @property
    def source(self) -> str:
        """The whole source: the definitions of the primitives it calls, then the kernel."""
        return combined_source([self])

    grid = 1

    def args(self) -> list[np.ndarray]:
        return [*(a.copy() for a in self.inputs), np.zeros_like(self.output)]

    def check(self, args: list[np.ndarray], on_gpu: bool = False) -> None:
        """Compare the output (the last of `args`) with the expected one; raises AssertionError."""
        n = self.gpu_checked if on_gpu and self.gpu_checked is not None else self.output.size
        self.compare(args[-1].reshape(-1)[:n], self.expected.reshape(-1)[:n])


def _signature(name: str, *params: tuple[str, str]) -> KernelSignature:
    return KernelSignature(name, tuple(KernelParam(n, c) for n, c in params))


def combined_source(kernels: list[TcKernel]) -> str:
    """One source holding every kernel of `kernels` (names must differ), prelude first."""
    bodies = "".join(k.body for k in kernels)
    return prelude_for(bodies) + bodies


def _close(actual: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def _exact(actual: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_array_equal(actual, expected)


# ---- mma ---------------------------------------------------------------------------------
_PAIR = ("#ifndef TC_TEST_PAIR\n#define TC_TEST_PAIR\n"
         "__device__ __forceinline__ unsigned pair(unsigned short lo, unsigned short hi) "
         "{ return (unsigned)lo | ((unsigned)hi << 16); }\n#endif\n")


def mma_source(kind: str, name: str, swap_a12: bool = False) -> str:
    """A one-warp kernel `name` for `kind` (f16, bf16, tf32): D = A*B + C, fragments loaded by
    the contract's formulas from A (16xK row-major), B (Kx8 row-major: B[k*8 + n]) and C
    (16x8). `swap_a12` loads a[1] and a[2] swapped: a wrong layout, for a test that fails."""
    i1, i2 = (2, 1) if swap_a12 else (1, 2)
    if kind == "tf32":
        params = "const float* A, const float* B"
        loads = (f"  a[0] = __float_as_uint(A[g * 8 + t]);\n"
                 f"  a[{i1}] = __float_as_uint(A[(g + 8) * 8 + t]);\n"
                 f"  a[{i2}] = __float_as_uint(A[g * 8 + t + 4]);\n"
                 f"  a[3] = __float_as_uint(A[(g + 8) * 8 + t + 4]);\n"
                 "  b[0] = __float_as_uint(B[t * 8 + g]);\n"
                 "  b[1] = __float_as_uint(B[(t + 4) * 8 + g]);\n")
        call, helper = "tmlir_mma_m16n8k8_tf32", ""
    else:
        params = "const unsigned short* A, const unsigned short* B"
        loads = (f"  a[0] = pair(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]);\n"
                 f"  a[{i1}] = pair(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]);\n"
                 f"  a[{i2}] = pair(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]);\n"
                 f"  a[3] = pair(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9]);\n"
                 "  b[0] = pair(B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g]);\n"
                 "  b[1] = pair(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g]);\n")
        call, helper = f"tmlir_mma_m16n8k16_{kind}", _PAIR
    return (
        f"{helper}extern \"C\" __global__ void {name}({params}, const float* C, float* D) {{\n"
        "  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;\n"
        "  unsigned a[4], b[2];\n  float c[4], d[4];\n"
        f"{loads}"
        "  for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];\n"
        f"  {call}(d, a, b, c);\n"
        "  for (int i = 0; i < 4; ++i) D[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = d[i];\n"
        "}\n")


def tf32_truncate(x: np.ndarray) -> np.ndarray:
    """Floats exactly representable in tf32 (10 mantissa bits), by truncation."""
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def tf32_rna(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32 of finite floats: to nearest, ties away from zero, 10 mantissa bits."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def mma_case(kind: str, seed: int = 0, swap_a12: bool = False, tf32_exact: bool = True) -> TcKernel:
    """D = A*B + C for one warp, random A, B exactly representable in `kind` (for tf32 only
    with `tf32_exact`; otherwise the primitive must round them as cvt.rna does)."""
    rng = np.random.default_rng(seed)
    k = 8 if kind == "tf32" else 16
    a, b = rng.standard_normal((16, k)), rng.standard_normal((k, 8))
    c = rng.standard_normal((16, 8)).astype(np.float32)
    name = f"mma_{kind}" + ("_swapped" if swap_a12 else "") + ("" if tf32_exact else "_rna")
    if kind == "tf32":
        a, b = (tf32_truncate(a), tf32_truncate(b)) if tf32_exact else (a.astype(np.float32), b.astype(np.float32))
        inputs = (a, b)
        a, b = tf32_rna(a), tf32_rna(b)  # what the tensor core multiplies
    else:
        narrow = np.float16 if kind == "f16" else ml_dtypes.bfloat16
        a, b = a.astype(narrow), b.astype(narrow)
        inputs = (a.view(np.uint16), b.view(np.uint16))
    expected = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    ptype = "const float*" if kind == "tf32" else "const unsigned short*"
    sig = _signature(name, ("A", ptype), ("B", ptype), ("C", "const float*"), ("D", "float*"))
    return TcKernel(mma_source(kind, name, swap_a12), sig, 32, (*inputs, c), np.zeros((16, 8), np.float32),
                    expected.astype(np.float32), _close)


# ---- ldmatrix ----------------------------------------------------------------------------
LDMATRIX_VARIANTS = ((1, False), (2, False), (4, False), (1, True), (2, True), (4, True))
# Lane 8j + r of the warp gives the address of row r of matrix j: row ROW_PERM[r] of shared
# tile (j + 1) % 4, so the primitive must use each lane's own address.
ROW_PERM = (3, 0, 7, 5, 1, 6, 2, 4)

LDMATRIX = (
    "extern \"C\" __global__ void ldmatrix_all(const unsigned short* M, unsigned int* R) {\n"
    "  alignas(16) __shared__ unsigned short tiles[4 * 8 * 8];\n"
    "  const int lane = threadIdx.x;\n"
    "  for (int i = lane; i < 4 * 8 * 8; i += 32) tiles[i] = M[i];\n"
    "  __syncthreads();\n"
    f"  const int perm[8] = {{{', '.join(map(str, ROW_PERM))}}};\n"
    "  const unsigned short* row = &tiles[((lane / 8 + 1) % 4) * 64 + perm[lane % 8] * 8];\n"
    "  unsigned r[4];\n"
    + "".join(f"  tmlir_ldmatrix_x{n}{'_trans' if t else ''}(r, row);\n"
              f"  for (int j = 0; j < {n}; ++j) R[({v} * 32 + lane) * 4 + j] = r[j];\n"
              for v, (n, t) in enumerate(LDMATRIX_VARIANTS))
    + "}\n")


def ldmatrix_expected(tiles: np.ndarray) -> np.ndarray:
    """R[variant, lane, j] by the contract's formula (unused words stay 0)."""
    out = np.zeros((len(LDMATRIX_VARIANTS), 32, 4), np.uint32)
    for v, (n, trans) in enumerate(LDMATRIX_VARIANTS):
        for j in range(n):
            m = tiles[(j + 1) % 4][list(ROW_PERM)]  # matrix j: its rows as the lanes address them
            for lane in range(32):
                r, c = lane // 4, 2 * (lane % 4)
                lo, hi = (m[c, r], m[c + 1, r]) if trans else (m[r, c], m[r, c + 1])
                out[v, lane, j] = int(lo) | int(hi) << 16
    return out


def ldmatrix_case(seed: int = 0) -> TcKernel:
    tiles = np.random.default_rng(seed).permutation(4 * 64).astype(np.uint16) * 97 + 5  # distinct
    sig = _signature("ldmatrix_all", ("M", "const unsigned short*"), ("R", "unsigned int*"))
    return TcKernel(LDMATRIX, sig, 32, (tiles,), np.zeros((6, 32, 4), np.uint32),
                    ldmatrix_expected(tiles.reshape(4, 8, 8)), _exact)


# ---- cp.async ----------------------------------------------------------------------------
def cp_async_source(wait: str | None) -> str:
    """A 32-thread kernel ``cp_async_<name>``: shared memory is filled with SENTINEL, each
    thread copies 16, 8 and 4 bytes (three buffers) with cp.async, commits, waits (`wait` is
    the statement; None: no wait -- the planted race) and, after a barrier, writes its
    neighbour's part of each buffer to `out` (so a copy must be visible to other threads)."""
    name = "nowait" if wait is None else "wait"
    return (
        f"extern \"C\" __global__ void cp_async_{name}(const float* src, float* out) {{\n"
        "  alignas(16) __shared__ float buf[4 * 32 + 2 * 32 + 32];\n"
        "  const int tid = threadIdx.x, next = (tid + 1) % 32;\n"
        f"  for (int i = tid; i < 7 * 32; i += 32) buf[i] = {SENTINEL:.1f}f;\n"
        "  __syncthreads();\n"
        "  tmlir_cp_async<16>(&buf[4 * tid], src + 4 * tid);\n"
        "  tmlir_cp_async<8>(&buf[128 + 2 * tid], src + 128 + 2 * tid);\n"
        "  tmlir_cp_async<4>(&buf[192 + tid], src + 192 + tid);\n"
        "  tmlir_cp_async_commit();\n"
        f"  {wait or '// no wait: the copies may not have landed'}\n"
        "  __syncthreads();\n"
        "  for (int k = 0; k < 4; ++k) out[4 * next + k] = buf[4 * next + k];\n"
        "  for (int k = 0; k < 2; ++k) out[128 + 2 * next + k] = buf[128 + 2 * next + k];\n"
        "  out[192 + next] = buf[192 + next];\n"
        "}\n")


CP_ASYNC_GROUPS = (
    "extern \"C\" __global__ void cp_async_groups(const float* src, float* out) {\n"
    "  alignas(16) __shared__ float buf[2 * 128];\n"
    "  const int tid = threadIdx.x, next = (tid + 1) % 32;\n"
    f"  for (int i = tid; i < 2 * 128; i += 32) buf[i] = {SENTINEL:.1f}f;\n"
    "  __syncthreads();\n"
    "  tmlir_cp_async<16>(&buf[4 * tid], src + 4 * tid);\n"
    "  tmlir_cp_async_commit();  // group 0\n"
    "  tmlir_cp_async<16>(&buf[128 + 4 * tid], src + 128 + 4 * tid);\n"
    "  tmlir_cp_async_commit();  // group 1\n"
    "  tmlir_cp_async_wait<1>();  // group 0 has landed; group 1 may still be in flight\n"
    "  __syncthreads();\n"
    "  for (int k = 0; k < 4; ++k) out[4 * next + k] = buf[4 * next + k];\n"
    "  for (int k = 0; k < 4; ++k) out[128 + 4 * next + k] = buf[128 + 4 * next + k];\n"
    "  __syncthreads();  // all have read: group 1 may land now\n"
    "  tmlir_cp_async_wait<0>();\n"
    "}\n")


def _cp_sig(name: str) -> KernelSignature:
    return _signature(name, ("src", "const float*"), ("out", "float*"))


def cp_async_case(wait: bool = True) -> TcKernel:
    src = np.arange(1, 225, dtype=np.float32)
    expected = src if wait else np.full_like(src, SENTINEL)
    name = "cp_async_wait" if wait else "cp_async_nowait"
    return TcKernel(cp_async_source("tmlir_cp_async_wait<0>();" if wait else None), _cp_sig(name), 32,
                    (src,), np.zeros_like(src), expected, _exact, gpu_checked=None if wait else 0)


def cp_async_groups_case() -> TcKernel:
    """On the emu the newer group is not visible after wait<1>; on a GPU only the older one
    is checked (compare the first half with `check`, the second is timing-dependent)."""
    src = np.arange(1, 257, dtype=np.float32)
    expected = np.concatenate([src[:128], np.full(128, SENTINEL, np.float32)])
    return TcKernel(CP_ASYNC_GROUPS, _cp_sig("cp_async_groups"), 32, (src,), np.zeros_like(src),
                    expected, _exact, gpu_checked=128)


def cp_async_zfill_source(wait: str | None) -> str:
    """A 32-thread kernel ``cp_async_zfill_<name>``: threads 0-23 copy 16 bytes (their row
    of a 24 x 4 float matrix) and 4 bytes (one float after it); threads 24-31 are past the
    end: their zero-filling copies get the clamped source of row 0 and must land zeros.
    Shared memory starts as SENTINEL; as in `cp_async_source`, each thread then writes its
    neighbour's part, after the wait (`wait`; None: none, the planted race) and a barrier."""
    name = "nowait" if wait is None else "wait"
    return (
        f"extern \"C\" __global__ void cp_async_zfill_{name}(const float* src, float* out) {{\n"
        "  alignas(16) __shared__ float buf[4 * 32 + 32];\n"
        "  const int tid = threadIdx.x, next = (tid + 1) % 32;\n"
        "  const bool inside = tid < 24;\n"
        "  const int row = inside ? tid : 0;  // a zero-filled copy's source: clamped into src\n"
        f"  for (int i = tid; i < 5 * 32; i += 32) buf[i] = {SENTINEL:.1f}f;\n"
        "  __syncthreads();\n"
        "  tmlir_cp_async_zfill<16>(&buf[4 * tid], src + 4 * row, inside);\n"
        "  tmlir_cp_async_zfill<4>(&buf[128 + tid], src + 96 + row, inside);\n"
        "  tmlir_cp_async_commit();\n"
        f"  {wait or '// no wait: neither the data nor the zeros may have landed'}\n"
        "  __syncthreads();\n"
        "  for (int k = 0; k < 4; ++k) out[4 * next + k] = buf[4 * next + k];\n"
        "  out[128 + next] = buf[128 + next];\n"
        "}\n")


def cp_async_zfill_case(wait: bool = True) -> TcKernel:
    """Rows 0-23 copied, rows 24-31 zero-filled (16- and 4-byte copies); on the emu without
    the wait nothing has landed, the zeros included."""
    src = np.arange(1, 121, dtype=np.float32)
    expected = np.concatenate([src[:96], np.zeros(32, np.float32), src[96:], np.zeros(8, np.float32)])
    if not wait:
        expected = np.full_like(expected, SENTINEL)
    name = "cp_async_zfill_wait" if wait else "cp_async_zfill_nowait"
    return TcKernel(cp_async_zfill_source("tmlir_cp_async_wait<0>();" if wait else None), _cp_sig(name), 32,
                    (src,), np.zeros(160, np.float32), expected, _exact, gpu_checked=None if wait else 0)


def cases() -> list[TcKernel]:
    """Every test kernel with correct fragment handling (the swapped-layout mma excluded)."""
    return [mma_case("f16"), mma_case("bf16"), mma_case("tf32"), mma_case("tf32", tf32_exact=False),
            ldmatrix_case(),
            cp_async_case(), cp_async_case(wait=False), cp_async_groups_case(),
            cp_async_zfill_case(), cp_async_zfill_case(wait=False)]
