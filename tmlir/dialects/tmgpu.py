"""The ``tmgpu`` dialect: the GPU level, one step above CUDA C.

Task mappings are gone: kernels compute with ``scf``/``arith``/``math`` and access
``memref``s; what remains are the CUDA concepts themselves — thread and block ids, shared
and per-thread (register) arrays, block barriers, warp shuffles, the tensor-core ``mma``,
``ldmatrix`` and ``cp_async`` (tmlir.ir.tensor_core_ops), Hopper's ``wgmma`` (with
``wgmma_desc``: a descriptor by its fields), ``mbarrier_*``, ``cp_async_bulk`` and
``fence_proxy_async`` (tmlir.ir.hopper_ops; each names the arch it needs, ``REQUIRED_ARCH``),
the ``atomic_add``, ``fence`` and
``load_cg`` of blocks that talk through global memory (tmlir.ir.global_ops) — and, on the
host side, device buffers and the ordered launches with their grid and block sizes.

    tmgpu.kernel @relu_0(%x: memref<8x10xf32>, %y: memref<8x10xf32>) block(256) {
      %tid = tmgpu.thread_id x
      %bid = tmgpu.block_id x
      ...
      tmgpu.barrier
    }
    func.func @main(%x: memref<8x10xf32>, %y: memref<8x10xf32>) {
      tmgpu.launch @relu_0(%x, %y) grid(1) block(256) : memref<8x10xf32>, memref<8x10xf32>
      func.return
    }

A kernel whose index values can pass 2^31 - 1 (a buffer of more elements, or more threads)
says so with ``index_bits(64)`` after its block: the CUDA printer then gives ``index``
values the C type ``long long`` instead of ``int`` (see ``convert-tm-to-gpu``). A launch's
grid is within CUDA's limit (`tmlir.gpu_limits.MAX_GRID_X`); a kernel with more blocks
than that loops over its blocks with ``tmgpu.grid_dim`` as the stride.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IndexType, IntAttr, MemRefType, StringAttr, SymbolRefAttr, UnitAttr
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from tmlir.gpu_limits import (
    MAX_GRID_X,
    MAX_SHARED_BYTES,
    MAX_STATIC_SHARED_BYTES,
    MAX_THREADS_PER_BLOCK,
)
from tmlir.ir.global_ops import AtomicAddOpBase, LoadCgOpBase
from tmlir.ir.hopper_ops import (
    CpAsyncBulkOpBase,
    MbarrierArriveOpBase,
    MbarrierInitOpBase,
    MbarrierWaitOpBase,
    WgmmaDescFieldsOpBase,
    WgmmaOpBase,
    WgmmaWaitOpBase,
)
from tmlir.ir.kernel_ops import (
    InsideKernel,
    LaunchOpBase,
    ShuffleOpBase,
    ViewOpBase,
    WeightOpBase,
    enclosing,
    memref_shape,
    parse_scratch,
    print_scratch,
    scratch_attr,
    scratch_kinds,
    verify_scratch,
)
from tmlir.ir.ranges import HasUpperBound
from tmlir.ir.syntax import (
    parse_int_in_parens,
    parse_kernel_header,
    parse_trailing_attrs_and_region,
    print_kernel_header,
)
from tmlir.ir.tensor_core_ops import (
    CpAsyncOpBase,
    CpAsyncWaitOpBase,
    LdmatrixOpBase,
    MmaOpBase,
    kernel_argument,
)
from tmlir.ir.vector_ops import LoadVectorOpBase

DIMS = ("x", "y", "z")


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A ``__global__`` function; ``block`` is its thread count (``__launch_bounds__``);
    ``index_bits`` (32 when absent, or 64) the width of its ``index`` values in C."""

    name = "tmgpu.kernel"
    sym_name = prop_def(StringAttr)
    block = prop_def(IntAttr)
    index_bits = opt_prop_def(IntAttr)
    scratch = opt_prop_def(ArrayAttr)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove(), NoTerminator())

    def __init__(
        self, name: str, arg_types: Sequence[Attribute], block: int,
        attributes: dict[str, Attribute] | None = None, index_bits: int = 32,
        scratch: Sequence[str] = (),
    ) -> None:
        properties: dict[str, Attribute] = {"sym_name": StringAttr(name), "block": IntAttr(block)}
        if index_bits != 32:
            properties["index_bits"] = IntAttr(index_bits)
        if scratch:
            properties["scratch"] = scratch_attr(scratch)  # type: ignore[assignment]
        super().__init__(
            properties=properties,
            regions=[Region(Block(arg_types=arg_types))],
            attributes=attributes or {},
        )

    @property
    def wide_index(self) -> bool:
        """Whether ``index`` values are 64-bit (``long long``) in this kernel."""
        return self.index_bits is not None and self.index_bits.data == 64

    def verify_(self) -> None:
        if not 1 <= self.block.data <= MAX_THREADS_PER_BLOCK:
            raise VerifyException(
                f"kernel @{self.sym_name.data}: block must be in [1, {MAX_THREADS_PER_BLOCK}],"
                f" got {self.block.data}"
            )
        if self.index_bits is not None and self.index_bits.data not in (32, 64):
            raise VerifyException(
                f"kernel @{self.sym_name.data}: index_bits must be 32 or 64, got {self.index_bits.data}"
            )
        for arg in self.body.block.args:
            memref_shape(arg.type, f"kernel @{self.sym_name.data} argument")
        shared = sum(math.prod(op.result.type.get_shape()) * _element_bytes(op.result.type.element_type)
                     for op in self.walk() if isinstance(op, SharedAllocOp))
        if shared > MAX_SHARED_BYTES:
            raise VerifyException(
                f"kernel @{self.sym_name.data}: its shared arrays take {shared} bytes, more than a block "
                f"has on any GPU ({MAX_SHARED_BYTES}; past {MAX_STATIC_SHARED_BYTES} they are dynamic shared memory)")
        verify_scratch(self, self.sym_name.data)

    @property
    def scratch_kinds(self) -> tuple[str, ...]:
        """The kind of each scratch argument (the trailing ones, see tmlir.ir.kernel_ops)."""
        return scratch_kinds(self)

    def print(self, printer: Printer) -> None:
        launch = f"block({self.block.data})"
        if self.index_bits is not None:
            launch += f" index_bits({self.index_bits.data})"
        print_kernel_header(printer, self, self.sym_name.data, launch, lambda: print_scratch(printer, self))

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name, args = parse_kernel_header(parser)
        properties: dict[str, Attribute] = {"sym_name": StringAttr(name),
                                            "block": parse_int_in_parens(parser, "block")}
        if parser.parse_optional_keyword("index_bits") is not None:
            parser.parse_punctuation("(")
            properties["index_bits"] = IntAttr(parser.parse_integer(allow_boolean=False))
            parser.parse_punctuation(")")
        scratch = parse_scratch(parser)
        if scratch is not None:
            properties["scratch"] = scratch
        attrs, region = parse_trailing_attrs_and_region(parser, args)
        return cls.create(properties=properties, regions=[region], attributes=attrs)


@dataclass(frozen=True)
class ThreadIdBound(HasUpperBound):
    """``threadIdx.x`` is below the kernel's block (1-D blocks: ``.y``/``.z`` are 0). A
    block id has no known bound (the grid is the launch's)."""

    def upper_bound(self, op: Operation) -> int | None:
        kernel = enclosing(op, KernelOp)
        if not isinstance(op, SpecialIdOp) or kernel is None:
            return None
        return kernel.block.data if op.dim.data == "x" else 1


class SpecialIdOp(IRDLOperation):
    """A CUDA built-in id along one dimension."""

    dim = prop_def(StringAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure(), InsideKernel(KernelOp))

    def __init__(self, dim: str = "x") -> None:
        super().__init__(properties={"dim": StringAttr(dim)}, result_types=[IndexType()])

    def verify_(self) -> None:
        if self.dim.data not in DIMS:
            raise VerifyException(f"dimension must be one of x, y, z, got '{self.dim.data}'")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.dim.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        dim = parser.parse_keyword_in(DIMS, " (dimension)")
        attrs = parser.parse_optional_attr_dict()
        return cls.create(
            properties={"dim": StringAttr(dim)}, result_types=[IndexType()], attributes=attrs
        )


@irdl_op_definition
class ThreadIdOp(SpecialIdOp):
    """``threadIdx.<dim>``"""

    name = "tmgpu.thread_id"
    traits = traits_def(Pure(), InsideKernel(KernelOp), ThreadIdBound())


@irdl_op_definition
class BlockIdOp(SpecialIdOp):
    """``blockIdx.<dim>``"""

    name = "tmgpu.block_id"


@irdl_op_definition
class GridDimOp(SpecialIdOp):
    """``gridDim.<dim>``: the blocks of the launch (the stride of a grid-stride loop)."""

    name = "tmgpu.grid_dim"


class KernelAllocOp(IRDLOperation):
    result = result_def(MemRefType)
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, type: MemRefType) -> None:
        super().__init__(result_types=[type])

    def verify_(self) -> None:
        memref_shape(self.result.type, "buffer")


def _element_bytes(element: Attribute) -> int:
    """Bytes of one element of a buffer (a bool, ``i1``, is one byte)."""
    width = getattr(element, "bitwidth", 8)
    return max(1, width // 8)


@irdl_op_definition
class SharedAllocOp(KernelAllocOp):
    """A ``__shared__`` array of the block."""

    name = "tmgpu.shared_alloc"


@irdl_op_definition
class LocalAllocOp(KernelAllocOp):
    """A per-thread array (registers when indexed by constants)."""

    name = "tmgpu.local_alloc"


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """``__syncthreads()``"""

    name = "tmgpu.barrier"
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict"


@irdl_op_definition
class ShuffleOp(ShuffleOpBase):
    """``__shfl_xor_sync(0xffffffff, v, 16)`` and its ``down``/``up``/``idx`` siblings (see
    ShuffleOpBase); every lane of the warp must reach it."""

    name = "tmgpu.shuffle"
    traits = traits_def(InsideKernel(KernelOp))


def _scope(value: SSAValue) -> str | None:
    scopes = {SharedAllocOp: "shared", LocalAllocOp: "register"}
    return scopes.get(type(value.owner)) or ("global" if kernel_argument(value, KernelOp) else None)


@irdl_op_definition
class LoadVectorOp(LoadVectorOpBase):
    """``%v0, %v1, %v2, %v3 = tmgpu.load_vector x4 %A[%i, %k] : memref<...>``:
    ``*reinterpret_cast<const float4*>(&A[idx])``, four consecutive elements of a kernel
    argument in one 16-byte load (see tmlir.ir.vector_ops); no guard."""

    name = "tmgpu.load_vector"
    traits = traits_def(InsideKernel(KernelOp))
    GUARDED: ClassVar[bool] = False

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp


@irdl_op_definition
class MmaOp(MmaOpBase):
    """``tmlir_mma_m16n8k16_f16(d, a, b, c)``: a warp's D = A * B + C (see MmaOpBase)."""

    name = "tmgpu.mma"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class LdmatrixOp(LdmatrixOpBase):
    """``tmlir_ldmatrix_x4[_trans](frag, &smem[r][c])`` (see LdmatrixOpBase)."""

    name = "tmgpu.ldmatrix"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class CpAsyncOp(CpAsyncOpBase):
    """``tmlir_cp_async<16>(&smem[..], &x[..])``, with ``zfill_unless %inside``
    ``tmlir_cp_async_zfill<16>(&smem[..], &x[..], inside)`` (see CpAsyncOpBase)."""

    name = "tmgpu.cp_async"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class CpAsyncCommitOp(IRDLOperation):
    """``tmlir_cp_async_commit()``: close this thread's open group of copies."""

    name = "tmgpu.cp_async_commit"
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict"


@irdl_op_definition
class CpAsyncWaitOp(CpAsyncWaitOpBase):
    """``tmlir_cp_async_wait<1>()`` (see CpAsyncWaitOpBase)."""

    name = "tmgpu.cp_async_wait"
    traits = traits_def(InsideKernel(KernelOp))


class HopperOp:
    """A Hopper op: `REQUIRED_ARCH` is the least target arch that has it (``sm_90a``: only
    the arch-specific sm_90a; ``sm_90``: sm_90 and later)."""

    REQUIRED_ARCH: ClassVar[str] = "sm_90"


class _Statement(HopperOp, IRDLOperation):
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict"


@irdl_op_definition
class WgmmaDescOp(WgmmaDescFieldsOpBase):
    """``%d = tmgpu.wgmma_desc %smem[%o] lbo(16) sbo(1024) swizzle(128) : ...``:
    ``tmlir_wgmma_desc(&smem[o], 16, 1024, 128)`` (see WgmmaDescFieldsOpBase)."""

    name = "tmgpu.wgmma_desc"
    traits = traits_def(Pure(), InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class WgmmaOp(HopperOp, WgmmaOpBase):
    """``tmlir_wgmma_m64n128k16_f16<0, 1>(acc, da, db, 1)`` (see WgmmaOpBase)."""

    name = "tmgpu.wgmma"
    REQUIRED_ARCH: ClassVar[str] = "sm_90a"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class WgmmaFenceOp(_Statement):
    """``tmlir_wgmma_fence()``: ``wgmma.fence.sync.aligned``."""

    name = "tmgpu.wgmma_fence"
    REQUIRED_ARCH: ClassVar[str] = "sm_90a"


@irdl_op_definition
class WgmmaCommitOp(_Statement):
    """``tmlir_wgmma_commit()``: ``wgmma.commit_group.sync.aligned``."""

    name = "tmgpu.wgmma_commit"
    REQUIRED_ARCH: ClassVar[str] = "sm_90a"


@irdl_op_definition
class WgmmaWaitOp(HopperOp, WgmmaWaitOpBase):
    """``tmlir_wgmma_wait<0>()``, then the listed accumulators fenced (see WgmmaWaitOpBase)."""

    name = "tmgpu.wgmma_wait"
    REQUIRED_ARCH: ClassVar[str] = "sm_90a"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class MbarrierInitOp(HopperOp, MbarrierInitOpBase):
    """``tmlir_mbarrier_init(&bar[i], 1)`` (see MbarrierInitOpBase)."""

    name = "tmgpu.mbarrier_init"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class MbarrierArriveOp(HopperOp, MbarrierArriveOpBase):
    """``tmlir_mbarrier_arrive(&bar[i])`` or ``tmlir_mbarrier_arrive_expect_tx(&bar[i], 4096)``."""

    name = "tmgpu.mbarrier_arrive"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class MbarrierWaitOp(HopperOp, MbarrierWaitOpBase):
    """``tmlir_mbarrier_wait(&bar[i], parity)`` (see MbarrierWaitOpBase)."""

    name = "tmgpu.mbarrier_wait"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class CpAsyncBulkOp(HopperOp, CpAsyncBulkOpBase):
    """``tmlir_cp_async_bulk(&smem[..], &x[..], 4096, &bar[i])`` (see CpAsyncBulkOpBase)."""

    name = "tmgpu.cp_async_bulk"
    traits = traits_def(InsideKernel(KernelOp))
    buffer_scope = staticmethod(_scope)


@irdl_op_definition
class FenceProxyAsyncOp(_Statement):
    """``tmlir_fence_proxy_async()``: ``fence.proxy.async.shared::cta``."""

    name = "tmgpu.fence_proxy_async"


HOPPER_OPS = (WgmmaDescOp, WgmmaOp, WgmmaFenceOp, WgmmaCommitOp, WgmmaWaitOp, MbarrierInitOp, MbarrierArriveOp,
              MbarrierWaitOp, CpAsyncBulkOp, FenceProxyAsyncOp)


@irdl_op_definition
class AtomicAddOp(AtomicAddOpBase):
    """``const int old = atomicAdd(&counters[t], one);`` (see tmlir.ir.global_ops)."""

    name = "tmgpu.atomic_add"
    traits = traits_def(InsideKernel(KernelOp))

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp


@irdl_op_definition
class LoadCgOp(LoadCgOpBase):
    """``const float v = __ldcg(&ws[i]);`` (see tmlir.ir.global_ops)."""

    name = "tmgpu.load_cg"
    traits = traits_def(InsideKernel(KernelOp))

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp


@irdl_op_definition
class FenceOp(IRDLOperation):
    """``__threadfence()`` (see tmlir.ir.global_ops)."""

    name = "tmgpu.fence"
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict"


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Host side: a device buffer for an intermediate result; ``zeroed``: a kernel's counters,
    zero before the first launch, left zero by each, a buffer of its own (see
    tmlir.ir.kernel_ops)."""

    name = "tmgpu.alloc"
    zeroed = opt_prop_def(UnitAttr)
    result = result_def(MemRefType)
    assembly_format = "(`zeroed` $zeroed^)? attr-dict `:` type($result)"

    def __init__(self, type: MemRefType, zeroed: bool = False) -> None:
        super().__init__(result_types=[type], properties={"zeroed": UnitAttr()} if zeroed else {})

    def verify_(self) -> None:
        memref_shape(self.result.type, "device buffer")
        if enclosing(self, KernelOp) is not None:
            raise VerifyException("'tmgpu.alloc' is a host operation, not allowed in a kernel")


@irdl_op_definition
class WeightOp(WeightOpBase):
    """Host side: the device buffer holding the named weight of the side table."""

    name = "tmgpu.weight"


@irdl_op_definition
class ViewOp(ViewOpBase):
    """Host side: the device buffer of ``%buf`` seen with another shape (see ViewOpBase):
    the launch plan passes the same pointer."""

    name = "tmgpu.view"

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp


@irdl_op_definition
class LaunchOp(LaunchOpBase):
    """Host side: ``kernel<<<grid, block>>>(args...)``, ordered after earlier launches."""

    name = "tmgpu.launch"
    grid = prop_def(IntAttr)
    block = prop_def(IntAttr)

    def __init__(self, kernel: str, args: Sequence[SSAValue], grid: int, block: int) -> None:
        super().__init__(
            operands=[args],
            properties={"kernel": SymbolRefAttr(kernel), "grid": IntAttr(grid), "block": IntAttr(block)},
        )

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp

    @classmethod
    def scratch_buffer(cls, value: SSAValue) -> str | None:
        if not isinstance(value.owner, AllocOp):
            return None
        return "counters" if value.owner.zeroed is not None else "workspace"

    @classmethod
    def alloc_syntax(cls, kind: str) -> str:
        return "a 'tmgpu.alloc zeroed'" if kind == "counters" else "a 'tmgpu.alloc'"

    def verify_(self) -> None:
        super().verify_()
        kernel = self.launched()
        assert isinstance(kernel, KernelOp)
        if self.grid.data < 1:
            raise VerifyException("grid must be >= 1")
        if self.grid.data > MAX_GRID_X:
            raise VerifyException(f"grid({self.grid.data}) exceeds CUDA's limit of {MAX_GRID_X} blocks")
        if kernel.block.data != self.block.data:
            raise VerifyException(
                f"launch block({self.block.data}) differs from the kernel's block({kernel.block.data})"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.kernel)
        printer.print_string("(")
        printer.print_list(self.args, printer.print_ssa_value)
        printer.print_string(f") grid({self.grid.data}) block({self.block.data})")
        printer.print_op_attributes(self.attributes)
        if self.args:
            printer.print_string(" : ")
            printer.print_list([a.type for a in self.args], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> LaunchOp:
        kernel = parser.parse_attribute()
        if not isinstance(kernel, SymbolRefAttr):
            parser.raise_error("expected a kernel symbol like @name")
        args = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        grid = parse_int_in_parens(parser, "grid")
        block = parse_int_in_parens(parser, "block")
        attrs = parser.parse_optional_attr_dict()
        types = []
        if args:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        return cls.create(
            operands=parser.resolve_operands(args, types, parser.pos),
            properties={"kernel": kernel, "grid": grid, "block": block},
            attributes=attrs,
        )


TMGPU = Dialect(
    "tmgpu",
    [KernelOp, ThreadIdOp, BlockIdOp, GridDimOp, SharedAllocOp, LocalAllocOp, BarrierOp, ShuffleOp,
     LoadVectorOp, MmaOp, LdmatrixOp, CpAsyncOp, CpAsyncCommitOp, CpAsyncWaitOp, *HOPPER_OPS, AtomicAddOp, LoadCgOp,
     FenceOp, AllocOp, WeightOp, ViewOp, LaunchOp],
    [],
)
