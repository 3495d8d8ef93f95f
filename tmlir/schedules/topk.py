"""The ``k`` largest (or smallest) elements along one axis and their indices (ONNX ``TopK``):
a thread per element that counts its rank.

The elements along ``axis`` that share every other coordinate are a row of ``n``; the
ranking within a row is a strict total order: ``a`` before ``b`` when ``a`` is larger
(smallest: smaller), or equal and at a lower index; a NaN is larger than any number and
equal to another NaN (torch's ``topk``; NaNs come first among the largest and last among
the smallest). Each thread owns one element ``(row, i)`` (``spatial(grid) x
spatial(block)`` over the ``rows * n`` elements, consecutive threads on consecutive
elements of a row) and counts the elements of its row ranked before it::

    rank = sum over j of before(X[row, j], j, X[row, i], i)
    if rank < k:  values[row, rank] = X[row, i];  indices[row, rank] = i

so the outputs come sorted, each written by exactly one thread, with no synchronization
(``sorted = 0`` allows any order; sorted is one of them). The cost is ``n`` loads and
compares per element, ``n^2`` per row: the threads of a row read the same element at each
step (a broadcast), so rows of up to a few thousand elements run well; for long rows
(vocabularies of 50k) a block-wide selection (radix select, then a sort of the ``k``)
would be the next step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import nullcontext

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, IndexType, MemRefType, i32, i64
from xdsl.ir import Attribute, SSAValue

from tmlir import dtypes
from tmlir.dialects import tm
from tmlir.ir.builder import IRBuilder
from tmlir.mapping import spatial
from tmlir.schedules.common import kernel_attributes, name_args
from tmlir.schedules.reduce import RowProblem

#: The largest block of the kernel (threads, one element each).
TOPK_BLOCK = 256
TOPK_ELEMENTS = tuple(d.ir for d in dtypes.NUMERIC)


def _before(b: IRBuilder, a: SSAValue, b_value: SSAValue, smallest: bool) -> tuple[SSAValue, SSAValue]:
    """(``a`` strictly before ``b_value`` by value, ``a`` equal to it) in the ranking."""
    if not dtypes.is_float(a.type):
        order = ("ult" if smallest else "ugt") if dtypes.is_unsigned(a.type) else ("slt" if smallest else "sgt")
        strictly = b.insert(arith.CmpiOp(a, b_value, order)).results[0]
        return strictly, b.insert(arith.CmpiOp(a, b_value, "eq")).results[0]
    a_nan = b.insert(arith.CmpfOp(a, a, "une"), f"{a.name_hint}_nan").results[0]
    b_nan = b.insert(arith.CmpfOp(b_value, b_value, "une"), f"{b_value.name_hint}_nan").results[0]
    larger, number = (b_nan, a) if smallest else (a_nan, b_value)  # NaN-first side
    other_is_number = b.insert(arith.CmpfOp(number, number, "oeq")).results[0]
    compare = b.insert(arith.CmpfOp(a, b_value, "olt" if smallest else "ogt")).results[0]
    strictly = b.fop(arith.OrIOp, compare, b.fop(arith.AndIOp, larger, other_is_number))
    equal = b.fop(arith.OrIOp, b.insert(arith.CmpfOp(a, b_value, "oeq")).results[0],
                  b.fop(arith.AndIOp, a_nan, b_nan))
    return strictly, equal


def topk_kernel(name: str, shape: Sequence[int], axis: int, k: int, smallest: bool = False,
                element: Attribute = Float32Type()) -> tm.KernelOp:
    """A kernel ``(x, values, indices)``: along `axis` of `x` (of `shape`, `element` any
    float or integer type; f16 is compared as f32), the `k` largest (`smallest`: smallest)
    elements of each row in order, and their i64 indices; the shape of both outputs is
    `shape` with `k` at `axis`."""
    if element not in TOPK_ELEMENTS:
        raise ValueError(f"top-k of {element} elements is not supported")
    problem = RowProblem(tuple(shape) or (1,), axes=(axis,))
    n = problem.cols
    if not 1 <= k <= n:
        raise ValueError(f"k = {k} must be in [1, {n}]")
    out_shape = [k if d == problem.axis else e for d, e in enumerate(problem.shape)]
    total = problem.rows * n
    block = min(TOPK_BLOCK, 32 * math.ceil(total / 32))
    grid = math.ceil(total / block)
    kernel = tm.KernelOp(
        name, [MemRefType(element, list(problem.shape)), MemRefType(element, out_shape),
               MemRefType(i64, out_shape)], grid, block,
        kernel_attributes("topk", {"axis": problem.axis, "k": k, "rows": problem.rows, "cols": n,
                                   "order": "smallest" if smallest else "largest", "block": block}))
    name_args(kernel, ["x", "values", "indices"])
    x, values, indices = kernel.args
    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    rank = b.insert(tm.AllocOp("register", MemRefType(i32, [1])), "rank").results[0]
    with (b.for_task(spatial(grid), bid, ["blk"]) as (blk,),
          b.for_task(spatial(block), tid, ["lane"]) as (t,)):
        linear = b.add(b.mul(blk, block), t, "idx")
        in_range = b.lt(linear, total, "in_range") if total % block else None
        with b.if_(in_range) if in_range is not None else nullcontext():
            row = b.unravel(b.div(linear, n, "row"), problem.row_shape, in_range=True)
            i = b.rem(linear, n, "i")
            mine = b.load(x, problem.index(row, [i]), name="mine")
            b.store(b.constant(0, i32), rank, [0])
            with b.loop(0, n, name="j") as j:
                other = b.load(x, problem.index(row, [j]), name="other")
                strictly, equal = _before(b, other, mine, smallest)
                tie = b.fop(arith.AndIOp, equal, b.lt(j, i))
                ahead = b.fop(arith.OrIOp, strictly, tie, name="ahead")
                count = b.load(rank, [0])
                b.store(b.fop(arith.AddiOp, count, b.fop(arith.ExtUIOp, ahead, i32)), rank, [0])
            position = b.fop(arith.IndexCastOp, b.load(rank, [0], name="position"), IndexType())
            with b.if_(b.lt(position, k, "selected")):
                at = problem.index(row, [position])
                b.store(mine, values, at)
                b.store(b.fop(arith.IndexCastOp, b.value(i), i64), indices, at)
    return kernel
