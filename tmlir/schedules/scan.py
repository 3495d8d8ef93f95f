"""Running sums along one axis (ONNX ``CumSum``): a thread per row, a sequential scan.

A tensor of shape ``(d0, ..., dn)`` scanned along ``axis`` is ``rows`` independent rows of
``n = d_axis`` elements, ``stride = prod(d_{axis+1:})`` apart in memory. Each thread owns
one row (blocks of up to 256 threads, ``spatial(grid) x spatial(block)`` as the
elementwise template) and walks it with an ``scf.for``, keeping the running sum in a
register::

    acc = 0
    for k in 0 .. n:                 # j = n - 1 - k when reversed
        x = X[row, j]
        Y[row, j] = acc + x          # exclusive: Y[row, j] = acc
        acc = acc + x

Float sums are accumulated in the element type in index order, as onnxruntime does; i32 and i64 wrap.
Consecutive threads take consecutive rows, so when ``stride > 1`` (the axis is not the
last) a warp's loads of one step are adjacent and coalesce; along the last axis they are
``n`` apart. The work is ``n`` dependent steps per thread: fine for rows of up to a few
thousand elements with enough rows to fill the GPU; a long single row runs on one thread
(a block-wide parallel scan would be the next step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import nullcontext

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, MemRefType, i32, i64
from xdsl.ir import Attribute, SSAValue

from tmlir.dialects import tm
from tmlir.ir.builder import IRBuilder
from tmlir.mapping import spatial
from tmlir.schedules.common import kernel_attributes, name_args
from tmlir.schedules.reduce import RowProblem

#: The largest block of the scan (threads, one row each).
SCAN_BLOCK = 256
SCAN_ELEMENTS = (Float32Type(), Float64Type(), i32, i64)


def cumsum_kernel(name: str, shape: Sequence[int], axis: int, exclusive: bool = False,
                  reverse: bool = False, element: Attribute = Float32Type()) -> tm.KernelOp:
    """A kernel ``(x, out)``: the running sums of `x` (of `shape`, `element` f32, f64, i32
    or i64) along `axis`; `exclusive` leaves each element out of its own sum, `reverse` sums
    from the end of the axis."""
    if element not in SCAN_ELEMENTS:
        raise ValueError(f"cumsum of {element} elements is not supported (f32, f64, i32, i64)")
    problem = RowProblem(tuple(shape) or (1,), axes=(axis,))
    rows, n = problem.rows, problem.cols
    block = min(SCAN_BLOCK, 32 * math.ceil(rows / 32))
    grid = math.ceil(rows / block)
    memref = MemRefType(element, list(problem.shape))
    flags = [f for f, on in (("exclusive", exclusive), ("reverse", reverse)) if on]
    kernel = tm.KernelOp(name, [memref, memref], grid, block, kernel_attributes(
        "scan", {"op": "cumsum", "axis": problem.axis, "rows": rows, "cols": n, "block": block,
                 **({"flags": ",".join(flags)} if flags else {})}))
    name_args(kernel, ["x", "out"])
    x, out = kernel.args
    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    acc = b.insert(tm.AllocOp("register", MemRefType(element, [1])), "acc").results[0]
    add = arith.AddiOp if element in (i32, i64) else arith.AddfOp
    with (b.for_task(spatial(grid), bid, ["blk"]) as (blk,),
          b.for_task(spatial(block), tid, ["lane"]) as (t,)):
        row = b.add(b.mul(blk, block), t, "row")
        in_range = b.lt(row, rows, "row_ok") if rows % block else None
        with b.if_(in_range) if in_range is not None else nullcontext():
            coords = b.unravel(row, problem.row_shape, in_range=True)
            for d, c in enumerate(coords):
                if isinstance(c, SSAValue):
                    c.name_hint = f"row{d}"
            b.store(b.constant(0, element), acc, [0])
            with b.loop(0, n, name="k") as k:
                j = b.sub(n - 1, k, "j") if reverse else k
                index = problem.index(coords, [j])
                value = b.load(x, index, name="v")
                total = b.load(acc, [0], name="sum")
                after = b.fop(add, total, value, name="next")
                b.store(total if exclusive else after, out, index)
                b.store(after, acc, [0])
    return kernel
