"""The ``graph`` dialect's reductions, normalizations and pooling.

    %s = graph.reduce_sum %x {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
    %m = graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims} : tensor<1x8x7x7xf32> -> tensor<1x8x1x1xf32>
    %p = graph.softmax %x {axes = array<i64: 1>} : tensor<2x10x5xf32>
    %y = graph.layer_norm %x, %gamma, %beta {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (...) -> tensor<...>
    %q = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
             pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<...> -> tensor<...>

Axes are as the frontend normalizes them: non-negative, increasing, without repeats.
Softmax normalizes over the elements that share every coordinate outside ``axes`` (one
axis since ONNX opset 13, all axes from ``axis`` on before). Pooling is over the spatial
dims of an ``(N, C, D1, ..., Dk)`` tensor with explicit pads (ONNX's order: the k begins,
then the k ends). The ops along one axis (``arg_max``, ``arg_min``, ``hardmax``, ``cumsum``,
``top_k``) are in ``axis_ops``; this module's ``__all__`` lists them too, so the family
registers them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    UnitAttr,
    f16,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir import dtypes
from tmlir.dialects.graph import axis_ops
from tmlir.dialects.graph.axis_ops import *  # noqa: F403
from tmlir.dialects.graph.shapes import tensor_shape
from tmlir.dialects.graph.traits import AnyElementType, NoOpWhen

__all__ = [
    "AveragePoolOp",
    "LayerNormOp",
    "LogSoftmaxOp",
    "MaxPoolOp",
    "PoolOp",
    "ReduceL1Op",
    "ReduceL2Op",
    "ReduceLogSumExpOp",
    "ReduceLogSumOp",
    "ReduceMaxOp",
    "ReduceMeanOp",
    "ReduceMinOp",
    "ReduceOp",
    "ReduceProdOp",
    "ReduceSumOp",
    "ReduceSumSquareOp",
    "SoftmaxBaseOp",
    "SoftmaxOp",
    *axis_ops.__all__,
    "pool_output_size",
    "reduced_shape",
]


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _values(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def _check_axes(axes: tuple[int, ...], rank: int) -> None:
    if not axes:
        raise VerifyException("axes must not be empty")
    if list(axes) != sorted(set(axes)):
        raise VerifyException(f"axes {list(axes)} must be increasing, without repeats")
    if axes[0] < 0 or axes[-1] >= rank:
        raise VerifyException(f"axes {list(axes)} are out of range for rank {rank}")


def _same_element_type(*types: Attribute) -> None:
    if len({t.get_element_type() for t in types}) != 1:  # type: ignore[attr-defined]
        raise VerifyException("operands and results must have the same element type")


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keepdims: bool) -> tuple[int, ...]:
    """`shape` without the dims in `axes`, or with them as 1 when `keepdims`."""
    return tuple(1 if d in axes else n for d, n in enumerate(shape)
                 if keepdims or d not in axes)


class ReduceOp(IRDLOperation):
    """A reduction of the dims in ``axes``; ``keepdims`` keeps them as extent 1."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    axes = prop_def(DenseArrayBase.constr(i64))
    keepdims = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, axes: Sequence[int], keepdims: bool) -> None:
        assert isinstance(input.type, TensorType)
        shape = reduced_shape(input.type.get_shape(), axes, keepdims)
        properties: dict[str, Attribute] = {"axes": _i64_array(axes)}
        if keepdims:
            properties["keepdims"] = UnitAttr()
        super().__init__(operands=[input], properties=properties,
                         result_types=[TensorType(input.type.get_element_type(), shape)])

    @property
    def reduced_axes(self) -> tuple[int, ...]:
        return _values(self.axes)

    def is_unit_reduction(self) -> bool:
        """Whether every reduced dim has extent 1."""
        shape = self.input.type.get_shape()
        return all(shape[axis] == 1 for axis in self.reduced_axes)

    def verify_(self) -> None:
        shape = tensor_shape(self.input.type, "input")
        _check_axes(self.reduced_axes, len(shape))
        out = tensor_shape(self.result.type, "result")
        expected = reduced_shape(shape, self.reduced_axes, self.keepdims is not None)
        if out != expected:
            raise VerifyException(f"result shape {list(out)} does not match expected "
                                  f"{list(expected)}")
        _same_element_type(self.input.type, self.result.type)


class _IdentityOnOneReduceOp(ReduceOp):
    """A reduction whose value over one element is the element: over extent-1 dims the
    result is the input, reshaped (not so for ``|x|``, ``x^2``, ``log x``)."""

    traits = traits_def(NoOpWhen(lambda op: op.is_unit_reduction(), reshape=True))


@irdl_op_definition
class ReduceSumOp(_IdentityOnOneReduceOp):
    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(_IdentityOnOneReduceOp):
    name = "graph.reduce_mean"


class _BoolOrF32ReduceOp(_IdentityOnOneReduceOp):
    """A reduction of f32 (or f16, f64) tensors, or of ``i1`` ones (max: any, min: all)."""

    traits = traits_def(AnyElementType())

    def verify_(self) -> None:
        super().verify_()
        element = self.input.type.get_element_type()
        if element not in (f32, f16, f64, i1):
            raise VerifyException(f"expected f32 or i1 elements, got {element}")  # (or f16, f64)


@irdl_op_definition
class ReduceMaxOp(_BoolOrF32ReduceOp):
    """The largest element; NaN if any is NaN (numpy ``max``); of bools, whether any holds."""

    name = "graph.reduce_max"


@irdl_op_definition
class ReduceMinOp(_BoolOrF32ReduceOp):
    """The smallest element; NaN if any is NaN (numpy ``min``); of bools, whether all hold."""

    name = "graph.reduce_min"


@irdl_op_definition
class ReduceProdOp(_IdentityOnOneReduceOp):
    """The product of the elements."""

    name = "graph.reduce_prod"


@irdl_op_definition
class ReduceLogSumExpOp(_IdentityOnOneReduceOp):
    """``log(sum(exp(x)))``, computed as ``m + log(sum(exp(x - m)))`` with ``m`` the max
    (0 where the max is not finite), so that it neither overflows nor loses the small ones."""

    name = "graph.reduce_log_sum_exp"


@irdl_op_definition
class ReduceL1Op(ReduceOp):
    """``sum(|x|)``."""

    name = "graph.reduce_l1"


@irdl_op_definition
class ReduceL2Op(ReduceOp):
    """``sqrt(sum(x^2))``."""

    name = "graph.reduce_l2"


@irdl_op_definition
class ReduceSumSquareOp(ReduceOp):
    """``sum(x^2)``."""

    name = "graph.reduce_sum_square"


@irdl_op_definition
class ReduceLogSumOp(ReduceOp):
    """``log(sum(x))``."""

    name = "graph.reduce_log_sum"


class SoftmaxBaseOp(IRDLOperation):
    """Normalizes over the elements that share every coordinate outside ``axes``."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)
    axes = prop_def(DenseArrayBase.constr(i64))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: SSAValue, axes: Sequence[int]) -> None:
        super().__init__(operands=[input], result_types=[input.type],
                         properties={"axes": _i64_array(axes)})

    @property
    def reduced_axes(self) -> tuple[int, ...]:
        return _values(self.axes)

    def verify_(self) -> None:
        _check_axes(self.reduced_axes, len(tensor_shape(self.input.type, "input")))


@irdl_op_definition
class SoftmaxOp(SoftmaxBaseOp):
    """``exp(x - max) / sum(exp(x - max))`` over ``axes``."""

    name = "graph.softmax"


@irdl_op_definition
class LogSoftmaxOp(SoftmaxBaseOp):
    """``x - max - log(sum(exp(x - max)))`` over ``axes``."""

    name = "graph.log_softmax"


@irdl_op_definition
class LayerNormOp(IRDLOperation):
    """``(x - mean) / sqrt(var + epsilon) * scale + bias`` over the dims from ``axis`` on.

    ``scale`` and the optional ``bias`` broadcast to the normalized shape ``shape[axis:]``.
    With two more results, also the mean and ``1 / sqrt(var + epsilon)`` of each normalized
    group, of shape ``shape[:axis] + [1] * (rank - axis)`` (ONNX's Mean and InvStdDev).
    """

    name = "graph.layer_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    statistics = var_result_def(TensorType)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, input: SSAValue, scale: SSAValue, bias: SSAValue | None, axis: int,
                 epsilon: float, statistics: bool = False) -> None:
        assert isinstance(input.type, TensorType)
        shape = input.type.get_shape()
        stats_type = TensorType(input.type.get_element_type(),
                                [*shape[:axis], *([1] * (len(shape) - axis))])
        super().__init__(
            operands=[input, scale, [bias] if bias is not None else []],
            result_types=[input.type, [stats_type] * 2 if statistics else []],
            properties={"axis": IntegerAttr(axis, i64),
                        "epsilon": FloatAttr(epsilon, Float32Type())},
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def epsilon_value(self) -> float:
        return self.epsilon.value.data

    def verify_(self) -> None:
        shape = tensor_shape(self.input.type, "input")
        axis = self.axis_value
        if not 0 <= axis < len(shape):
            raise VerifyException(f"axis {axis} is out of range for rank {len(shape)}")
        if not isinstance(self.epsilon.type, Float32Type):
            raise VerifyException(f"epsilon must be an f32 float, got {self.epsilon.type}")
        normalized = shape[axis:]
        for what, value in (("scale", self.scale), ("bias", self.bias)):
            if value is None:
                continue
            operand = tensor_shape(value.type, what)
            if len(operand) > len(normalized) or any(
                    d not in (1, n) for d, n in zip(operand[::-1], normalized[::-1])):
                raise VerifyException(f"{what} shape {list(operand)} does not broadcast to the "
                                      f"normalized shape {list(normalized)}")
        if tensor_shape(self.result.type, "result") != shape:
            raise VerifyException("result shape must be the input shape")
        if len(self.statistics) not in (0, 2):
            raise VerifyException(f"expected 0 or 2 statistics results (mean, inv_std_dev), "
                                  f"got {len(self.statistics)}")
        stats = (*shape[:axis], *([1] * (len(shape) - axis)))
        for what, value in zip(("mean", "inv_std_dev"), self.statistics):
            if tensor_shape(value.type, what) != stats:
                raise VerifyException(f"{what} shape must be {list(stats)}")
        _same_element_type(*(v.type for v in (*self.operands, *self.results)))


def pool_output_size(size: int, kernel: int, stride: int, dilation: int, pad_begin: int,
                     pad_end: int, ceil_mode: bool) -> int:
    """The output extent of pooling one dim (may be < 1: no window fits).

    ``ceil_mode`` rounds the window count up, but the last window must start inside the
    input or its begin padding (ONNX, PyTorch and onnxruntime agree).
    """
    span = size + pad_begin + pad_end - ((kernel - 1) * dilation + 1)
    if span < 0:
        return 0
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


class PoolOp(IRDLOperation):
    """A window reduction over the spatial dims of an ``(N, C, D1, ..., Dk)`` tensor."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    kernel_shape = prop_def(DenseArrayBase.constr(i64))
    strides = prop_def(DenseArrayBase.constr(i64))
    pads = prop_def(DenseArrayBase.constr(i64))
    dilations = prop_def(DenseArrayBase.constr(i64))
    ceil_mode = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TensorType, kernel_shape: Sequence[int],
                 strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                 ceil_mode: bool = False, **flags: bool) -> None:
        properties: dict[str, Attribute] = {
            "kernel_shape": _i64_array(kernel_shape), "strides": _i64_array(strides),
            "pads": _i64_array(pads), "dilations": _i64_array(dilations),
        }
        for name, value in {"ceil_mode": ceil_mode, **flags}.items():
            if value:
                properties[name] = UnitAttr()
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

    def window(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(kernel_shape, strides, pads, dilations) as tuples."""
        return tuple(_values(a) for a in (self.kernel_shape, self.strides, self.pads,  # type: ignore[return-value]
                                          self.dilations))

    def expected_shape(self) -> tuple[int, ...]:
        shape = tensor_shape(self.input.type, "input")
        if len(shape) < 3:
            raise VerifyException(f"input must be (N, C, D1, ...), got rank {len(shape)}")
        k = len(shape) - 2
        kernel, strides, pads, dilations = self.window()
        for what, values, size in (("kernel_shape", kernel, k), ("strides", strides, k),
                                   ("dilations", dilations, k), ("pads", pads, 2 * k)):
            if len(values) != size:
                raise VerifyException(f"{what} must have {size} values for {k} spatial dims, "
                                      f"got {len(values)}")
            if min(values) < (0 if what == "pads" else 1):
                raise VerifyException(f"{what} {list(values)} must be "
                                      f"{'>= 0' if what == 'pads' else '>= 1'}")
        out = []
        for d in range(k):
            size = pool_output_size(shape[2 + d], kernel[d], strides[d], dilations[d], pads[d],
                                    pads[k + d], self.ceil_mode is not None)
            if size < 1:
                raise VerifyException(f"the window does not fit spatial dim {d} "
                                      f"({shape[2 + d]} with pads {pads[d]}, {pads[k + d]})")
            out.append(size)
        return (*shape[:2], *out)

    def verify_(self) -> None:
        expected = self.expected_shape()
        out = tensor_shape(self.result.type, "result")
        if out != expected:
            raise VerifyException(f"result shape {list(out)} does not match expected "
                                  f"{list(expected)}")
        _same_element_type(self.input.type, self.result.type)


@irdl_op_definition
class MaxPoolOp(PoolOp):
    """The largest element of each window; padding takes no part. Floats or integers."""

    name = "graph.max_pool"
    traits = traits_def(AnyElementType())

    def verify_(self) -> None:
        super().verify_()
        element = self.input.type.get_element_type()
        if element == i1 or not (isinstance(element, IntegerType) or dtypes.is_float(element)):
            raise VerifyException(f"expected float or integer elements, got {element}")


@irdl_op_definition
class AveragePoolOp(PoolOp):
    """The mean of each window: over its elements inside the input, or with
    ``count_include_pad`` over all inside the padded input (padding counts as 0)."""

    name = "graph.average_pool"
    count_include_pad = opt_prop_def(UnitAttr)

