"""The attributes of the ``tm`` dialect and their text syntax.

``#tm.map<spatial(4, 8, ranks=[1, 0]) * repeat(2, 2)>`` carries a task mapping
(:class:`tmlir.mapping.TaskMapping`) and ``#tm.layout<row_major(2, 2) * column_major(4, 8,
pad=1)>`` a data layout (:class:`tmlir.layout.DataLayout`). Each stores its normalized text
as one ``StringAttr`` parameter; the parsers here read the same expressions inline in
``tm.for_task ... in <mapping>`` and ``tm.alloc ... layout(<layout>)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tmlir.layout import KINDS, DataLayout, LayoutError, make_layout_atom, parse_layout
from tmlir.mapping import (
    KEYWORDS,
    MappingAtom,
    MappingError,
    TaskMapping,
    make_atom,
    parse_mapping,
)

__all__ = ["DataLayoutAttr", "TaskMappingAttr", "parse_mapping_expr"]


def parse_mapping_expr(parser: AttrParser) -> TaskMapping:
    """``spatial(4, 8, ranks=[1, 0]) * repeat(2, 2, unroll=[true, false])`` with the
    parser's tokens; a malformed atom is a parse error at that atom."""
    start = parser.pos
    atoms = [_parse_mapping_atom(parser)]
    while parser.parse_optional_punctuation("*") is not None:
        atoms.append(_parse_mapping_atom(parser))
    try:
        return TaskMapping(tuple(atoms))
    except MappingError as exc:
        parser.raise_error(str(exc), start, parser.pos)


def _parse_mapping_atom(parser: AttrParser) -> MappingAtom:
    """``spatial(4, 8, ranks=[1, 0])`` or ``repeat(2, 2, ranks=[..], unroll=[true, false])``."""
    start = parser.pos
    kind = parser.parse_keyword_in(("spatial", "repeat"), " in a task mapping")
    shape: list[int] = []
    keywords: dict[str, list] = {}

    def parse_argument() -> None:
        key_start = parser.pos
        if (key := parser.parse_optional_identifier()) is None:
            if keywords:
                parser.raise_error("extents must come before keywords in a task mapping")
            shape.append(parser.parse_integer(allow_boolean=False))
            return
        if key not in KEYWORDS:
            parser.raise_error(f"unknown keyword '{key}' in {kind}(...), expected "
                               f"{' or '.join(KEYWORDS)}", key_start, parser.pos)
        if key in keywords:
            parser.raise_error(f"'{key}' given twice in {kind}(...)", key_start, parser.pos)
        parser.parse_punctuation("=")
        element = (
            (lambda: parser.parse_integer(allow_boolean=False)) if key == "ranks"
            else (lambda: parser.parse_boolean(" (unroll flag)"))
        )
        keywords[key] = parser.parse_comma_separated_list(AttrParser.Delimiter.SQUARE, element)

    parser.parse_comma_separated_list(AttrParser.Delimiter.PAREN, parse_argument)
    try:
        return make_atom(kind, shape, keywords.get("ranks"), keywords.get("unroll"))
    except MappingError as exc:
        parser.raise_error(str(exc), start, parser.pos)


@irdl_attr_definition
class TaskMappingAttr(ParametrizedAttribute):
    """``#tm.map<spatial(4, 8, ranks=[1, 0]) * repeat(2, 2)>``: a task mapping (see
    tmlir.mapping); its parameter is the normalized text, keywords at their defaults left
    out."""

    name = "tm.map"
    expr: StringAttr

    def __init__(self, mapping: TaskMapping | str) -> None:
        super().__init__(StringAttr(str(mapping)))

    @property
    def mapping(self) -> TaskMapping:
        return parse_mapping(self.expr.data)

    def verify(self) -> None:
        try:
            parse_mapping(self.expr.data)
        except MappingError as exc:
            raise VerifyException(f"invalid task mapping '{self.expr.data}': {exc}") from None

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            mapping = parse_mapping_expr(parser)
        return (StringAttr(str(mapping)),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.expr.data}>")


@irdl_attr_definition
class DataLayoutAttr(ParametrizedAttribute):
    """``#tm.layout<row_major(2, 2) * column_major(4, 8, pad=1)>``: a data layout
    (see tmlir.layout)."""

    name = "tm.layout"
    expr: StringAttr

    def __init__(self, layout: DataLayout | str) -> None:
        super().__init__(StringAttr(str(layout)))

    @property
    def layout(self) -> DataLayout:
        return parse_layout(self.expr.data)

    def verify(self) -> None:
        try:
            parse_layout(self.expr.data)
        except LayoutError as exc:
            raise VerifyException(f"invalid data layout '{self.expr.data}': {exc}") from None

    @staticmethod
    def parse_expr(parser: AttrParser) -> DataLayout:
        """``row_major(8, 64, pad=1) * column_major(2, 2)`` with the parser's tokens."""

        def argument() -> int | tuple[str, int]:
            if parser.parse_optional_keyword("pad"):
                parser.parse_punctuation("=")
                return ("pad", parser.parse_integer(allow_boolean=False))
            return parser.parse_integer(allow_boolean=False)

        start, atoms = parser.pos, []
        try:
            while True:
                kind = parser.parse_keyword_in(KINDS, " in a data layout")
                args = parser.parse_comma_separated_list(AttrParser.Delimiter.PAREN, argument)
                atoms.append(make_layout_atom(kind, args))
                if parser.parse_optional_punctuation("*") is None:
                    return DataLayout(tuple(atoms))
        except LayoutError as exc:
            parser.raise_error(str(exc), start, parser.pos)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            layout = cls.parse_expr(parser)
        return (StringAttr(str(layout)),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.expr.data}>")
