"""``graph.constant``: a constant tensor whose data is written in the IR text.

    %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %z = graph.constant dense<0.0> : tensor<4x8xf32>          // a splat

In: a builtin ``dense<...>`` attribute of a static tensor type whose element type tmlir
supports (`tmlir.dtypes`); the result has that type. It is how a hand-written module
carries small weights; ``graph-outline-constants`` (the first pass of ``lower-to-cuda``)
moves the data into the weight table and leaves a ``graph.weight`` in its place, so no
later pass sees this op. Big data belongs in an ONNX file or a ``.npz`` (``tm-run
--weights``): the text of a constant is parsed at ~10k values per second.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, TensorType
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir import dtypes
from tmlir.dialects.graph.shapes import tensor_shape

__all__ = [
    "ConstantOp",
]


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A constant tensor written inline as a ``dense<...>`` attribute."""

    name = "graph.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr) -> None:
        super().__init__(properties={"value": value}, result_types=[value.get_type()])

    @staticmethod
    def from_array(array: np.ndarray) -> ConstantOp:
        """A constant holding `array` (of a dtype tmlir supports)."""
        dtype = dtypes.from_numpy(array.dtype)
        if dtype is None:
            raise ValueError(f"graph.constant: unsupported dtype {array.dtype}; expected one of "
                             f"{dtypes.SUPPORTED_NAMES}")
        data = np.ascontiguousarray(array)
        if dtype.is_bool:
            data = data.astype(np.int8) * -1  # xDSL keeps i1 elements as bytes 0 / -1
        type = TensorType(dtype.ir, list(array.shape))
        return ConstantOp(DenseIntOrFPElementsAttr(type, BytesAttr(data.tobytes())))

    def array(self) -> np.ndarray:
        """The data as a C-contiguous numpy array of the result's shape and dtype."""
        type = self.value.get_type()
        dtype = dtypes.of_ir(type.get_element_type())
        shape = tuple(type.get_shape())
        if dtype.is_bool:
            flat = np.frombuffer(self.value.data.data, np.int8) != 0
        else:
            flat = np.frombuffer(self.value.data.data, dtype.numpy)
        return np.array(flat.reshape(shape), order="C")

    def verify_(self) -> None:
        type = self.value.get_type()
        if not isinstance(type, TensorType):
            raise VerifyException(f"'graph.constant' needs a tensor value, got {type}")
        tensor_shape(type, "'graph.constant'")
        if dtypes.from_ir(type.get_element_type()) is None:
            raise VerifyException(f"'graph.constant': unsupported element type "
                                  f"{type.get_element_type()}; expected one of {dtypes.SUPPORTED_NAMES}")
        if self.result.type != type:
            raise VerifyException(f"'graph.constant': result type {self.result.type} differs from "
                                  f"the value's type {type}")

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attrs = parser.parse_optional_attr_dict()
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("'graph.constant' expects a dense<...> : tensor<...> value", pos,
                               parser.pos)
        op = cls.create(properties={"value": value}, result_types=[value.get_type()])
        op.attributes.update(attrs)
        return op
