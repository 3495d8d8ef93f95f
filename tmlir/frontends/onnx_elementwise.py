"""The ONNX frontend's elementwise ops.

- ``Add``, ``Sub``, ``Mul``, ``Div``: ``graph.add``, ... with broadcasting.
- ``Pow``: ``graph.pow``; an integer exponent is cast to the base's float type first. An
  integer base (int32, int64) and the exponent are cast to float64 and the power is cast
  back, truncated toward zero: onnxruntime's ``static_cast<T>(std::pow(x, y))``, exact
  wherever the power fits the type.
- ``Max``, ``Min``, ``Sum``, ``Mean`` of one or more inputs: ``graph.max``, ...; of one
  input, that input.
- The unary ops (``Relu``, ``Gelu``, ...): the graph op of the same name, whose properties
  are the ONNX attributes with their ONNX defaults.
- ``Mod``: ``graph.mod`` (``{fmod}`` for ``fmod = 1``); ``BitShift``: ``graph.shift_left``
  or ``graph.shift_right``; ``BitwiseAnd``, ``BitwiseOr``, ``BitwiseXor``, ``BitwiseNot``:
  ``graph.bitwise_and``, ...; ``PRelu``: ``graph.prelu`` (the slope broadcasts to X).
- ``Clip``: ``graph.clip`` with the constant bounds (attributes before opset 11, inputs
  since); a bound computed at run time becomes a ``graph.max`` / ``graph.min``, and so does
  every bound of a float64 or integer tensor (exact, where an f32 property would round it).

Float ops take float64 too (`F64`), computed in double.

Adding an elementwise op is one line here (`_binary`, `_variadic` or `_unary`), besides
its graph op and its element function.
"""

from __future__ import annotations

import math

from onnx import NodeProto
from xdsl.dialects.builtin import Float32Type, Float64Type, TensorType
from xdsl.ir import Operation, SSAValue

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.dtypes import ALL_INTEGERS
from tmlir.frontends.onnx_common import FrontendError
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import F64, FLOAT, INT, INTEGERS, NUMERIC, STRING, Attr, onnx_op


def _binary(op_type: str, graph_op: type[graph.BinaryElementwiseOp],
            inputs: tuple[tuple, ...] = (NUMERIC,)) -> None:
    @onnx_op(op_type, inputs=inputs)
    def binary(ctx: ImportContext, node: NodeProto) -> None:
        lhs, rhs = ctx.inputs(node, 2)
        ctx.same_dtype(lhs, rhs)
        ctx.define(node.output[0], graph_op(lhs, rhs, ctx.result_type(node)))


def _variadic(op_type: str, graph_op: type[graph.VariadicElementwiseOp],
              inputs: tuple[tuple, ...] = (NUMERIC,)) -> None:
    @onnx_op(op_type, inputs=inputs)
    def variadic(ctx: ImportContext, node: NodeProto) -> None:
        operands = ctx.inputs(node, max(len(node.input), 1))
        if len(operands) == 1:
            ctx.alias(node.output[0], operands[0])
        else:
            ctx.define(node.output[0], graph_op(operands, ctx.result_type(node)))


def _unary(op_type: str, graph_op: type[graph.UnaryElementwiseOp],
           inputs: tuple[tuple, ...] = (F64,), **attributes: Attr) -> None:
    """Attributes with their ONNX defaults, which become the graph op's properties."""

    @onnx_op(op_type, attributes=attributes, inputs=inputs)
    def unary(ctx: ImportContext, node: NodeProto) -> None:
        (x,) = ctx.inputs(node, 1)
        params = {name: spec.default for name, spec in attributes.items()}
        params.update(ctx.attributes(node))
        if params.get("approximate") == "none":  # graph.gelu's default
            del params["approximate"]
        ctx.define(node.output[0], graph_op(x, **params))


_binary("Add", graph.AddOp)
_binary("Sub", graph.SubOp)
_binary("Mul", graph.MulOp)
_binary("Div", graph.DivOp)
_variadic("Max", graph.MaxOp)
_variadic("Min", graph.MinOp)
_variadic("Sum", graph.SumOp)
_variadic("Mean", graph.MeanOp, inputs=(F64,))
_unary("Relu", graph.ReluOp)
_unary("Sigmoid", graph.SigmoidOp)
_unary("Tanh", graph.TanhOp)
_unary("Exp", graph.ExpOp)
_unary("Log", graph.LogOp)
_unary("Sqrt", graph.SqrtOp)
_unary("Reciprocal", graph.ReciprocalOp)
_unary("Neg", graph.NegOp, inputs=(NUMERIC,))
_unary("Abs", graph.AbsOp, inputs=(NUMERIC,))
_unary("Erf", graph.ErfOp)
_unary("Softplus", graph.SoftplusOp)
_unary("Softsign", graph.SoftsignOp)
_unary("HardSwish", graph.HardSwishOp)
_unary("LeakyRelu", graph.LeakyReluOp, alpha=Attr(FLOAT, default=0.01))
_unary("HardSigmoid", graph.HardSigmoidOp, alpha=Attr(FLOAT, default=0.2),
       beta=Attr(FLOAT, default=0.5))
_unary("Elu", graph.EluOp, alpha=Attr(FLOAT, default=1.0))
_unary("Selu", graph.SeluOp, alpha=Attr(FLOAT, default=1.67326319217681884765625),
       gamma=Attr(FLOAT, default=1.05070102214813232421875))
_unary("Gelu", graph.GeluOp,
       approximate=Attr(STRING, choices=graph.GELU_APPROXIMATIONS, default="none"))
_unary("Sign", graph.SignOp, inputs=((*F64, *ALL_INTEGERS),))
_unary("Floor", graph.FloorOp)
_unary("Ceil", graph.CeilOp)
_unary("Round", graph.RoundOp)
_unary("Sin", graph.SinOp)
_unary("Cos", graph.CosOp)
_unary("Tan", graph.TanOp)
_unary("Asin", graph.AsinOp)
_unary("Acos", graph.AcosOp)
_unary("Atan", graph.AtanOp)
_unary("Sinh", graph.SinhOp)
_unary("Cosh", graph.CoshOp)
_unary("Asinh", graph.AsinhOp)
_unary("Acosh", graph.AcoshOp)
_unary("Atanh", graph.AtanhOp)
_unary("Mish", graph.MishOp)
_unary("ThresholdedRelu", graph.ThresholdedReluOp, alpha=Attr(FLOAT, default=1.0))
_unary("Shrink", graph.ShrinkOp, lambd=Attr(FLOAT, default=0.5), bias=Attr(FLOAT, default=0.0))
_unary("BitwiseNot", graph.BitwiseNotOp, inputs=(ALL_INTEGERS,))
_binary("BitwiseAnd", graph.BitwiseAndOp, inputs=(ALL_INTEGERS,))
_binary("BitwiseOr", graph.BitwiseOrOp, inputs=(ALL_INTEGERS,))
_binary("BitwiseXor", graph.BitwiseXorOp, inputs=(ALL_INTEGERS,))


@onnx_op("Celu", attributes={"alpha": Attr(FLOAT, default=1.0)}, inputs=(F64,))
def celu(ctx: ImportContext, node: NodeProto) -> None:
    alpha = float(ctx.attributes(node).get("alpha", 1.0))  # type: ignore[arg-type]
    if alpha == 0:
        raise FrontendError(f"{ctx.label}: attribute 'alpha' must not be 0")
    (x,) = ctx.inputs(node, 1)
    ctx.define(node.output[0], graph.CeluOp(x, alpha=alpha))


@onnx_op("Mod", attributes={"fmod": Attr(INT, choices=(0, 1), default=0)},
         inputs=((*dtypes.FLOATS, *ALL_INTEGERS),))
def mod(ctx: ImportContext, node: NodeProto) -> None:
    """``graph.mod``, with ``{fmod}`` for ``fmod = 1`` (C's remainder; since opset 28 a
    float ``Mod`` may also have ``fmod = 0``, Python's, which it computes alike before)."""
    fmod = bool(ctx.attributes(node).get("fmod", 0))
    lhs, rhs = ctx.inputs(node, 2)
    ctx.same_dtype(lhs, rhs)
    ctx.define(node.output[0], graph.ModOp(lhs, rhs, ctx.result_type(node), fmod=fmod))


@onnx_op("BitShift", attributes={"direction": Attr(STRING, choices=("LEFT", "RIGHT"))},
         inputs=(ALL_INTEGERS,))
def bit_shift(ctx: ImportContext, node: NodeProto) -> None:
    """``graph.shift_left`` or ``graph.shift_right`` (arithmetic for signed integers, as
    opset 28 defines it, logical for unsigned ones)."""
    direction = ctx.attributes(node).get("direction")
    if direction is None:
        raise FrontendError(f"{ctx.label}: attribute 'direction' is required")
    lhs, rhs = ctx.inputs(node, 2)
    ctx.same_dtype(lhs, rhs)
    op_type = graph.ShiftLeftOp if direction == "LEFT" else graph.ShiftRightOp
    ctx.define(node.output[0], op_type(lhs, rhs, ctx.result_type(node)))


@onnx_op("PRelu", inputs=((*F64, *ALL_INTEGERS),))
def prelu(ctx: ImportContext, node: NodeProto) -> None:
    """``graph.prelu``; the slope must broadcast to the shape of X (unidirectionally)."""
    x, slope = ctx.inputs(node, 2)
    ctx.same_dtype(x, slope, "X and slope")
    shape, slope_shape = tuple(x.type.get_shape()), tuple(slope.type.get_shape())
    if len(slope_shape) > len(shape) or any(
            s not in (1, d) for s, d in zip(reversed(slope_shape), reversed(shape))):
        raise FrontendError(f"{ctx.label}: slope of shape {list(slope_shape)} does not "
                            f"broadcast to the shape {list(shape)} of X")
    ctx.define(node.output[0], graph.PReluOp(x, slope, x.type))


@onnx_op("Pow", inputs=((*F64, *INTEGERS), NUMERIC))
def power(ctx: ImportContext, node: NodeProto) -> None:
    """``graph.pow`` in the base's float type; of an integer base, in float64 and cast back
    (truncated toward zero, as onnxruntime's ``static_cast<T>(std::pow(x, y))``)."""
    base, exponent = ctx.inputs(node, 2)
    element = base.type.get_element_type()
    computed = element if dtypes.is_float(element) else Float64Type()
    if computed != element:
        base = ctx.append(graph.CastOp(base, computed), f"{node.input[0]}_f")
    if exponent.type.get_element_type() != computed:
        exponent = ctx.append(graph.CastOp(exponent, computed), f"{node.input[1]}_f")
    result_type = ctx.result_type(node)
    if computed == element:
        ctx.define(node.output[0], graph.PowOp(base, exponent, result_type))
        return
    power_type = TensorType(computed, result_type.get_shape())
    power = ctx.append(graph.PowOp(base, exponent, power_type), f"{node.output[0]}_f")
    ctx.define(node.output[0], graph.CastOp(power, element))


@onnx_op("Clip", attributes={"min": FLOAT, "max": FLOAT},  # before opset 11; then inputs
         inputs=((*F64, *ALL_INTEGERS),))
def clip(ctx: ImportContext, node: NodeProto) -> None:
    """``graph.clip`` with the constant bounds; a bound computed at run time (a graph
    input, say), or any bound of a float64 or integer tensor, becomes a ``graph.max`` /
    ``graph.min`` with it instead."""
    attrs = ctx.attributes(node)
    if ctx.opset >= 11 and attrs:
        raise FrontendError(f"{ctx.label}: attribute '{next(iter(attrs))}' is not allowed "
                            "since opset 11, where the bounds are inputs")
    if ctx.opset < 11:
        (x,) = ctx.inputs(node, 1)
        if not dtypes.is_float(x.type.get_element_type()):
            raise FrontendError(f"{ctx.label}: integer inputs need opset 11 or later")
        bounds: list[float | SSAValue | None] = [attrs.get("min"), attrs.get("max")]
    else:
        name, *bound_names = ctx.input_names(node, 1, optional=2)
        x = ctx.value(name)
        bounds = [_clip_bound(ctx, b, x, what) for b, what in zip(bound_names, ("min", "max"))]
        for bound in bounds:
            if isinstance(bound, SSAValue):
                ctx.same_dtype(x, bound, "the input and its bounds")
    lower, upper = bounds
    constant = {k: v for k, v in (("min", lower), ("max", upper)) if isinstance(v, float)}
    # max(x, run-time lower), clip to the constant bounds, min(., run-time upper): the
    # order min(max(x, lower), upper), since a bound is either constant or run-time.
    steps: list[Operation] = []
    if isinstance(lower, SSAValue):
        steps.append(graph.MaxOp([x, lower], x.type))
    if constant:
        steps.append(graph.ClipOp(steps[-1].results[0] if steps else x, **constant))
    if isinstance(upper, SSAValue):
        steps.append(graph.MinOp([steps[-1].results[0] if steps else x, upper], x.type))
    out = node.output[0]
    for index, op in enumerate(steps):  # a first of two steps applies the lower bound
        ctx.append(op, out if index == len(steps) - 1 else f"{out}_lower")
    ctx.alias(out, steps[-1].results[0] if steps else x)  # no bounds: x itself


def _clip_bound(ctx: ImportContext, name: str, x: SSAValue, what: str) -> float | SSAValue | None:
    """A Clip bound: its value if it is an initializer, else its SSA value (a graph input
    or a computed value); None if absent."""
    if not name:
        return None
    # a constant bound of data computed in f32 is an f32 property; of f64 or integers, a tensor
    element = x.type.get_element_type()
    as_property = isinstance(element, Float32Type) or dtypes.is_narrow_float(element)
    array = ctx.initializer_array(name) if as_property and ctx.is_constant(name) else None
    value = ctx.value(name) if array is None else None
    shape = array.shape if array is not None else tuple(value.type.get_shape())
    if math.prod(shape) != 1 or len(shape) > len(x.type.get_shape()):
        raise FrontendError(f"{ctx.label}: bound '{what}' must be a scalar, "
                            f"got shape {list(shape)}")
    return float(array.reshape(())) if array is not None else value
