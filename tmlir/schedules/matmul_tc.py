"""The tensor-core matmul template: ``C[M, N] (f32) = A[M, K] @ B[K, N] (+ bias[N])``.

In: a 2-D `MatmulProblem` (A and B row-major, f16 or bf16; an optional f32 bias over N)
and `MatmulTcParams`. Out: a ``tm.kernel`` ``(A, B, [bias,] C)`` that computes it with
``mma.sync.m16n8k16`` (``tm.mma``), fed by ``ldmatrix`` from shared tiles that a
``stages``-deep ``cp.async`` pipeline fills. Each block computes a ``block_m x block_n``
tile of C; its ``warps_m x warps_n`` warps each own a ``(block_m / warps_m) x (block_n /
warps_n)`` sub-tile, a grid of 16x8 mma tiles whose f32 accumulators (layout ``MMA_ACC``
of ``mma_layouts``) stay in registers::

    blocks   spatial(M / block_m, N / block_n)                       on block_id
    warps    spatial(warps_m, warps_n)                               on tid / 32
    mma      repeat(mma_m, mma_n) of 16x8 tiles, one warp each       (lane = tid % 32)

The k dimension is walked in ``block_k`` tiles through ``stages`` shared buffers:

* prologue: tiles ``0 .. stages-2`` are issued, each as 16-byte ``cp.async`` copies
  (global -> shared, ``repeat * spatial`` over the tile's 8-element chunks, consecutive
  threads on consecutive chunks) closed by one ``cp_async_commit`` per tile;
* k-step ``kt``: ``cp_async_wait pending(stages-2)`` (tile ``kt`` has landed for this
  thread), one barrier (for every thread, and every thread is done with tile ``kt-1``),
  then the copies of tile ``kt+stages-1`` into the buffer tile ``kt-1`` used (an empty
  commit past the last tile keeps the group count), then per 16-wide k slice ``ldmatrix
  .x4`` of each A 16x16 fragment, ``ldmatrix .x2.trans`` of each B 16x8 fragment (B is
  row-major ``K x N``; ``.trans`` gives the ``.col`` operand) and the mmas.

Shared tiles are ``a_smem[stages][block_m][block_k]`` and ``b_smem[stages][block_k]
[block_n]``, each row padded by 8 halves (16 bytes): the 8 rows an ``ldmatrix`` phase
reads then start 16 bytes apart modulo 128, on 8 distinct 4-bank groups -- no conflicts --
and every row stays 16-byte aligned for ``cp.async`` and ``ldmatrix``.

Partial tiles: a 16-byte chunk past M, N or K is not copied; the thread stores 8 zeros
there instead (plain stores, ordered by the k-step's barrier). This needs K and N to be
multiples of 8 (a chunk is all in or all out): other shapes raise `NoTemplate` naming the
shape. The epilogue adds the bias and stores with guards only on the dims that overhang.
The parameters form a small space, declared at the end of this file
(``MATMUL_TC_SPACE``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IntegerType, MemRefType
from xdsl.ir import Attribute, Block, SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import MAX_REGISTERS_PER_THREAD, MAX_STATIC_SHARED_BYTES, WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.layout import row_major
from tmlir.mapping import repeat, spatial
from tmlir.schedules.common import kernel_attributes, name_args
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.registry import NoTemplate
from tmlir.schedules.space import Constraint, Param, Space

HALF_BYTES = 2
CHUNK = 8  # halves per 16-byte cp.async
SMEM_PAD = 8  # halves added to every shared row (see the module docstring)
MMA_M, MMA_N, MMA_K = 16, 8, 16


@dataclass(frozen=True)
class MatmulTcParams:
    """Block tile, warps per block and pipeline depth; warp and mma tiles follow."""

    block_m: int = 128
    block_n: int = 128
    block_k: int = 32
    warps: tuple[int, int] = (2, 2)
    stages: int = 3

    def __post_init__(self) -> None:
        if self.block_k % MMA_K:
            raise ValueError(f"block_k must be a multiple of {MMA_K}, got {self.block_k}")
        if not 2 <= self.stages <= 4:
            raise ValueError(f"stages must be 2, 3 or 4, got {self.stages}")

    @property
    def threads(self) -> int:
        return self.warps[0] * self.warps[1] * WARP_SIZE

    @property
    def warp_m(self) -> int:
        return self.block_m // self.warps[0]

    @property
    def warp_n(self) -> int:
        return self.block_n // self.warps[1]

    @property
    def mma_tiles(self) -> tuple[int, int]:
        """16x8 mma tiles of one warp along M and N."""
        return self.warp_m // MMA_M, self.warp_n // MMA_N

    def tile_grid(self, problem: MatmulProblem) -> tuple[int, int]:
        return math.ceil(problem.m / self.block_m), math.ceil(problem.n / self.block_n)

    def blocks(self, problem: MatmulProblem) -> int:
        return math.prod(self.tile_grid(problem))

    def shared_bytes(self) -> int:
        """Both operands' padded tiles, all stages."""
        per_stage = self.block_m * (self.block_k + SMEM_PAD) + self.block_k * (self.block_n + SMEM_PAD)
        return self.stages * per_stage * HALF_BYTES

    def register_estimate(self) -> int:
        """Accumulators, one k slice of A and B fragments, ~40 for addresses and loop state."""
        mm, mn = self.mma_tiles
        return 4 * mm * mn + 4 * mm + 2 * mn + 40

    def describe(self) -> dict[str, int | str]:
        return {"block_m": self.block_m, "block_n": self.block_n, "block_k": self.block_k,
                "warps": f"{self.warps[0]}x{self.warps[1]}", "stages": self.stages,
                "threads": self.threads}


def check_problem(problem: MatmulProblem, element: Attribute) -> None:
    """`NoTemplate` naming what the template does not cover in `problem`."""
    p = problem
    shape = f"{p.m}x{p.n}x{p.k} (MxNxK)"
    if not isinstance(element, Float16Type | BFloat16Type):
        raise NoTemplate(f"the tensor-core matmul takes f16 or bf16 operands, got {element}")
    if len(p.out_shape) != 2 or p.transpose_lhs or p.transpose_rhs or p.alpha != 1.0 or p.beta != 1.0:
        raise NoTemplate("the tensor-core matmul covers 2-D C = A @ B (+ bias) only, "
                         "without transposes, alpha or beta")
    if p.bias_shape not in (None, (p.n,)):
        raise NoTemplate(f"the tensor-core matmul takes a bias of shape ({p.n},), got {p.bias_shape}")
    if p.k % CHUNK or p.n % CHUNK:
        raise NoTemplate(f"the tensor-core matmul needs K and N multiples of {CHUNK} (16-byte "
                         f"copies), got {shape}")


def matmul_tc_kernel(name: str, problem: MatmulProblem, params: MatmulTcParams,
                     element: Attribute = Float16Type(), *, wait: bool = True) -> tm.KernelOp:
    """The kernel ``(A, B, [bias,] C)`` for `problem` with `params`; A and B of `element`
    (f16 or bf16), bias and C f32. `wait=False` leaves out the ``cp_async_wait`` of every
    k-step (a planted race, for tests)."""
    check_problem(problem, element)
    p, P = problem, params
    dtype = "f16" if isinstance(element, Float16Type) else "bf16"
    arg_types = [MemRefType(element, [p.m, p.k]), MemRefType(element, [p.k, p.n]),
                 *([MemRefType(Float32Type(), [p.n])] if p.bias_shape else []),
                 MemRefType(Float32Type(), [p.m, p.n])]
    kernel = tm.KernelOp(name, arg_types, P.blocks(p), P.threads, kernel_attributes(
        "matmul_tc", {**P.describe(), "dtype": dtype, "M": p.m, "N": p.n, "K": p.k}))
    name_args(kernel, ["A", "B", *(["bias"] if p.bias_shape else []), "C"])
    a, bmat, *rest = kernel.args
    bias, c = (rest[0], rest[1]) if p.bias_shape else (None, rest[0])
    _TcGemm(IRBuilder.at_end(kernel.body.block), p, P, dtype, element).build(a, bmat, bias, c, wait)
    return kernel


class _TcGemm:
    """Builds the kernel body (one object per kernel: the builder and the shared buffers)."""

    def __init__(self, b: IRBuilder, problem: MatmulProblem, params: MatmulTcParams, dtype: str,
                 element: Attribute) -> None:
        self.b, self.p, self.P, self.dtype, self.element = b, problem, params, dtype, element
        self.k_tiles = math.ceil(problem.k / params.block_k)

    def alloc(self, scope: str, element: Attribute, shape: Sequence[int], name: str,
              padded: bool = False) -> SSAValue:
        layout = row_major(*shape, pad=SMEM_PAD) if padded else None
        return self.b.insert(tm.AllocOp(scope, MemRefType(element, list(shape)), layout), name).results[0]

    def build(self, a: SSAValue, bmat: SSAValue, bias: SSAValue | None, c: SSAValue, wait: bool) -> None:
        b, p, P = self.b, self.p, self.P
        mm, mn = P.mma_tiles
        bid = b.insert(tm.BlockIdOp(), "bid").results[0]
        self.tid = tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
        warp, self.lane = b.div(tid, WARP_SIZE, "warp"), b.rem(tid, WARP_SIZE, "lane")
        word = IntegerType(32)
        self.a_smem = self.alloc("shared", self.element, (P.stages, P.block_m, P.block_k), "a_smem", True)
        self.b_smem = self.alloc("shared", self.element, (P.stages, P.block_k, P.block_n), "b_smem", True)
        self.a_frag = self.alloc("register", word, (mm, 4), "a_frag")
        self.b_frag = self.alloc("register", word, (mn, 2), "b_frag")
        self.acc = self.alloc("register", Float32Type(), (mm, mn, 4), "acc")
        with (
            b.for_task(spatial(*P.tile_grid(p)), bid, ["tile_m", "tile_n"]) as (tile_m, tile_n),
            b.for_task(spatial(*P.warps), warp, ["wi", "wj"]) as (wi, wj),
        ):
            self.row0 = b.mul(tile_m, P.block_m, "row0")
            self.col0 = b.mul(tile_n, P.block_n, "col0")
            self.warp_row = b.mul(wi, P.warp_m, "warp_row")
            self.warp_col = b.mul(wj, P.warp_n, "warp_col")
            # ldmatrix row addresses: lane l gives row l % 16 at column 8 * (l / 16).
            self.row16 = b.rem(self.lane, 16, "l16")
            self.col8 = b.mul(b.div(self.lane, 16), 8, "lc8")
            zero = b.constant(0.0, Float32Type())
            with b.for_task(repeat(mm, mn, 4), None, ["i", "j", "r"]) as (i, j, r):
                b.store(zero, self.acc, [i, j, r])
            # Prologue: stages-1 tiles in flight, one commit each (empty past the last tile).
            for s in range(P.stages - 1):
                if s < self.k_tiles:
                    self.issue_tile(a, bmat, s, s)
                b.insert(tm.CpAsyncCommitOp())
            with b.loop(0, self.k_tiles, name="kt") as kt:
                if wait:
                    b.insert(tm.CpAsyncWaitOp(P.stages - 2))
                b.insert(tm.BarrierOp())
                stage = b.rem(kt, P.stages, "stage")
                next_kt = b.add(kt, P.stages - 1, "next_kt")
                with b.if_(b.lt(next_kt, self.k_tiles, "has_next")):
                    self.issue_tile(a, bmat, next_kt, b.rem(next_kt, P.stages, "next_stage"))
                b.insert(tm.CpAsyncCommitOp())
                with b.loop(0, P.block_k // MMA_K, unroll=True, name="kk") as kk:
                    self.slice_mma(stage, b.mul(kk, MMA_K, "k16"))
            self.epilogue(bias, c)

    # ---- global -> shared ---------------------------------------------------------------
    def issue_tile(self, a: SSAValue, bmat: SSAValue, k_tile: Index, stage: Index) -> None:
        """The cp.async copies of k-tile `k_tile` of A and B into shared buffer `stage`."""
        P = self.P
        k0 = self.b.mul(k_tile, P.block_k, "k0")
        self.copy_tile(a, self.a_smem, stage, (P.block_m, P.block_k), (self.row0, k0), (self.p.m, self.p.k))
        self.copy_tile(bmat, self.b_smem, stage, (P.block_k, P.block_n), (k0, self.col0), (self.p.k, self.p.n))

    def copy_tile(self, src: SSAValue, smem: SSAValue, stage: Index, tile: tuple[int, int],
                  origin: tuple[Index, Index], extent: tuple[int, int]) -> None:
        """16-byte copies of a ``rows x cols`` tile at global `origin`; chunks past
        `extent` get zeros (stored by the thread) instead."""
        b, threads = self.b, self.P.threads
        rows, per_row = tile[0], tile[1] // CHUNK
        mapping = repeat(rows * per_row // threads, 1) * spatial(threads // per_row, per_row)
        with b.for_task(mapping, self.tid, ["cr", "cc"]) as (r, cc):
            col = b.mul(cc, CHUNK, "cs")
            g_row, g_col = b.add(origin[0], r, "g_row"), b.add(origin[1], col, "g_col")
            dst, src_idx = [b.value(stage), b.value(r), b.value(col)], [b.value(g_row), b.value(g_col)]
            checks = [b.lt(g, n) for g, n, tile_n in ((g_row, extent[0], tile[0]), (g_col, extent[1], tile[1]))
                      if _overhangs(n, tile_n)]
            inside = b.all_of(checks)
            if inside is None:
                b.insert(tm.CpAsyncOp(CHUNK * HALF_BYTES, smem, dst, src, src_idx))
                return
            then, other = Block(), Block()
            with b.at(then):
                b.insert(tm.CpAsyncOp(CHUNK * HALF_BYTES, smem, dst, src, src_idx))
                b.insert(scf.YieldOp())
            with b.at(other):
                zero = b.constant(0.0, self.element)
                for e in range(CHUNK):
                    b.store(zero, smem, [stage, r, b.add(col, e)])
                b.insert(scf.YieldOp())
            b.insert(scf.IfOp(inside, [], [then], [other]))

    # ---- shared -> fragments -> mma -------------------------------------------------------
    def slice_mma(self, stage: Index, k16: Index) -> None:
        """One 16-wide k slice: ldmatrix every A and B fragment of the warp, then the mmas.
        A (x4): lane l addresses row l % 16 at column 8 * (l / 16) of the 16x16 tile,
        which yields the mma A fragment; B (x2.trans): lanes 0-15 address k rows 0-15 at
        the 8 columns of the n tile (lanes 16-31 repeat them; x2 ignores them)."""
        b, P = self.b, self.P
        mm, mn = P.mma_tiles
        row16, col8 = self.row16, self.col8
        with b.for_task(repeat(mm), None, ["i"]) as (i,):
            row = b.add(b.add(self.warp_row, b.mul(i, MMA_M)), row16, "a_row")
            b.insert(tm.LdmatrixOp(4, False, self.a_frag, self.a_smem, [b.value(stage), row, b.value(
                b.add(k16, col8, "a_col"))], [i]))
        with b.for_task(repeat(mn), None, ["j"]) as (j,):
            col = b.add(self.warp_col, b.mul(j, MMA_N), "b_col")
            b.insert(tm.LdmatrixOp(2, True, self.b_frag, self.b_smem,
                                   [b.value(stage), b.value(b.add(k16, row16, "b_row")), b.value(col)], [j]))
        with b.for_task(repeat(mm, mn), None, ["i", "j"]) as (i, j):
            b.insert(tm.MmaOp("m16n8k16", self.dtype, self.acc, self.a_frag, self.b_frag, self.acc,
                              [i, j], [i], [j], [i, j]))

    # ---- epilogue ---------------------------------------------------------------------------
    def epilogue(self, bias: SSAValue | None, c: SSAValue) -> None:
        """Accumulator register r of mma tile (i, j) is C[g + 8 (r / 2)][2t + r % 2] of the
        tile (``MMA_ACC``, g = lane / 4, t = lane % 4); bias added, stored with guards."""
        b, p, P = self.b, self.p, self.P
        mm, mn = P.mma_tiles
        g = b.div(self.lane, 4, "g")
        t2 = b.mul(b.rem(self.lane, 4), 2, "t2")
        guard = [d for d, (n, tile) in enumerate(((p.m, P.block_m), (p.n, P.block_n)))
                 if _overhangs(n, tile)]
        with b.for_task(repeat(mm, mn, 2, 2), None, ["i", "j", "h", "e"]) as (i, j, h, e):
            row = b.add(b.add(b.add(self.row0, self.warp_row), b.mul(i, MMA_M)),
                        b.add(g, b.mul(h, 8)), "row")
            col = b.add(b.add(b.add(self.col0, self.warp_col), b.mul(j, MMA_N)), b.add(t2, e), "col")
            value = b.load(self.acc, [i, j, b.add(b.mul(h, 2), e)], name="sum")
            if bias is not None:
                value = b.fop(arith.AddfOp, value, b.load(bias, [col], [0] if 1 in guard else [], name="bias"))
            b.store(value, c, [row, col], guard)


def _overhangs(extent: int, tile: int) -> bool:
    """Whether tiles of `tile` overhang a dimension of `extent`."""
    return extent % tile != 0


# ----------------------------------------------------------------------------- the space


def _copies_even(P: MatmulTcParams, p: MatmulProblem) -> bool:
    """Every thread copies the same number of 16-byte chunks of each tile."""
    return all(chunks % P.threads == 0 and P.threads % per_row == 0
               for chunks, per_row in ((P.block_m * P.block_k // CHUNK, P.block_k // CHUNK),
                                       (P.block_k * P.block_n // CHUNK, P.block_n // CHUNK)))


def _fits_problem(P: MatmulTcParams, p: MatmulProblem) -> bool:
    """No block side beyond the problem's side rounded up to a power of two (64 always
    fits), and no k tile beyond K rounded up to 16: a bigger tile only computes padding."""
    def up(x: int, least: int) -> int:
        return max(least, 1 << max(0, x - 1).bit_length())
    return P.block_m <= up(p.m, 64) and P.block_n <= up(p.n, 64) and P.block_k <= up(p.k, MMA_K)


MATMUL_TC_SPACE: Space[MatmulTcParams] = Space(
    "matmul_tc",
    [
        Param("block_m", (64, 128), "block tile rows"),
        Param("block_n", (64, 128), "block tile columns"),
        Param("block_k", (16, 32, 64), "k tile (a multiple of 16)"),
        Param("warps", ((2, 2), (4, 2), (2, 4)), "warps per block (rows, cols)"),
        Param("stages", (2, 3, 4), "cp.async pipeline depth (shared buffers)"),
    ],
    MatmulTcParams,
    [
        Constraint("warp tile a multiple of 16 x 8",
                   lambda P, p: P.block_m % (P.warps[0] * MMA_M) == 0
                   and P.block_n % (P.warps[1] * MMA_N) == 0),
        Constraint("copies spread evenly over threads", _copies_even),
        Constraint("tile fits the problem", _fits_problem),
        Constraint("shared memory <= 48 KiB", lambda P, p: P.shared_bytes() <= MAX_STATIC_SHARED_BYTES),
        Constraint("registers <= 255 (estimate)",
                   lambda P, p: P.register_estimate() <= MAX_REGISTERS_PER_THREAD),
    ],
)
