"""The ``graph`` dialect's gathers whose indices are a tensor computed at run time
(``graph.gather`` is the one with constant indices, which the compiler turns into index
arithmetic); these read an index tensor (``i64`` or ``i32``):

    %e = graph.take %table, %ids {axis = 0 : i64}
           : (tensor<128x32xf32>, tensor<1x16xi64>) -> tensor<1x16x32xf32>
    %t = graph.take_along_axis %x, %idx {axis = 1 : i64}
           : (tensor<2x64xf32>, tensor<2x16xi64>) -> tensor<2x16xf32>
    %m = graph.gather_nd %mask, %idx {batch_dims = 0 : i64}
           : (tensor<1x16xi1>, tensor<1x1x1x2xi64>) -> tensor<1x1x1xi1>

They are numpy's ``take`` (ONNX ``Gather``), ``take_along_axis`` (``GatherElements``) and
ONNX ``GatherND``. A negative index counts from the end of its axis; an index still
outside the axis is clamped to it, so a bad index reads a wrong element of the tensor,
never memory outside it (ONNX leaves the result undefined).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir import dtypes
from tmlir.dialects.graph.shapes import tensor_shape
from tmlir.dialects.graph.traits import AnyElementType

__all__ = [
    "GatherNdOp",
    "TakeAlongAxisOp",
    "TakeOp",
]


class _IndexedOp(IRDLOperation):
    """``$input, $indices {...} : (data, indices) -> result`` with one integer property."""

    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), AnyElementType())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $indices attr-dict `:` functional-type(operands, results)"

    def shapes(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(data, indices, result) shapes, with the element types checked."""
        data = tensor_shape(self.input.type, "input")
        indices = tensor_shape(self.indices.type, "indices")
        out = tensor_shape(self.result.type, "result")
        assert isinstance(self.indices.type, TensorType)
        if dtypes.from_ir(self.indices.type.get_element_type()) not in dtypes.INTEGERS:
            raise VerifyException(f"indices must be i64 or i32, got "
                                  f"{self.indices.type.get_element_type()}")
        assert isinstance(self.input.type, TensorType) and isinstance(self.result.type, TensorType)
        if self.input.type.get_element_type() != self.result.type.get_element_type():
            raise VerifyException("input and result must have the same element type")
        return data, indices, out


def _check_result(out: tuple[int, ...], expected: list[int]) -> None:
    if out != tuple(expected):
        raise VerifyException(f"result shape {list(out)} does not match expected {expected}")


def _int_property(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


class _AxisIndexedOp(_IndexedOp):
    """An indexed op along one ``axis`` of its input."""

    axis = prop_def(IntegerAttr)

    def __init__(self, input: SSAValue, indices: SSAValue, axis: int,
                 result_type: Attribute) -> None:
        super().__init__(operands=[input, indices], result_types=[result_type],
                         properties={"axis": _int_property(axis)})

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def check_axis(self, rank: int) -> int:
        axis = self.axis_value
        if not 0 <= axis < rank:
            raise VerifyException(f"axis {axis} is out of range for rank {rank}")
        return axis


@irdl_op_definition
class TakeOp(_AxisIndexedOp):
    """``result[a..., i..., c...] = input[a..., indices[i...], c...]`` with ``a`` the dims
    before ``axis`` (ONNX ``Gather``)."""

    name = "graph.take"

    def verify_(self) -> None:
        data, indices, out = self.shapes()
        axis = self.check_axis(len(data))
        if data[axis] == 0 and math.prod(indices) > 0:
            raise VerifyException(f"cannot take from axis {axis} of extent 0")
        _check_result(out, [*data[:axis], *indices, *data[axis + 1:]])


@irdl_op_definition
class TakeAlongAxisOp(_AxisIndexedOp):
    """``result[i] = input[i with i[axis] = indices[i]]``; the result has the indices'
    shape, which matches the input's in every dim but ``axis`` (ONNX ``GatherElements``)."""

    name = "graph.take_along_axis"

    def verify_(self) -> None:
        data, indices, out = self.shapes()
        if len(indices) != len(data):
            raise VerifyException(f"indices must have the input's rank {len(data)}, "
                                  f"got {len(indices)}")
        axis = self.check_axis(len(data))
        if any(n != m for d, (n, m) in enumerate(zip(data, indices)) if d != axis):
            raise VerifyException(f"indices shape {list(indices)} must match input shape "
                                  f"{list(data)} outside axis {axis}")
        _check_result(out, list(indices))


@irdl_op_definition
class GatherNdOp(_IndexedOp):
    """ONNX ``GatherND``: with ``b = batch_dims`` and ``k = indices.shape[-1]``,
    ``result[p..., q..., c...] = input[p..., indices[p..., q..., :], c...]`` where ``p``
    ranges over the first ``b`` dims (shared by input and indices), ``q`` over the other
    index dims and ``c`` over the input dims after ``b + k``."""

    name = "graph.gather_nd"
    batch_dims = prop_def(IntegerAttr)

    def __init__(self, input: SSAValue, indices: SSAValue, batch_dims: int,
                 result_type: Attribute) -> None:
        super().__init__(operands=[input, indices], result_types=[result_type],
                         properties={"batch_dims": _int_property(batch_dims)})

    @property
    def batch_dims_value(self) -> int:
        return self.batch_dims.value.data

    def verify_(self) -> None:
        data, indices, out = self.shapes()
        b = self.batch_dims_value
        if not indices:
            raise VerifyException("indices must have rank >= 1")
        k = indices[-1]
        if not 0 <= b < min(len(data), len(indices)):
            raise VerifyException(f"batch_dims {b} must be below the ranks of input and indices")
        if data[:b] != indices[:b]:
            raise VerifyException(f"the first {b} dims of input {list(data)} and indices "
                                  f"{list(indices)} must match")
        if not 1 <= k <= len(data) - b:
            raise VerifyException(f"index depth {k} must be in [1, {len(data) - b}] for input "
                                  f"rank {len(data)} and batch_dims {b}")
        _check_result(out, [*indices[:-1], *data[b + k:]])

