"""The ONNX frontend's comparisons, boolean logic, ``Where``, ``IsNaN`` and ``Cast``, and
the run-time ``GatherElements`` and ``GatherND``.

- ``Equal``, ``Less``, ``LessOrEqual``, ``Greater``, ``GreaterOrEqual``: ``graph.equal``,
  ``graph.less``, ... (an ``i1`` result); ``And``, ``Or``, ``Xor``, ``Not``: ``graph.and``,
  ``graph.or``, ``graph.xor``, ``graph.not``.
- ``Where``: ``graph.where``; ``IsNaN``: ``graph.is_nan``; ``Cast`` (``to`` any dtype of
  ``tmlir/dtypes.py``) and ``CastLike`` (to the dtype of its second input, whose values
  are not read): ``graph.cast``, or the input itself when it already has that type. To a
  float8 type with ``saturate = 1`` (the default; opset 19+), the input is first clipped
  to the type's largest finite value (``graph.clip``, on its float widened to ``f32``
  unless it is f16, bf16, f32 or f64), as onnx's reference (``numpy.clip``, then
  ``astype``): NaN stays NaN, infinities become the largest value; ``saturate = 0``
  rounds out-of-range values to infinity, or to NaN for the types without one.
- ``IsInf``: ``graph.is_inf``, with ``detect_negative = false`` or ``detect_positive = false``
  where the node says so.
- ``GatherElements``: ``graph.take_along_axis``; ``GatherND``: ``graph.gather_nd``.
"""

from __future__ import annotations

from onnx import NodeProto
from xdsl.ir import SSAValue

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import ANY, BOOL, INT, INT64, INTEGERS, NUMERIC, Attr, onnx_op


def _comparison(op_type: str, graph_op: type[graph.CompareOp],
                inputs: tuple[tuple, ...] = (NUMERIC,)) -> None:
    @onnx_op(op_type, inputs=inputs)
    def comparison(ctx: ImportContext, node: NodeProto) -> None:
        ctx.attributes(node)
        lhs, rhs = ctx.inputs(node, 2)
        ctx.same_dtype(lhs, rhs)
        shape = ctx.result_type(node).get_shape()
        ctx.define(node.output[0], graph_op(lhs, rhs, shape))


def _logical(op_type: str, graph_op: type[graph.LogicalOp]) -> None:
    @onnx_op(op_type, inputs=((BOOL,),))
    def logical(ctx: ImportContext, node: NodeProto) -> None:
        ctx.attributes(node)
        lhs, rhs = ctx.inputs(node, 2)
        shape = ctx.result_type(node).get_shape()
        ctx.define(node.output[0], graph_op(lhs, rhs, shape))


_comparison("Equal", graph.EqualOp, inputs=(ANY,))
_comparison("Less", graph.LessOp)
_comparison("LessOrEqual", graph.LessEqualOp)
_comparison("Greater", graph.GreaterOp)
_comparison("GreaterOrEqual", graph.GreaterEqualOp)
_logical("And", graph.AndOp)
_logical("Or", graph.OrOp)
_logical("Xor", graph.XorOp)


@onnx_op("Not", inputs=((BOOL,),))
def logical_not(ctx: ImportContext, node: NodeProto) -> None:
    ctx.attributes(node)
    (x,) = ctx.inputs(node, 1)
    ctx.define(node.output[0], graph.NotOp(x))


@onnx_op("IsNaN", inputs=(dtypes.FLOATS,))
def is_nan(ctx: ImportContext, node: NodeProto) -> None:
    ctx.attributes(node)
    (x,) = ctx.inputs(node, 1)
    ctx.define(node.output[0], graph.IsNanOp(x))


@onnx_op("IsInf", attributes={"detect_negative": Attr(INT, (0, 1), 1),
                              "detect_positive": Attr(INT, (0, 1), 1)},
         inputs=(dtypes.FLOATS,))
def is_inf(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    (x,) = ctx.inputs(node, 1)
    ctx.define(node.output[0], graph.IsInfOp(x, bool(attrs.get("detect_negative", 1)),
                                             bool(attrs.get("detect_positive", 1))))


@onnx_op("Where", inputs=((BOOL,), ANY))
def where(ctx: ImportContext, node: NodeProto) -> None:
    ctx.attributes(node)
    condition, lhs, rhs = ctx.inputs(node, 3)
    ctx.same_dtype(lhs, rhs, "X and Y")
    ctx.define(node.output[0], graph.WhereOp(condition, lhs, rhs, ctx.result_type(node)))


@onnx_op("Cast", attributes={"to": INT, "saturate": Attr(INT, (0, 1), 1)}, inputs=(ANY,))
def cast(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    if "to" not in attrs:
        raise FrontendError(f"{ctx.label}: attribute 'to' is required")
    (x,) = ctx.inputs(node, 1)
    code = int(attrs["to"])  # type: ignore[call-overload]
    target = dtypes.from_onnx(code)
    if target is None:
        raise FrontendError(f"{ctx.label}: cannot cast to {dtypes.onnx_name(code)} "
                            f"(supported: {dtypes.SUPPORTED_NAMES})")
    _cast_to(ctx, node, x, target, bool(attrs.get("saturate", 1)))


#: The types a saturating cast clips in (others are widened to f32 first).
_CLIPPED = (dtypes.FLOAT32, dtypes.FLOAT16, dtypes.BFLOAT16, dtypes.FLOAT64)


def _cast_to(ctx: ImportContext, node: NodeProto, x: SSAValue, target: dtypes.DType,
             saturate: bool) -> None:
    source = dtypes.of_ir(x.type.get_element_type())  # type: ignore[attr-defined]
    if source == target:
        ctx.alias(node.output[0], x)
        return
    if saturate and target in dtypes.FLOAT8S and not source.is_bool:
        if source not in _CLIPPED:  # exact: every integer up to the largest float8 is an f32
            x = ctx.append(graph.CastOp(x, dtypes.FLOAT32.ir), f"{node.output[0]}_wide")
        limit = target.max_finite
        x = ctx.append(graph.ClipOp(x, min=-limit, max=limit), f"{node.output[0]}_saturated")
    ctx.define(node.output[0], graph.CastOp(x, target.ir))


@onnx_op("CastLike", attributes={"saturate": Attr(INT, (0, 1), 1)}, inputs=(ANY, ANY))
def cast_like(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    x_name, like_name = ctx.input_names(node, 2)
    x = ctx.value(x_name)
    if ctx.is_constant(like_name):
        code = ctx.initializers[like_name].data_type
    else:
        code = dtypes.of_ir(ctx.value(like_name).type.get_element_type()).onnx  # type: ignore[attr-defined]
    target = dtypes.from_onnx(code)
    if target is None:
        raise FrontendError(f"{ctx.label}: cannot cast to {dtypes.onnx_name(code)} "
                            f"(supported: {dtypes.SUPPORTED_NAMES})")
    _cast_to(ctx, node, x, target, bool(attrs.get("saturate", 1)))


@onnx_op("GatherElements", attributes={"axis": INT}, inputs=(ANY, INTEGERS))
def gather_elements(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    x, indices = ctx.inputs(node, 2)
    rank = len(x.type.get_shape())
    axis = ctx.axis_of(int(attrs.get("axis", 0)), rank)  # type: ignore[call-overload]
    ctx.define(node.output[0], graph.TakeAlongAxisOp(x, indices, axis, ctx.result_type(node)))


@onnx_op("GatherND", attributes={"batch_dims": INT}, inputs=(ANY, (INT64,)))
def gather_nd(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    x, indices = ctx.inputs(node, 2)
    batch_dims = int(attrs.get("batch_dims", 0))  # type: ignore[call-overload]
    ctx.define(node.output[0], graph.GatherNdOp(x, indices, batch_dims, ctx.result_type(node)))
