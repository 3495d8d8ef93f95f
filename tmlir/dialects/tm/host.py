"""The host side of the ``tm`` level: ``tm.weight``, ``tm.view`` and ``tm.launch``."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    SymbolRefAttr,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
)

from tmlir.dialects.tm.kernel import KernelOp
from tmlir.dialects.tm.memory import AllocOp
from tmlir.ir.kernel_ops import LaunchOpBase, ViewOpBase, WeightOpBase

__all__ = [
    "LaunchOp",
    "ViewOp",
    "WeightOp",
]


@irdl_op_definition
class WeightOp(WeightOpBase):
    """Host side: the global buffer holding the named weight of the side table."""

    name = "tm.weight"


@irdl_op_definition
class ViewOp(ViewOpBase):
    """Host side: ``%v = tm.view %buf : memref<2x3x4xf32> to memref<6x4xf32>``, a buffer
    seen with another shape (see ViewOpBase); how ``graph.reshape`` costs no kernel."""

    name = "tm.view"

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp


@irdl_op_definition
class LaunchOp(LaunchOpBase):
    """Host side: run a ``tm.kernel`` on buffers, after every launch before it; a scratch
    argument takes a ``tm.alloc global`` (workspace) or ``tm.alloc global zeroed`` (counters)
    buffer of its own."""

    name = "tm.launch"
    assembly_format = "$kernel `(` $args `)` attr-dict `:` type($args)"

    def __init__(self, kernel: str, args: Sequence[SSAValue]) -> None:
        super().__init__(operands=[args], properties={"kernel": SymbolRefAttr(kernel)})

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp

    @classmethod
    def scratch_buffer(cls, value: SSAValue) -> str | None:
        owner = value.owner
        if not isinstance(owner, AllocOp) or owner.scope.data != "global":
            return None
        return "counters" if owner.zeroed is not None else "workspace"

    @classmethod
    def alloc_syntax(cls, kind: str) -> str:
        return "a 'tm.alloc global zeroed'" if kind == "counters" else "a 'tm.alloc global'"
