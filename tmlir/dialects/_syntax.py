"""What the kernel-level dialects (tm, tmgpu) share: the CUDA block-size limit, printing
and parsing helpers, and verification helpers (static memref shapes, launches)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntAttr, MemRefType, SymbolRefAttr, i64
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

MAX_THREADS_PER_BLOCK = 1024


def print_kernel_header(printer: Printer, op: Operation, sym_name: str, launch: str) -> None:
    """``@name(%a: memref<...>, ...) <launch> attributes {...} {``-style header + body."""
    printer.print_string(" ")
    printer.print_symbol_name(sym_name)
    printer.print_string("(")
    printer.print_list(op.regions[0].block.args, printer.print_block_argument)
    printer.print_string(f") {launch}")
    if op.attributes:
        printer.print_string(" attributes ")
        printer.print_attr_dict(op.attributes)
    printer.print_string(" ")
    printer.print_region(op.regions[0], print_entry_block_args=False, print_empty_block=False)


def parse_kernel_header(parser: Parser) -> tuple[str, list[Parser.Argument]]:
    """Parse ``@name(%a: type, ...)``."""
    sym_name = parser.parse_symbol_name().data
    args = parser.parse_comma_separated_list(
        Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=True)
    )
    return sym_name, args


def parse_int_in_parens(parser: Parser, keyword: str) -> IntAttr:
    parser.parse_keyword(keyword)
    parser.parse_punctuation("(")
    value = parser.parse_integer(allow_boolean=False, allow_negative=False)
    parser.parse_punctuation(")")
    return IntAttr(value)


def parse_trailing_attrs_and_region(parser: Parser, args: Sequence[Parser.Argument]):
    attrs = parser.parse_optional_attr_dict_with_keyword()
    region = parser.parse_region(args)
    return (attrs.data if attrs else {}), region


def memref_shape(attr: Attribute, what: str) -> tuple[int, ...]:
    """The static shape of a memref type, or a VerifyException naming `what`."""
    if not isinstance(attr, MemRefType):
        raise VerifyException(f"{what} must be a memref, got {attr}")
    shape = tuple(attr.get_shape())
    if any(d < 0 for d in shape):
        raise VerifyException(f"{what} must have a static shape, got {attr}")
    return shape


def dims_array(dims: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(dims))


def print_access(printer: Printer, memref: SSAValue, indices: Sequence[SSAValue]) -> None:
    """``%A[%i, %j]``"""
    printer.print_ssa_value(memref)
    printer.print_string("[")
    printer.print_list(indices, printer.print_ssa_value)
    printer.print_string("]")


def parse_access(parser: Parser):
    memref = parser.parse_unresolved_operand()
    indices = parser.parse_comma_separated_list(
        Parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )
    return memref, indices


def enclosing(op: Operation, kind: type[Operation]) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, kind):
        parent = parent.parent_op()
    return parent


def single_block_region(region: Region) -> None:
    if len(region.blocks) != 1:
        raise VerifyException("expected a region with exactly one block")


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
