"""The Hopper (sm_90a) ops of tm: ``tm.wgmma_desc``, ``tm.wgmma`` with ``tm.wgmma_fence``,
``tm.wgmma_commit`` and ``tm.wgmma_wait``; ``tm.mbarrier_init``/``arrive``/``wait``,
``tm.cp_async_bulk`` and ``tm.fence_proxy_async`` (semantics and syntax of the shared ones:
tmlir.ir.hopper_ops). ``convert-tm-to-gpu`` maps each to its tmgpu twin; a descriptor
becomes the start offset, LBO, SBO and swizzle that its buffer's layout gives.

``tm.wgmma_desc`` is the matrix descriptor of one wgmma operand tile of a shared buffer
indexed ``[mn, k]`` (A's ``[m, k]``, B's ``[n, k]``): the tile of ``tile(MN, K)`` elements
whose first element is at the indices (a multiple of the tile), read ``kmajor`` or
``mnmajor``. The buffer's ``layout`` (row-major without one) must be canonical for such
tiles (tmlir.wgmma_layouts.wgmma_descriptor)::

    %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
    %da = tm.wgmma_desc kmajor %sa[%c0, %k0] tile(64, 16) : memref<64x64xf16>
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, IntAttr, MemRefType, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, traits_def, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.tm.kernel import KernelOp
from tmlir.dialects.tm.memory import AllocOp
from tmlir.ir.hopper_ops import (
    MAJORS,
    CpAsyncBulkOpBase,
    MbarrierArriveOpBase,
    MbarrierInitOpBase,
    MbarrierWaitOpBase,
    WgmmaOpBase,
    WgmmaWaitOpBase,
)
from tmlir.ir.kernel_ops import InsideKernel, memref_shape
from tmlir.ir.tensor_core_ops import kernel_argument, print_access
from tmlir.layout import DataLayout, row_major
from tmlir.wgmma_layouts import MatrixDescriptor, WgmmaLayoutError, wgmma_descriptor

__all__ = ["WgmmaDescOp", "WgmmaOp", "WgmmaFenceOp", "WgmmaCommitOp", "WgmmaWaitOp", "MbarrierInitOp",
           "MbarrierArriveOp", "MbarrierWaitOp", "CpAsyncBulkOp", "FenceProxyAsyncOp"]

WGMMA_ELEMENTS = {"f16": 2, "bf16": 2, "f32": 4}
"""The element types of a wgmma operand buffer (f32 holds tf32 operands) and their bytes."""


def _scope(value: SSAValue) -> str | None:
    if isinstance(value.owner, AllocOp):
        return value.owner.scope.data
    return "global" if kernel_argument(value, KernelOp) else None


def buffer_layout(value: SSAValue) -> DataLayout:
    """The data layout of a tm buffer: its ``tm.alloc``'s, else row-major and dense."""
    if isinstance(value.owner, AllocOp) and value.owner.data_layout is not None:
        return value.owner.data_layout
    return row_major(*value.type.get_shape())


@irdl_op_definition
class WgmmaDescOp(IRDLOperation):
    """``%d = tm.wgmma_desc kmajor %smem[%mn, %k] tile(MN, K) : <type>``: the i64 matrix
    descriptor of a wgmma operand tile (see the module docstring)."""

    name = "tm.wgmma_desc"
    major = prop_def(StringAttr)
    rows = prop_def(IntAttr)
    cols = prop_def(IntAttr)
    smem = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def(i64)
    traits = traits_def(Pure(), InsideKernel(KernelOp))

    def __init__(self, major: str, smem: SSAValue, indices: Sequence[SSAValue], tile: tuple[int, int]) -> None:
        super().__init__(operands=[smem, indices], result_types=[i64],
                         properties={"major": StringAttr(major), "rows": IntAttr(tile[0]),
                                     "cols": IntAttr(tile[1])})

    @property
    def tile(self) -> tuple[int, int]:
        return self.rows.data, self.cols.data

    @property
    def element_bytes(self) -> int:
        return WGMMA_ELEMENTS[str(self.smem.type.element_type)]

    def descriptor(self, layout: DataLayout | None = None) -> MatrixDescriptor:
        """LBO, SBO and swizzle of every tile of the buffer (start 0; the op verifies), laid
        out as `layout` (default: its ``tm.alloc``'s; ``convert-tm-to-gpu`` passes the one it
        recorded, as the alloc is gone by then)."""
        return wgmma_descriptor(layout or buffer_layout(self.smem), self.element_bytes, self.major.data, self.tile)

    def verify_(self) -> None:
        shape = memref_shape(self.smem.type, f"'{self.name}': the buffer")
        scope = _scope(self.smem)
        if scope != "shared":
            where = f"a {scope} buffer" if scope else "a buffer of unknown memory"
            raise VerifyException(f"'{self.name}': a descriptor addresses a shared buffer, got {where}")
        if len(shape) != 2 or len(self.indices) != 2:
            raise VerifyException(f"'{self.name}': the buffer is a 2-D [mn, k] tile with 2 indices, got "
                                  f"{self.smem.type} with {len(self.indices)}")
        element = str(self.smem.type.element_type)
        if element not in WGMMA_ELEMENTS:
            raise VerifyException(f"'{self.name}': wgmma operands are f16, bf16 or f32 (tf32), got {element}")
        if self.major.data not in MAJORS:
            raise VerifyException(f"'{self.name}': major is kmajor or mnmajor, got '{self.major.data}'")
        try:
            self.descriptor()
        except WgmmaLayoutError as exc:
            raise VerifyException(f"'{self.name}': {exc}") from None

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.major.data}major ")
        print_access(printer, self.smem, self.indices)
        printer.print_string(f" tile({self.rows.data}, {self.cols.data})")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.smem.type)

    @classmethod
    def parse(cls, parser: Parser):
        major = parser.parse_identifier(" (kmajor or mnmajor)")
        if major not in ("kmajor", "mnmajor"):
            parser.raise_error(f"expected kmajor or mnmajor, got '{major}'")
        buffer = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        indices = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_unresolved_operand)
        parser.parse_punctuation("]")
        parser.parse_keyword("tile")
        rows, cols = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_integer(allow_boolean=False))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        properties: dict[str, Attribute] = {"major": StringAttr(major.removesuffix("major")),
                                            "rows": IntAttr(rows), "cols": IntAttr(cols)}
        return cls.create(operands=[parser.resolve_operand(buffer, type),
                                    *(parser.resolve_operand(i, IndexType()) for i in indices)],
                          result_types=[i64], properties=properties, attributes=attrs)


@irdl_op_definition
class WgmmaOp(WgmmaOpBase):
    """``tm.wgmma m64n128k16 f16 %acc, %da kmajor, %db kmajor : ...`` (see WgmmaOpBase)."""

    name = "tm.wgmma"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)

    @classmethod
    def descriptor_info(cls, value: SSAValue) -> tuple[str, tuple[int, int], Attribute] | None:
        if isinstance(value.owner, WgmmaDescOp):
            desc = value.owner
            return desc.major.data, desc.tile, desc.smem.type.element_type
        return None


@irdl_op_definition
class WgmmaFenceOp(IRDLOperation):
    """``tm.wgmma_fence``: ``wgmma.fence``, orders the thread's earlier accesses to
    accumulators (and shared memory) before the wgmmas that follow."""

    name = "tm.wgmma_fence"
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict"


@irdl_op_definition
class WgmmaCommitOp(IRDLOperation):
    """``tm.wgmma_commit``: close the thread's open group of wgmmas."""

    name = "tm.wgmma_commit"
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict"


@irdl_op_definition
class WgmmaWaitOp(WgmmaWaitOpBase):
    """``tm.wgmma_wait pending(0) %acc : memref<64xf32>`` (see WgmmaWaitOpBase)."""

    name = "tm.wgmma_wait"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class MbarrierInitOp(MbarrierInitOpBase):
    """``tm.mbarrier_init %bar[%i] count(1) : memref<2xi64>`` (see MbarrierInitOpBase)."""

    name = "tm.mbarrier_init"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class MbarrierArriveOp(MbarrierArriveOpBase):
    """``tm.mbarrier_arrive %bar[%i] [expect_tx(B)] : memref<2xi64>`` (see MbarrierArriveOpBase)."""

    name = "tm.mbarrier_arrive"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class MbarrierWaitOp(MbarrierWaitOpBase):
    """``tm.mbarrier_wait %bar[%i] parity(%p) : memref<2xi64>`` (see MbarrierWaitOpBase)."""

    name = "tm.mbarrier_wait"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class CpAsyncBulkOp(CpAsyncBulkOpBase):
    """``tm.cp_async_bulk bytes(B) %smem[...], %x[...], %bar[...] : ...`` (see CpAsyncBulkOpBase)."""

    name = "tm.cp_async_bulk"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class FenceProxyAsyncOp(IRDLOperation):
    """``tm.fence_proxy_async``: ``fence.proxy.async.shared::cta``, makes the thread's
    earlier ordinary writes to shared memory visible to the asynchronous proxy (wgmma, bulk
    copies) -- needed before a wgmma reads a tile that threads stored or ``cp_async``-ed."""

    name = "tm.fence_proxy_async"
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict"
