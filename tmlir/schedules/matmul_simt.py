"""The fp32 SIMT matmul template: ``C = alpha * op(A) @ op(B) + beta * bias``, batched.

The schedule of the Hidet paper (Ding et al., ASPLOS 2023, Fig. 5 and 9), written with
task mappings. Each block computes a ``block_m x block_n`` tile of C::

    blocks   spatial(batch, M / block_m, N / block_n)              on block_id
    threads  spatial(block_warps) * repeat(warp_outer)             (warp = tid / 32,
             * spatial(lanes) * repeat(thread_inner)                lane = tid % 32)

so a thread owns ``warp_outer * thread_inner`` elements of C (its register tile ``acc``)
and each warp a tile built from a 32-lane layout such as ``spatial(4, 8)``. The k
dimension is walked in steps of ``block_k`` with **double buffering**:

* two-stage shared memory ``a_smem[2][block_k][block_m]``, ``b_smem[2][block_k][block_n]``
  and two-stage register fragments ``a_frag[2][thread_m]``, ``b_frag[2][thread_n]``;
* at the top of a k-step the next k-tile's global loads are issued into registers
  (``a_ldg``, ``b_ldg``; cooperative ``repeat * spatial`` mappings from ``auto_map``,
  consecutive threads on contiguous addresses) *before* this tile is computed, so their
  latency hides behind the arithmetic;
* while computing slice ``kk`` of the tile, the fragments of slice ``kk + 1`` are read
  from shared memory into the other register stage;
* after the compute the prefetched tile is stored to the other shared stage, the block
  meets at **one barrier per k-step** and the next tile's first slice is read into
  fragments while the last slice of this one is multiplied. The last k-step has no next
  tile: it skips the store, the barrier and those reads (the condition is the same for
  every thread of the block, so the barrier inside it is legal CUDA).

The epilogue scales by alpha, adds the broadcast bias times beta and stores with guards
only on the dimensions that are not tile multiples (k tails load zeros). Rows of a shared
tile that consecutive threads fill along k are padded (``32 / block_k`` floats) so the
stores do not conflict on banks: the tile's layout is ``row_major(2, block_k, block_m,
pad=32 / block_k)`` (see ``tmlir.layout``), indexed with logical coordinates.

The schedule itself is `simt_gemm`; what a block reads and writes is pluggable
(`GemmOperands`: an element load for A, one for B, a store for C), so the same schedule
serves `matmul_simt_kernel` (plain, maybe transposed and broadcast operands; alpha, beta
and a bias) and the implicit-GEMM convolution of ``conv2d.py`` (B an im2col view of the
input, loaded under a computed predicate).

The parameters form a small hardware-centric space, declared at the end of this file
(``MATMUL_SIMT_SPACE``): about 200 valid candidates for a large fp32 problem.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, MemRefType
from xdsl.ir import Attribute, SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import MAX_REGISTERS_PER_THREAD, MAX_STATIC_SHARED_BYTES, MAX_THREADS_PER_BLOCK, WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.layout import DataLayout, row_major
from tmlir.mapping import TaskMapping, auto_map, repeat, spatial
from tmlir.schedules.common import (
    broadcast_guards,
    broadcast_index,
    kernel_attributes,
    name_args,
)
from tmlir.schedules.space import Constraint, Param, Space

FLOAT_BYTES = 4
#: Static shared memory a kernel may declare without an opt-in (all sm_7x-sm_12x GPUs).
#: Streaming multiprocessors of the reference GPU (H100 SXM) for the default choice.
REFERENCE_SMS = 132


@dataclass(frozen=True)
class MatmulProblem:
    """Shapes and attributes of one ``graph.matmul``."""

    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    bias_shape: tuple[int, ...] | None = None
    transpose_lhs: bool = False
    transpose_rhs: bool = False
    alpha: float = 1.0
    beta: float = 1.0

    @classmethod
    def plain(cls, m: int, n: int, k: int, batch: int = 1) -> MatmulProblem:
        """``C[batch, m, n] = A[batch, m, k] @ B[batch, k, n]`` (2-D when batch is 1)."""
        lead = (batch,) if batch > 1 else ()
        return cls((*lead, m, k), (*lead, k, n), (*lead, m, n))

    @property
    def m(self) -> int:
        return self.out_shape[-2]

    @property
    def n(self) -> int:
        return self.out_shape[-1]

    @property
    def k(self) -> int:
        return self.lhs_shape[-2] if self.transpose_lhs else self.lhs_shape[-1]

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return self.out_shape[:-2]

    @property
    def batch(self) -> int:
        return math.prod(self.batch_shape)


Pair = tuple[int, int]


@dataclass(frozen=True)
class MatmulSimtParams:
    """The template's parameters; block and thread tiles follow from them."""

    block_warps: Pair = (4, 2)
    warp_outer: Pair = (2, 2)
    lanes: Pair = (4, 8)
    thread_inner: Pair = (4, 4)
    block_k: int = 8

    def __post_init__(self) -> None:
        if self.lanes[0] * self.lanes[1] != WARP_SIZE:
            raise ValueError(f"lanes {self.lanes} must have {WARP_SIZE} lanes")

    @property
    def threads(self) -> int:
        return self.block_warps[0] * self.block_warps[1] * WARP_SIZE

    @property
    def thread_m(self) -> int:
        return self.warp_outer[0] * self.thread_inner[0]

    @property
    def thread_n(self) -> int:
        return self.warp_outer[1] * self.thread_inner[1]

    @property
    def warp_m(self) -> int:
        return self.thread_m * self.lanes[0]

    @property
    def warp_n(self) -> int:
        return self.thread_n * self.lanes[1]

    @property
    def block_m(self) -> int:
        return self.block_warps[0] * self.warp_m

    @property
    def block_n(self) -> int:
        return self.block_warps[1] * self.warp_n

    @property
    def thread_mapping(self) -> TaskMapping:
        """The block tile's mapping over the block's threads."""
        return (spatial(*self.block_warps) * repeat(*self.warp_outer) * spatial(*self.lanes)
                * repeat(*self.thread_inner))

    def tile_grid(self, problem: MatmulProblem) -> tuple[int, int, int]:
        """Blocks along batch, M and N: one block per output tile."""
        return (problem.batch, math.ceil(problem.m / self.block_m),
                math.ceil(problem.n / self.block_n))

    def blocks(self, problem: MatmulProblem) -> int:
        return math.prod(self.tile_grid(problem))

    def smem_pads(self, problem: MatmulProblem) -> Pair:
        """Row padding of the A and B shared tiles: an operand whose global rows run along k
        is stored by consecutive threads at stride ``block_m`` (``block_n``); pad then."""
        pad = max(1, WARP_SIZE // self.block_k)
        return (0 if problem.transpose_lhs else pad, pad if problem.transpose_rhs else 0)

    def shared_bytes(self, problem: MatmulProblem) -> int:
        pad_a, pad_b = self.smem_pads(problem)
        return 2 * self.block_k * (self.block_m + pad_a + self.block_n + pad_b) * FLOAT_BYTES

    def register_estimate(self) -> int:
        """Accumulators, two fragment stages, prefetch registers and ~24 for addresses."""
        prefetch = (self.block_m + self.block_n) * self.block_k // self.threads
        return (self.thread_m * self.thread_n + 2 * (self.thread_m + self.thread_n) + prefetch
                + 24)

    def describe(self) -> dict[str, int | str]:
        """Flat parameters for the kernel header, the CLI and reports."""
        return {
            "block_m": self.block_m, "block_n": self.block_n, "block_k": self.block_k,
            "threads": self.threads, "thread_m": self.thread_m, "thread_n": self.thread_n,
            "block_warps": _pair(self.block_warps), "warp_outer": _pair(self.warp_outer),
            "lanes": _pair(self.lanes), "thread_inner": _pair(self.thread_inner),
        }

    @classmethod
    def default_for(cls, problem: MatmulProblem) -> MatmulSimtParams:
        """The candidate used without tuning: the largest tile of a fixed preference list
        that is valid and still gives every SM of the reference GPU a block, else the valid
        preference with the most blocks (the smallest tile among equals)."""
        valid = [p for p in DEFAULT_PREFERENCES
                 if MATMUL_SIMT_SPACE.first_violation(p, problem) is None]
        fewest_idle = max(valid, key=lambda p: (p.blocks(problem), -p.block_m * p.block_n))
        return next((p for p in valid if p.blocks(problem) >= REFERENCE_SMS), fewest_idle)


def _pair(p: Pair) -> str:
    return f"{p[0]}x{p[1]}"


#: Element ``(outer, k)`` of a GEMM operand, loaded from global memory: `outer` is the
#: global row (A) or column (B) index, `k` the global k index; 0 past the operand's end.
ElementLoad = Callable[[Index, Index], SSAValue]
#: Writes element ``(row, col)`` of the result from its accumulated sum.
ResultStore = Callable[[Index, Index, SSAValue], None]


@dataclass(frozen=True)
class GemmOperands:
    """Where one block's GEMM reads its operands and writes its result: the part of the
    template that a matmul and an implicit-GEMM convolution do differently."""

    load_a: ElementLoad
    load_b: ElementLoad
    store_c: ResultStore


def matmul_simt_kernel(name: str, problem: MatmulProblem, params: MatmulSimtParams,
                       element: Attribute = Float32Type()) -> tm.KernelOp:
    """A kernel ``(A, B, [bias,] C)`` for `problem` with the schedule `params`, on tensors of
    `element` (``f32``, or ``f64``: tiles and accumulators in double)."""
    p, P = problem, params
    arg_shapes = [p.lhs_shape, p.rhs_shape, *([p.bias_shape] if p.bias_shape else []), p.out_shape]
    kernel = tm.KernelOp(
        name, [MemRefType(element, list(s)) for s in arg_shapes], P.blocks(p), P.threads,
        kernel_attributes("matmul_simt", {**P.describe(), "M": p.m, "N": p.n, "K": p.k}),
    )
    name_args(kernel, ["A", "B", *(["bias"] if p.bias_shape else []), "C"])
    a, bmat, *rest = kernel.args
    bias, c = (rest[0], rest[1]) if p.bias_shape else (None, rest[0])
    rank = len(p.out_shape)
    guarded_out = {d for d, g in ((rank - 2, p.m % P.block_m), (rank - 1, p.n % P.block_n)) if g}
    guard_k = p.k % P.block_k != 0
    # Operand dims checked against the shape: rows/cols past a partial tile, k past a tail.
    a_guard = _operand_guard(len(p.lhs_shape), p.transpose_lhs, p.m % P.block_m != 0, guard_k)
    b_guard = _operand_guard(len(p.rhs_shape), not p.transpose_rhs, p.n % P.block_n != 0, guard_k)

    def block_operands(b: IRBuilder, batch_coords: Sequence[Index]) -> GemmOperands:
        a_batch = broadcast_index(batch_coords, p.batch_shape, p.lhs_shape[:-2])
        b_batch = broadcast_index(batch_coords, p.batch_shape, p.rhs_shape[:-2])

        def load_a(row: Index, k: Index) -> SSAValue:
            return b.load(a, [*a_batch, *((k, row) if p.transpose_lhs else (row, k))], a_guard)

        def load_b(col: Index, k: Index) -> SSAValue:
            return b.load(bmat, [*b_batch, *((col, k) if p.transpose_rhs else (k, col))], b_guard)

        def store_c(row: Index, col: Index, value: SSAValue) -> None:
            if p.alpha != 1.0:
                value = b.fop(arith.MulfOp, value, b.constant(p.alpha, element))
            out_coords = [*batch_coords, row, col]
            if bias is not None and p.bias_shape is not None:
                index = broadcast_index(out_coords, p.out_shape, p.bias_shape)
                guards = broadcast_guards(p.out_shape, p.bias_shape, guarded_out)
                bv = b.load(bias, index, guards, name="bias")
                if p.beta != 1.0:
                    bv = b.fop(arith.MulfOp, bv, b.constant(p.beta, element))
                value = b.fop(arith.AddfOp, value, bv)
            b.store(value, c, out_coords, sorted(guarded_out))

        return GemmOperands(load_a, load_b, store_c)

    simt_gemm(kernel, p, P, block_operands, element=element)
    return kernel


def _operand_guard(rank: int, k_major: bool, guard_outer: bool, guard_k: bool) -> list[int]:
    dim_o, dim_k = (rank - 1, rank - 2) if k_major else (rank - 2, rank - 1)
    return sorted(d for d, g in ((dim_o, guard_outer), (dim_k, guard_k)) if g)


def simt_gemm(kernel: tm.KernelOp, problem: MatmulProblem, params: MatmulSimtParams,
              block_operands: Callable[[IRBuilder, Sequence[Index]], GemmOperands],
              block_names: Sequence[str] = ("batch", "tile_m", "tile_n"),
              element: Attribute = Float32Type()) -> None:
    """Fill `kernel` (grid and block from `params`) with the double-buffered GEMM of
    `problem`'s M, N, K and batch.

    `block_operands(b, batch_coords)` is called once inside the block's mapping with the
    block's batch coordinates; what it returns reads A (``M x K``, copied in its memory
    order: along k unless ``problem.transpose_lhs``), B (``K x N``, along N unless
    ``problem.transpose_rhs``) and writes C. Tiles, fragments and accumulators hold
    `element` (the type the operands are computed in: ``f32``, or ``f64``).
    """
    p, P = problem, params
    tile_grid = P.tile_grid(p)
    k_tiles = math.ceil(p.k / P.block_k)
    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    warp, lane = b.div(tid, WARP_SIZE, "warp"), b.rem(tid, WARP_SIZE, "lane")
    pad_a, pad_b = P.smem_pads(p)
    a_load = _TileLoad(P.block_m, P.block_k, p.transpose_lhs, P.threads)
    b_load = _TileLoad(P.block_n, P.block_k, not p.transpose_rhs, P.threads)

    def alloc(scope: str, shape: tuple[int, ...], name: str,
              layout: DataLayout | None = None) -> SSAValue:
        return b.insert(tm.AllocOp(scope, MemRefType(element, list(shape)), layout), name).results[0]

    def padded(shape: tuple[int, ...], pad: int) -> DataLayout | None:
        return row_major(*shape, pad=pad) if pad else None

    a_tile, b_tile = (2, P.block_k, P.block_m), (2, P.block_k, P.block_n)
    a_smem = alloc("shared", a_tile, "a_smem", padded(a_tile, pad_a))
    b_smem = alloc("shared", b_tile, "b_smem", padded(b_tile, pad_b))
    a_frag = alloc("register", (2, P.thread_m), "a_frag")
    b_frag = alloc("register", (2, P.thread_n), "b_frag")
    a_ldg = alloc("register", (a_load.per_thread,), "a_ldg")
    b_ldg = alloc("register", (b_load.per_thread,), "b_ldg")
    acc = alloc("register", (P.thread_m, P.thread_n), "acc")

    with (
        b.for_task(spatial(*tile_grid), bid, list(block_names)) as (bb, tile_m, tile_n),
        b.for_task(spatial(*P.block_warps), warp, ["wi", "wj"]) as (wi, wj),
        b.for_task(spatial(*P.lanes), lane, ["li", "lj"]) as (li, lj),
    ):
        operands = block_operands(b, b.unravel(bb, p.batch_shape, in_range=True))
        row0 = b.mul(tile_m, P.block_m, "row0")
        col0 = b.mul(tile_n, P.block_n, "col0")

        def tile_row(oi: Index, ii: Index) -> Index:  # spatial * repeat * spatial * repeat
            return b.add(b.mul(b.add(b.mul(b.add(b.mul(wi, P.warp_outer[0]), oi), P.lanes[0]),
                                     li), P.thread_inner[0]), ii)

        def tile_col(oj: Index, ij: Index) -> Index:
            return b.add(b.mul(b.add(b.mul(b.add(b.mul(wj, P.warp_outer[1]), oj), P.lanes[1]),
                                     lj), P.thread_inner[1]), ij)

        def global_to_registers(k_tile: Index) -> None:
            k0 = b.mul(k_tile, P.block_k, "k0")
            a_load.to_registers(b, operands.load_a, a_ldg, tid, row0, k0)
            b_load.to_registers(b, operands.load_b, b_ldg, tid, col0, k0)

        def registers_to_shared(stage: Index) -> None:
            a_load.to_shared(b, a_ldg, a_smem, stage, tid)
            b_load.to_shared(b, b_ldg, b_smem, stage, tid)

        def shared_to_fragments(stage: Index, kk: Index, slot: Index) -> None:
            with b.for_task(repeat(P.warp_outer[0], P.thread_inner[0]), None, ["oi", "ii"]) as (oi, ii):
                f = b.add(b.mul(oi, P.thread_inner[0]), ii)
                b.store(b.load(a_smem, [stage, kk, tile_row(oi, ii)]), a_frag, [slot, f])
            with b.for_task(repeat(P.warp_outer[1], P.thread_inner[1]), None, ["oj", "ij"]) as (oj, ij):
                f = b.add(b.mul(oj, P.thread_inner[1]), ij)
                b.store(b.load(b_smem, [stage, kk, tile_col(oj, ij)]), b_frag, [slot, f])

        def multiply_accumulate(slot: Index) -> None:
            with b.for_task(repeat(P.thread_m, P.thread_n), None, ["i", "j"]) as (i, j):
                prod = b.fop(arith.MulfOp, b.load(a_frag, [slot, i], name="a"),
                             b.load(b_frag, [slot, j], name="b"))
                b.store(b.fop(arith.AddfOp, b.load(acc, [i, j]), prod), acc, [i, j])

        zero = b.constant(0.0, element)
        with b.for_task(repeat(P.thread_m, P.thread_n), None, ["i", "j"]) as (i, j):
            b.store(zero, acc, [i, j])
        # Prologue: k-tile 0 into shared stage 0, its first slice into fragment stage 0.
        global_to_registers(0)
        registers_to_shared(0)
        b.insert(tm.BarrierOp())
        shared_to_fragments(0, 0, 0)

        with b.loop(0, k_tiles, name="kt") as kt:
            stage = b.rem(kt, 2, "stage")
            next_kt = b.add(kt, 1, "next_kt")
            has_next = b.lt(next_kt, k_tiles, "has_next")
            with b.if_(has_next):  # prefetch: issued before this tile's arithmetic
                global_to_registers(next_kt)
            with b.loop(0, P.block_k - 1, unroll=True, name="kk") as kk:
                next_kk = b.add(kk, 1, "next_kk")
                shared_to_fragments(stage, next_kk, b.rem(next_kk, 2, "next_slot"))
                multiply_accumulate(b.rem(kk, 2, "slot"))
            with b.if_(has_next):  # uniform over the block, so the barrier is legal here
                next_stage = b.rem(next_kt, 2, "next_stage")
                registers_to_shared(next_stage)
                b.insert(tm.BarrierOp())
                shared_to_fragments(next_stage, 0, 0)
            multiply_accumulate((P.block_k - 1) % 2)

        # Epilogue: each accumulator to its place in C (the caller scales, adds a bias,
        # guards where tiles overhang).
        with (
            b.for_task(repeat(*P.warp_outer), None, ["oi", "oj"]) as (oi, oj),
            b.for_task(repeat(*P.thread_inner), None, ["ii", "ij"]) as (ii, ij),
        ):
            row = b.add(row0, tile_row(oi, ii), "row")
            col = b.add(col0, tile_col(oj, ij), "col")
            value = b.load(acc, [b.add(b.mul(oi, P.thread_inner[0]), ii),
                                 b.add(b.mul(oj, P.thread_inner[1]), ij)], name="sum")
            operands.store_c(row, col, value)


@dataclass(frozen=True)
class _TileLoad:
    """The cooperative copy of one operand's ``outer x block_k`` tile, global → registers →
    ``smem[stage][k][outer]``.

    The operand is stored ``(..., outer, k)`` unless `k_major`, when it is
    ``(..., k, outer)``; the copy's mapping ``repeat * spatial`` follows that memory order
    so consecutive threads read consecutive addresses. Which global element a task reads
    is the caller's `ElementLoad`.
    """

    outer: int
    block_k: int
    k_major: bool
    threads: int

    @property
    def tile(self) -> Pair:
        return (self.block_k, self.outer) if self.k_major else (self.outer, self.block_k)

    @property
    def mapping(self) -> tuple[TaskMapping, TaskMapping]:
        """(repeat, spatial) parts of the copy mapping."""
        m = auto_map(self.tile, self.threads)
        if len(m.atoms) == 2:
            return TaskMapping(m.atoms[:1]), TaskMapping(m.atoms[1:])
        return repeat(1, 1), m

    @property
    def per_thread(self) -> int:
        return self.outer * self.block_k // self.threads

    @contextmanager
    def _tasks(self, b: IRBuilder, tid: SSAValue) -> Iterator[tuple[Index, Index, Index]]:
        """Open the copy's task loops; yield (register index, outer, k) of the task."""
        rep, spa = self.mapping
        r_shape, s_shape = rep.task_shape, spa.task_shape
        # repeat * spatial; a thread has one spatial task, so it can be the outer loop.
        with (b.for_task(spa, tid, ["s0", "s1"]) as (s0, s1),
              b.for_task(rep, None, ["r0", "r1"]) as (r0, r1)):
            reg = b.add(b.mul(r0, r_shape[1]), r1)
            rows, cols = b.add(b.mul(r0, s_shape[0]), s0), b.add(b.mul(r1, s_shape[1]), s1)
            o, k = (cols, rows) if self.k_major else (rows, cols)
            yield reg, o, k

    def to_registers(self, b: IRBuilder, load: ElementLoad, regs: SSAValue, tid: SSAValue,
                     o_base: Index, k_base: Index) -> None:
        with self._tasks(b, tid) as (reg, o, k):
            b.store(load(b.add(o_base, o), b.add(k_base, k)), regs, [reg])

    def to_shared(self, b: IRBuilder, regs: SSAValue, smem: SSAValue, stage: Index,
                  tid: SSAValue) -> None:
        with self._tasks(b, tid) as (reg, o, k):
            b.store(b.load(regs, [reg]), smem, [stage, k, o])


# ----------------------------------------------------------------------------- the space


def _next_pow2(x: int) -> int:
    return 1 << max(0, x - 1).bit_length()


#: Every tile side up to this fits any problem; the smallest tiles of the space (8 x 64,
#: 16 x 32, ...) are within it, so no problem has an empty space.
SMALL_TILE_SIDE = 64


def _fits_problem(P: MatmulSimtParams, p: MatmulProblem) -> bool:
    """No block tile side larger than the problem's side rounded up to a power of two
    (sides up to 64 always fit): a bigger tile only computes padding."""
    return (P.block_m <= max(SMALL_TILE_SIDE, _next_pow2(p.m))
            and P.block_n <= max(SMALL_TILE_SIDE, _next_pow2(p.n)))


MATMUL_SIMT_SPACE: Space[MatmulSimtParams] = Space(
    "matmul_simt",
    [
        Param("block_warps", ((1, 1), (1, 2), (2, 1), (2, 2), (2, 4), (4, 2), (1, 4), (4, 1)),
              "warps per block (rows, cols)"),
        Param("lanes", ((4, 8), (8, 4), (2, 16), (16, 2)), "the 32-lane layout of a warp"),
        Param("warp_outer", ((1, 1), (1, 2), (2, 1), (2, 2)), "repeats of the lane layout"),
        Param("thread_inner", ((4, 4),), "each thread's contiguous sub-tile"),
        Param("block_k", (8, 16), "k-step"),
    ],
    MatmulSimtParams,
    [
        Constraint("threads <= 1024", lambda P, p: P.threads <= MAX_THREADS_PER_BLOCK),
        Constraint("block tile <= 128 x 128",
                   lambda P, p: P.block_m <= 128 and P.block_n <= 128),
        Constraint("tile fits the problem", _fits_problem),
        Constraint("loads spread evenly over threads",
                   lambda P, p: (P.block_m * P.block_k) % P.threads == 0
                   and (P.block_n * P.block_k) % P.threads == 0),
        Constraint("shared memory <= 48 KiB",
                   lambda P, p: P.shared_bytes(p) <= MAX_STATIC_SHARED_BYTES),
        Constraint("registers <= 255 (estimate)",
                   lambda P, p: P.register_estimate() <= MAX_REGISTERS_PER_THREAD),
    ],
)

#: Tried in order by `MatmulSimtParams.default_for`: large, balanced tiles first.
DEFAULT_PREFERENCES = (
    MatmulSimtParams((4, 2), (2, 2), (4, 8), (4, 4), 8),  # 128 x 128, 256 threads, 8 x 8
    MatmulSimtParams((2, 2), (2, 2), (4, 8), (4, 4), 8),  # 64 x 128, 128 threads, 8 x 8
    MatmulSimtParams((2, 2), (1, 2), (8, 4), (4, 4), 8),  # 64 x 64, 128 threads, 4 x 8
    MatmulSimtParams((2, 2), (1, 1), (4, 8), (4, 4), 8),  # 32 x 64, 128 threads, 4 x 4
    MatmulSimtParams((1, 2), (1, 1), (4, 8), (4, 4), 8),  # 16 x 64, 64 threads, 4 x 4
    MatmulSimtParams((1, 1), (1, 1), (4, 8), (4, 4), 8),  # 16 x 32, 32 threads, 4 x 4
    MatmulSimtParams((1, 1), (1, 1), (2, 16), (4, 4), 8),  # 8 x 64, 32 threads, 4 x 4
)

