"""Gathers with run-time indices (``graph.take``, ``graph.take_along_axis``,
``graph.gather_nd``) on the data-movement template: one thread per output element, which
loads its index from the index tensor and copies one element of the input.

An index read at run time is cast to ``index`` (C ``int``), wrapped once if negative
(``i < 0 ? i + n : i``, ONNX's counting from the end) and clamped to ``[0, n - 1]``, so
no index, however wrong, reads outside the input. Each kernel's arguments are
``(input, indices, output)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.schedules.data_movement import (
    DataMovementParams,
    buffer_indices,
    data_movement_kernel,
)
from tmlir.schedules.registry import schedules


def axis_index(b: IRBuilder, raw: SSAValue, extent: int, name: str) -> Index:
    """The loaded integer `raw` (i64 or i32) as an index into an axis of `extent`: negative
    values count from the end, and the result is clamped to ``[0, extent - 1]`` before it
    is narrowed to ``index`` (so a huge int64 cannot wrap into range)."""
    if extent == 1:
        return 0
    zero, n, last = (b.constant(v, raw.type) for v in (0, extent, extent - 1))
    negative = b.insert(arith.CmpiOp(raw, zero, "slt")).results[0]
    wrapped = b.fop(arith.SelectOp, negative, b.fop(arith.AddiOp, raw, n), raw,
                    name=f"{name}_wrapped")
    below = b.insert(arith.CmpiOp(wrapped, zero, "slt")).results[0]
    above = b.insert(arith.CmpiOp(wrapped, last, "sgt")).results[0]
    clamped = b.fop(arith.SelectOp, below, zero, b.fop(arith.SelectOp, above, last, wrapped))
    return b.insert(arith.IndexCastOp(clamped, IndexType()), name).results[0]


def take_kernel(name: str, in_shape: Sequence[int], index_shape: Sequence[int], axis: int,
                element: Attribute, index_element: Attribute,
                params: DataMovementParams = DataMovementParams()) -> tm.KernelOp | None:
    """``out[a, k, c] = x[a, indices[k], c]`` (``a``: the dims before `axis`, ``k``: the
    index dims, ``c``: the dims after)."""
    out_shape = [*in_shape[:axis], *index_shape, *in_shape[axis + 1:]]
    rank = len(index_shape)

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        x, indices = xs
        raw = b.load(indices, buffer_indices(i[axis:axis + rank]), name="raw")
        j = [*i[:axis], axis_index(b, raw, in_shape[axis], "k"), *i[axis + rank:]]
        b.store(b.load(x, buffer_indices(j), name="v"), outs[0], buffer_indices(i))

    return data_movement_kernel(name, "take", [in_shape, index_shape], [out_shape], out_shape,
                                body, {"axis": axis}, params,
                                [element, index_element, element])


def take_along_axis_kernel(name: str, in_shape: Sequence[int], index_shape: Sequence[int],
                           axis: int, element: Attribute, index_element: Attribute,
                           params: DataMovementParams = DataMovementParams(),
                           ) -> tm.KernelOp | None:
    """``out[i] = x[i with i[axis] = indices[i]]``, over the indices' shape."""

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        x, indices = xs
        raw = b.load(indices, buffer_indices(i), name="raw")
        j = list(i)
        j[axis] = axis_index(b, raw, in_shape[axis], "k")
        b.store(b.load(x, buffer_indices(j), name="v"), outs[0], buffer_indices(i))

    return data_movement_kernel(name, "take_along_axis", [in_shape, index_shape],
                                [index_shape], index_shape, body, {"axis": axis}, params,
                                [element, index_element, element])


def gather_nd_kernel(name: str, in_shape: Sequence[int], index_shape: Sequence[int],
                     batch_dims: int, element: Attribute, index_element: Attribute,
                     params: DataMovementParams = DataMovementParams()) -> tm.KernelOp | None:
    """ONNX ``GatherND`` (see ``graph.GatherNdOp``): the output's coordinates ``(p, q,
    c)`` read ``k = index_shape[-1]`` indices at ``indices[p, q, :]``, which replace the
    input dims ``b .. b + k - 1``."""
    b_dims, k = batch_dims, index_shape[-1]
    lead = list(index_shape[:-1])  # p and q
    out_shape = [*lead, *in_shape[b_dims + k:]]

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        x, indices = xs
        head = i[:len(lead)]
        picked = [axis_index(b, b.load(indices, [*head, d], name=f"raw{d}"),
                             in_shape[b_dims + d], f"k{d}") for d in range(k)]
        j = [*head[:b_dims], *picked, *i[len(lead):]]
        b.store(b.load(x, buffer_indices(j), name="v"), outs[0], buffer_indices(i))

    return data_movement_kernel(name, "gather_nd", [in_shape, index_shape], [out_shape],
                                out_shape, body, {"batch_dims": batch_dims}, params,
                                [element, index_element, element])


@schedules(graph.TakeOp, graph.TakeAlongAxisOp, graph.GatherNdOp)
def indexing_kernel(name: str, op: Operation,
                    params: DataMovementParams = DataMovementParams()) -> tm.KernelOp | None:
    """The kernel ``(input, indices, output)`` of a ``graph.take``, ``graph.take_along_axis``
    or ``graph.gather_nd``; None when the output has no elements."""
    x, indices = op.operands
    assert isinstance(x.type, TensorType) and isinstance(indices.type, TensorType)
    shape, index_shape = tuple(x.type.get_shape()), tuple(indices.type.get_shape())
    element, index_element = x.type.get_element_type(), indices.type.get_element_type()
    if math.prod(shape) == 0:
        return None  # nothing to read: the verifier made sure nothing is wanted either
    match op:
        case graph.TakeOp():
            return take_kernel(name, shape, index_shape, op.axis_value, element,
                               index_element, params)
        case graph.TakeAlongAxisOp():
            return take_along_axis_kernel(name, shape, index_shape, op.axis_value, element,
                                          index_element, params)
        case graph.GatherNdOp():
            return gather_nd_kernel(name, shape, index_shape, op.batch_dims_value, element,
                                    index_element, params)
    raise AssertionError(f"not an indexing op: {op.name}")
