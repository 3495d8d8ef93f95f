"""The tensor-core GEMM engine that the tensor-core templates share (matmul, convolution).

In: an empty ``tm.kernel``, the GEMM's shape (a `MatmulProblem`: M, N, K, batch; B stored
``K x N``, or ``N x K`` when ``transpose_rhs``), `MatmulTcParams` and a function giving,
per block, where the operands come from and where C goes (`TcOperands`). Out: the kernel
body, computing ``C = A @ B`` with ``mma.sync`` (``tm.mma``) with f32 accumulators: m16n8k16
on f16 or bf16 operands, or m16n8k8 tf32 on f32 operands (`TcElement`), fed from shared tiles that a
``stages``-deep pipeline fills. Each block computes a ``block_m x block_n`` tile of C;
its ``warps_m x warps_n`` warps each own a ``(block_m / warps_m) x (block_n / warps_n)``
sub-tile, a grid of 16x8 mma tiles whose accumulators (layout ``MMA_ACC`` of
``mma_layouts``) stay in registers::

    blocks   spatial(batch, M / block_m, N / block_n)                on block_id
    warps    spatial(warps_m, warps_n)                               on tid / 32
    mma      repeat(mma_m, mma_n) of 16x8 tiles, one warp each       (lane = tid % 32)

The k dimension is walked in ``block_k`` tiles through ``stages`` shared buffers:

* prologue: tiles ``0 .. stages-2`` are issued, each closed by one ``cp_async_commit``;
* k-step ``kt``: ``cp_async_wait pending(stages-2)`` (tile ``kt`` has landed for this
  thread), one barrier (for every thread, and every thread is done with tile ``kt-1``),
  then the copies of tile ``kt+stages-1`` into the buffer tile ``kt-1`` used (an empty
  commit past the last tile keeps the group count), then per 16-wide k slice ``ldmatrix
  .x4`` of each A 16x16 fragment, ``ldmatrix .x2`` of each B 16x8 fragment (``.trans``
  from a ``K x N`` tile: it gives the ``.col`` operand) and the mmas. A gathered operand
  (below) of tile ``kt+stages-1`` is loaded into registers with the copies and stored into
  its buffer after the mmas (register staging: the loads' latency hides behind them).

**TF32** (f32 operands): the same pipeline with 4 floats per 16-byte chunk and 8-wide k
slices (m16n8k8; the primitive rounds each operand word to tf32, ``cvt.rna``). ``ldmatrix``
reads 16-bit elements, but an 8x8 b16 matrix is 8 rows of 4 floats, and lane l gets row
l / 4, float l % 4 -- the tf32 A fragment when the four matrices are rows 0-7 / 8-15 x
k 0-3 / 4-7 (lane l addresses row l % 16 at k 4 (l / 16)), and from an ``N x K`` B tile
the B fragment (x2: lanes 0-7 at k 0, 8-15 at k 4). ``.trans`` cannot transpose 32-bit
elements, so from a ``K x N`` B tile each lane loads its two words b0 = B[t][g], b1 =
B[t+4][g] itself (two shared loads), from rows padded by 8 floats: the 32 lanes then hit
32 distinct banks.

An operand is either **dense** (`TcOperand.index`: element ``(outer, k)`` is at those
indices of a buffer whose contiguous dimension is k, or outer for a ``K x N`` B), copied
16 bytes (8 halves) at a time by ``cp.async`` (``repeat * spatial`` over the tile's
chunks, consecutive threads on consecutive chunks; a chunk past the operand's end is a
zero-filling ``cp_async ... zfill_unless %inside`` whose source indices are clamped to 0,
so it reads nothing and lands 16 zero bytes at the same wait), or **gathered**
(`TcOperand.load`: an element loader that gives 0 outside the operand, as an implicit-GEMM
convolution's im2col), whose elements the threads load and store into the shared tile
themselves (``auto_map`` over the tile, in its memory order), ordered by the same barriers.

Shared tiles are ``a_smem[stages][block_m][block_k]`` and ``b_smem[stages][block_k]
[block_n]`` (``[block_n][block_k]`` for a k-contiguous B), dense and **swizzled**
(``tmlir.layout``: ``row_major(stages, rows, cols) ^ swizzle(B, M, S)``, the layout
`tmlir.layout.chunk_swizzle` picks for the row length): the 16-byte chunk column of each
row is XOR-ed with bits of its row index, so the 8 rows an ``ldmatrix`` phase reads at one
chunk column land on 8 distinct 4-bank groups -- no conflicts, no padding -- while every
chunk stays whole and 16-byte aligned for ``cp.async`` and ``ldmatrix``. The swizzle lives
in the buffer's layout: the engine indexes tiles by (stage, row, column) and
``convert-tm-to-gpu`` lowers the layout to the XOR. (A tf32 ``K x N`` B, read by scalar
loads, keeps rows padded by 8 floats instead.) The epilogue hands each accumulator to
`TcOperands.store_c` with its row and column.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IntegerAttr, IntegerType, MemRefType
from xdsl.ir import Attribute, SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import MAX_SHARED_BYTES, MAX_STATIC_SHARED_BYTES, WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.layout import DataLayout, row_major, swizzled_row_major
from tmlir.mapping import TaskMapping, auto_map, repeat, spatial
from tmlir.schedules.gemm import ElementLoad, MatmulProblem, ResultStore
from tmlir.schedules.split_k import SPLIT_K_SHARED_BYTES, SplitK, add_scratch

COPY_BYTES = 16  # one cp.async
CHUNK = 8  # halves per 16-byte cp.async (`TcElement.chunk` for any element)
MMA_M, MMA_N, MMA_K = 16, 8, 16  # MMA_K: the k granule of block_k (a tf32 mma takes 8 of it)


@dataclass(frozen=True)
class TcElement:
    """The element geometry of the engine: what its code depends on in the operands' type."""

    bytes: int  # of one element
    mma_shape: str  # of tm.mma
    mma_dtype: str
    mma_k: int  # the k of one mma: the k slice of one step of fragments

    @property
    def chunk(self) -> int:
        """Elements per 16-byte ``cp.async``."""
        return COPY_BYTES // self.bytes

    @property
    def tf32(self) -> bool:
        return self.mma_dtype == "tf32"

    def pads(self, transpose_rhs: bool) -> tuple[int, int]:
        """Elements added to each shared row of A and of B: none for a tile read 16 bytes at
        a time (swizzled instead, `tile_layout`), 32 bytes for a tf32 ``K x N`` B, which
        the lanes read by scalar loads (see the module docstring)."""
        return 0, 2 * self.chunk if self.tf32 and not transpose_rhs else 0

    def tile_layout(self, shape: Sequence[int], pad: int) -> DataLayout:
        """The layout of a ``stages x rows x cols`` shared tile: rows padded by `pad`
        elements, or (no pad) swizzled so that 8 rows read at one 16-byte column hit 8
        distinct bank groups (`tmlir.layout.swizzled_row_major`)."""
        return row_major(*shape, pad=pad) if pad else swizzled_row_major(*shape, element_bytes=self.bytes)


TC_F16, TC_BF16 = TcElement(2, "m16n8k16", "f16", 16), TcElement(2, "m16n8k16", "bf16", 16)
TC_TF32 = TcElement(4, "m16n8k8", "tf32", 8)


def tc_element(element: Attribute) -> TcElement:
    """The geometry of operands of `element`: f16, bf16 or f32 (tf32 mma)."""
    if isinstance(element, Float32Type):
        return TC_TF32
    return TC_F16 if half_dtype(element) == "f16" else TC_BF16


@dataclass(frozen=True)
class MatmulTcParams:
    """Block tile, warps per block, pipeline depth and split-K (blocks per output tile,
    each on a part of K: ``split_k.py``); warp and mma tiles follow."""

    block_m: int = 128
    block_n: int = 128
    block_k: int = 32
    warps: tuple[int, int] = (2, 2)
    stages: int = 3
    split_k: int = 1

    def __post_init__(self) -> None:
        if self.block_k % MMA_K:
            raise ValueError(f"block_k must be a multiple of {MMA_K}, got {self.block_k}")
        if not 2 <= self.stages <= 4:
            raise ValueError(f"stages must be 2, 3 or 4, got {self.stages}")
        if self.split_k < 1:
            raise ValueError(f"split_k must be >= 1, got {self.split_k}")

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

    def tile_grid(self, problem: MatmulProblem) -> tuple[int, int, int]:
        """Blocks along batch, M and N."""
        return problem.batch, math.ceil(problem.m / self.block_m), math.ceil(problem.n / self.block_n)

    def tile_count(self, problem: MatmulProblem) -> int:
        """Output tiles: blocks per split."""
        return math.prod(self.tile_grid(problem))

    def blocks(self, problem: MatmulProblem) -> int:
        """The kernel's grid: `split_k` blocks per output tile."""
        return self.tile_count(problem) * self.split_k

    def k_tiles(self, problem: MatmulProblem) -> int:
        """The ``block_k`` tiles of K (the last one maybe partial)."""
        return math.ceil(problem.k / self.block_k)

    def split(self, problem: MatmulProblem) -> SplitK:
        """How K is split over `split_k` blocks per tile (``split_k.py``)."""
        return SplitK(self.split_k, self.k_tiles(problem), self.tile_count(problem), self.threads)

    @property
    def acc_type(self) -> MemRefType:
        """One thread's accumulators: a grid of 16x8 mma tiles of 4 floats."""
        mm, mn = self.mma_tiles
        return MemRefType(Float32Type(), [mm, mn, 4])

    def scratch(self, problem: MatmulProblem) -> list[tuple[str, MemRefType]]:
        """The kernel's scratch arguments (kind, type): split-K's workspace and counters."""
        return self.split(problem).scratch(self.acc_type)

    def tiles(self, problem: MatmulProblem) -> tuple[tuple[int, int], tuple[int, int]]:
        """The shared (rows, cols) of one stage of A and of B, in memory order."""
        b_tile = (self.block_n, self.block_k) if problem.transpose_rhs else (self.block_k, self.block_n)
        return (self.block_m, self.block_k), b_tile

    def shared_bytes(self, problem: MatmulProblem | None = None, element: TcElement = TC_F16) -> int:
        """Both operands' tiles (a tf32 ``K x N`` B's rows padded), all stages, for operands
        of `element`."""
        problem = problem or MatmulProblem.plain(1, 1, 1)
        pads = element.pads(problem.transpose_rhs)
        flag = SPLIT_K_SHARED_BYTES if self.split_k > 1 else 0
        return self.stages * sum(rows * (cols + pad) for (rows, cols), pad
                                 in zip(self.tiles(problem), pads)) * element.bytes + flag

    def register_estimate(self) -> int:
        """Accumulators, one k slice of A and B fragments, ~40 for addresses and loop state;
        with split-K the last block's loads of one split's partials, as many as the
        accumulators (``split_k.py``: ptxas issues them together)."""
        mm, mn = self.mma_tiles
        return 4 * mm * mn * (2 if self.split_k > 1 else 1) + 4 * mm + 2 * mn + 40

    def describe(self) -> dict[str, int | str]:
        return {"block_m": self.block_m, "block_n": self.block_n, "block_k": self.block_k,
                "warps": f"{self.warps[0]}x{self.warps[1]}", "stages": self.stages,
                "split_k": self.split_k, "threads": self.threads}


def half_dtype(element: Attribute) -> str:
    """The mma operand type of an element type: ``f16`` or ``bf16``."""
    assert isinstance(element, Float16Type | BFloat16Type), element
    return "f16" if isinstance(element, Float16Type) else "bf16"


@dataclass(frozen=True)
class TcOperand:
    """Where the k-tiles of one GEMM operand come from (see the module docstring): dense
    (`buffer` and `index`, the buffer indices of element ``(outer, k)``; contiguous along
    k when `k_major`, else along outer) or gathered (`load`, the element, 0 outside)."""

    k_major: bool
    buffer: SSAValue | None = None
    index: Callable[[Index, Index], list[Index]] | None = None
    load: ElementLoad | None = None


@dataclass(frozen=True)
class TcOperands:
    """One block's operands (A is k-major) and where its results go."""

    a: TcOperand
    b: TcOperand
    store_c: ResultStore


BlockOperands = Callable[[IRBuilder, Sequence[Index]], TcOperands]


def check_shared_memory(template: str, params: MatmulTcParams, gemm: MatmulProblem, element: Attribute) -> None:
    """ValueError, one line, when `params`' tiles of `element` operands (all stages) take
    more shared memory than a block has on any GPU (`MAX_SHARED_BYTES`; past
    `MAX_STATIC_SHARED_BYTES` the kernel declares them as dynamic shared memory, and the
    space of an arch keeps to that arch's opt-in maximum): what fits f16 may not fit f32."""
    size = params.shared_bytes(gemm, tc_element(element))
    if size > MAX_SHARED_BYTES:
        raise ValueError(f"{template} tiles {params.block_m}x{params.block_n}x{params.block_k} in "
                         f"{params.stages} stages take {size} bytes of shared memory for {element} "
                         f"operands, over the {MAX_SHARED_BYTES} a block has on any GPU")


def tc_gemm(kernel: tm.KernelOp, problem: MatmulProblem, params: MatmulTcParams, element: Attribute,
            block_operands: BlockOperands, block_names: Sequence[str] = ("batch", "tile_m", "tile_n"),
            *, wait: bool = True) -> None:
    """Fill `kernel` with the GEMM of `problem` (see the module docstring); operands of
    `element`. `block_operands(b, batch_coords)` is called once inside the block's mapping.
    `wait=False` leaves out the ``cp_async_wait`` of every k-step (a planted race, for tests).

    The kernel gets ``tm.min_blocks_per_sm = 1`` (``__launch_bounds__(threads, 1)``): left
    to guess, ptxas caps registers to keep as many blocks resident as the static shared
    memory allows, and spilled a few bytes in some convolution candidates; the space's
    tiles are sized for registers, so one resident block is all ptxas must plan for."""
    kernel.attributes["tm.min_blocks_per_sm"] = IntegerAttr(1, 64)
    gemm = _TcGemm(IRBuilder.at_end(kernel.body.block), problem, params, element)
    gemm.workspace, gemm.counters = add_scratch(kernel, gemm.split, params.acc_type)
    gemm.build(block_operands, block_names, wait)


class _TcGemm:
    """Builds the kernel body (one object per kernel: the builder and the shared buffers)."""

    def __init__(self, b: IRBuilder, problem: MatmulProblem, params: MatmulTcParams,
                 element: Attribute) -> None:
        self.b, self.p, self.P, self.element = b, problem, params, element
        self.E = tc_element(element)
        self.k_tiles = params.k_tiles(problem)
        self.split = params.split(problem)
        self.workspace: SSAValue | None = None
        self.counters: SSAValue | None = None

    def alloc(self, scope: str, element: Attribute, shape: Sequence[int], name: str,
              layout: DataLayout | None = None) -> SSAValue:
        return self.b.insert(tm.AllocOp(scope, MemRefType(element, list(shape)), layout), name).results[0]

    def build(self, block_operands: BlockOperands, block_names: Sequence[str], wait: bool) -> None:
        b, p, P = self.b, self.p, self.P
        mm, mn = P.mma_tiles
        bid = b.insert(tm.BlockIdOp(), "bid").results[0]
        self.tid = tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
        warp, self.lane = b.div(tid, WARP_SIZE, "warp"), b.rem(tid, WARP_SIZE, "lane")
        word = IntegerType(32)
        a_tile, b_tile = P.tiles(p)
        a_pad, b_pad = self.E.pads(p.transpose_rhs)
        self.a_smem = self.alloc("shared", self.element, (P.stages, *a_tile), "a_smem",
                                 self.E.tile_layout((P.stages, *a_tile), a_pad))
        self.b_smem = self.alloc("shared", self.element, (P.stages, *b_tile), "b_smem",
                                 self.E.tile_layout((P.stages, *b_tile), b_pad))
        self.a_frag = self.alloc("register", word, (mm, 4), "a_frag")
        # tf32 B from a K x N tile: loaded as floats (a tf32 mma takes f32 words)
        scalar_b = self.E.tf32 and not p.transpose_rhs
        self.b_frag = self.alloc("register", Float32Type() if scalar_b else word, (mn, 2), "b_frag")
        self.acc = self.alloc("register", Float32Type(), (mm, mn, 4), "acc")
        splits = (P.split_k,) if P.split_k > 1 else ()  # block (tile, split): split fastest
        with (
            b.for_task(spatial(*P.tile_grid(p), *splits), bid,
                       [*block_names, *(["split"] if splits else [])]) as (bb, tile_m, tile_n, *split),
            b.for_task(spatial(*P.warps), warp, ["wi", "wj"]) as (wi, wj),
        ):
            ops = block_operands(b, b.unravel(bb, p.batch_shape, in_range=True))
            assert ops.a.k_major and ops.b.k_major == p.transpose_rhs, "operand layouts"
            self.registers: dict[int, SSAValue] = {}
            self.staged: list[tuple[SSAValue, SSAValue, tuple[int, int]]] = []
            for op, smem, tile, name in ((ops.a, self.a_smem, a_tile, "a_ldg"), (ops.b, self.b_smem, b_tile, "b_ldg")):
                if op.load is not None:
                    regs = self.alloc("register", self.element, (tile[0] * tile[1] // P.threads,), name)
                    self.registers[id(op)] = regs
                    self.staged.append((smem, regs, tile))
            self.row0 = b.mul(tile_m, P.block_m, "row0")
            self.col0 = b.mul(tile_n, P.block_n, "col0")
            self.warp_row = b.mul(wi, P.warp_m, "warp_row")
            self.warp_col = b.mul(wj, P.warp_n, "warp_col")
            # ldmatrix row addresses: lane l gives row l % 16 at column chunk * (l / 16).
            chunk = self.E.chunk
            self.row16 = b.rem(self.lane, 16, "l16")
            self.col8 = b.mul(b.div(self.lane, 16), chunk, f"lc{chunk}")
            zero = b.constant(0.0, Float32Type())
            with b.for_task(repeat(mm, mn, 4), None, ["i", "j", "r"]) as (i, j, r):
                b.store(zero, self.acc, [i, j, r])
            # This block's k-tiles: [k_first, k_first + k_count) of its split (all of K for one).
            split_index = split[0] if split else 0
            k_first, k_count = self.split.k_range(b, split_index)
            fewest = self.k_tiles // P.split_k  # k-tiles of the shortest split
            # Prologue: stages-1 tiles in flight, one commit each (empty past the last tile).
            for s in range(P.stages - 1):
                if s < fewest:
                    self.issue_tile(ops, b.add(k_first, s), s)
                elif s < self.split.steps:  # only the longer splits have this tile
                    with b.if_(b.lt(s, k_count)):
                        self.issue_tile(ops, b.add(k_first, s), s)
                b.insert(tm.CpAsyncCommitOp())
            with b.loop(0, self.split.steps, name="kt") as kt, self.split.step_guard(b, kt, k_count):
                if wait:
                    b.insert(tm.CpAsyncWaitOp(P.stages - 2))
                b.insert(tm.BarrierOp())
                stage = b.rem(kt, P.stages, "stage")
                next_kt = b.add(kt, P.stages - 1, "next_kt")
                has_next = b.lt(next_kt, k_count, "has_next")
                with b.if_(has_next):  # gathered operands: into registers
                    self.issue_tile(ops, b.add(k_first, next_kt), b.rem(next_kt, P.stages, "next_stage"),
                                    staged=True)
                b.insert(tm.CpAsyncCommitOp())
                mma_k = self.E.mma_k
                with b.loop(0, P.block_k // mma_k, unroll=True, name="kk") as kk:
                    self.slice_mma(stage, b.mul(kk, mma_k, f"k{mma_k}"))
                if self.staged:  # the gathered elements, loaded before the mmas, into the tile
                    with b.if_(has_next):
                        next_stage = b.rem(next_kt, P.stages, "next_stage")
                        for smem, regs, tile in self.staged:
                            with self.gather_tasks(tile) as (reg, r, c):
                                b.store(b.load(regs, [reg]), smem, [next_stage, r, c])
            tile = b.div(bid, P.split_k, "tile")  # block = tile * split_k + split
            with self.split.last_block(b, self.acc, tid, tile, split_index, self.workspace, self.counters):
                self.epilogue(ops.store_c)

    # ---- global -> shared ---------------------------------------------------------------
    def issue_tile(self, ops: TcOperands, k_tile: Index, stage: Index, staged: bool = False) -> None:
        """Copies (or gathered stores) of k-tile `k_tile` of A and B into buffer `stage`;
        when `staged` (in the k-loop) a gathered operand's elements go to its registers
        instead, stored into the buffer after the k-step's mmas (their loads' latency hides
        behind the mmas, as the SIMT template's register staging does)."""
        P = self.P
        k0 = self.b.mul(k_tile, P.block_k, "k0")
        self.fill(ops.a, self.a_smem, stage, self.row0, k0, P.block_m, self.p.m, staged)
        self.fill(ops.b, self.b_smem, stage, self.col0, k0, P.block_n, self.p.n, staged)

    def fill(self, op: TcOperand, smem: SSAValue, stage: Index, outer0: Index, k0: Index,
             outer_tile: int, outer_extent: int, staged: bool = False) -> None:
        """One operand's tile: ``outer_tile x block_k`` elements from ``(outer0, k0)`` (a
        gathered operand's into its registers when `staged`)."""
        b, P, K = self.b, self.P, self.p.k
        if op.k_major:
            tile, origin, extent = (outer_tile, P.block_k), (outer0, k0), (outer_extent, K)
        else:
            tile, origin, extent = (P.block_k, outer_tile), (k0, outer0), (K, outer_extent)

        def element(r: Index, c: Index) -> tuple[Index, Index]:
            """(outer, k) of shared element (r, c)."""
            g_row, g_col = b.add(origin[0], r, "g_row"), b.add(origin[1], c, "g_col")
            return (g_row, g_col) if op.k_major else (g_col, g_row)

        if op.load is not None:
            with self.gather_tasks(tile) as (reg, r, c):
                value = op.load(*element(r, c))
                if staged:
                    b.store(value, self.registers[id(op)], [reg])
                else:
                    b.store(value, smem, [stage, r, c])
            return
        assert op.buffer is not None and op.index is not None
        chunk = self.E.chunk
        rows, per_row = tile[0], tile[1] // chunk
        mapping = repeat(rows * per_row // P.threads, 1) * spatial(P.threads // per_row, per_row)
        with b.for_task(mapping, self.tid, ["cr", "cc"]) as (r, cc):
            col = b.mul(cc, chunk, "cs")
            outer, k = element(r, col)
            g_row, g_col = (outer, k) if op.k_major else (k, outer)
            dst = [b.value(stage), b.value(r), b.value(col)]
            overhang = [_overhangs(n, tile_n) for n, tile_n in zip(extent, tile)]
            checks = [b.lt(g, n) for g, n, over in zip((g_row, g_col), extent, overhang) if over]
            inside = b.all_of(checks)
            if inside is not None:  # a chunk past the end: zero-filled, its source clamped to 0
                inside.name_hint = "inside"
                over_outer, over_k = overhang if op.k_major else overhang[::-1]
                outer = self._clamp(inside, outer) if over_outer else outer
                k = self._clamp(inside, k) if over_k else k
            src = [b.value(i) for i in op.index(outer, k)]
            b.insert(tm.CpAsyncOp(COPY_BYTES, smem, dst, op.buffer, src, inside))

    @contextmanager
    def gather_tasks(self, tile: tuple[int, int]) -> Iterator[tuple[Index, Index, Index]]:
        """This thread's elements of a gathered ``rows x cols`` tile, ``auto_map`` in memory
        order (``repeat * spatial``; the spatial task outermost): (register index, row, col)."""
        b, mapping = self.b, auto_map(tile, self.P.threads)
        rep, spa = (TaskMapping(mapping.atoms[:1]), TaskMapping(mapping.atoms[1:])) if len(mapping.atoms) == 2 \
            else (repeat(1, 1), mapping)
        r_shape, s_shape = rep.task_shape, spa.task_shape
        with (b.for_task(spa, self.tid, ["s0", "s1"]) as (s0, s1),
              b.for_task(rep, None, ["r0", "r1"]) as (r0, r1)):
            yield (b.add(b.mul(r0, r_shape[1]), r1), b.add(b.mul(r0, s_shape[0]), s0, "gr"),
                   b.add(b.mul(r1, s_shape[1]), s1, "gc"))

    def _clamp(self, inside: SSAValue, x: Index) -> SSAValue:
        """`x` where `inside`, else 0: an address inside the operand for a zero-filled chunk."""
        b = self.b
        return b.insert(arith.SelectOp(inside, b.value(x), b.value(0)), "clamped").results[0]

    # ---- shared -> fragments -> mma -------------------------------------------------------
    def slice_mma(self, stage: Index, k16: Index) -> None:
        """One k slice (16 wide; 8 for tf32): every A and B fragment of the warp, then the
        mmas. A (ldmatrix x4): lane l addresses row l % 16 at column chunk * (l / 16) of the
        16 x mma_k tile, which yields the mma A fragment. B from a ``K x N`` tile
        (x2.trans): lanes 0-15 address k rows 0-15 at the 8 columns of the n tile; from an
        ``N x K`` tile (x2): lanes 0-7 address the 8 n rows at k 0, lanes 8-15 at k chunk
        (lanes 16-31 repeat lanes 0-15; x2 ignores them). tf32 B from a ``K x N`` tile: two
        shared loads (see the module docstring)."""
        b, P, E = self.b, self.P, self.E
        mm, mn = P.mma_tiles
        row16, col8 = self.row16, self.col8
        with b.for_task(repeat(mm), None, ["i"]) as (i,):
            row = b.add(b.add(self.warp_row, b.mul(i, MMA_M)), row16, "a_row")
            b.insert(tm.LdmatrixOp(4, False, self.a_frag, self.a_smem, [b.value(stage), row, b.value(
                b.add(k16, col8, "a_col"))], [i]))
        with b.for_task(repeat(mn), None, ["j"]) as (j,):
            col = b.add(self.warp_col, b.mul(j, MMA_N), "b_col")
            if self.p.transpose_rhs:
                n_row = b.add(col, b.rem(row16, 8), "b_n")
                k_col = b.add(k16, b.mul(b.div(row16, 8), E.chunk), "b_k")
                b.insert(tm.LdmatrixOp(2, False, self.b_frag, self.b_smem,
                                       [b.value(stage), b.value(n_row), b.value(k_col)], [j]))
            elif E.tf32:  # b[r] = B[k16 + t + 4 r][col + g]
                n = b.add(col, b.div(self.lane, 4), "b_n")
                k = b.add(k16, b.rem(self.lane, 4), "b_k")
                for r in range(2):
                    value = b.load(self.b_smem, [stage, b.add(k, 4, "b_k4") if r else k, n], name=f"b{r}")
                    b.store(value, self.b_frag, [j, r])
            else:
                b.insert(tm.LdmatrixOp(2, True, self.b_frag, self.b_smem,
                                       [b.value(stage), b.value(b.add(k16, row16, "b_row")), b.value(col)], [j]))
        with b.for_task(repeat(mm, mn), None, ["i", "j"]) as (i, j):
            b.insert(tm.MmaOp(E.mma_shape, E.mma_dtype, self.acc, self.a_frag, self.b_frag, self.acc,
                              [i, j], [i], [j], [i, j]))

    # ---- epilogue ---------------------------------------------------------------------------
    def epilogue(self, store_c: ResultStore) -> None:
        """Accumulator register r of mma tile (i, j) is C[g + 8 (r / 2)][2t + r % 2] of the
        tile (``MMA_ACC``, g = lane / 4, t = lane % 4), handed to `store_c`."""
        b, P = self.b, self.P
        mm, mn = P.mma_tiles
        g = b.div(self.lane, 4, "g")
        t2 = b.mul(b.rem(self.lane, 4), 2, "t2")
        with b.for_task(repeat(mm, mn, 2, 2), None, ["i", "j", "h", "e"]) as (i, j, h, e):
            row = b.add(b.add(b.add(self.row0, self.warp_row), b.mul(i, MMA_M)),
                        b.add(g, b.mul(h, 8)), "row")
            col = b.add(b.add(b.add(self.col0, self.warp_col), b.mul(j, MMA_N)), b.add(t2, e), "col")
            store_c(row, col, b.load(self.acc, [i, j, b.add(b.mul(h, 2), e)], name="sum"))


def _overhangs(extent: int, tile: int) -> bool:
    """Whether tiles of `tile` overhang a dimension of `extent`."""
    return extent % tile != 0
