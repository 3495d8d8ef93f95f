"""The ``graph`` dialect's ops along one axis: index-of reductions, hardmax, scans, top-k.

    %i = graph.arg_max %x {axis = 1 : i64, keepdims} : tensor<2x5x3xf32> -> tensor<2x1x3xi64>
    %h = graph.hardmax %x {axis = 2 : i64} : tensor<2x5x3xf32>
    %c = graph.cumsum %n {axis = 0 : i64, exclusive, reverse} : tensor<6x4xi32>
    %v, %j = graph.top_k %x {axis = 1 : i64, k = 2 : i64} : tensor<2x5x3xf32> -> tensor<2x2x3xf32>, tensor<2x2x3xi64>

Axes are non-negative, as the frontend normalizes them. A NaN is the largest element for
``arg_max``, ``arg_min`` and ``hardmax`` (numpy's ``argmax`` / ``argmin``: the first NaN
wins) and for ``top_k`` (NaNs first among the largest, last among the smallest). The
family's module ``reductions`` re-exports these ops (its ``__all__`` lists them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import IntegerAttr, TensorType, UnitAttr, f32, f64, i32, i64
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
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir import dtypes
from tmlir.dialects.graph.shapes import tensor_shape
from tmlir.dialects.graph.traits import AnyElementType

__all__ = ["ArgMaxOp", "ArgMinOp", "ArgReduceOp", "CumSumOp", "HardmaxOp", "TopKOp"]


def _reduced_shape(shape: Sequence[int], axis: int, keepdims: bool) -> tuple[int, ...]:
    return tuple(1 if d == axis else n for d, n in enumerate(shape) if keepdims or d != axis)


def _axis_in_range(axis: int, rank: int) -> None:
    if not 0 <= axis < max(rank, 1):
        raise VerifyException(f"axis {axis} is out of range for rank {rank}")


def _element(value: SSAValue, what: str, allowed: Sequence[Attribute]) -> Attribute:
    element = value.type.get_element_type()  # type: ignore[attr-defined]
    if element not in allowed:
        names = [str(t) for t in allowed]
        expected = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        raise VerifyException(f"{what} must have {expected} elements, got {element}")
    return element


class ArgReduceOp(IRDLOperation):
    """The index (i64) of the largest or smallest element along ``axis``: the first one,
    or with ``select_last_index`` the last; a NaN counts as the extreme (numpy's
    ``argmax``). ``keepdims`` keeps the axis as extent 1."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    keepdims = opt_prop_def(UnitAttr)
    select_last_index = opt_prop_def(UnitAttr)
    traits = traits_def(Pure(), AnyElementType())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, axis: int, keepdims: bool,
                 select_last_index: bool = False) -> None:
        assert isinstance(input.type, TensorType)
        shape = _reduced_shape(input.type.get_shape(), axis, keepdims)
        properties: dict[str, Attribute] = {"axis": IntegerAttr(axis, i64)}
        for name, flag in (("keepdims", keepdims), ("select_last_index", select_last_index)):
            if flag:
                properties[name] = UnitAttr()
        super().__init__(operands=[input], properties=properties,
                         result_types=[TensorType(i64, shape)])

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        shape = tensor_shape(self.input.type, "input")
        _axis_in_range(self.axis_value, len(shape))
        expected = _reduced_shape(shape, self.axis_value, self.keepdims is not None)
        if tensor_shape(self.result.type, "result") != expected:
            raise VerifyException(f"result shape {list(self.result.type.get_shape())} does not "
                                  f"match expected {list(expected)}")
        _element(self.input, "input", [f32])
        _element(self.result, "result", [i64])


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    name = "graph.arg_max"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    name = "graph.arg_min"


class _AxisOp(IRDLOperation):
    """An op of one tensor along one ``axis``, with a result of the operand's type."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)
    axis = prop_def(IntegerAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input)"

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        _axis_in_range(self.axis_value, len(tensor_shape(self.input.type, "input")))


@irdl_op_definition
class HardmaxOp(_AxisOp):
    """1 at the first largest element along ``axis`` (a NaN counts as the largest), else 0."""

    name = "graph.hardmax"
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, axis: int) -> None:
        super().__init__(operands=[input], result_types=[input.type],
                         properties={"axis": IntegerAttr(axis, i64)})


@irdl_op_definition
class CumSumOp(_AxisOp):
    """The running sums along ``axis``: ``y[i] = x[0] + ... + x[i]``; ``exclusive`` leaves
    out ``x[i]``, ``reverse`` sums from the end. f32, f64, i32 or i64 elements."""

    name = "graph.cumsum"
    exclusive = opt_prop_def(UnitAttr)
    reverse = opt_prop_def(UnitAttr)
    traits = traits_def(Pure(), AnyElementType())

    def __init__(self, input: SSAValue, axis: int, exclusive: bool, reverse: bool) -> None:
        properties: dict[str, Attribute] = {"axis": IntegerAttr(axis, i64)}
        for name, flag in (("exclusive", exclusive), ("reverse", reverse)):
            if flag:
                properties[name] = UnitAttr()
        super().__init__(operands=[input], result_types=[input.type], properties=properties)

    def verify_(self) -> None:
        super().verify_()
        _element(self.input, "input", [f32, f64, i32, i64])


@irdl_op_definition
class TopKOp(IRDLOperation):
    """The ``k`` largest (``smallest``: smallest) elements along ``axis``, in order, and
    their indices (i64). Equal elements come in the order of their indices; a NaN counts
    as larger than any number (as torch's ``topk``). Float or integer elements."""

    name = "graph.top_k"
    input = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    k = prop_def(IntegerAttr)
    smallest = opt_prop_def(UnitAttr)
    traits = traits_def(Pure(), AnyElementType())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($values) `,` type($indices)"

    def __init__(self, input: SSAValue, axis: int, k: int, smallest: bool) -> None:
        assert isinstance(input.type, TensorType)
        shape = [k if d == axis else n for d, n in enumerate(input.type.get_shape())]
        properties: dict[str, Attribute] = {"axis": IntegerAttr(axis, i64),
                                            "k": IntegerAttr(k, i64)}
        if smallest:
            properties["smallest"] = UnitAttr()
        super().__init__(operands=[input], properties=properties, result_types=[
            TensorType(input.type.get_element_type(), shape), TensorType(i64, shape)])

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def k_value(self) -> int:
        return self.k.value.data

    def verify_(self) -> None:
        shape = tensor_shape(self.input.type, "input")
        axis, k = self.axis_value, self.k_value
        if not 0 <= axis < len(shape):
            raise VerifyException(f"axis {axis} is out of range for rank {len(shape)}")
        if not 1 <= k <= shape[axis]:
            raise VerifyException(f"k = {k} must be in [1, {shape[axis]}] (the axis' extent)")
        expected = tuple(k if d == axis else n for d, n in enumerate(shape))
        for what, value in (("values", self.values), ("indices", self.indices)):
            if tensor_shape(value.type, what) != expected:
                raise VerifyException(f"{what} shape {list(value.type.get_shape())} does not "
                                      f"match expected {list(expected)}")
        element = _element(self.input, "input", [d.ir for d in dtypes.NUMERIC])
        _element(self.values, "values", [element])
        _element(self.indices, "indices", [i64])
