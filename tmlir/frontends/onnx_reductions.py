"""The ONNX frontend's reductions, normalizations and pooling.

What each op imports to:

- ``Softmax`` / ``LogSoftmax``: ``graph.softmax`` / ``graph.log_softmax``. Before opset 13
  the input is taken as 2-D, flattened at ``axis`` (default 1), so the axes are ``axis`` to
  the last; since 13, the single ``axis`` (default -1).
- ``ReduceSum`` / ``ReduceMean`` / ``ReduceMax`` / ``ReduceMin`` / ``ReduceProd`` /
  ``ReduceL1`` / ``ReduceL2`` / ``ReduceSumSquare`` / ``ReduceLogSum`` /
  ``ReduceLogSumExp``: ``graph.reduce_*``. The axes are an attribute before opset 18 (13
  for ``ReduceSum``), then an optional input, which must be a constant (an initializer, or
  a ``Constant`` node, which constant folding made one). No axes reduce every dim, or with
  ``noop_with_empty_axes`` none: the input itself, through the op's element map (``abs``
  for L1 and L2, the square for ``ReduceSumSquare``, ``log`` for ``ReduceLogSum``);
  ``keepdims`` (default 1) keeps the reduced dims as 1. float32 data; ``ReduceMax`` /
  ``ReduceMin`` take bools too (any / all). Reducing empty sets (an input with a zero
  extent) gives a constant, computed before import as onnxruntime does
  (``tmlir.frontends.onnx_empty``): the reduction's identity (0, 1 for the product, -inf
  for the max and the logarithms, inf for the min, false / true for bools), 0 for the mean.
- ``ArgMax`` / ``ArgMin``: ``graph.arg_max`` / ``graph.arg_min`` (``axis`` default 0,
  ``keepdims``, ``select_last_index``), float32 data, int64 indices.
- ``Hardmax``: ``graph.hardmax`` over ``axis`` (default -1); before opset 13 the input is
  taken as 2-D, flattened at ``axis`` (default 1): a ``graph.reshape`` on either side.
- ``CumSum``: ``graph.cumsum`` (float32, float64, int32, int64) along the ``axis`` input,
  which must be a constant; ``exclusive``, ``reverse``.
- ``TopK``: ``graph.top_k`` with both outputs (values of any float or integer dtype; int64
  indices). ``k`` is an attribute before opset 10, then an input that must be a constant;
  ``largest`` (default 1) and ``sorted`` (any: the outputs are always sorted).
- ``LayerNormalization``: ``graph.layer_norm`` (``axis`` default -1, ``epsilon`` 1e-5,
  ``stash_type`` 1 only: float32 statistics), with the optional ``Mean`` / ``InvStdDev``
  outputs as two more results when either is used.
- ``MaxPool`` / ``AveragePool``: ``graph.max_pool`` / ``graph.average_pool`` with explicit
  pads (``auto_pad`` resolved; ``ceil_mode`` applies to explicit pads only, as in
  onnxruntime). ``MaxPool`` whose ``Indices`` output is used: ``graph.max_pool_with_indices``
  (flattened input indices, the spatial dims column-major with ``storage_order = 1``).
- ``GlobalAveragePool`` / ``GlobalMaxPool``: ``graph.reduce_mean`` / ``graph.reduce_max``
  over the spatial dims with ``keepdims``.
"""

from __future__ import annotations

import numpy as np
from onnx import NodeProto
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.dtypes import BOOL, FLOAT32, FLOAT64, INT8, INT32, INT64, NUMERIC, UINT8
from tmlir.frontends.onnx_common import FrontendError, pool_window
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import F64, FLAG, FLOAT, INT, INTEGERS, INTS, POOL_ATTRIBUTES, Attr, onnx_op


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


@onnx_op("Softmax", attributes={"axis": INT}, inputs=(F64,))
@onnx_op("LogSoftmax", attributes={"axis": INT}, inputs=(F64,))
def softmax(ctx: ImportContext, node: NodeProto) -> None:
    (x,) = ctx.inputs(node, 1)
    rank = len(_shape(x))
    legacy = ctx.opset < 13  # softmax of the input flattened to 2-D at `axis`
    axis = ctx.axis_of(ctx.attributes(node).get("axis", 1 if legacy else -1), rank)
    axes = range(axis, rank) if legacy else [axis]
    op_type = graph.LogSoftmaxOp if node.op_type == "LogSoftmax" else graph.SoftmaxOp
    ctx.define(node.output[0], op_type(x, axes))


#: What a reduction over no axes makes of each element, where not the element itself (as
#: ONNX's reference and onnxruntime compute it; ``ReduceSumSquare``: its square).
_ELEMENT_MAPS = {"ReduceL1": graph.AbsOp, "ReduceL2": graph.AbsOp, "ReduceLogSum": graph.LogOp}


def _reduction(op_type: str, graph_op: type[graph.ReduceOp], axes_input_since: int,
               data: tuple[dtypes.DType, ...] = F64) -> None:
    """A reduction of `data` whose axes are an input from opset `axes_input_since`. (A
    reduction of an empty tensor is computed before import: ``onnx_empty.REDUCE_EMPTY``.)"""

    @onnx_op(op_type, attributes={"axes": INTS, "keepdims": Attr(INT, FLAG),
                                  "noop_with_empty_axes": Attr(INT, FLAG)},
             inputs=(data, INTEGERS), constant_inputs=(1,), input_names=("data", "axes"))
    def reduce(ctx: ImportContext, node: NodeProto) -> None:
        attrs = ctx.attributes(node)
        if ctx.opset >= axes_input_since:
            if "axes" in attrs:
                raise FrontendError(f"{ctx.label}: attribute 'axes' is not allowed since opset "
                                    f"{axes_input_since}, where the axes are an input")
            name, axes_name = ctx.input_names(node, 1, optional=1)
            axes = ctx.constant_ints(node, 1) if axes_name else []
        else:
            (name,) = ctx.input_names(node, 1)
            axes = list(attrs.get("axes", []))
        x = ctx.value(name)
        rank = len(_shape(x))
        if not axes and (attrs.get("noop_with_empty_axes", 0) == 1 or rank == 0):
            # nothing to reduce, but each element still goes through the op's map
            if node.op_type == "ReduceSumSquare":
                ctx.define(node.output[0], graph.MulOp(x, x, x.type))
            elif node.op_type in _ELEMENT_MAPS:
                ctx.define(node.output[0], _ELEMENT_MAPS[node.op_type](x))
            else:
                ctx.alias(node.output[0], x)
            return
        reduced = sorted({ctx.axis_of(a, rank) for a in axes}) if axes else range(rank)
        keepdims = attrs.get("keepdims", 1) == 1
        ctx.define(node.output[0], graph_op(x, reduced, keepdims))


_reduction("ReduceSum", graph.ReduceSumOp, 13)
_reduction("ReduceMean", graph.ReduceMeanOp, 18)
_reduction("ReduceMax", graph.ReduceMaxOp, 18, (*F64, BOOL))
_reduction("ReduceMin", graph.ReduceMinOp, 18, (*F64, BOOL))
_reduction("ReduceProd", graph.ReduceProdOp, 18)
_reduction("ReduceL1", graph.ReduceL1Op, 18)
_reduction("ReduceL2", graph.ReduceL2Op, 18)
_reduction("ReduceSumSquare", graph.ReduceSumSquareOp, 18)
_reduction("ReduceLogSum", graph.ReduceLogSumOp, 18)
_reduction("ReduceLogSumExp", graph.ReduceLogSumExpOp, 18)


@onnx_op("ArgMax", attributes={"axis": INT, "keepdims": Attr(INT, FLAG),
                               "select_last_index": Attr(INT, FLAG)}, inputs=((FLOAT32,),))
@onnx_op("ArgMin", attributes={"axis": INT, "keepdims": Attr(INT, FLAG),
                               "select_last_index": Attr(INT, FLAG)}, inputs=((FLOAT32,),))
def arg_reduce(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    (x,) = ctx.inputs(node, 1)
    axis = ctx.axis_of(attrs.get("axis", 0), max(len(_shape(x)), 1))
    op_type = graph.ArgMaxOp if node.op_type == "ArgMax" else graph.ArgMinOp
    ctx.define(node.output[0], op_type(x, axis, attrs.get("keepdims", 1) == 1,
                                       attrs.get("select_last_index", 0) == 1))


@onnx_op("Hardmax", attributes={"axis": INT}, inputs=((FLOAT32,),))
def hardmax(ctx: ImportContext, node: NodeProto) -> None:
    (x,) = ctx.inputs(node, 1)
    shape = _shape(x)
    legacy = ctx.opset < 13  # over the input flattened to 2-D at `axis`
    axis = ctx.axis_of(ctx.attributes(node).get("axis", 1 if legacy else -1), len(shape))
    if not legacy or axis == len(shape) - 1:
        ctx.define(node.output[0], graph.HardmaxOp(x, axis))
        return
    element = x.type.get_element_type()  # type: ignore[attr-defined]
    rows = TensorType(element, [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])
    flat = ctx.append(graph.ReshapeOp(x, rows), f"{node.output[0]}_2d")
    result = ctx.append(graph.HardmaxOp(flat, 1), f"{node.output[0]}_2d_hardmax")
    ctx.define(node.output[0], graph.ReshapeOp(result, x.type))  # type: ignore[arg-type]


def _constant_scalar(ctx: ImportContext, node: NodeProto, position: int, what: str) -> int:
    values = ctx.constant_ints(node, position)
    if values is None or len(values) != 1:
        raise FrontendError(f"{ctx.label}: input '{what}' must be one integer, got {values}")
    return values[0]


@onnx_op("CumSum", attributes={"exclusive": Attr(INT, FLAG), "reverse": Attr(INT, FLAG)},
         inputs=((FLOAT32, FLOAT64, INT32, INT64), INTEGERS), constant_inputs=(1,),
         input_names=("x", "axis"))
def cumsum(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    name, _ = ctx.input_names(node, 2)
    x = ctx.value(name)
    if not _shape(x):
        raise FrontendError(f"{ctx.label}: input 'x' must have rank >= 1, got a scalar")
    axis = ctx.axis_of(_constant_scalar(ctx, node, 1, "axis"), len(_shape(x)))
    ctx.define(node.output[0], graph.CumSumOp(x, axis, attrs.get("exclusive", 0) == 1,
                                              attrs.get("reverse", 0) == 1))


@onnx_op("TopK", attributes={"axis": INT, "k": INT, "largest": Attr(INT, FLAG),
                             "sorted": Attr(INT, FLAG)},
         inputs=(NUMERIC, INTEGERS), constant_inputs=(1,), input_names=("X", "K"),
         outputs=2)
def top_k(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    if ctx.opset < 10:
        (name,) = ctx.input_names(node, 1)
        if "k" not in attrs:
            raise FrontendError(f"{ctx.label}: attribute 'k' is required before opset 10")
        k = int(attrs["k"])  # type: ignore[call-overload]
    else:
        if "k" in attrs:
            raise FrontendError(f"{ctx.label}: attribute 'k' is not allowed since opset 10, "
                                "where k is an input")
        name, _ = ctx.input_names(node, 2)
        k = _constant_scalar(ctx, node, 1, "K")
    x = ctx.value(name)
    shape = _shape(x)
    if not shape:
        raise FrontendError(f"{ctx.label}: input 'X' must have rank >= 1, got a scalar")
    axis = ctx.axis_of(attrs.get("axis", -1), len(shape))
    if not 1 <= k <= shape[axis]:
        raise FrontendError(f"{ctx.label}: k = {k} must be in [1, {shape[axis]}] (the extent "
                            f"of axis {axis})")
    op = graph.TopKOp(x, axis, k, smallest=attrs.get("largest", 1) == 0)
    ctx.define(node.output[0], op)
    if len(node.output) > 1 and node.output[1]:
        ctx.name_result(node.output[1], op.indices)


@onnx_op("GlobalAveragePool", inputs=(F64,))
@onnx_op("GlobalMaxPool", inputs=(F64,))
def global_pool(ctx: ImportContext, node: NodeProto) -> None:
    (x,) = ctx.inputs(node, 1)
    rank = len(_shape(x))
    if rank < 3:
        raise FrontendError(f"{ctx.label}: input must be (N, C, D1, ...), got shape "
                            f"{list(_shape(x))}")
    op_type = graph.ReduceMeanOp if node.op_type == "GlobalAveragePool" else graph.ReduceMaxOp
    ctx.define(node.output[0], op_type(x, range(2, rank), keepdims=True))


@onnx_op("LayerNormalization", attributes={"axis": INT, "epsilon": FLOAT,
                                           "stash_type": Attr(INT, (1,))}, outputs=3)
def layer_norm(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    x, scale, bias = ctx.inputs(node, 2, optional=1)
    axis = ctx.axis_of(attrs.get("axis", -1), len(_shape(x)))
    stats = list(node.output[1:3])
    op = graph.LayerNormOp(x, scale, bias, axis, float(attrs.get("epsilon", 1e-5)),
                           statistics=any(ctx.is_used(name) for name in stats))
    ctx.define(node.output[0], op)
    for name, result in zip(stats, op.statistics):
        if name:
            ctx.name_result(name, result)


@onnx_op("MaxPool", attributes={**POOL_ATTRIBUTES, "storage_order": Attr(INT, FLAG)},
         outputs=2, inputs=((*F64, INT8, UINT8),))
@onnx_op("AveragePool", attributes={**POOL_ATTRIBUTES, "count_include_pad": Attr(INT, FLAG)},
         inputs=(F64,))
def pool(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    (x,) = ctx.inputs(node, 1)
    shape = _shape(x)
    k = len(shape) - 2
    if k < 1:
        raise FrontendError(f"{ctx.label}: input must be (N, C, D1, ...), got shape "
                            f"{list(shape)}")
    kernel, strides, pads, dilations, ceil_mode = pool_window(ctx.label, attrs, shape)
    if node.op_type == "MaxPool" and len(node.output) > 1 and ctx.is_used(node.output[1]):
        op = graph.MaxPoolWithIndicesOp(x, ctx.result_type(node), ctx.result_type_of(node.output[1]),
                                        kernel, strides, pads, dilations, ceil_mode,
                                        column_major=attrs.get("storage_order", 0) == 1)
        ctx.define(node.output[0], op)
        ctx.name_result(node.output[1], op.indices)  # the Indices (pool_indices.py)
        return
    if node.op_type == "MaxPool":
        op = graph.MaxPoolOp(x, ctx.result_type(node), kernel, strides, pads, dilations,
                             ceil_mode)
    else:
        op = graph.AveragePoolOp(x, ctx.result_type(node), kernel, strides, pads, dilations,
                                 ceil_mode,
                                 count_include_pad=attrs.get("count_include_pad", 0) == 1)
    ctx.define(node.output[0], op)
