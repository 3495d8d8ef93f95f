"""The host side of the ``tm`` level: ``tm.weight``, ``tm.view`` and ``tm.launch``."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    MemRefType,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure

from tmlir.dialects.tm.kernel import KernelOp
from tmlir.ir.kernel_ops import (
    ViewOpBase,
    verify_launch,
)

__all__ = [
    "LaunchOp",
    "ViewOp",
    "WeightOp",
]


@irdl_op_definition
class WeightOp(IRDLOperation):
    """Host side: the global buffer holding the named weight of the side table."""

    name = "tm.weight"
    weight_name = prop_def(StringAttr, prop_name="name")
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, name: str, type: MemRefType) -> None:
        super().__init__(properties={"name": StringAttr(name)}, result_types=[type])


@irdl_op_definition
class ViewOp(ViewOpBase):
    """Host side: ``%v = tm.view %buf : memref<2x3x4xf32> to memref<6x4xf32>``, a buffer
    seen with another shape (see ViewOpBase); how ``graph.reshape`` costs no kernel."""

    name = "tm.view"

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Host side: run a ``tm.kernel`` on buffers, after every launch before it."""

    name = "tm.launch"
    kernel = prop_def(SymbolRefAttr)
    args = var_operand_def(MemRefType)
    assembly_format = "$kernel `(` $args `)` attr-dict `:` type($args)"

    def __init__(self, kernel: str, args: Sequence[SSAValue]) -> None:
        super().__init__(operands=[args], properties={"kernel": SymbolRefAttr(kernel)})

    def verify_(self) -> None:
        verify_launch(self, self.kernel, self.args, KernelOp)
