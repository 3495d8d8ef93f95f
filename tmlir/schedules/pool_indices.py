"""Max pooling with the index of each max (``graph.max_pool_with_indices``).

The window schedule of ``pool.py`` (one thread per output element, the taps as a
``repeat``) carrying two registers, the best value and its flattened input index::

    blocks   spatial(ceil(total / block))    on block_id
    threads  spatial(block)                  on thread_id -> output (n, c, o1, ..., ok)
    window   repeat(K1, ..., Kk)             taps (t1, ..., tk), row-major

A tap inside the input replaces the best when it is larger (``ogt``, so the first of equal
maxima wins and a NaN never does), or when it is the window's first non-NaN tap (the index
is still -1). The index is ``(n * C + c) * D1 * ... * Dk`` plus the tap's spatial
coordinates numbered row-major, or column-major (``column_major``), as onnxruntime's
``MaxPool`` with ``storage_order`` numbers them; it is stored as i64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import nullcontext

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, i64
from xdsl.ir import Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.gpu_limits import WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import repeat
from tmlir.schedules.common import f32_memref, kernel_attributes, name_args, per_element, spatial_names
from tmlir.schedules.pool import PoolParams, PoolProblem
from tmlir.schedules.registry import NoTemplate, schedules


def _strides(shape: Sequence[int], column_major: bool) -> list[int]:
    """The element strides of `shape`, row-major or column-major."""
    order = range(len(shape)) if column_major else range(len(shape) - 1, -1, -1)
    strides, step = [0] * len(shape), 1
    for d in order:
        strides[d], step = step, step * shape[d]
    return strides


def max_pool_indices_kernel(name: str, problem: PoolProblem, column_major: bool = False,
                            params: PoolParams = PoolParams()) -> tm.KernelOp:
    """A kernel ``(x, y, indices)``: `problem`'s max pooling and the i64 flattened input
    index of each max (spatial dims numbered column-major with `column_major`)."""
    p, k = problem, problem.spatial_rank
    if p.kind != "max":
        raise ValueError(f"max pool with indices: kind must be max, got '{p.kind}'")
    total = math.prod(p.out_shape)
    block = min(params.block, WARP_SIZE * math.ceil(total / WARP_SIZE))
    grid = math.ceil(total / block)
    partial = total % block != 0
    order = {"storage_order": 1} if column_major else {}
    kernel = tm.KernelOp(name, [f32_memref(p.input_shape), f32_memref(p.out_shape),
                                MemRefType(i64, list(p.out_shape))], grid, block,
                         kernel_attributes("max_pool_indices", {**p.describe(), **order,
                                                                "block": block}))
    name_args(kernel, ["x", "y", "indices"])
    x, y, indices = kernel.args
    spatial_shape = p.input_shape[2:]
    plane = math.prod(spatial_shape)
    strides = _strides(spatial_shape, column_major)
    size = [p.input_shape[2 + d] + p.pads[d] for d in range(k)]
    reach = [(p.out_spatial[d] - 1) * p.strides[d] + (p.kernel[d] - 1) * p.dilations[d]
             for d in range(k)]

    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    best = b.insert(tm.AllocOp("register", f32_memref((1,))), "best").results[0]
    where = b.insert(tm.AllocOp("register", MemRefType(i64, [1])), "where").results[0]
    with per_element(b, bid, tid, grid, block, p.out_shape, ["n", "c", *spatial_names("o", k)],
                     partial) as (n, c, *out):
        inside = [b.lt(n, p.input_shape[0], "n_ok")] if partial else []
        b.store(b.f32(-math.inf), best, [0])
        b.store(b.constant(-1, i64), where, [0])
        base = b.mul(b.add(b.mul(n, p.input_shape[1]), c), plane, "base")
        with b.for_task(repeat(*p.kernel), None, spatial_names("k", k)) as taps:
            checks = list(inside)
            coords: list[Index] = []
            for d in range(k):
                padded = b.add(b.mul(out[d], p.strides[d]), b.mul(taps[d], p.dilations[d]),
                               spatial_names("p", k)[d] if p.pads[d] > 0 else None)
                if p.pads[d] > 0:
                    checks.append(b.ge(padded, p.pads[d]))
                if reach[d] >= size[d]:
                    checks.append(b.lt(padded, size[d]))
                coords.append(b.sub(padded, p.pads[d], spatial_names("i", k)[d]))
                if isinstance(coords[-1], SSAValue) and coords[-1].name_hint is None:
                    coords[-1].name_hint = spatial_names("i", k)[d]  # no begin pad: the same value
            condition = b.all_of(checks)
            with b.if_(condition) if condition is not None else nullcontext():
                v = b.load(x, [n, c, *coords], name="v")
                current = b.load(best, [0], name="current")
                larger = b.insert(arith.CmpfOp(v, current, "ogt")).results[0]
                first = b.insert(arith.CmpiOp(b.load(where, [0]), b.constant(-1, i64), "eq")).results[0]
                number = b.insert(arith.CmpfOp(v, v, "oeq")).results[0]  # not NaN
                take = b.fop(arith.OrIOp, larger, b.fop(arith.AndIOp, first, number), name="take")
                with b.if_(take):
                    flat: Index = base
                    for d in range(k):
                        flat = b.add(flat, b.mul(coords[d], strides[d]))
                    b.store(v, best, [0])
                    b.store(b.fop(arith.IndexCastOp, b.value(flat), i64, name="flat"), where, [0])
        guard = [0] if partial else []
        b.store(b.load(best, [0], name="max"), y, [n, c, *out], guard)
        b.store(b.load(where, [0], name="argmax"), indices, [n, c, *out], guard)
    return kernel


@schedules(graph.MaxPoolWithIndicesOp)
def max_pool_with_indices_kernel(name: str, op: Operation) -> tm.KernelOp:
    """The kernel of one ``graph.max_pool_with_indices`` (f32 input)."""
    assert isinstance(op, graph.MaxPoolWithIndicesOp)
    input_type = op.input.type
    if str(input_type.get_element_type()) != "f32":  # type: ignore[attr-defined]
        raise NoTemplate(f"'{op.name}' is scheduled for f32 inputs only, got {input_type}")
    kernel, strides, pads, dilations = op.window()
    problem = PoolProblem("max", tuple(input_type.get_shape()), kernel, strides, pads,  # type: ignore[attr-defined]
                          dilations, op.ceil_mode is not None)
    return max_pool_indices_kernel(name, problem, op.column_major is not None)
