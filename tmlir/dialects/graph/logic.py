"""The ``graph`` dialect's elementwise ops whose result type differs from their operands':
comparisons, boolean logic, NaN tests, ``where`` and ``cast``.

Masks are ``i1`` tensors (one byte per element in memory, as numpy's bool). Operands
broadcast numpy-style, as for ``graph.add``:

    %m = graph.equal %ids, %pad : (tensor<1x16xi64>, tensor<i64>) -> tensor<1x16xi1>
    %k = graph.and %m, %causal : (tensor<1x16xi1>, tensor<16x16xi1>) -> tensor<16x16xi1>
    %n = graph.not %k : tensor<16x16xi1>
    %z = graph.is_nan %x : tensor<2x16x16xf32> -> tensor<2x16x16xi1>
    %y = graph.where %z, %zero, %x : (tensor<2x16x16xi1>, tensor<f32>, tensor<2x16x16xf32>)
                                       -> tensor<2x16x16xf32>
    %f = graph.cast %ids : tensor<1x16xi64> -> tensor<1x16xf32>

Comparisons take two operands of one numeric type (a float or integer type of
``tmlir/dtypes.py``; ``equal`` also ``i1``); float comparisons are false when either side
is NaN, as in numpy; unsigned integers (``ui8`` ...) compare as unsigned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import BoolAttr, IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir import dtypes
from tmlir.dialects.graph.shapes import broadcast_shapes, tensor_shape
from tmlir.dialects.graph.traits import AnyElementType, Injective, NoOpWhen

__all__ = [
    "I1",
    "AndOp",
    "CastOp",
    "CompareOp",
    "EqualOp",
    "GreaterEqualOp",
    "GreaterOp",
    "IsInfOp",
    "IsNanOp",
    "LessEqualOp",
    "LessOp",
    "LogicalOp",
    "NotOp",
    "OrOp",
    "WhereOp",
    "XorOp",
]

I1 = IntegerType(1)


def _element(type: Attribute) -> Attribute:
    assert isinstance(type, TensorType)
    return type.get_element_type()


def _check_element(what: str, type: Attribute, allowed: Sequence[dtypes.DType]) -> None:
    element = _element(type)
    if dtypes.from_ir(element) not in allowed:
        names = ", ".join(str(d.ir) for d in allowed)
        raise VerifyException(f"{what} must have element type {names}, got {element}")


def _check_broadcast(operands: Sequence[tuple[str, Attribute]], result: Attribute) -> None:
    shapes = [tensor_shape(type, what) for what, type in operands]
    out = tensor_shape(result, "result")
    expected = broadcast_shapes(*shapes)
    if out != expected:
        raise VerifyException(f"result shape {list(out)} does not match broadcast shape "
                              f"{list(expected)}")


class _BinaryMaskOp(IRDLOperation):
    """``lhs <op> rhs`` elementwise with numpy broadcasting: operands of one element type
    among ``ELEMENT_TYPES``, an ``i1`` result."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Injective(), AnyElementType())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    ELEMENT_TYPES: ClassVar[tuple[dtypes.DType, ...]] = dtypes.DTYPES

    def __init__(self, lhs: SSAValue, rhs: SSAValue, shape: Sequence[int]) -> None:
        super().__init__(operands=[lhs, rhs], result_types=[TensorType(I1, list(shape))])

    def verify_(self) -> None:
        _check_broadcast([("lhs", self.lhs.type), ("rhs", self.rhs.type)], self.result.type)
        _check_element("lhs", self.lhs.type, self.ELEMENT_TYPES)
        if _element(self.lhs.type) != _element(self.rhs.type):
            raise VerifyException("lhs and rhs must have the same element type")
        _check_element("result", self.result.type, (dtypes.BOOL,))


class CompareOp(_BinaryMaskOp):
    """``lhs <predicate> rhs`` of two numeric tensors (``equal``: bools too)."""

    ELEMENT_TYPES: ClassVar[tuple[dtypes.DType, ...]] = dtypes.NUMERIC


@irdl_op_definition
class EqualOp(CompareOp):
    name = "graph.equal"
    ELEMENT_TYPES: ClassVar[tuple[dtypes.DType, ...]] = dtypes.DTYPES


@irdl_op_definition
class LessOp(CompareOp):
    name = "graph.less"


@irdl_op_definition
class LessEqualOp(CompareOp):
    name = "graph.less_equal"


@irdl_op_definition
class GreaterOp(CompareOp):
    name = "graph.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    name = "graph.greater_equal"


class LogicalOp(_BinaryMaskOp):
    """Boolean ``lhs <op> rhs`` of two ``i1`` tensors, with numpy broadcasting."""

    ELEMENT_TYPES: ClassVar[tuple[dtypes.DType, ...]] = (dtypes.BOOL,)


@irdl_op_definition
class AndOp(LogicalOp):
    name = "graph.and"


@irdl_op_definition
class OrOp(LogicalOp):
    name = "graph.or"


@irdl_op_definition
class XorOp(LogicalOp):
    name = "graph.xor"


class _MaskOp(IRDLOperation):
    """A one-operand elementwise test or conversion: ``$input : type -> type``, same shape."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Injective(), AnyElementType())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, element: Attribute) -> None:
        shape = tensor_shape(input.type, "input")
        super().__init__(operands=[input], result_types=[TensorType(element, list(shape))])

    def verify_(self) -> None:
        if tensor_shape(self.input.type, "input") != tensor_shape(self.result.type, "result"):
            raise VerifyException("input and result must have the same shape")


@irdl_op_definition
class NotOp(IRDLOperation):
    """Boolean negation of an ``i1`` tensor."""

    name = "graph.not"
    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure(), Injective(), AnyElementType())
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: SSAValue) -> None:
        super().__init__(operands=[input], result_types=[input.type])

    def verify_(self) -> None:
        tensor_shape(self.input.type, "input")
        _check_element("input", self.input.type, (dtypes.BOOL,))


@irdl_op_definition
class IsNanOp(_MaskOp):
    """Whether each element of a float tensor (``f32``, ``f16``, ``f64``) is NaN."""

    name = "graph.is_nan"

    def __init__(self, input: SSAValue) -> None:
        super().__init__(input, I1)

    def verify_(self) -> None:
        super().verify_()
        _check_element("input", self.input.type, dtypes.FLOATS)
        _check_element("result", self.result.type, (dtypes.BOOL,))


@irdl_op_definition
class IsInfOp(_MaskOp):
    """Whether each element of an ``f32`` tensor is an infinity: ``+inf`` unless
    ``detect_positive = false``, ``-inf`` unless ``detect_negative = false``."""

    name = "graph.is_inf"
    detect_negative = opt_prop_def(BoolAttr)
    detect_positive = opt_prop_def(BoolAttr)
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, input: SSAValue, detect_negative: bool = True,
                 detect_positive: bool = True) -> None:
        super().__init__(input, I1)
        for name, detect in (("detect_negative", detect_negative),
                             ("detect_positive", detect_positive)):
            if not detect:
                self.properties[name] = BoolAttr.from_bool(False)

    def detects(self) -> tuple[bool, bool]:
        """Whether ``-inf`` and ``+inf`` are detected."""
        return tuple(attr is None or bool(attr.value.data)  # type: ignore[return-value]
                     for attr in (self.detect_negative, self.detect_positive))

    def verify_(self) -> None:
        super().verify_()
        _check_element("input", self.input.type, dtypes.FLOATS)
        _check_element("result", self.result.type, (dtypes.BOOL,))


@irdl_op_definition
class CastOp(_MaskOp):
    """Each element converted to the result's element type, as ONNX ``Cast`` does:
    float to integer truncates toward zero, anything to ``i1`` is ``x != 0`` (NaN is
    true), ``i1`` to a number is 0 or 1, integers wrap when narrowed."""

    name = "graph.cast"
    traits = traits_def(NoOpWhen())  # to the input's own type

    def _float_sizes(self) -> tuple[int, int] | None:
        """The bytes of an element of the input and of the result, when both are floats."""
        source, target = (dtypes.from_ir(v.type.get_element_type())  # type: ignore[attr-defined]
                          for v in (self.input, self.result))
        if source is None or target is None or not (source.is_float and target.is_float):
            return None
        return source.numpy.itemsize, target.numpy.itemsize

    @property
    def narrows_float(self) -> bool:
        """A float-to-float cast to fewer bytes (f32 to f16 or bf16, f64 to f32, ...): the
        same values, rounded, in less memory."""
        sizes = self._float_sizes()
        return sizes is not None and sizes[1] < sizes[0]

    @property
    def widens_float(self) -> bool:
        """A float-to-float cast to more bytes (f16 or bf16 to f32, ...): exact, the same
        values in more memory."""
        sizes = self._float_sizes()
        return sizes is not None and sizes[1] > sizes[0]

    def verify_(self) -> None:
        super().verify_()
        _check_element("input", self.input.type, dtypes.DTYPES)
        _check_element("result", self.result.type, dtypes.DTYPES)


@irdl_op_definition
class WhereOp(IRDLOperation):
    """``condition ? lhs : rhs`` elementwise, the three broadcast numpy-style."""

    name = "graph.where"
    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Injective(), AnyElementType())
    assembly_format = ("$condition `,` $lhs `,` $rhs attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, condition: SSAValue, lhs: SSAValue, rhs: SSAValue,
                 result_type: TensorType) -> None:
        super().__init__(operands=[condition, lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        _check_broadcast([("condition", self.condition.type), ("lhs", self.lhs.type),
                          ("rhs", self.rhs.type)], self.result.type)
        _check_element("condition", self.condition.type, (dtypes.BOOL,))
        if not _element(self.lhs.type) == _element(self.rhs.type) == _element(self.result.type):
            raise VerifyException("lhs, rhs and result must have the same element type")

