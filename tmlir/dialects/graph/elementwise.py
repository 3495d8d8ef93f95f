"""Elementwise ops: binary and variadic ones broadcast numpy-style; unary ones keep
their operand's type and carry their parameters as f32 properties. The bitwise ops and
shifts (`IntegerBinaryOp`, ``graph.bitwise_not``) take integer tensors only; ``graph.mod``
and ``graph.prelu`` any numbers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.graph.shapes import tensor_shape, verify_broadcast
from tmlir.dialects.graph.traits import AnyElementType, Injective, NoOpWhen

__all__ = [
    "GELU_APPROXIMATIONS", "AbsOp", "AcosOp", "AcoshOp", "AddOp", "AsinOp", "AsinhOp",
    "AtanOp", "AtanhOp", "BinaryElementwiseOp", "BitwiseAndOp", "BitwiseNotOp", "BitwiseOrOp",
    "BitwiseXorOp", "CeilOp", "CeluOp", "ClipOp", "CosOp", "CoshOp", "DivOp", "EluOp", "ErfOp",
    "ExpOp", "FloorOp", "GeluOp", "HardSigmoidOp", "HardSwishOp", "IntegerBinaryOp",
    "LeakyReluOp", "LogOp", "MaxOp", "MeanOp", "MinOp", "MishOp", "ModOp", "MulOp", "NegOp",
    "PReluOp", "PowOp", "ReciprocalOp", "ReluOp", "RoundOp", "SeluOp", "ShiftLeftOp",
    "ShiftRightOp", "ShrinkOp", "SigmoidOp", "SignOp", "SinOp", "SinhOp", "SoftplusOp",
    "SoftsignOp", "SqrtOp", "SubOp", "SumOp", "TanOp", "TanhOp", "ThresholdedReluOp",
    "UnaryElementwiseOp", "VariadicElementwiseOp",
]


class BinaryElementwiseOp(IRDLOperation):
    """``lhs <op> rhs`` with numpy broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Injective())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs, rhs, result_type: TensorType) -> None:
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        verify_broadcast([("lhs", self.lhs.type), ("rhs", self.rhs.type)], self.result.type)


@irdl_op_definition
class AddOp(BinaryElementwiseOp):
    name = "graph.add"
    traits = traits_def(AnyElementType())


@irdl_op_definition
class SubOp(BinaryElementwiseOp):
    name = "graph.sub"
    traits = traits_def(AnyElementType())


@irdl_op_definition
class MulOp(BinaryElementwiseOp):
    name = "graph.mul"
    traits = traits_def(AnyElementType())


@irdl_op_definition
class DivOp(BinaryElementwiseOp):
    name = "graph.div"
    traits = traits_def(AnyElementType())


@irdl_op_definition
class PowOp(BinaryElementwiseOp):
    """``lhs ** rhs`` (ONNX ``Pow``)."""

    name = "graph.pow"


def _verify_integer(what: str, type: Attribute) -> None:
    """`type` is a tensor of integers (not ``i1``)."""
    element = type.get_element_type() if isinstance(type, TensorType) else type
    if not isinstance(element, IntegerType) or element.width.data == 1:
        raise VerifyException(f"{what} must have an integer element type, got {element}")


@irdl_op_definition
class ModOp(BinaryElementwiseOp):
    """The remainder of ``lhs / rhs`` (ONNX ``Mod``): with the sign of ``rhs``, as Python's
    ``%`` and numpy's ``mod``; with ``{fmod}``, with the sign of ``lhs``, as C's ``fmod``
    and ``%``. An integer remainder by 0 is 0 (the quotient is undefined in ONNX)."""

    name = "graph.mod"
    fmod = opt_prop_def(UnitAttr)
    traits = traits_def(AnyElementType())
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, lhs, rhs, result_type: TensorType, fmod: bool = False) -> None:
        IRDLOperation.__init__(self, operands=[lhs, rhs], result_types=[result_type],
                               properties={"fmod": UnitAttr()} if fmod else {})

    def verify_(self) -> None:
        super().verify_()
        element = self.result.type.get_element_type()  # type: ignore[attr-defined]
        if isinstance(element, IntegerType) and element.width.data == 1:
            raise VerifyException("operands must be numbers, got i1")


class IntegerBinaryOp(BinaryElementwiseOp):
    """A bitwise function of two integer tensors (``i64``, ``i32``), broadcast numpy-style."""

    traits = traits_def(AnyElementType())

    def verify_(self) -> None:
        super().verify_()
        _verify_integer("lhs", self.lhs.type)


@irdl_op_definition
class BitwiseAndOp(IntegerBinaryOp):
    name = "graph.bitwise_and"


@irdl_op_definition
class BitwiseOrOp(IntegerBinaryOp):
    name = "graph.bitwise_or"


@irdl_op_definition
class BitwiseXorOp(IntegerBinaryOp):
    name = "graph.bitwise_xor"


@irdl_op_definition
class ShiftLeftOp(IntegerBinaryOp):
    """``lhs << rhs``; bits shifted past the sign bit are lost, and a shift out of
    ``[0, bits)`` gives 0 (ONNX ``BitShift`` ``LEFT``)."""

    name = "graph.shift_left"


@irdl_op_definition
class ShiftRightOp(IntegerBinaryOp):
    """``lhs >> rhs``, arithmetic (the sign bit fills); a shift out of ``[0, bits)`` gives
    the fill alone: -1 for a negative ``lhs``, else 0 (ONNX ``BitShift`` ``RIGHT``)."""

    name = "graph.shift_right"


@irdl_op_definition
class PReluOp(BinaryElementwiseOp):
    """``lhs < 0 ? rhs * lhs : lhs`` (ONNX ``PRelu``): the slope ``rhs`` broadcasts to the
    shape of ``lhs``, which is the result's."""

    name = "graph.prelu"
    traits = traits_def(AnyElementType())

    def verify_(self) -> None:
        super().verify_()
        if tensor_shape(self.result.type, "result") != tensor_shape(self.lhs.type, "lhs"):
            raise VerifyException("the slope must broadcast to the shape of lhs")


class VariadicElementwiseOp(IRDLOperation):
    """A function of one or more tensors, all broadcast numpy-style to the result."""

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Injective(), NoOpWhen(lambda op: len(op.operands) == 1))
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $result)"

    def __init__(self, inputs: Sequence[SSAValue], result_type: TensorType) -> None:
        super().__init__(operands=[list(inputs)], result_types=[result_type])

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("expected at least one input")
        verify_broadcast([(f"input #{i}", v.type) for i, v in enumerate(self.inputs)],
                         self.result.type)


@irdl_op_definition
class MaxOp(VariadicElementwiseOp):
    """The largest input element; NaN if any is NaN (ONNX ``Max``, numpy ``maximum``)."""

    name = "graph.max"
    traits = traits_def(AnyElementType())


@irdl_op_definition
class MinOp(VariadicElementwiseOp):
    """The smallest input element; NaN if any is NaN (ONNX ``Min``, numpy ``minimum``)."""

    name = "graph.min"
    traits = traits_def(AnyElementType())


@irdl_op_definition
class SumOp(VariadicElementwiseOp):
    """The sum of the input elements (ONNX ``Sum``)."""

    name = "graph.sum"
    traits = traits_def(AnyElementType())


@irdl_op_definition
class MeanOp(VariadicElementwiseOp):
    """The mean of the input elements (ONNX ``Mean``)."""

    name = "graph.mean"


class UnaryElementwiseOp(IRDLOperation):
    """An elementwise function of one tensor; the result has the operand's type.

    Parameters are f32 (or string) properties, printed in the attribute dictionary:
    ``graph.leaky_relu %x {alpha = 1.000000e-01 : f32} : tensor<4xf32>``.
    """

    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure(), Injective())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input, **params: float | str | None) -> None:
        """`params`: property values; floats become f32 attributes, None leaves one out."""
        properties: dict[str, Attribute] = {
            name: StringAttr(value) if isinstance(value, str) else FloatAttr(value, Float32Type())
            for name, value in params.items() if value is not None
        }
        super().__init__(operands=[input], result_types=[input.type], properties=properties)

    def parameters(self) -> dict[str, float | str]:
        """The op's properties as Python values, e.g. ``{"alpha": 0.1}`` (f32-rounded)."""
        return {name: attr.value.data if isinstance(attr, FloatAttr) else attr.data
                for name, attr in self.properties.items()
                if isinstance(attr, FloatAttr | StringAttr)}

    def verify_(self) -> None:
        tensor_shape(self.input.type, "input")
        for name, attr in self.properties.items():
            if isinstance(attr, FloatAttr) and not isinstance(attr.type, Float32Type):
                raise VerifyException(f"{name} must be an f32 float, got {attr.type}")


@irdl_op_definition
class ReluOp(UnaryElementwiseOp):
    """``max(x, 0)``; NaN stays NaN."""

    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(UnaryElementwiseOp):
    """``1 / (1 + exp(-x))``."""

    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(UnaryElementwiseOp):
    name = "graph.tanh"


@irdl_op_definition
class ExpOp(UnaryElementwiseOp):
    name = "graph.exp"


@irdl_op_definition
class LogOp(UnaryElementwiseOp):
    """The natural logarithm."""

    name = "graph.log"


@irdl_op_definition
class SqrtOp(UnaryElementwiseOp):
    name = "graph.sqrt"


@irdl_op_definition
class ReciprocalOp(UnaryElementwiseOp):
    """``1 / x``."""

    name = "graph.reciprocal"


@irdl_op_definition
class NegOp(UnaryElementwiseOp):
    """``-x``."""

    name = "graph.neg"
    traits = traits_def(AnyElementType())


@irdl_op_definition
class AbsOp(UnaryElementwiseOp):
    name = "graph.abs"
    traits = traits_def(AnyElementType())


@irdl_op_definition
class ErfOp(UnaryElementwiseOp):
    """The error function."""

    name = "graph.erf"


@irdl_op_definition
class SoftplusOp(UnaryElementwiseOp):
    """``log(1 + exp(x))``."""

    name = "graph.softplus"


@irdl_op_definition
class SoftsignOp(UnaryElementwiseOp):
    """``x / (1 + |x|)``."""

    name = "graph.softsign"


@irdl_op_definition
class HardSwishOp(UnaryElementwiseOp):
    """``x * max(0, min(1, x / 6 + 1 / 2))``."""

    name = "graph.hard_swish"


@irdl_op_definition
class LeakyReluOp(UnaryElementwiseOp):
    """``x < 0 ? alpha * x : x``."""

    name = "graph.leaky_relu"
    alpha = prop_def(FloatAttr)


@irdl_op_definition
class HardSigmoidOp(UnaryElementwiseOp):
    """``max(0, min(1, alpha * x + beta))``."""

    name = "graph.hard_sigmoid"
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)


@irdl_op_definition
class EluOp(UnaryElementwiseOp):
    """``x < 0 ? alpha * (exp(x) - 1) : x``."""

    name = "graph.elu"
    alpha = prop_def(FloatAttr)


@irdl_op_definition
class SeluOp(UnaryElementwiseOp):
    """``gamma * (x <= 0 ? alpha * (exp(x) - 1) : x)``."""

    name = "graph.selu"
    alpha = prop_def(FloatAttr)
    gamma = prop_def(FloatAttr)


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(UnaryElementwiseOp):
    """``x / 2 * (1 + erf(x / sqrt(2)))``; with ``approximate = "tanh"``,
    ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``."""

    name = "graph.gelu"
    approximate = opt_prop_def(StringAttr)

    def verify_(self) -> None:
        super().verify_()
        if self.approximate is not None and self.approximate.data not in GELU_APPROXIMATIONS:
            raise VerifyException(f"approximate must be \"none\" or \"tanh\", "
                                  f"got \"{self.approximate.data}\"")


@irdl_op_definition
class ClipOp(UnaryElementwiseOp):
    """``min(max(x, min), max)``: a missing bound is no bound, NaN stays NaN, and
    ``min > max`` gives ``max`` everywhere (ONNX ``Clip``, numpy ``clip``)."""

    name = "graph.clip"
    lower = opt_prop_def(FloatAttr, prop_name="min")
    upper = opt_prop_def(FloatAttr, prop_name="max")



@irdl_op_definition
class SignOp(UnaryElementwiseOp):
    """-1, 0 or 1 by the sign of ``x``; NaN stays NaN."""

    name = "graph.sign"
    traits = traits_def(AnyElementType())


@irdl_op_definition
class FloorOp(UnaryElementwiseOp):
    name = "graph.floor"


@irdl_op_definition
class CeilOp(UnaryElementwiseOp):
    name = "graph.ceil"


@irdl_op_definition
class RoundOp(UnaryElementwiseOp):
    """The nearest integer, halves to even (ONNX ``Round``, numpy ``round``)."""

    name = "graph.round"


@irdl_op_definition
class SinOp(UnaryElementwiseOp):
    name = "graph.sin"


@irdl_op_definition
class CosOp(UnaryElementwiseOp):
    name = "graph.cos"


@irdl_op_definition
class TanOp(UnaryElementwiseOp):
    name = "graph.tan"


@irdl_op_definition
class AsinOp(UnaryElementwiseOp):
    name = "graph.asin"


@irdl_op_definition
class AcosOp(UnaryElementwiseOp):
    name = "graph.acos"


@irdl_op_definition
class AtanOp(UnaryElementwiseOp):
    name = "graph.atan"


@irdl_op_definition
class SinhOp(UnaryElementwiseOp):
    name = "graph.sinh"


@irdl_op_definition
class CoshOp(UnaryElementwiseOp):
    name = "graph.cosh"


@irdl_op_definition
class AsinhOp(UnaryElementwiseOp):
    name = "graph.asinh"


@irdl_op_definition
class AcoshOp(UnaryElementwiseOp):
    name = "graph.acosh"


@irdl_op_definition
class AtanhOp(UnaryElementwiseOp):
    name = "graph.atanh"


@irdl_op_definition
class MishOp(UnaryElementwiseOp):
    """``x * tanh(log(1 + exp(x)))``."""

    name = "graph.mish"


@irdl_op_definition
class ThresholdedReluOp(UnaryElementwiseOp):
    """``x > alpha ? x : 0`` (0 for NaN, as onnxruntime and ONNX's reference)."""

    name = "graph.thresholded_relu"
    alpha = prop_def(FloatAttr)


@irdl_op_definition
class ShrinkOp(UnaryElementwiseOp):
    """``x < -lambd ? x + bias : x > lambd ? x - bias : 0``."""

    name = "graph.shrink"
    lambd = prop_def(FloatAttr)
    bias = prop_def(FloatAttr)


@irdl_op_definition
class CeluOp(UnaryElementwiseOp):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    name = "graph.celu"
    alpha = prop_def(FloatAttr)

    def verify_(self) -> None:
        super().verify_()
        if self.alpha.value.data == 0:
            raise VerifyException("alpha must not be 0")


@irdl_op_definition
class BitwiseNotOp(UnaryElementwiseOp):
    """``~x`` of an integer tensor."""

    name = "graph.bitwise_not"
    traits = traits_def(AnyElementType())

    def verify_(self) -> None:
        super().verify_()
        _verify_integer("input", self.input.type)
