"""Kernels and what runs inside them: ``tm.kernel``, the worker ids, ``tm.for_task``,
``tm.barrier`` and ``tm.shuffle``. The worker ids carry their range (the `HasUpperBound`
trait of tmlir.ir.ranges)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    IndexType,
    IntAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_operand_def,
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

from tmlir.dialects.tm.attributes import TaskMappingAttr
from tmlir.gpu_limits import (
    MAX_THREADS_PER_BLOCK,
)
from tmlir.ir.kernel_ops import (
    InsideKernel,
    ShuffleOpBase,
    enclosing,
    memref_shape,
    parse_scratch,
    print_scratch,
    scratch_attr,
    scratch_kinds,
    verify_scratch,
)
from tmlir.ir.ranges import HasUpperBound, upper_bound
from tmlir.ir.syntax import (
    parse_int_in_parens,
    parse_kernel_header,
    parse_trailing_attrs_and_region,
    print_kernel_header,
)
from tmlir.mapping import TaskMapping, parse_mapping_expr

__all__ = [
    "BarrierOp",
    "BlockIdOp",
    "ForTaskOp",
    "KernelOp",
    "ShuffleOp",
    "ThreadIdOp",
    "WorkerIdOp",
]


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A kernel: ``grid`` blocks of ``block`` threads running the body. Its trailing
    arguments may be scratch memory rather than tensors, by kind (``scratch(workspace,
    counters)``, see tmlir.ir.kernel_ops)."""

    name = "tm.kernel"
    sym_name = prop_def(StringAttr)
    grid = prop_def(IntAttr)
    block = prop_def(IntAttr)
    scratch = opt_prop_def(ArrayAttr)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove(), NoTerminator())

    def __init__(
        self, name: str, arg_types: Sequence[Attribute], grid: int, block: int,
        attributes: dict[str, Attribute] | None = None, scratch: Sequence[str] = (),
    ) -> None:
        properties: dict[str, Attribute] = {"sym_name": StringAttr(name), "grid": IntAttr(grid),
                                            "block": IntAttr(block)}
        if scratch:
            properties["scratch"] = scratch_attr(scratch)  # type: ignore[assignment]
        super().__init__(
            properties=properties,
            regions=[Region(Block(arg_types=arg_types))],
            attributes=attributes or {},
        )

    @property
    def args(self) -> tuple[SSAValue, ...]:
        return self.body.block.args

    @property
    def scratch_kinds(self) -> tuple[str, ...]:
        """The kind of each scratch argument (the trailing ones), in order."""
        return scratch_kinds(self)

    @property
    def tensor_args(self) -> tuple[SSAValue, ...]:
        """The arguments that hold the program's tensors: all but the scratch ones."""
        return self.args[:len(self.args) - len(self.scratch_kinds)]

    @property
    def scratch_args(self) -> tuple[SSAValue, ...]:
        """The scratch arguments (see `scratch_kinds`)."""
        return self.args[len(self.tensor_args):]

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
        verify_scratch(self, self.sym_name.data)

    def print(self, printer: Printer) -> None:
        print_kernel_header(
            printer, self, self.sym_name.data, f"grid({self.grid.data}) block({self.block.data})",
            lambda: print_scratch(printer, self),
        )

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name, args = parse_kernel_header(parser)
        properties: dict[str, Attribute] = {"sym_name": StringAttr(name),
                                            "grid": parse_int_in_parens(parser, "grid"),
                                            "block": parse_int_in_parens(parser, "block")}
        scratch = parse_scratch(parser)
        if scratch is not None:
            properties["scratch"] = scratch
        attrs, region = parse_trailing_attrs_and_region(parser, args)
        return cls.create(properties=properties, regions=[region], attributes=attrs)


@dataclass(frozen=True)
class WorkerIdBound(HasUpperBound):
    """A worker id is below its kernel's grid (``tm.block_id``) or block (``tm.thread_id``)."""

    def upper_bound(self, op: Operation) -> int | None:
        kernel = enclosing(op, KernelOp)
        if kernel is None:
            return None
        return kernel.grid.data if isinstance(op, BlockIdOp) else kernel.block.data


class WorkerIdOp(IRDLOperation):
    result = result_def(IndexType)
    traits = traits_def(Pure(), WorkerIdBound(), InsideKernel(KernelOp))
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__(result_types=[IndexType()])


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
    traits = traits_def(NoTerminator(), InsideKernel(KernelOp))

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
        bound = upper_bound(self.worker) if self.worker is not None else None
        if bound is not None and bound < mapping.num_workers:
            owner = self.worker.owner
            has = (f"the kernel has only {bound} blocks" if isinstance(owner, BlockIdOp) else
                   f"the kernel has only {bound} threads" if isinstance(owner, ThreadIdOp) else
                   f"the worker id is below {bound}")
            raise VerifyException(
                f"mapping '{mapping}' needs {mapping.num_workers} workers but {has}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(f") in {self.task_mapping}")
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
class BarrierOp(IRDLOperation):
    """Wait until every thread of the block has reached this point."""

    name = "tm.barrier"
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict"


@irdl_op_definition
class ShuffleOp(ShuffleOpBase):
    """``%r = tm.shuffle xor %v, 16 : f32``: a warp shuffle (see ShuffleOpBase); every lane
    of the warp must reach it."""

    name = "tm.shuffle"
    traits = traits_def(InsideKernel(KernelOp))
