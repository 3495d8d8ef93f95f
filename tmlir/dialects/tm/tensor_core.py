"""The tensor-core ops of tm: ``tm.mma``, ``tm.ldmatrix``, ``tm.cp_async``,
``tm.cp_async_commit`` and ``tm.cp_async_wait`` (semantics and syntax:
tmlir.ir.tensor_core_ops). A buffer's memory is its ``tm.alloc`` scope; a kernel argument
is global. ``convert-tm-to-gpu`` maps each op to its tmgpu twin."""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, traits_def

from tmlir.dialects.tm.kernel import KernelOp
from tmlir.dialects.tm.memory import AllocOp
from tmlir.ir.kernel_ops import InsideKernel
from tmlir.ir.tensor_core_ops import (
    CpAsyncOpBase,
    CpAsyncWaitOpBase,
    LdmatrixOpBase,
    MmaOpBase,
    kernel_argument,
)

__all__ = ["MmaOp", "LdmatrixOp", "CpAsyncOp", "CpAsyncCommitOp", "CpAsyncWaitOp"]


def _scope(value: SSAValue) -> str | None:
    if isinstance(value.owner, AllocOp):
        return value.owner.scope.data
    return "global" if kernel_argument(value, KernelOp) else None


@irdl_op_definition
class MmaOp(MmaOpBase):
    """``tm.mma m16n8k16 f16 %d, %a, %b, %c : ...``: a warp's D = A * B + C (see MmaOpBase)."""

    name = "tm.mma"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class LdmatrixOp(LdmatrixOpBase):
    """``tm.ldmatrix x4 %frag, %smem[%r, %c] : ...`` (see LdmatrixOpBase)."""

    name = "tm.ldmatrix"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class CpAsyncOp(CpAsyncOpBase):
    """``tm.cp_async bytes(16) %smem[...], %x[...] [zfill_unless %inside] : ...`` (see
    CpAsyncOpBase)."""

    name = "tm.cp_async"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class CpAsyncCommitOp(IRDLOperation):
    """``tm.cp_async_commit``: close this thread's open group of ``tm.cp_async`` copies."""

    name = "tm.cp_async_commit"
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict"


@irdl_op_definition
class CpAsyncWaitOp(CpAsyncWaitOpBase):
    """``tm.cp_async_wait pending(1)`` (see CpAsyncWaitOpBase)."""

    name = "tm.cp_async_wait"
    traits = traits_def(InsideKernel(KernelOp))
