"""``graph.weight``: a named constant tensor whose data lives in the side table."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    StringAttr,
    TensorType,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from tmlir.dialects.graph.shapes import tensor_shape

__all__ = [
    "WeightOp",
]


@irdl_op_definition
class WeightOp(IRDLOperation):
    """A named constant tensor kept in the side table, not in the IR text."""

    name = "graph.weight"
    weight_name = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, name: str, type: TensorType) -> None:
        super().__init__(properties={"name": StringAttr(name)}, result_types=[type])

    def verify_(self) -> None:
        tensor_shape(self.result.type, f"weight '{self.weight_name.data}'")
