"""The ``graph`` dialect's convolutions and inference batch normalization.

    %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>,
             dilations = array<i64: 1, 1>, group = 1 : i64}
             : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
    %t = graph.conv_transpose %x, %v {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>,
             dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, group = 1 : i64}
             : (tensor<1x3x32x32xf32>, tensor<3x8x3x3xf32>) -> tensor<1x8x64x64xf32>
    %z = graph.batch_norm %y, %scale, %shift, %mean, %var {epsilon = 9.99999974E-6 : f32}
             : (tensor<1x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>,
                tensor<16xf32>) -> tensor<1x16x16x16xf32>

All work on ``(N, C, D1, ..., Dk)`` tensors (channels second, as ONNX). Pads are
explicit, in ONNX's order: the k begins, then the k ends (``top, left, bottom, right`` in
2-D); the frontend resolves ``auto_pad`` into them.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.graph.shapes import tensor_shape
from tmlir.dialects.graph.traits import Injective

__all__ = [
    "BatchNormOp",
    "ConvOp",
    "ConvTransposeOp",
    "conv_output_shape",
    "conv_transpose_output_shape",
]


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _values(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def conv_output_shape(input_shape: Sequence[int], weight_shape: Sequence[int],
                      strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                      group: int) -> tuple[int, ...]:
    """The result shape of a convolution; a VerifyException says why there is none.

    `input_shape` is ``(N, C, D1, ..., Dk)``, `weight_shape` ``(C_out, C / group, K1, ...,
    Kk)``, `pads` the k begins then the k ends.
    """
    rank = len(input_shape)
    if rank < 3:
        raise VerifyException(f"input must be (N, C, D1, ...), got rank {rank}")
    k = rank - 2
    if len(weight_shape) != rank:
        raise VerifyException(f"weight must have rank {rank} like the input, got "
                              f"{len(weight_shape)}")
    for what, values, size in (("strides", strides, k), ("dilations", dilations, k),
                               ("pads", pads, 2 * k)):
        if len(values) != size:
            raise VerifyException(f"{what} must have {size} values for {k} spatial dims, "
                                  f"got {len(values)}")
        if values and min(values) < (0 if what == "pads" else 1):
            raise VerifyException(f"{what} {list(values)} must be "
                                  f"{'>= 0' if what == 'pads' else '>= 1'}")
    channels, out_channels = input_shape[1], weight_shape[0]
    if group < 1 or channels % group or out_channels % group:
        raise VerifyException(f"group {group} must divide the input channels ({channels}) "
                              f"and the output channels ({out_channels})")
    if weight_shape[1] * group != channels:
        raise VerifyException(f"weight {list(weight_shape)} has {weight_shape[1]} input "
                              f"channels per group, expected {channels} / {group} = "
                              f"{channels // group}")
    out = []
    for d in range(k):
        window = (weight_shape[2 + d] - 1) * dilations[d] + 1
        span = input_shape[2 + d] + pads[d] + pads[k + d] - window
        if span < 0:
            raise VerifyException(f"the kernel does not fit spatial dim {d} ({input_shape[2 + d]}"
                                  f" with pads {pads[d]}, {pads[k + d]}; dilated kernel {window})")
        out.append(span // strides[d] + 1)
    return (input_shape[0], out_channels, *out)


@irdl_op_definition
class ConvOp(IRDLOperation):
    """Convolution of an ``(N, C, D1, ..., Dk)`` input with a ``(C_out, C / group, K1, ...,
    Kk)`` weight, plus an optional ``(C_out,)`` bias (ONNX ``Conv`` with explicit pads).

    ``y[n, co, o] = sum_{c, t} x[n, g * C/group + c, o * strides - pads_begin + t * dilations]
    * w[co, c, t] (+ bias[co])`` with ``g = co / (C_out / group)`` and zeros outside the
    input.
    """

    name = "graph.conv"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase.constr(i64))
    pads = prop_def(DenseArrayBase.constr(i64))
    dilations = prop_def(DenseArrayBase.constr(i64))
    group = prop_def(IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, input: SSAValue, weight: SSAValue, bias: SSAValue | None,
                 strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                 group: int = 1, result_type: TensorType | None = None) -> None:
        """`result_type` defaults to the computed output shape (inputs must then be valid)."""
        if result_type is None:
            assert isinstance(input.type, TensorType) and isinstance(weight.type, TensorType)
            shape = conv_output_shape(input.type.get_shape(), weight.type.get_shape(),
                                      strides, pads, dilations, group)
            result_type = TensorType(input.type.get_element_type(), shape)
        properties: dict[str, Attribute] = {
            "strides": _i64_array(strides), "pads": _i64_array(pads),
            "dilations": _i64_array(dilations), "group": IntegerAttr(group, i64),
        }
        super().__init__(operands=[input, weight, [bias] if bias is not None else []],
                         result_types=[result_type], properties=properties)

    @property
    def group_value(self) -> int:
        return self.group.value.data

    def attributes_tuple(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int]:
        """(strides, pads, dilations, group) as Python values."""
        return (_values(self.strides), _values(self.pads), _values(self.dilations),
                self.group_value)

    def expected_shape(self) -> tuple[int, ...]:
        strides, pads, dilations, group = self.attributes_tuple()
        return conv_output_shape(tensor_shape(self.input.type, "input"),
                                 tensor_shape(self.weight.type, "weight"),
                                 strides, pads, dilations, group)

    def verify_(self) -> None:
        expected = self.expected_shape()
        if self.bias is not None:
            bias = tensor_shape(self.bias.type, "bias")
            if bias != (expected[1],):
                raise VerifyException(f"bias shape {list(bias)} must be [{expected[1]}], one "
                                      "value per output channel")
        out = tensor_shape(self.result.type, "result")
        if out != expected:
            raise VerifyException(f"result shape {list(out)} does not match expected "
                                  f"{list(expected)}")
        operands = {v.type.get_element_type() for v in (self.input, self.weight)}  # type: ignore[attr-defined]
        results = {v.type.get_element_type() for v in (*self.operands[2:], self.result)}  # type: ignore[attr-defined]
        if len(operands) != 1 or len(results) != 1 or (
                operands != results and not _half_operands_f32_result(operands.pop(), results.pop())):
            raise VerifyException("operands and result must have the same element type (or f16/bf16 "
                                  "input and weight with an f32 bias and result)")


def _half_operands_f32_result(operand: Attribute, result: Attribute) -> bool:
    """A tensor-core convolution of ``graph-mixed-precision``: f16 or bf16 input and weight,
    accumulated into an f32 bias and result."""
    return isinstance(operand, Float16Type | BFloat16Type) and isinstance(result, Float32Type)


def conv_transpose_output_shape(input_shape: Sequence[int], weight_shape: Sequence[int],
                                strides: Sequence[int], pads: Sequence[int],
                                dilations: Sequence[int], output_padding: Sequence[int],
                                group: int) -> tuple[int, ...]:
    """The result shape of a transposed convolution; a VerifyException says why there is
    none. `weight_shape` is ``(C, C_out / group, K1, ..., Kk)``; along each spatial dim
    ``out = stride * (in - 1) + output_padding + (K - 1) * dilation + 1 - pads``."""
    rank = len(input_shape)
    if rank < 3:
        raise VerifyException(f"input must be (N, C, D1, ...), got rank {rank}")
    k = rank - 2
    if len(weight_shape) != rank:
        raise VerifyException(f"weight must have rank {rank} like the input, got "
                              f"{len(weight_shape)}")
    for what, values, size, least in (("strides", strides, k, 1), ("dilations", dilations, k, 1),
                                      ("pads", pads, 2 * k, 0),
                                      ("output_padding", output_padding, k, 0)):
        if len(values) != size:
            raise VerifyException(f"{what} must have {size} values for {k} spatial dims, "
                                  f"got {len(values)}")
        if values and min(values) < least:
            raise VerifyException(f"{what} {list(values)} must be >= {least}")
    channels = input_shape[1]
    if group < 1 or channels % group:
        raise VerifyException(f"group {group} must divide the input channels ({channels})")
    if weight_shape[0] != channels:
        raise VerifyException(f"weight {list(weight_shape)} must have the input's {channels} "
                              "channels first")
    out = []
    for d in range(k):
        size = (strides[d] * (input_shape[2 + d] - 1) + output_padding[d]
                + (weight_shape[2 + d] - 1) * dilations[d] + 1 - pads[d] - pads[k + d])
        if size < 1:
            raise VerifyException(f"spatial dim {d} has no output (size {size})")
        out.append(size)
    return (input_shape[0], weight_shape[1] * group, *out)


@irdl_op_definition
class ConvTransposeOp(IRDLOperation):
    """Transposed convolution (the gradient of ``graph.conv`` with respect to its input)
    of an ``(N, C, D1, ..., Dk)`` input with a ``(C, C_out / group, K1, ..., Kk)`` weight,
    plus an optional ``(C_out,)`` bias (ONNX ``ConvTranspose`` with explicit pads).

    ``y[n, co, o] = sum x[n, ci, i] * w[ci, co % (C_out / group), t] (+ bias[co])`` over
    the input channels ``ci`` of ``co``'s group and the ``(i, t)`` with ``o = i * strides -
    pads_begin + t * dilations``. ``output_padding`` adds outputs at the end of each
    spatial dim.
    """

    name = "graph.conv_transpose"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase.constr(i64))
    pads = prop_def(DenseArrayBase.constr(i64))
    dilations = prop_def(DenseArrayBase.constr(i64))
    output_padding = prop_def(DenseArrayBase.constr(i64))
    group = prop_def(IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, input: SSAValue, weight: SSAValue, bias: SSAValue | None,
                 strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                 output_padding: Sequence[int], group: int, result_type: TensorType) -> None:
        properties: dict[str, Attribute] = {
            "strides": _i64_array(strides), "pads": _i64_array(pads),
            "dilations": _i64_array(dilations), "output_padding": _i64_array(output_padding),
            "group": IntegerAttr(group, i64),
        }
        super().__init__(operands=[input, weight, [bias] if bias is not None else []],
                         result_types=[result_type], properties=properties)

    @property
    def group_value(self) -> int:
        return self.group.value.data

    def attributes_tuple(self) -> tuple[tuple[int, ...], ...]:
        """(strides, pads, dilations, output_padding) as Python tuples."""
        return tuple(_values(a) for a in (self.strides, self.pads, self.dilations,
                                          self.output_padding))

    def verify_(self) -> None:
        expected = conv_transpose_output_shape(
            tensor_shape(self.input.type, "input"), tensor_shape(self.weight.type, "weight"),
            *self.attributes_tuple(), self.group_value)
        if self.bias is not None:
            bias = tensor_shape(self.bias.type, "bias")
            if bias != (expected[1],):
                raise VerifyException(f"bias shape {list(bias)} must be [{expected[1]}], one "
                                      "value per output channel")
        out = tensor_shape(self.result.type, "result")
        if out != expected:
            raise VerifyException(f"result shape {list(out)} does not match expected "
                                  f"{list(expected)}")
        types = {v.type.get_element_type() for v in (*self.operands, self.result)}  # type: ignore[attr-defined]
        if len(types) != 1:
            raise VerifyException("operands and result must have the same element type")


@irdl_op_definition
class BatchNormOp(IRDLOperation):
    """Inference batch normalization of an ``(N, C, D1, ...)`` tensor with per-channel
    ``(C,)`` statistics: ``(x - mean) / sqrt(var + epsilon) * scale + bias`` (ONNX
    ``BatchNormalization`` with ``training_mode = 0``)."""

    name = "graph.batch_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    result = result_def(TensorType)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure(), Injective())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input `,` $scale `,` $bias `,` $mean `,` $var attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(self, input: SSAValue, scale: SSAValue, bias: SSAValue, mean: SSAValue,
                 var: SSAValue, epsilon: float = 1e-5) -> None:
        super().__init__(operands=[input, scale, bias, mean, var], result_types=[input.type],
                         properties={"epsilon": FloatAttr(epsilon, Float32Type())})

    @property
    def epsilon_value(self) -> float:
        return self.epsilon.value.data

    def verify_(self) -> None:
        shape = tensor_shape(self.input.type, "input")
        if len(shape) < 2:
            raise VerifyException(f"input must be (N, C, ...), got rank {len(shape)}")
        for what in ("scale", "bias", "mean", "var"):
            operand = tensor_shape(getattr(self, what).type, what)
            if operand != (shape[1],):
                raise VerifyException(f"{what} shape {list(operand)} must be [{shape[1]}], one "
                                      "value per channel")
        if not isinstance(self.epsilon.type, Float32Type):
            raise VerifyException(f"epsilon must be an f32 float, got {self.epsilon.type}")
        if self.result.type != self.input.type:
            raise VerifyException("result type must be the input type")
        types = {v.type.get_element_type() for v in self.operands}  # type: ignore[attr-defined]
        if len(types) != 1:
            raise VerifyException("operands must have the same element type")

