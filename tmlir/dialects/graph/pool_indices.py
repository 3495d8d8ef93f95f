"""The ``graph`` dialect's max pooling that also returns where each max is (ONNX ``MaxPool``
with its ``Indices`` output).

    %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>,
                 strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
                 dilations = array<i64: 1, 1>} : tensor<1x3x8x8xf32> -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xi64>)

It is a pooling (``PoolOp``, ``reductions.py``: the same window attributes and output shape)
whose first result is ``graph.max_pool``'s and whose second is, per output element, the
flattened index into the (unpadded) input of the first largest element of its window (taps
in row-major order), as onnxruntime computes it::

    index = (n * C + c) * D1 * ... * Dk + spatial(i1, ..., ik)

``spatial`` is row-major (``i1 * D2 * ... * Dk + ... + ik``), or column-major
(``i1 + i2 * D1 + ... + ik * D1 * ... * D(k-1)``) with the ``column_major`` flag (ONNX's
``storage_order = 1``). A window without any element inside the input (possible only with
``ceil_mode``) cannot happen: ``pool_output_size`` keeps every window's start inside.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, Float32Type, IntegerType, TensorType, UnitAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, opt_prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.graph.reductions import PoolOp
from tmlir.dialects.graph.shapes import tensor_shape
from tmlir.dialects.graph.traits import AnyElementType

__all__ = ["MaxPoolWithIndicesOp"]


@irdl_op_definition
class MaxPoolWithIndicesOp(PoolOp):
    """The largest element of each window and its flattened input index (i64); padding
    takes no part; ``column_major`` numbers the spatial dims first-fastest."""

    name = "graph.max_pool_with_indices"
    result = result_def(TensorType)  # redeclared: the results in this order
    indices = result_def(TensorType)
    column_major = opt_prop_def(UnitAttr)
    # AnyElementType: the template takes the f32 input and writes the i64 indices itself.
    traits = traits_def(Pure(), AnyElementType())
    assembly_format = ("$input attr-dict `:` type($input) `->` `(` type($result) `,` "
                       "type($indices) `)`")

    def __init__(self, input: SSAValue, result_type: TensorType, indices_type: TensorType,
                 kernel_shape: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                 dilations: Sequence[int], ceil_mode: bool = False,
                 column_major: bool = False) -> None:
        properties: dict[str, Attribute] = {
            name: DenseArrayBase.from_list(i64, [int(v) for v in values])
            for name, values in (("kernel_shape", kernel_shape), ("strides", strides),
                                 ("pads", pads), ("dilations", dilations))}
        for name, value in (("ceil_mode", ceil_mode), ("column_major", column_major)):
            if value:
                properties[name] = UnitAttr()
        IRDLOperation.__init__(self, operands=[input], result_types=[result_type, indices_type],
                               properties=properties)

    def verify_(self) -> None:
        super().verify_()
        if not isinstance(self.input.type.get_element_type(), Float32Type):
            raise VerifyException(f"expected an f32 input, got {self.input.type}")
        indices = tensor_shape(self.indices.type, "indices")
        element = self.indices.type.get_element_type()
        if not (isinstance(element, IntegerType) and element.width.data == 64):
            raise VerifyException(f"indices must be i64, got {self.indices.type}")
        if indices != tensor_shape(self.result.type, "result"):
            raise VerifyException(f"indices shape {list(indices)} must be the result's "
                                  f"{list(tensor_shape(self.result.type, 'result'))}")
