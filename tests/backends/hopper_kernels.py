"""Hand-written CUDA C kernels that exercise Hopper's primitives, with numpy references.

As `tensor_core_kernels` does for mma, ldmatrix and cp.async: each case is a `TcKernel`
(source with its prelude, signature, launch, inputs, expected output) that the emu runs and
a GPU could run the same way. A wgmma case stores A (64 x K) and B (K x N) into shared
memory at the offsets the tmlir layout of its operand gives (offset tables computed here by
`DataLayout.offset`, passed as inputs), makes descriptors with the LBO, SBO and swizzle
`wgmma_descriptor` derives from that layout (baked into the source) and multiplies K/k
steps, advancing each descriptor's start to the next tile. So a case is right only if the
descriptor addresses exactly the layout's offsets and the accumulator fragment is the
documented one. The planted variants omit the ``wgmma_wait`` (D is stored before it) or
the ``wgmma_fence``; mbarrier cases copy with ``cp.async.bulk`` and wait (or not).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from tensor_core_kernels import SENTINEL, TcKernel, _close, _exact, _signature

from tmlir.layout import DataLayout
from tmlir.wgmma_layouts import WGMMA_K, canonical_layout, tile_start, wgmma_descriptor


@dataclass(frozen=True)
class WgmmaCase:
    """One wgmma kernel's parameters: dtype, N, each operand's major and swizzle, K (a
    multiple of the instruction's), and the planted bug (``"wait"``/``"fence"``: omitted)."""

    dtype: str = "f16"
    n: int = 64
    a_major: str = "k"
    b_major: str = "k"
    a_swizzle: int = 128
    b_swizzle: int = 128
    k: int = 64
    accumulate: bool = True
    missing: str | None = None

    @property
    def name(self) -> str:
        name = (f"wgmma_{self.dtype}_n{self.n}_a{self.a_major}{self.a_swizzle}_b{self.b_major}{self.b_swizzle}"
                f"_k{self.k}")
        return name + ("" if self.accumulate else "_zero") + (f"_no_{self.missing}" if self.missing else "")

    @property
    def element_bytes(self) -> int:
        return 4 if self.dtype == "tf32" else 2

    def layouts(self) -> tuple[DataLayout, DataLayout]:
        """The [m, k] layout of A's buffer and the [n, k] one of B's."""
        return (canonical_layout(64, self.k, self.element_bytes, self.a_major, self.a_swizzle),  # type: ignore[arg-type]
                canonical_layout(self.n, self.k, self.element_bytes, self.b_major, self.b_swizzle))  # type: ignore[arg-type]


def _offsets(layout: DataLayout, rows: int, cols: int, transpose: bool) -> np.ndarray:
    """The storage offset of each element of a row-major ``rows x cols`` matrix, whose
    element (r, c) is the buffer's [r, c] (or [c, r] when `transpose`)."""
    return np.array([layout.offset((c, r) if transpose else (r, c)) for r in range(rows) for c in range(cols)],
                    np.int32)


def wgmma_source(case: WgmmaCase) -> str:
    """The kernel of `case` (128 threads): stage A and B in shared memory through the offset
    tables, load C into the accumulator by the fragment layout, multiply, store D."""
    lay_a, lay_b = case.layouts()
    eb, kk = case.element_bytes, WGMMA_K[case.dtype]
    desc_a = wgmma_descriptor(lay_a, eb, case.a_major, (64, kk))  # type: ignore[arg-type]
    desc_b = wgmma_descriptor(lay_b, eb, case.b_major, (case.n, kk))  # type: ignore[arg-type]
    elem = "float" if case.dtype == "tf32" else "unsigned short"
    regs = case.n // 2
    steps = case.k // kk
    starts_a = ", ".join(str(tile_start(lay_a, eb, (0, s * kk)) // eb) for s in range(steps))
    starts_b = ", ".join(str(tile_start(lay_b, eb, (0, s * kk)) // eb) for s in range(steps))
    trans = "" if case.dtype == "tf32" else f"<{int(case.a_major == 'mn')}, {int(case.b_major == 'mn')}>"
    call = f"tmlir_wgmma_m64n{case.n}k{kk}_{case.dtype}{trans}"
    store = f"  for (int i = 0; i < {regs}; ++i) D[row(i) * {case.n} + col(i)] = acc[i];\n"
    wait = f"  tmlir_wgmma_wait<0>();\n  tmlir_wgmma_fence_operand<{regs}>(acc);\n"
    fence = "  // no wgmma fence: the loads of C are unordered\n" if case.missing == "fence" else \
        "  tmlir_wgmma_fence();\n"
    body_end = (store + wait) if case.missing == "wait" else (wait + store)
    return (
        f"extern \"C\" __global__ void {case.name}(const {elem}* A, const {elem}* B, const int* a_off,\n"
        f"    const int* b_off, const float* C, float* D) {{\n"
        f"  __shared__ {elem} sa[{lay_a.size}] __align__(1024);\n"
        f"  __shared__ {elem} sb[{lay_b.size}] __align__(1024);\n"
        "  const int tid = threadIdx.x, warp = tid / 32, g = tid % 32 / 4, t = tid % 4;\n"
        f"  for (int i = tid; i < {64 * case.k}; i += 128) sa[a_off[i]] = A[i];\n"
        f"  for (int i = tid; i < {case.k * case.n}; i += 128) sb[b_off[i]] = B[i];\n"
        "  auto row = [&](int i) { return 16 * warp + 8 * (i >> 1 & 1) + g; };\n"
        "  auto col = [&](int i) { return 8 * (i >> 2) + 2 * t + (i & 1); };\n"
        f"  float acc[{regs}];\n"
        f"  for (int i = 0; i < {regs}; ++i) acc[i] = C[row(i) * {case.n} + col(i)];\n"
        "  tmlir_fence_proxy_async();  // the stores above, seen by the tensor cores\n"
        "  __syncthreads();\n"
        f"{fence}"
        f"  const int start_a[{steps}] = {{{starts_a}}}, start_b[{steps}] = {{{starts_b}}};\n"
        "#pragma unroll\n"
        f"  for (int s = 0; s < {steps}; ++s) {{\n"
        f"    const unsigned long long da = tmlir_wgmma_desc(&sa[start_a[s]], {desc_a.lbo}, {desc_a.sbo}, "
        f"{desc_a.swizzle});\n"
        f"    const unsigned long long db = tmlir_wgmma_desc(&sb[start_b[s]], {desc_b.lbo}, {desc_b.sbo}, "
        f"{desc_b.swizzle});\n"
        f"    {call}(acc, da, db, {'1' if case.accumulate else 's > 0'});\n"
        "  }\n"
        "  tmlir_wgmma_commit();\n"
        f"{body_end}"
        "}\n")


def _operand(rng: np.random.Generator, shape: tuple[int, int], dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(what the kernel gets, the values the tensor core multiplies, as float64)."""
    x = rng.standard_normal(shape)
    if dtype == "tf32":
        x32 = x.astype(np.float32)
        truncated = (x32.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
        return x32, truncated.astype(np.float64)  # wgmma drops the low 13 mantissa bits
    narrow = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    y = x.astype(narrow)
    return y.view(np.uint16), y.astype(np.float64)


def wgmma_case(case: WgmmaCase, seed: int = 0) -> TcKernel:
    """D = A @ B + C (or A @ B when not `accumulate`) for one warpgroup; with a planted bug
    the emu's answer is C (missing wait: read before the wgmma landed) or NaN (missing fence)."""
    rng = np.random.default_rng(seed)
    a, a64 = _operand(rng, (64, case.k), case.dtype)
    b, b64 = _operand(rng, (case.k, case.n), case.dtype)
    c = rng.standard_normal((64, case.n)).astype(np.float32)
    lay_a, lay_b = case.layouts()
    a_off = _offsets(lay_a, 64, case.k, transpose=False)
    b_off = _offsets(lay_b, case.k, case.n, transpose=True)  # B[k][n] is the buffer's [n, k]
    expected = a64 @ b64 + (c.astype(np.float64) if case.accumulate else 0.0)
    if case.missing == "wait":
        expected = c.astype(np.float64)
    elif case.missing == "fence":
        expected = np.full_like(expected, np.nan)
    ptype = "const float*" if case.dtype == "tf32" else "const unsigned short*"
    sig = _signature(case.name, ("A", ptype), ("B", ptype), ("a_off", "const int*"), ("b_off", "const int*"),
                     ("C", "const float*"), ("D", "float*"))
    compare = _exact if case.missing else _close
    return TcKernel(wgmma_source(case), sig, 128, (a, b, a_off, b_off, c), np.zeros((64, case.n), np.float32),
                    expected.astype(np.float32), compare, gpu_checked=0 if case.missing else None)


WGMMA_CASES = (
    WgmmaCase(),                                                        # f16, 128B K-major both, 4 k-steps
    WgmmaCase("bf16", 128, "mn", "mn", 128, 128, 16),                   # MN-major both
    WgmmaCase("f16", 256, "k", "mn", 64, 32, 32),                        # 64B / 32B, N 256
    WgmmaCase("f16", 32, "mn", "k", 0, 0, 32),                           # no swizzle (core matrices)
    WgmmaCase("bf16", 96, "k", "k", 32, 0, 16, accumulate=False),        # scale-d 0
    WgmmaCase("tf32", 64, "k", "k", 128, 128, 32),                       # tf32, 128B rows of 32 floats
    WgmmaCase("tf32", 8, "k", "k", 0, 64, 16),
)
PLANTED = (WgmmaCase(n=16, a_swizzle=32, b_swizzle=32, k=16, missing="wait"),
           WgmmaCase(n=16, a_swizzle=32, b_swizzle=32, k=16, missing="fence"))


def fence_rules_case() -> TcKernel:
    """What a fence covers: `acc` and `acc2` hold C before the kernel's only fence; a wgmma
    on `acc`, its wait, then one on `acc2` (ordered by that fence: D = A@B + C), then the
    thread adds 0.5 to `acc` and runs a wgmma on it with no fence after that write
    (unordered: NaN). Output: D of `acc2`, then D of `acc`."""
    case = WgmmaCase(n=16, a_swizzle=32, b_swizzle=32, k=16)
    lay_a, lay_b = case.layouts()
    desc_a = wgmma_descriptor(lay_a, 2, "k", (64, 16))
    desc_b = wgmma_descriptor(lay_b, 2, "k", (16, 16))
    source = wgmma_source(case).replace(case.name, "wgmma_fence_rules")
    source = source.replace("  float acc[8];\n", "  float acc[8], acc2[8];\n")
    source = source.replace("acc[i] = C[row(i) * 16 + col(i)];", "acc[i] = acc2[i] = C[row(i) * 16 + col(i)];")
    call = "tmlir_wgmma_m64n16k16_f16<0, 0>"
    tail = (
        "  tmlir_wgmma_commit();\n  tmlir_wgmma_wait<0>();\n"
        f"  const unsigned long long da = tmlir_wgmma_desc(&sa[0], {desc_a.lbo}, {desc_a.sbo}, {desc_a.swizzle});\n"
        f"  const unsigned long long db = tmlir_wgmma_desc(&sb[0], {desc_b.lbo}, {desc_b.sbo}, {desc_b.swizzle});\n"
        f"  {call}(acc2, da, db, 1);  // its writes came before the fence: ordered\n"
        "  tmlir_wgmma_commit();\n  tmlir_wgmma_wait<0>();\n"
        "  for (int i = 0; i < 8; ++i) D[row(i) * 16 + col(i)] = acc2[i];\n"
        "  for (int i = 0; i < 8; ++i) acc[i] += 0.5f;  // a write no fence orders\n"
        f"  {call}(acc, da, db, 1);\n"
        "  tmlir_wgmma_commit();\n  tmlir_wgmma_wait<0>();\n"
        "  for (int i = 0; i < 8; ++i) D[1024 + row(i) * 16 + col(i)] = acc[i];\n}\n")
    source = source[:source.index("  tmlir_wgmma_commit();")] + tail
    plain = wgmma_case(case)
    expected = np.concatenate([plain.expected.reshape(-1), np.full(1024, np.nan, np.float32)])
    sig = _signature("wgmma_fence_rules", *((p.name, p.ctype) for p in plain.signature.params))
    return TcKernel(source, sig, 128, plain.inputs, np.zeros(2048, np.float32), expected, _close_or_nan,
                    gpu_checked=1024)


def _close_or_nan(actual: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5, equal_nan=True)


# ---- mbarrier and bulk copies ------------------------------------------------------------
def bulk_source(name: str, wait: bool, per_thread: bool) -> str:
    """A 128-thread kernel: shared memory starts as SENTINEL; the mbarrier expects 2048 bytes
    (4 bulk copies of 512 by thread 0, or one of 16 by each thread when `per_thread`, thread
    0 announcing them all); every thread waits on phase 0 (unless not `wait`: the planted
    race) and writes its neighbour's 4 floats to `out`. Then the same barrier's phase 1
    copies the second half of `src` over the first (tests the parity)."""
    copy = ("  tmlir_cp_async_bulk(&buf[4 * tid], src + 4 * tid + {base}, 16, &bar[0]);\n" if per_thread else
            "  if (tid == 0)\n    for (int c = 0; c < 4; ++c)\n"
            "      tmlir_cp_async_bulk(&buf[128 * c], src + 128 * c + {base}, 512, &bar[0]);\n")
    wait0 = "  tmlir_mbarrier_wait(&bar[0], 0);\n" if wait else "  // no wait: the copies have not landed\n"
    return (
        f"extern \"C\" __global__ void {name}(const float* src, float* out) {{\n"
        "  __shared__ float buf[512] __align__(16);\n"
        "  __shared__ unsigned long long bar[1];\n"
        "  const int tid = threadIdx.x, next = (tid + 1) % 128;\n"
        f"  for (int i = tid; i < 512; i += 128) buf[i] = {SENTINEL:.1f}f;\n"
        "  if (tid == 0) tmlir_mbarrier_init(&bar[0], 1);\n"
        "  __syncthreads();\n"
        "  if (tid == 0) tmlir_mbarrier_arrive_expect_tx(&bar[0], 2048);\n"
        + copy.format(base=0) + wait0 +
        "  for (int k = 0; k < 4; ++k) out[4 * next + k] = buf[4 * next + k];\n"
        "  __syncthreads();  // all have read: phase 1 may overwrite\n"
        "  if (tid == 0) tmlir_mbarrier_arrive_expect_tx(&bar[0], 2048);\n"
        + copy.format(base=512) +
        "  tmlir_mbarrier_wait(&bar[0], 1);\n"
        "  for (int k = 0; k < 4; ++k) out[512 + 4 * next + k] = buf[4 * next + k];\n"
        "}\n")


def bulk_case(wait: bool = True, per_thread: bool = False) -> TcKernel:
    src = np.arange(1, 1025, dtype=np.float32)
    first = src[:512] if wait else np.full(512, SENTINEL, np.float32)
    expected = np.concatenate([first, src[512:]])
    name = "bulk_" + ("threads" if per_thread else "one") + ("" if wait else "_nowait")
    sig = _signature(name, ("src", "const float*"), ("out", "float*"))
    return TcKernel(bulk_source(name, wait, per_thread), sig, 128, (src,), np.zeros(1024, np.float32), expected,
                    _exact, gpu_checked=None if wait else 0)


NEVER_COMPLETES = TcKernel(
    "extern \"C\" __global__ void bulk_short(const float* src, float* out) {\n"
    "  __shared__ float buf[64] __align__(16);\n"
    "  __shared__ unsigned long long bar[1];\n"
    "  if (threadIdx.x == 0) tmlir_mbarrier_init(&bar[0], 1);\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) {\n"
    "    tmlir_mbarrier_arrive_expect_tx(&bar[0], 256);  // announces 256 bytes, copies 128\n"
    "    tmlir_cp_async_bulk(&buf[0], src, 128, &bar[0]);\n"
    "  }\n"
    "  tmlir_mbarrier_wait(&bar[0], 0);\n"
    "  out[threadIdx.x] = buf[threadIdx.x];\n"
    "}\n",
    _signature("bulk_short", ("src", "const float*"), ("out", "float*")), 64,
    (np.ones(64, np.float32),), np.zeros(64, np.float32), np.ones(64, np.float32), _exact)


def cases() -> list[TcKernel]:
    """Every Hopper test kernel with correct synchronization."""
    return [*(wgmma_case(c) for c in WGMMA_CASES), bulk_case(), bulk_case(per_thread=True)]


def planted() -> list[TcKernel]:
    """The kernels with a missing wait or fence (and the one whose barrier never completes)."""
    return [*(wgmma_case(c) for c in PLANTED), fence_rules_case(), bulk_case(wait=False), NEVER_COMPLETES]
