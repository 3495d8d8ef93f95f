"""The SIMT matmul template: ``C = alpha * op(A) @ op(B) + beta * bias``, batched.

Written with task mappings as in the Hidet paper:

* blocks: ``spatial(batch, M / block_m, N / block_n)`` — one output tile per block;
* each k-step, the block's threads load the A and B tiles cooperatively into shared
  memory (``repeat(...) * spatial(...)`` over the tile, consecutive threads on contiguous
  addresses), then a barrier;
* threads: ``spatial(block_m / thread_m, block_n / thread_n)`` owns a
  ``repeat(thread_m, thread_n)`` register tile accumulated from the shared tiles;
* the epilogue scales, adds the broadcast bias and stores with guards on the dimensions
  that are not tile multiples.

Double buffering and the tuned space come with the full template (issue 3); this one
has the structure they extend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from tmlir.dialects import tm
from tmlir.mapping import repeat, spatial, tile_mapping
from tmlir.schedules.builder import Index, IRBuilder
from tmlir.schedules.common import (
    broadcast_guards,
    broadcast_index,
    f32_memref,
    kernel_attributes,
    name_args,
)


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


@dataclass(frozen=True)
class MatmulSimtParams:
    """Tile sizes: block tile ``block_m x block_n``, k-step ``block_k``, thread tile."""

    block_m: int = 64
    block_n: int = 64
    block_k: int = 8
    thread_m: int = 4
    thread_n: int = 4

    @property
    def threads(self) -> int:
        return (self.block_m // self.thread_m) * (self.block_n // self.thread_n)

    @classmethod
    def default_for(cls, problem: MatmulProblem) -> MatmulSimtParams:
        """Block tiles no larger than the problem needs (16, 32 or 64 per side)."""

        def side(extent: int) -> int:
            return 64 if extent > 32 else 32 if extent > 16 else 16

        return cls(block_m=side(problem.m), block_n=side(problem.n))


def matmul_simt_kernel(name: str, problem: MatmulProblem, params: MatmulSimtParams) -> tm.KernelOp:
    """A kernel ``(A, B, [bias,] C)`` for `problem` with tile sizes `params`."""
    p, P = problem, params
    threads = P.threads
    grid_m, grid_n = math.ceil(p.m / P.block_m), math.ceil(p.n / P.block_n)
    batch = math.prod(p.batch_shape)
    arg_shapes = [p.lhs_shape, p.rhs_shape, *([p.bias_shape] if p.bias_shape else []), p.out_shape]
    kernel = tm.KernelOp(
        name, [f32_memref(s) for s in arg_shapes], batch * grid_m * grid_n, threads,
        kernel_attributes("matmul_simt", {**asdict(P), "M": p.m, "N": p.n, "K": p.k}),
    )
    name_args(kernel, ["A", "B", *(["bias"] if p.bias_shape else []), "C"])
    a, bmat, *rest = kernel.args
    bias, c = (rest[0], rest[1]) if p.bias_shape else (None, rest[0])
    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    a_smem = b.insert(tm.AllocOp("shared", f32_memref((P.block_k, P.block_m))), "a_smem").results[0]
    b_smem = b.insert(tm.AllocOp("shared", f32_memref((P.block_k, P.block_n))), "b_smem").results[0]
    acc = b.insert(tm.AllocOp("register", f32_memref((P.thread_m, P.thread_n))), "acc").results[0]
    thread_grid = spatial(P.block_m // P.thread_m, P.block_n // P.thread_n)
    thread_tile = repeat(P.thread_m, P.thread_n)
    guard_m, guard_n, guard_k = p.m % P.block_m != 0, p.n % P.block_n != 0, p.k % P.block_k != 0
    rank = len(p.out_shape)
    guarded_out = {d for d, g in ((rank - 2, guard_m), (rank - 1, guard_n)) if g}

    with b.for_task(spatial(batch, grid_m, grid_n), bid, ["batch", "tile_m", "tile_n"]) as (
        bb, tile_m, tile_n,
    ):
        batch_coords = b.unravel(bb, p.batch_shape, in_range=True)
        row0 = b.mul(tile_m, P.block_m, "row0")
        col0 = b.mul(tile_n, P.block_n, "col0")
        zero = b.f32(0.0)
        with b.for_task(thread_grid, tid, ["ti", "tj"]):
            with b.for_task(thread_tile, None, ["i", "j"]) as (i, j):
                b.store(zero, acc, [i, j])

        with b.loop(0, math.ceil(p.k / P.block_k), name="k0") as k0:
            k_base = b.mul(k0, P.block_k, "kbase")
            # A tile -> a_smem[k][m]; tasks follow A's memory order for coalescing.
            _load_tile(b, a, a_smem, tid, threads, p.lhs_shape, batch_coords, p.batch_shape,
                       outer=(row0, P.block_m, guard_m), inner=(k_base, P.block_k, guard_k),
                       transposed=p.transpose_lhs)
            _load_tile(b, bmat, b_smem, tid, threads, p.rhs_shape, batch_coords, p.batch_shape,
                       outer=(col0, P.block_n, guard_n), inner=(k_base, P.block_k, guard_k),
                       transposed=not p.transpose_rhs)
            b.insert(tm.BarrierOp())
            with b.loop(0, P.block_k, unroll=True, name="kk") as kk:
                with b.for_task(thread_grid, tid, ["ti", "tj"]) as (ti, tj):
                    with b.for_task(thread_tile, None, ["i", "j"]) as (i, j):
                        av = b.load(a_smem, [kk, b.add(b.mul(ti, P.thread_m), i)], name="a")
                        bv = b.load(b_smem, [kk, b.add(b.mul(tj, P.thread_n), j)], name="b")
                        prod = b.fop(arith.MulfOp, av, bv)
                        b.store(b.fop(arith.AddfOp, b.load(acc, [i, j]), prod), acc, [i, j])
            b.insert(tm.BarrierOp())

        with b.for_task(thread_grid, tid, ["ti", "tj"]) as (ti, tj):
            with b.for_task(thread_tile, None, ["i", "j"]) as (i, j):
                row = b.add(row0, b.add(b.mul(ti, P.thread_m), i), "row")
                col = b.add(col0, b.add(b.mul(tj, P.thread_n), j), "col")
                value = b.load(acc, [i, j], name="sum")
                if p.alpha != 1.0:
                    value = b.fop(arith.MulfOp, value, b.f32(p.alpha))
                out_coords = [*batch_coords, row, col]
                if bias is not None and p.bias_shape is not None:
                    index = broadcast_index(out_coords, p.out_shape, p.bias_shape)
                    guards = broadcast_guards(p.out_shape, p.bias_shape, guarded_out)
                    bv = b.load(bias, index, guards, name="bias")
                    if p.beta != 1.0:
                        bv = b.fop(arith.MulfOp, bv, b.f32(p.beta))
                    value = b.fop(arith.AddfOp, value, bv)
                b.store(value, c, out_coords, sorted(guarded_out))
    return kernel


def _load_tile(
    b: IRBuilder, src: SSAValue, smem: SSAValue, tid: SSAValue, threads: int,
    shape: tuple[int, ...], batch_coords: Sequence[Index], batch_shape: tuple[int, ...],
    outer: tuple[Index, int, bool], inner: tuple[Index, int, bool], transposed: bool,
) -> None:
    """Copy a (outer x k) tile of `src` into ``smem[k][outer]``.

    `outer`/`inner` are (base, extent, needs guard) of the m-or-n and k dimensions; the
    operand is stored (..., outer, k) unless `transposed`, when it is (..., k, outer).
    """
    (o_base, o_ext, o_guard), (k_base, k_ext, k_guard) = outer, inner
    rank = len(shape)
    operand_batch = broadcast_index(batch_coords, batch_shape, shape[:-2]) if rank > 2 else []
    rows, cols = (k_ext, o_ext) if transposed else (o_ext, k_ext)
    names = ["k", "o"] if transposed else ["o", "k"]
    with b.for_task(tile_mapping((rows, cols), threads), tid, names) as (r, c):
        o, k = (c, r) if transposed else (r, c)
        go, gk = b.add(o_base, o), b.add(k_base, k)
        index = [*operand_batch, *((gk, go) if transposed else (go, gk))]
        guard_o, guard_k = (rank - 1, rank - 2) if transposed else (rank - 2, rank - 1)
        guard = sorted(d for d, g in ((guard_o, o_guard), (guard_k, k_guard)) if g)
        b.store(b.load(src, index, guard), smem, [k, o])
