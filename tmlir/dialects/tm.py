"""The ``tm`` (task mapping) dialect: kernels written with Hidet's task mappings.

A ``tm.kernel`` is a grid of ``grid`` blocks of ``block`` threads; inside it,
``tm.block_id`` and ``tm.thread_id`` are the worker ids, and ``tm.for_task`` runs its body
once per task that a task mapping assigns to a worker, with the task's indices as region
arguments; ``tm.barrier`` synchronizes the block and ``tm.shuffle`` exchanges values
between the lanes of a warp. Buffers have a scope (``global`` on the host side, ``shared``
and ``register`` inside kernels); ``tm.load`` and ``tm.store`` check the dimensions listed in ``guard``
against the buffer's shape (an out-of-range load gives 0, an out-of-range store does
nothing). The host side is a ``func.func`` that allocates buffers and ``tm.launch``es
kernels in order.

    tm.kernel @scale(%x: memref<1000xf32>, %y: memref<1000xf32>) grid(4) block(256) {
      %b = tm.block_id
      %t = tm.thread_id
      tm.for_task (%i) in spatial(4) * spatial(256) on %w {
        %v = tm.load %x[%i] guard [0] : memref<1000xf32>
        tm.store %v, %y[%i] guard [0] : memref<1000xf32>
      }
    }

The ``#tm.map<spatial(4, 8) * repeat(2, 2)>`` attribute carries a mapping; its
semantics is :class:`tmlir.mapping.TaskMapping`. Atoms take keywords:
``spatial(4, 8, ranks=[1, 0])`` numbers the workers column-major and
``repeat(2, 64, unroll=[true, false])`` says which of its loops are unrolled. The
``#tm.layout<row_major(2, 2) * column_major(4, 8, pad=1)>`` attribute carries a data layout
(:class:`tmlir.layout.DataLayout`) of a shared or register buffer, written
``tm.alloc shared layout(row_major(8, 64, pad=1)) : memref<8x64xf32>``. Both attributes and
their parsers live in ``_tm_attributes.py`` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects._syntax import (
    MAX_THREADS_PER_BLOCK,
    ShuffleOpBase,
    ViewOpBase,
    dims_array,
    enclosing,
    memref_shape,
    parse_access,
    parse_int_in_parens,
    parse_kernel_header,
    parse_trailing_attrs_and_region,
    print_access,
    print_kernel_header,
    verify_launch,
)
from tmlir.dialects._tm_attributes import (  # defined there, used and re-exported here
    DataLayoutAttr,
    TaskMappingAttr,
    parse_mapping_expr,
)
from tmlir.layout import DataLayout
from tmlir.mapping import TaskMapping

SCOPES = ("global", "shared", "register")


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A kernel: ``grid`` blocks of ``block`` threads running the body."""

    name = "tm.kernel"
    sym_name = prop_def(StringAttr)
    grid = prop_def(IntAttr)
    block = prop_def(IntAttr)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove(), NoTerminator())

    def __init__(
        self, name: str, arg_types: Sequence[Attribute], grid: int, block: int,
        attributes: dict[str, Attribute] | None = None,
    ) -> None:
        super().__init__(
            properties={"sym_name": StringAttr(name), "grid": IntAttr(grid), "block": IntAttr(block)},
            regions=[Region(Block(arg_types=arg_types))],
            attributes=attributes or {},
        )

    @property
    def args(self) -> tuple[SSAValue, ...]:
        return self.body.block.args

    def verify_(self) -> None:
        if self.grid.data < 1:
            raise VerifyException(f"kernel @{self.sym_name.data}: grid must be >= 1")
        if not 1 <= self.block.data <= MAX_THREADS_PER_BLOCK:
            raise VerifyException(
                f"kernel @{self.sym_name.data}: block must be in [1, {MAX_THREADS_PER_BLOCK}],"
                f" got {self.block.data}"
            )
        for arg in self.args:
            memref_shape(arg.type, f"kernel @{self.sym_name.data} argument")

    def print(self, printer: Printer) -> None:
        print_kernel_header(
            printer, self, self.sym_name.data, f"grid({self.grid.data}) block({self.block.data})"
        )

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name, args = parse_kernel_header(parser)
        grid = parse_int_in_parens(parser, "grid")
        block = parse_int_in_parens(parser, "block")
        attrs, region = parse_trailing_attrs_and_region(parser, args)
        return cls.create(
            properties={"sym_name": StringAttr(name), "grid": grid, "block": block},
            regions=[region],
            attributes=attrs,
        )


class WorkerIdOp(IRDLOperation):
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__(result_types=[IndexType()])

    def verify_(self) -> None:
        if enclosing(self, KernelOp) is None:
            raise VerifyException(f"'{self.name}' must be inside a tm.kernel")


@irdl_op_definition
class BlockIdOp(WorkerIdOp):
    """The id of this thread's block, in [0, grid)."""

    name = "tm.block_id"


@irdl_op_definition
class ThreadIdOp(WorkerIdOp):
    """The id of this thread within its block, in [0, block)."""

    name = "tm.thread_id"


@irdl_op_definition
class ForTaskOp(IRDLOperation):
    """Run the body for each task the mapping gives to worker ``on``, in order.

    The region arguments are the task's indices. A mapping with one worker (only
    ``repeat``) takes no worker operand.
    """

    name = "tm.for_task"
    worker = opt_operand_def(IndexType)
    mapping = prop_def(TaskMappingAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, mapping: TaskMapping, worker: SSAValue | None = None) -> None:
        block = Block(arg_types=[IndexType()] * mapping.rank)
        super().__init__(
            operands=[[worker] if worker is not None else []],
            properties={"mapping": TaskMappingAttr(mapping)},
            regions=[Region(block)],
        )

    @property
    def task_mapping(self) -> TaskMapping:
        return self.mapping.mapping

    def verify_(self) -> None:
        mapping = self.task_mapping
        args = self.body.block.args
        if len(args) != mapping.rank:
            raise VerifyException(
                f"mapping '{mapping}' has rank {mapping.rank} but the body has {len(args)} "
                "task indices"
            )
        if any(not isinstance(a.type, IndexType) for a in args):
            raise VerifyException("task indices must have type index")
        if mapping.num_workers > 1 and self.worker is None:
            raise VerifyException(
                f"mapping '{mapping}' has {mapping.num_workers} workers: give a worker id "
                "with 'on %w'"
            )
        bound = worker_bound(self.worker) if self.worker is not None else None
        if bound is not None and bound < mapping.num_workers:
            raise VerifyException(
                f"mapping '{mapping}' needs {mapping.num_workers} workers but the kernel has "
                f"only {bound} {'blocks' if isinstance(self.worker.owner, BlockIdOp) else 'threads'}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(f") in {self.mapping.expr.data}")
        if self.worker is not None:
            printer.print_string(" on ")
            printer.print_ssa_value(self.worker)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> ForTaskOp:
        args = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False)
        )
        parser.parse_keyword("in")
        mapping = parse_mapping_expr(parser)
        operands = []
        if parser.parse_optional_keyword("on"):
            operands.append(parser.resolve_operand(parser.parse_unresolved_operand(), IndexType()))
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region([a.resolve(IndexType()) for a in args])
        return cls.create(
            operands=operands,
            properties={"mapping": TaskMappingAttr(mapping)},
            regions=[region],
            attributes=attrs.data if attrs else {},
        )


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A buffer of a scope: ``global`` (host side), ``shared`` or ``register`` (in kernels).

    Shared and register buffers may have a data ``layout`` (logical index to storage
    offset, see tmlir.layout); without one they are row-major and dense.
    """

    name = "tm.alloc"
    scope = prop_def(StringAttr)
    layout = opt_prop_def(DataLayoutAttr)
    result = result_def(MemRefType)

    def __init__(self, scope: str, type: MemRefType, layout: DataLayout | None = None) -> None:
        properties: dict[str, Attribute] = {"scope": StringAttr(scope)}
        if layout is not None:
            properties["layout"] = DataLayoutAttr(layout)
        super().__init__(properties=properties, result_types=[type])

    @property
    def data_layout(self) -> DataLayout | None:
        return self.layout.layout if self.layout is not None else None

    def verify_(self) -> None:
        scope = self.scope.data
        if scope not in SCOPES:
            raise VerifyException(f"unknown scope '{scope}', expected one of {', '.join(SCOPES)}")
        shape = memref_shape(self.result.type, f"{scope} buffer")
        in_kernel = enclosing(self, KernelOp) is not None
        if in_kernel == (scope == "global"):
            where = "outside" if scope != "global" else "inside"
            raise VerifyException(f"a {scope} buffer cannot be allocated {where} a tm.kernel")
        layout = self.data_layout
        if layout is not None and scope == "global":
            raise VerifyException("a global buffer cannot have a data layout (only shared and register)")
        if layout is not None and layout.shape != shape:
            raise VerifyException(
                f"layout '{layout}' has shape {'x'.join(map(str, layout.shape))} but the buffer "
                f"is {self.result.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.scope.data}")
        if self.layout is not None:
            printer.print_string(f" layout({self.layout.expr.data})")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> AllocOp:
        properties: dict[str, Attribute] = {
            "scope": StringAttr(parser.parse_keyword_in(SCOPES, " (buffer scope)"))
        }
        if parser.parse_optional_keyword("layout"):
            with parser.in_parens():
                properties["layout"] = DataLayoutAttr(DataLayoutAttr.parse_expr(parser))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        return cls.create(
            properties=properties, result_types=[parser.parse_type()], attributes=attrs
        )


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """Wait until every thread of the block has reached this point."""

    name = "tm.barrier"
    assembly_format = "attr-dict"

    def verify_(self) -> None:
        if enclosing(self, KernelOp) is None:
            raise VerifyException("'tm.barrier' must be inside a tm.kernel")


@irdl_op_definition
class ShuffleOp(ShuffleOpBase):
    """``%r = tm.shuffle xor %v, 16 : f32``: a warp shuffle (see ShuffleOpBase); every lane
    of the warp must reach it."""

    name = "tm.shuffle"

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp


class GuardedAccess(IRDLOperation):
    """Shared verification and syntax of tm.load / tm.store."""

    guard = prop_def(DenseArrayBase)

    @property
    def guarded_dims(self) -> tuple[int, ...]:
        return self.guard.get_values()

    def verify_access(self, memref: SSAValue, indices: Sequence[SSAValue]) -> None:
        shape = memref_shape(memref.type, "accessed buffer")
        if len(indices) != len(shape):
            raise VerifyException(
                f"expected {len(shape)} indices for {memref.type}, got {len(indices)}"
            )
        dims = self.guarded_dims
        if len(set(dims)) != len(dims) or any(not 0 <= d < len(shape) for d in dims):
            raise VerifyException(
                f"guard dimensions {list(dims)} must be distinct and in [0, {len(shape)})"
            )

    def print_guard(self, printer: Printer) -> None:
        if self.guarded_dims:
            printer.print_string(f" guard [{', '.join(map(str, self.guarded_dims))}]")

    @staticmethod
    def parse_guard(parser: Parser) -> DenseArrayBase:
        dims: list[int] = []
        if parser.parse_optional_keyword("guard"):
            dims = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
            )
        return dims_array(dims)


@irdl_op_definition
class LoadOp(GuardedAccess):
    """``%v = tm.load %A[%i, %j] guard [0] : memref<...>``: 0 where a guarded index is out of range."""

    name = "tm.load"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def(AnyAttr())

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue], guard: Sequence[int] = ()) -> None:
        assert isinstance(memref.type, MemRefType)
        super().__init__(
            operands=[memref, indices],
            result_types=[memref.type.element_type],
            properties={"guard": dims_array(guard)},
        )

    def verify_(self) -> None:
        self.verify_access(self.memref, self.indices)
        if self.result.type != self.memref.type.element_type:
            raise VerifyException("result type must be the buffer's element type")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_access(printer, self.memref, self.indices)
        self.print_guard(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        memref, indices = parse_access(parser)
        guard = cls.parse_guard(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        if not isinstance(type, MemRefType):
            parser.raise_error(f"expected a memref type, got {type}")
        return cls.create(
            operands=[parser.resolve_operand(memref, type),
                      *(parser.resolve_operand(i, IndexType()) for i in indices)],
            result_types=[type.element_type],
            properties={"guard": guard},
            attributes=attrs,
        )


@irdl_op_definition
class StoreOp(GuardedAccess):
    """``tm.store %v, %A[%i, %j] guard [0] : memref<...>``: skipped where a guarded index is out of range."""

    name = "tm.store"
    value = operand_def(AnyAttr())
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)

    def __init__(
        self, value: SSAValue, memref: SSAValue, indices: Sequence[SSAValue], guard: Sequence[int] = ()
    ) -> None:
        super().__init__(operands=[value, memref, indices], properties={"guard": dims_array(guard)})

    def verify_(self) -> None:
        self.verify_access(self.memref, self.indices)
        if self.value.type != self.memref.type.element_type:
            raise VerifyException("stored value must have the buffer's element type")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(", ")
        print_access(printer, self.memref, self.indices)
        self.print_guard(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        memref, indices = parse_access(parser)
        guard = cls.parse_guard(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        if not isinstance(type, MemRefType):
            parser.raise_error(f"expected a memref type, got {type}")
        return cls.create(
            operands=[parser.resolve_operand(value, type.element_type),
                      parser.resolve_operand(memref, type),
                      *(parser.resolve_operand(i, IndexType()) for i in indices)],
            properties={"guard": guard},
            attributes=attrs,
        )


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


def worker_bound(worker: SSAValue) -> int | None:
    """An exclusive upper bound of a worker id: the kernel's grid for tm.block_id, its block
    for tm.thread_id, and through unsigned division and remainder by constants (``tid / 32``
    is below ``block / 32`` rounded up, ``tid % 32`` below 32), and ``grid * block`` for the
    global thread id ``bid * block + tid``; None for any other value."""
    owner = worker.owner
    if isinstance(owner, arith.AddiOp) and (kernel := _global_id_kernel(owner)) is not None:
        return kernel.grid.data * kernel.block.data
    if isinstance(owner, arith.DivUIOp | arith.RemUIOp):
        divisor = _constant(owner.rhs)
        bound = worker_bound(owner.lhs)
        if divisor is None or divisor < 1:
            return None
        if isinstance(owner, arith.RemUIOp):
            return divisor if bound is None else min(divisor, bound)
        return None if bound is None else -(-bound // divisor)
    kernel = enclosing(owner, KernelOp) if isinstance(owner, WorkerIdOp) else None
    if kernel is None:
        return None
    return kernel.grid.data if isinstance(owner, BlockIdOp) else kernel.block.data


def _global_id_kernel(add: arith.AddiOp) -> KernelOp | None:
    """The kernel if `add` is ``bid * block + tid`` (either order) with the kernel's block."""
    for scaled, tid in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        mul = scaled.owner
        if not isinstance(tid.owner, ThreadIdOp) or not isinstance(mul, arith.MuliOp):
            continue
        kernel = enclosing(add, KernelOp)
        for bid, block in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
            if (isinstance(bid.owner, BlockIdOp) and kernel is not None
                    and _constant(block) == kernel.block.data):
                return kernel
    return None


def _constant(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


TM = Dialect(
    "tm",
    [KernelOp, BlockIdOp, ThreadIdOp, ForTaskOp, AllocOp, BarrierOp, ShuffleOp, LoadOp,
     StoreOp, WeightOp, ViewOp, LaunchOp],
    [TaskMappingAttr, DataLayoutAttr],
)
