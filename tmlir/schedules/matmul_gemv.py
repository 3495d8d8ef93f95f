"""The small-M matmul template (GEMV): ``C = alpha * A @ B + beta * bias`` for at most 16
rows of A, streaming B at the memory's pace.

A matmul with few rows (a pooler or a classifier on one token, an LM head or a decode
step) reads each element of B once and does a handful of FMAs with it: its time is B's
bytes over the bandwidth, provided enough bytes are in flight to cover the DRAM latency
(Little's law: ~0.6 us at 4.8 TB/s is ~3 MB, ~22 KiB per SM of an H200). The SIMT
template tiles M, so one row wastes most of each block, and keeps one k-tile in flight;
this one gives every thread `unroll` 16-byte loads of B in flight (``tm.load_vector``) and
keeps all rows of A in each thread. A batch folds into the rows when B is not batched
(``1 x 1 x 768 @ 768 x N`` has one row); the template takes problems of at most
`MAX_ROWS` folded rows (`takes`), f32 tensors (f16 ones through ``half_arguments``: the
vectors become 8-byte f16 ones). Two layouts of B:

* **nk** (B stored ``N x K``: ONNX Gemm ``transB=1``, PyTorch Linear) -- warps along
  columns, lanes along K::

      blocks   spatial(N / block_n)                      on block_id
      warps    spatial(block_n, k_slices)                on warp      (column, K slice)
      lanes    spatial(32)                               on lane      (vector along K)

  each k-step a thread loads `unroll` vectors of its column's row of B (and the matching
  vectors of A's rows -- elements past `VECTOR_A_ROWS` rows, to save registers), then
  FMAs them into one accumulator per row; a butterfly of
  shuffles sums the 32 lanes, shared memory the `k_slices` warps of a column.
* **kn** (B stored ``K x N``: ONNX MatMul weights) -- threads along columns, a vector of
  consecutive columns each (2 to 32 threads: 32 to 512 bytes of a row of B), the block's
  other threads splitting K::

      blocks   spatial(N / block_n)                      on block_id
      threads  spatial(k_slices, block_n / vector)       on thread    (K slice, columns)

  each k-step a thread loads `unroll` rows of its columns, times the rows' A elements
  (scalar loads, one address for the whole warp); shuffles sum the slices of a warp,
  shared memory the warps.

Tails: K past the last whole k-step is a guarded step; columns past N read the last column
(clamped indices, so every load stays inside B) and their stores are guarded. A vector
needs the contiguous dimension (K for nk, N for kn) to be a multiple of the width: the
space's ``vector = 1`` candidates serve the others with scalar loads. An operand a fused
prologue computes (`prologue`) is read with scalar loads. The epilogue is the SIMT
template's: alpha, the broadcast bias times beta, guarded ``tm.store``s.

The kernel header (``tm.params``) lists ``M`` (folded rows), ``N``, ``K``, ``layout``,
``block_m`` (= M), ``block_n``, ``block_k`` (K elements one k-step covers), ``threads``,
``warps``, ``vector``, ``unroll``, ``k_slices`` (threads per column: warps for nk,
threads per column vector for kn), ``k_steps`` (serial loop iterations of a thread:
``ceil(K / block_k)``), ``loads_in_flight`` (vector loads of B each thread has in flight:
``unroll``), ``stages`` (1) and ``split_k`` (1). The parameters, their space
(`MATMUL_GEMV_SPACE`) and default (`MatmulGemvParams.default_for`) are in
``matmul_gemv_params.py``; this module re-exports them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import repeat, spatial
from tmlir.schedules.common import (
    broadcast_index,
    f32_memref,
    kernel_attributes,
    name_args,
)
from tmlir.schedules.gemm import store_result
from tmlir.schedules.matmul_gemv_params import (
    MATMUL_GEMV_SPACE,
    MAX_ROWS,
    VECTOR_A_ROWS,
    MatmulGemvParams,
    folded_rows,
    layout_of,
    takes,
)
from tmlir.schedules.matmul_simt import MatmulProblem

__all__ = ["MATMUL_GEMV_SPACE", "MAX_ROWS", "MatmulGemvParams", "folded_rows", "layout_of",
           "matmul_gemv_kernel", "takes"]


@dataclass
class _Operands:
    """How the kernel reads A, B and the bias and writes C, for folded row `r` (an index
    below the folded rows) and column or k coordinates."""

    b: IRBuilder
    problem: MatmulProblem
    a: SSAValue
    w: SSAValue
    bias: SSAValue | None
    c: SSAValue
    vector_a: bool
    vector_w: bool
    guard_n: bool

    def _row(self, r: Index) -> tuple[list[Index], Index]:
        """Output batch coordinates and row of folded row `r`."""
        p = self.problem
        *batch, i = self.b.unravel(r, (*p.batch_shape, p.m), in_range=True)
        return batch, i

    def load_a(self, r: Index, k: Index, width: int) -> list[SSAValue]:
        """``A[row r, k .. k + width)``: one vector load, or `width` element loads."""
        p, b = self.problem, self.b
        batch, i = self._row(r)
        lead = broadcast_index(batch, p.batch_shape, p.lhs_shape[:-2])
        if self.vector_a and width > 1:
            op = b.insert(tm.LoadVectorOp(self.a, [b.value(x) for x in (*lead, i, k)], width))
            for value in op.results:
                value.name_hint = "a"
            return list(op.results)
        return [b.load(self.a, [*lead, *((b.add(k, e), i) if p.transpose_lhs else (i, b.add(k, e)))],
                       name="a") for e in range(width)]

    def load_w(self, inner: Index, outer: Index, width: int) -> list[SSAValue]:
        """`width` consecutive elements of B from ``B[outer, inner]`` (B's storage order:
        ``n, k`` for nk, ``k, n`` for kn; leading batch dims of extent 1)."""
        b = self.b
        lead = [0] * (len(self.problem.rhs_shape) - 2)
        if self.vector_w and width > 1:
            op = b.insert(tm.LoadVectorOp(self.w, [b.value(x) for x in (*lead, outer, inner)], width))
            for value in op.results:
                value.name_hint = "w"
            return list(op.results)
        return [b.load(self.w, [*lead, outer, b.add(inner, e)], name="w") for e in range(width)]

    def store_c(self, r: Index, col: Index, value: SSAValue) -> None:
        """``C[row r, col] = alpha * value + beta * bias[...]``, guarded on N where blocks
        overhang it."""
        p, b = self.problem, self.b
        batch, i = self._row(r)
        guarded = {len(p.out_shape) - 1} if self.guard_n else set()
        store_result(b, p, self.c, self.bias, [*batch, i, col], value, guarded, Float32Type())


def matmul_gemv_kernel(name: str, problem: MatmulProblem, params: MatmulGemvParams,
                       prologue: Collection[int] = ()) -> tm.KernelOp:
    """A kernel ``(A, B, [bias,] C)`` for `problem` (`takes` it) with the schedule `params`
    (a candidate of `MATMUL_GEMV_SPACE` for it; ValueError naming the constraint it breaks).
    Operands in `prologue` (0: A, 1: B) are read with scalar ``tm.load``s."""
    p, P = problem, params
    if not takes(p):
        raise ValueError(f"matmul_gemv takes at most {MAX_ROWS} rows of an unbatched B, got "
                         f"{p.batch} x {p.m} rows and B {list(p.rhs_shape)}")
    broken = MATMUL_GEMV_SPACE.first_violation(P, p)
    if broken is not None:
        raise ValueError(f"{P} breaks the constraint '{broken}' of matmul_gemv for this problem")
    arg_shapes = [p.lhs_shape, p.rhs_shape, *([p.bias_shape] if p.bias_shape else []), p.out_shape]
    kernel = tm.KernelOp(name, [f32_memref(s) for s in arg_shapes], P.blocks(p), P.threads,
                         kernel_attributes("matmul_gemv", P.describe(p)))
    name_args(kernel, ["A", "B", *(["bias"] if p.bias_shape else []), "C"])
    a, w, *rest = kernel.args
    b = IRBuilder.at_end(kernel.body.block)
    operands = _Operands(
        b, p, a, w, rest[0] if p.bias_shape else None, rest[-1],
        vector_a=(layout_of(p) == "nk" and folded_rows(p) <= VECTOR_A_ROWS and not p.transpose_lhs
                  and 0 not in prologue),
        vector_w=1 not in prologue, guard_n=p.n % P.block_n != 0)
    if layout_of(p) == "nk":
        _gemv_nk(b, p, P, operands)
    else:
        _gemv_kn(b, p, P, operands)
    return kernel


def _alloc(b: IRBuilder, scope: str, shape: Sequence[int], name: str) -> SSAValue:
    return b.insert(tm.AllocOp(scope, f32_memref(shape)), name).results[0]


def _clamped(b: IRBuilder, index: Index, last: int, needed: bool) -> Index:
    """`index`, or the smaller of it and `last` (a column past N reads column `last`)."""
    if not needed:
        return index
    inside = b.lt(index, last + 1)
    return b.insert(arith.SelectOp(inside, b.value(index), b.value(last)), "n_load").results[0]


def _steps(b: IRBuilder, K: int, block_k: int, body) -> None:
    """``body(k0, guarded)`` for each whole k-step (a loop) and the partial last one."""
    full = K // block_k
    if full:
        with b.loop(0, full, name="kt") as kt:
            body(b.mul(kt, block_k, "k0"), False)
    if K % block_k:
        body(full * block_k, True)


def _accumulate(b: IRBuilder, acc: SSAValue, index: Sequence[Index], a: SSAValue, w: SSAValue) -> None:
    """``acc[index] += a * w``."""
    total = b.fop(arith.AddfOp, b.load(acc, index, name="partial"), b.fop(arith.MulfOp, a, w))
    b.store(total, acc, index)


def _warp_sum(b: IRBuilder, value: SSAValue, first: int) -> SSAValue:
    """`value` summed over the lanes ``lane ^ m`` for m = `first`, 2 `first`, ..., 16."""
    mask = first
    while mask < WARP_SIZE:
        other = b.insert(tm.ShuffleOp(value, "xor", mask), f"sum_xor{mask}").results[0]
        value = b.fop(arith.AddfOp, value, other)
        mask *= 2
    return value


def _gemv_nk(b: IRBuilder, p: MatmulProblem, P: MatmulGemvParams, io: _Operands) -> None:
    """B is ``N x K``: a warp per column and K slice, lanes along K (module docstring)."""
    rows, v, U, slices = folded_rows(p), P.vector, P.unroll, P.k_slices(p)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    warp, lane = b.div(tid, WARP_SIZE, "warp"), b.rem(tid, WARP_SIZE, "lane")
    acc = _alloc(b, "register", (rows,), "acc")
    w_regs = _alloc(b, "register", (U, v), "w_regs")
    red = _alloc(b, "shared", (slices, P.block_n, rows), "partial") if slices > 1 else None
    with (b.for_task(spatial(P.blocks(p)), bid, ["tile_n"]) as (tile_n,),
          b.for_task(spatial(P.block_n, slices), warp, ["col", "slice"]) as (col, k_slice)):
        n = b.add(b.mul(tile_n, P.block_n, "col0"), col, "n")
        n_load = _clamped(b, n, p.n - 1, io.guard_n)
        zero = b.f32(0.0)
        with b.for_task(repeat(rows), None, ["r"]) as (r,):
            b.store(zero, acc, [r])

        def k_of(k0: Index, u: SSAValue) -> Index:  # chunk (u, slice) of 32 vectors, then the lane's
            chunk = b.add(b.mul(u, slices), k_slice)
            return b.add(b.add(k0, b.mul(chunk, WARP_SIZE * v)), b.mul(lane, v), "k")

        def step(k0: Index, guarded: bool) -> None:
            with b.for_task(repeat(U), None, ["u"]) as (u,):  # loads first: `unroll` in flight
                k = k_of(k0, u)
                with b.if_(b.lt(k, p.k)) if guarded else nullcontext():
                    for e, value in enumerate(io.load_w(k, n_load, v)):
                        b.store(value, w_regs, [u, e])
            with b.for_task(repeat(U), None, ["u"]) as (u,):
                k = k_of(k0, u)
                with (b.if_(b.lt(k, p.k)) if guarded else nullcontext(),
                      b.for_task(repeat(rows), None, ["r"]) as (r,)):
                    for e, a in enumerate(io.load_a(r, k, v)):
                        _accumulate(b, acc, [r], a, b.load(w_regs, [u, e], name="w"))

        _steps(b, p.k, P.block_k(p), step)
        with b.for_task(repeat(rows), None, ["r"]) as (r,):  # the 32 lanes' sums, in every lane
            b.store(_warp_sum(b, b.load(acc, [r]), 1), acc, [r])
        if red is None:
            with b.for_task(repeat(rows), None, ["r"]) as (r,), b.if_(b.eq(lane, r)):  # lane r: row r
                io.store_c(r, n, b.load(acc, [r], name="sum"))
            return
        with b.for_task(repeat(rows), None, ["r"]) as (r,), b.if_(b.eq(lane, r)):
            b.store(b.load(acc, [r]), red, [k_slice, col, r])
    b.insert(tm.BarrierOp())
    with (b.for_task(spatial(P.blocks(p)), bid, ["tile_n"]) as (tile_n,),
          b.for_task(spatial(P.block_n, rows), tid, ["col", "r"]) as (col, r)):
        total = b.load(red, [0, col, r])
        for s in range(1, slices):
            total = b.fop(arith.AddfOp, total, b.load(red, [s, col, r]))
        total.name_hint = "sum"
        io.store_c(r, b.add(b.mul(tile_n, P.block_n, "col0"), col, "n"), total)


def _gemv_kn(b: IRBuilder, p: MatmulProblem, P: MatmulGemvParams, io: _Operands) -> None:
    """B is ``K x N``: threads along columns (a vector each), K split over the rest."""
    rows, v, U = folded_rows(p), P.vector, P.unroll
    across, slices = P.column_threads(p), P.k_slices(p)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    acc = _alloc(b, "register", (rows, v), "acc")
    w_regs = _alloc(b, "register", (U, v), "w_regs")
    red = _alloc(b, "shared", (P.warps, rows, P.block_n), "partial") if P.warps > 1 else None
    with (b.for_task(spatial(P.blocks(p)), bid, ["tile_n"]) as (tile_n,),
          b.for_task(spatial(slices, across), tid, ["slice", "ct"]) as (k_slice, ct)):
        c0 = b.mul(ct, v, "c0")  # the thread's first column in the tile
        n0 = b.add(b.mul(tile_n, P.block_n, "col0"), c0, "n0")
        n_load = _clamped(b, n0, p.n - v, io.guard_n)
        zero = b.f32(0.0)
        with b.for_task(repeat(rows, v), None, ["r", "e"]) as (r, e):
            b.store(zero, acc, [r, e])

        def k_of(k0: Index, u: SSAValue) -> Index:
            return b.add(k0, b.add(b.mul(u, slices), k_slice), "k")

        def step(k0: Index, guarded: bool) -> None:
            with b.for_task(repeat(U), None, ["u"]) as (u,):
                k = k_of(k0, u)
                with b.if_(b.lt(k, p.k)) if guarded else nullcontext():
                    for e, value in enumerate(io.load_w(n_load, k, v)):
                        b.store(value, w_regs, [u, e])
            with b.for_task(repeat(U), None, ["u"]) as (u,):
                k = k_of(k0, u)
                with (b.if_(b.lt(k, p.k)) if guarded else nullcontext(),
                      b.for_task(repeat(rows), None, ["r"]) as (r,)):
                    (a_value,) = io.load_a(r, k, 1)
                    for e in range(v):
                        _accumulate(b, acc, [r, e], a_value, b.load(w_regs, [u, e], name="w"))

        _steps(b, p.k, P.block_k(p), step)
        lane = b.rem(tid, WARP_SIZE, "lane")
        if across < WARP_SIZE:  # the slices of a warp, summed in each of their lanes
            with b.for_task(repeat(rows, v), None, ["r", "e"]) as (r, e):
                b.store(_warp_sum(b, b.load(acc, [r, e]), across), acc, [r, e])
        first = b.lt(lane, across) if across < WARP_SIZE else None  # a warp's first slice
        with b.if_(first) if first is not None else nullcontext(), \
                b.for_task(repeat(rows, v), None, ["r", "e"]) as (r, e):
            if red is None:
                io.store_c(r, b.add(n0, e), b.load(acc, [r, e], name="sum"))
            else:
                b.store(b.load(acc, [r, e]), red, [b.div(tid, WARP_SIZE, "warp"), r, b.add(c0, e)])
    if red is None:
        return
    b.insert(tm.BarrierOp())
    tasks = rows * P.block_n
    rounds = math.ceil(tasks / P.threads)
    with (b.for_task(spatial(P.blocks(p)), bid, ["tile_n"]) as (tile_n,),
          b.for_task(repeat(rounds) * spatial(P.threads), tid, ["task"]) as (task,),
          b.if_(b.lt(task, tasks)) if rounds * P.threads > tasks else nullcontext()):
        r, col = b.div(task, P.block_n, "r"), b.rem(task, P.block_n, "col")
        total = b.load(red, [0, r, col])
        for g in range(1, P.warps):
            total = b.fop(arith.AddfOp, total, b.load(red, [g, r, col]))
        total.name_hint = "sum"
        io.store_c(r, b.add(b.mul(tile_n, P.block_n, "col0"), col, "n"), total)
