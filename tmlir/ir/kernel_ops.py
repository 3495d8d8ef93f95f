"""What the kernel-level dialects (tm, tmgpu) share beyond syntax: verifiers (static memref
shapes, launches, enclosing ops), a kernel's scratch arguments, and the ops that are the
same at both levels (the warp shuffle and the host-side weight, view and launch), as base
classes each dialect names.

**Scratch arguments.** A kernel may end its arguments with buffers that hold no tensor of
the program but memory the kernel works in, listed by kind in its ``scratch`` property
(``scratch(workspace, counters)`` after its launch sizes, one kind per trailing argument):

* ``workspace``: memory the kernel writes before it reads, for that one launch (split-K's
  partial sums). Its buffer is an ordinary intermediate (``tm.alloc global``) that the
  memory plan may share with buffers not live at that launch.
* ``counters``: ``i32`` elements that are zero when a launch starts and that the launch
  leaves zero again (split-K's arrival counters). Its buffer is ``tm.alloc global zeroed``:
  zeroed once when the program's memory is set up, never shared with another buffer, kept
  from run to run (and across CUDA-graph replays).

A launch passes each scratch argument a buffer of that kind, of its own (`verify_launch`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    Float32Type,
    IndexType,
    IntAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    i32,
)
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasAncestor, Pure, SymbolTable
from xdsl.utils.exceptions import VerifyException

from tmlir.gpu_limits import WARP_SIZE

SHUFFLE_MODES = ("xor", "down", "up", "idx")


def memref_shape(attr: Attribute, what: str) -> tuple[int, ...]:
    """The static shape of a memref type, or a VerifyException naming `what`."""
    if not isinstance(attr, MemRefType):
        raise VerifyException(f"{what} must be a memref, got {attr}")
    shape = tuple(attr.get_shape())
    if any(d < 0 for d in shape):
        raise VerifyException(f"{what} must have a static shape, got {attr}")
    return shape



def enclosing(op: Operation, kind: type[Operation]) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, kind):
        parent = parent.parent_op()
    return parent


class InsideKernel(HasAncestor):
    """`HasAncestor` for ops that run on the device: the op must sit (at any depth) inside
    a kernel of its dialect, else "'tm.barrier' must be inside a tm.kernel"."""

    def verify(self, op: Operation) -> None:
        if self.get_ancestor(op) is None:
            raise VerifyException(f"'{op.name}' must be inside a {self.op_types[0].name}")


def single_block_region(region: Region) -> None:
    if len(region.blocks) != 1:
        raise VerifyException("expected a region with exactly one block")


BRANCH_WEIGHTS = "tm.branch_weights"
"""An ``scf.if`` attribute in a kernel, ``array<i64: then, else>``: how often each branch is
taken relative to the other (split-K's ``if last block`` is taken by 1 block in S); the
cost report counts each branch that often instead of the larger one."""

SCRATCH_KINDS = ("workspace", "counters")
"""The kinds of scratch arguments (see the module docstring)."""


def scratch_kinds(kernel: Operation) -> tuple[str, ...]:
    """The kinds of `kernel`'s scratch arguments, in order (its trailing arguments)."""
    attr = kernel.properties.get("scratch")
    return tuple(k.data for k in attr.data) if isinstance(attr, ArrayAttr) else ()  # type: ignore[attr-defined]


def scratch_attr(kinds: Sequence[str]) -> ArrayAttr | None:
    """The ``scratch`` property of a kernel whose trailing arguments are of `kinds`."""
    return ArrayAttr([StringAttr(k) for k in kinds]) if kinds else None


def verify_scratch(kernel: Operation, name: str) -> None:
    """The ``scratch`` kinds are known, no more than the arguments, and counters are i32."""
    kinds = scratch_kinds(kernel)
    args = kernel.regions[0].block.args
    for kind in kinds:
        if kind not in SCRATCH_KINDS:
            raise VerifyException(f"kernel @{name}: unknown scratch kind '{kind}', expected "
                                  f"{' or '.join(SCRATCH_KINDS)}")
    if len(kinds) > len(args):
        raise VerifyException(f"kernel @{name}: {len(kinds)} scratch kinds for {len(args)} arguments")
    for arg, kind in zip(args[len(args) - len(kinds):], kinds):
        if kind == "counters" and getattr(arg.type, "element_type", None) != i32:
            raise VerifyException(f"kernel @{name}: counters must be i32, got {arg.type}")


def print_scratch(printer: Printer, kernel: Operation) -> None:
    """`` scratch(workspace, counters)``, or nothing."""
    kinds = scratch_kinds(kernel)
    if kinds:
        printer.print_string(f" scratch({', '.join(kinds)})")


def parse_scratch(parser: Parser) -> ArrayAttr | None:
    """An optional ``scratch(kind, ...)``."""
    if parser.parse_optional_keyword("scratch") is None:
        return None
    kinds = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_identifier)
    return scratch_attr(kinds)


def verify_launch(
    op: IRDLOperation, kernel: SymbolRefAttr, args: Sequence[SSAValue], kernel_type: type[IRDLOperation]
) -> IRDLOperation:
    """The launched symbol is a kernel of `kernel_type` whose argument types match; returns it."""
    module = op.get_toplevel_object()
    callee = SymbolTable.lookup_symbol(module, kernel) if module is not op else None
    if not isinstance(callee, kernel_type):
        raise VerifyException(f"'{kernel.string_value()}' is not a {kernel_type.name} in this module")
    expected = [a.type for a in callee.regions[0].block.args]
    got = [a.type for a in args]
    if expected != got:
        raise VerifyException(
            f"launch of @{kernel.string_value()}: argument types ({', '.join(map(str, got))})"
            f" do not match the kernel's ({', '.join(map(str, expected))})"
        )
    return callee


class ShuffleOpBase(IRDLOperation):
    """A warp shuffle: ``%r = <op> <mode> %v, <offset> [width(<w>)] : <type>``.

    Every lane of the warp publishes ``%v`` and gets the value of one source lane, within
    segments of ``width`` lanes (default the whole warp): ``xor`` lane ``lane ^ offset``
    (a butterfly), ``down`` lane ``lane + offset``, ``up`` lane ``lane - offset``, ``idx``
    lane ``offset`` of the segment. A source outside the segment gives the lane its own
    value. As CUDA's ``__shfl_*_sync(0xffffffff, ...)``: every lane of the warp must
    execute the same shuffle (it synchronizes the warp), so a shuffle must not sit under
    a condition that differs between the lanes of a warp. Each dialect's shuffle has the
    trait `InsideKernel` of its kernel op.
    """

    mode = prop_def(StringAttr)
    offset = prop_def(IntAttr)
    width = prop_def(IntAttr)
    value = operand_def(AnyAttr())
    result = result_def(AnyAttr())

    def __init__(self, value: SSAValue, mode: str, offset: int, width: int = WARP_SIZE) -> None:
        super().__init__(
            operands=[value],
            result_types=[value.type],
            properties={"mode": StringAttr(mode), "offset": IntAttr(offset),
                        "width": IntAttr(width)},
        )

    def verify_(self) -> None:
        mode, offset, width = self.mode.data, self.offset.data, self.width.data
        if mode not in SHUFFLE_MODES:
            raise VerifyException(
                f"unknown shuffle mode '{mode}', expected one of {', '.join(SHUFFLE_MODES)}"
            )
        if width < 1 or width > WARP_SIZE or width & (width - 1):
            raise VerifyException(f"shuffle width must be a power of two in [1, {WARP_SIZE}], got {width}")
        if not 0 <= offset < width:
            raise VerifyException(f"shuffle offset must be in [0, {width}) (the lanes of a segment), got {offset}")
        if not _shuffleable(self.value.type):
            raise VerifyException(f"can only shuffle f32, i32, i64 or index values, got {self.value.type}")
        if self.result.type != self.value.type:
            raise VerifyException("result type must be the shuffled value's type")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.mode.data} ")
        printer.print_ssa_value(self.value)
        printer.print_string(f", {self.offset.data}")
        if self.width.data != WARP_SIZE:
            printer.print_string(f" width({self.width.data})")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser):
        mode = parser.parse_keyword_in(SHUFFLE_MODES, " (shuffle mode)")
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        offset = parser.parse_integer(allow_boolean=False)
        width = IntAttr(WARP_SIZE)
        if parser.parse_optional_keyword("width"):
            with parser.in_parens():
                width = IntAttr(parser.parse_integer(allow_boolean=False))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        return cls.create(
            operands=[parser.resolve_operand(value, type)],
            result_types=[type],
            properties={"mode": StringAttr(mode), "offset": IntAttr(offset), "width": width},
            attributes=attrs,
        )


def _shuffleable(type: Attribute) -> bool:
    if isinstance(type, IntegerType):
        return type.width.data in (32, 64)
    return isinstance(type, Float32Type | IndexType)


class ViewOpBase(IRDLOperation):
    """Host side: ``%v = <op> %buffer : memref<A> to memref<B>``, the same device memory
    seen with another shape (same element type and count, row-major both ways). No data
    moves; it is how a reshape costs no kernel."""

    source = operand_def(MemRefType)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `to` type($result)"

    @classmethod
    def kernel_type(cls) -> type[Operation]:
        """The kernel op of this op's dialect (a view must be outside one)."""
        raise NotImplementedError

    def __init__(self, source: SSAValue, type: MemRefType) -> None:
        super().__init__(operands=[source], result_types=[type])

    def verify_(self) -> None:
        source = memref_shape(self.source.type, "viewed buffer")
        shape = memref_shape(self.result.type, "view")
        if self.source.type.element_type != self.result.type.element_type:
            raise VerifyException("a view must keep the element type")
        if math.prod(source) != math.prod(shape):
            raise VerifyException(f"a view of {math.prod(source)} elements cannot have "
                                  f"{math.prod(shape)} ({self.result.type})")
        if enclosing(self, self.kernel_type()) is not None:
            raise VerifyException(f"'{self.name}' is a host operation, not allowed in a kernel")


class WeightOpBase(IRDLOperation):
    """Host side: ``%w = <op> "name" : memref<...>``, the buffer holding the named weight of
    the side table."""

    weight_name = prop_def(StringAttr, prop_name="name")
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, name: str, type: MemRefType) -> None:
        super().__init__(properties={"name": StringAttr(name)}, result_types=[type])


class LaunchOpBase(IRDLOperation):
    """Host side: run a kernel of this dialect (`kernel_type`) on buffers, after every launch
    before it; the launched symbol must be such a kernel with matching argument types, and
    each scratch argument gets a buffer of its kind, of its own (`scratch_buffer`)."""

    kernel = prop_def(SymbolRefAttr)
    args = var_operand_def(MemRefType)

    @classmethod
    def kernel_type(cls) -> type[IRDLOperation]:
        """The kernel op of this op's dialect."""
        raise NotImplementedError

    @classmethod
    def scratch_buffer(cls, value: SSAValue) -> str | None:
        """The scratch kind a host buffer can serve: ``workspace`` for a buffer of its own
        (the dialect's global alloc), ``counters`` for a zeroed one, None for any other
        (an input, an output, a weight, a view)."""
        raise NotImplementedError

    @classmethod
    def alloc_syntax(cls, kind: str) -> str:
        """How the dialect allocates a buffer for a scratch argument of `kind` (for messages)."""
        raise NotImplementedError

    def launched(self) -> IRDLOperation:
        """The launched kernel, verified (`verify_launch`)."""
        return verify_launch(self, self.kernel, self.args, self.kernel_type())

    def verify_(self) -> None:
        kernel = self.launched()
        kinds = scratch_kinds(kernel)
        first = len(self.args) - len(kinds)
        name = self.kernel.string_value()
        for position, arg in enumerate(self.args):
            wanted = kinds[position - first] if position >= first else None
            got = self.scratch_buffer(arg)
            if wanted is not None and got != wanted:
                raise VerifyException(f"launch of @{name}: argument {position} is {wanted} scratch: it "
                                      f"takes a buffer of its own, {self.alloc_syntax(wanted)}")
            if wanted is None and got == "counters":
                raise VerifyException(f"launch of @{name}: argument {position} is a zeroed buffer, "
                                      "which only a kernel's counters scratch argument may take")
            if wanted is not None and list(self.args).count(arg) > 1:
                raise VerifyException(f"launch of @{name}: its {wanted} scratch buffer is passed twice")

