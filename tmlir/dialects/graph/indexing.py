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

The scatters write ``updates`` into a copy of ``input`` at run-time indices (ONNX
``ScatterElements`` and ``ScatterND``), combined with what is there by ``reduction``
(``none``: replace, ``add``, ``mul``, ``max``, ``min``); ``graph.one_hot`` (ONNX
``OneHot``) and ``graph.eye`` (ONNX ``EyeLike``) generate tensors:

    %s = graph.scatter_elements %x, %idx, %u {axis = 1 : i64, reduction = "add"}
           : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<1x5xf32>
    %n = graph.scatter_nd %x, %idx, %u {reduction = "none"}
           : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %h = graph.one_hot %ids, %values {axis = 1 : i64}
           : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x10xf32>
    %e = graph.eye {k = 1 : i64} : tensor<4x5xf32>

A scatter index that is negative counts from the end of its axis; one still outside the
axis writes nothing. Where two updates hit one element they are applied in the order of
the updates (row-major), so ``none`` keeps the last one (ONNX leaves it undefined).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, i64
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
    "SCATTER_REDUCTIONS",
    "EyeOp",
    "GatherNdOp",
    "OneHotOp",
    "ScatterElementsOp",
    "ScatterNdOp",
    "TakeAlongAxisOp",
    "TakeOp",
]

SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")
"""How a scatter combines an update with the element it hits (ONNX ``reduction``)."""
_REDUCIBLE = (dtypes.FLOAT32, dtypes.FLOAT16, dtypes.FLOAT64, dtypes.INT64, dtypes.INT32)


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



def _element_type(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.get_element_type()


def _check_indices(value: SSAValue) -> None:
    if dtypes.from_ir(_element_type(value)) not in dtypes.INTEGERS:
        raise VerifyException(f"indices must be i64 or i32, got {_element_type(value)}")


class _ScatterOp(IRDLOperation):
    """``$input, $indices, $updates {reduction, ...} : (...) -> result``: the input with
    the updates written at the indices; the result has the input's type."""

    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    result = result_def(TensorType)
    reduction = prop_def(StringAttr)
    traits = traits_def(Pure(), AnyElementType())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = ("$input `,` $indices `,` $updates attr-dict `:` "
                       "functional-type(operands, results)")

    @property
    def reduction_value(self) -> str:
        return self.reduction.data

    def shapes(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(input, indices, updates) shapes, with the types and the reduction checked."""
        data = tensor_shape(self.input.type, "input")
        indices = tensor_shape(self.indices.type, "indices")
        updates = tensor_shape(self.updates.type, "updates")
        _check_indices(self.indices)
        if self.reduction_value not in SCATTER_REDUCTIONS:
            raise VerifyException(f"reduction must be one of {', '.join(SCATTER_REDUCTIONS)}, "
                                  f"got '{self.reduction_value}'")
        element = _element_type(self.input)
        if _element_type(self.updates) != element or self.result.type != self.input.type:
            raise VerifyException("updates and result must have the element type (and the "
                                  "result the type) of the input")
        if self.reduction_value != "none" and dtypes.from_ir(element) not in _REDUCIBLE:
            raise VerifyException(f"reduction '{self.reduction_value}' is supported for "
                                  f"{', '.join(str(d.ir) for d in _REDUCIBLE)} data, got {element}")
        return data, indices, updates


@irdl_op_definition
class ScatterElementsOp(_ScatterOp):
    """ONNX ``ScatterElements``: for each position ``p`` of ``indices`` (and ``updates``,
    of the same shape), ``result[p with p[axis] = indices[p]] = updates[p]`` (combined by
    ``reduction``); elsewhere ``result = input``."""

    name = "graph.scatter_elements"
    axis = prop_def(IntegerAttr)

    def __init__(self, input: SSAValue, indices: SSAValue, updates: SSAValue, axis: int,
                 reduction: str = "none") -> None:
        super().__init__(operands=[input, indices, updates], result_types=[input.type],
                         properties={"axis": _int_property(axis),
                                     "reduction": StringAttr(reduction)})

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        data, indices, updates = self.shapes()
        axis = self.axis_value
        if len(indices) != len(data) or not 0 <= axis < len(data):
            raise VerifyException(f"indices must have the input's rank {len(data)} and axis "
                                  f"{axis} must be below it")
        if updates != indices:
            raise VerifyException(f"updates shape {list(updates)} must be the indices shape "
                                  f"{list(indices)}")
        if any(m > n for d, (n, m) in enumerate(zip(data, indices)) if d != axis):
            raise VerifyException(f"indices shape {list(indices)} exceeds input shape "
                                  f"{list(data)} outside axis {axis}")


@irdl_op_definition
class ScatterNdOp(_ScatterOp):
    """ONNX ``ScatterND``: with ``k = indices.shape[-1]``, each index row
    ``indices[q..., :]`` names an element (``k`` = input rank) or a slice of the input,
    which ``updates[q..., :]`` replaces (combined by ``reduction``)."""

    name = "graph.scatter_nd"

    def __init__(self, input: SSAValue, indices: SSAValue, updates: SSAValue,
                 reduction: str = "none") -> None:
        super().__init__(operands=[input, indices, updates], result_types=[input.type],
                         properties={"reduction": StringAttr(reduction)})

    def verify_(self) -> None:
        data, indices, updates = self.shapes()
        if not indices or not 1 <= indices[-1] <= len(data):
            raise VerifyException(f"indices must have rank >= 1 and a last dim in "
                                  f"[1, {len(data)}], got {list(indices)}")
        expected = [*indices[:-1], *data[indices[-1]:]]
        if list(updates) != expected:
            raise VerifyException(f"updates shape {list(updates)} does not match expected "
                                  f"{expected}")


@irdl_op_definition
class OneHotOp(IRDLOperation):
    """ONNX ``OneHot``: ``result[a..., j, c...] = values[1] if indices[a..., c...] == j
    else values[0]``, with ``j`` at dim ``axis`` of the result, of extent ``depth``; a
    negative index counts from ``depth``, one outside ``[-depth, depth)`` matches no ``j``."""

    name = "graph.one_hot"
    indices = operand_def(TensorType)
    values = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), AnyElementType())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$indices `,` $values attr-dict `:` functional-type(operands, results)"

    def __init__(self, indices: SSAValue, values: SSAValue, axis: int,
                 result_type: Attribute) -> None:
        super().__init__(operands=[indices, values], result_types=[result_type],
                         properties={"axis": _int_property(axis)})

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def depth(self) -> int:
        return tensor_shape(self.result.type, "result")[self.axis_value]

    def verify_(self) -> None:
        indices = tensor_shape(self.indices.type, "indices")
        values = tensor_shape(self.values.type, "values")
        out = tensor_shape(self.result.type, "result")
        _check_indices(self.indices)
        if values != (2,):
            raise VerifyException(f"values must have shape [2], got {list(values)}")
        if _element_type(self.values) != _element_type(self.result):
            raise VerifyException("values and result must have the same element type")
        axis = self.axis_value
        if not 0 <= axis <= len(indices) or len(out) != len(indices) + 1:
            raise VerifyException(f"axis {axis} must be in [0, {len(indices)}] and the result "
                                  f"of rank {len(indices) + 1}")
        _check_result(out, [*indices[:axis], out[axis], *indices[axis:]])


@irdl_op_definition
class EyeOp(IRDLOperation):
    """ONNX ``EyeLike``: a matrix of ones on diagonal ``k`` (``result[i, i + k]``; ``k > 0``
    above the main diagonal) and zeros elsewhere."""

    name = "graph.eye"
    result = result_def(TensorType)
    k = prop_def(IntegerAttr)
    traits = traits_def(Pure(), AnyElementType())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: Attribute, k: int = 0) -> None:
        super().__init__(result_types=[result_type], properties={"k": _int_property(k)})

    @property
    def k_value(self) -> int:
        return self.k.value.data

    def verify_(self) -> None:
        if len(tensor_shape(self.result.type, "result")) != 2:
            raise VerifyException(f"result must have rank 2, got {self.result.type}")
