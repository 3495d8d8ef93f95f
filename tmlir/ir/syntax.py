"""Printing and parsing helpers that the kernel-level dialects (tm, tmgpu) share: kernel
headers, ``keyword(n)``, trailing attributes with a region, ``%buffer[%i, %j]`` accesses."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntAttr,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer


def print_kernel_header(printer: Printer, op: Operation, sym_name: str, launch: str,
                        after_launch: Callable[[], None] | None = None) -> None:
    """``@name(%a: memref<...>, ...) <launch> attributes {...} {``-style header + body;
    `after_launch` prints what follows the launch sizes (a kernel's scratch kinds)."""
    printer.print_string(" ")
    printer.print_symbol_name(sym_name)
    printer.print_string("(")
    printer.print_list(op.regions[0].block.args, printer.print_block_argument)
    printer.print_string(f") {launch}")
    if after_launch is not None:
        after_launch()
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


