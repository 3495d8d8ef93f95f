"""The attributes of the ``tm`` dialect and their text syntax.

``#tm.map<spatial(4, 8, ranks=[1, 0]) * repeat(2, 2)>`` carries a task mapping
(:class:`tmlir.mapping.TaskMapping`) and ``#tm.layout<row_major(2, 2) * column_major(4, 8,
pad=1)>`` a data layout (:class:`tmlir.layout.DataLayout`). Each is a ``Data`` attribute
holding the object itself (built once, when parsed or constructed) and prints its
normalized text. One grammar per expression, in tmlir.mapping (`parse_mapping_expr`) and
tmlir.layout (`parse_layout_expr`), reads the attributes, the same expressions inline in
``tm.for_task ... in <mapping>`` and ``tm.alloc ... layout(<layout>)``, and the text
given to `parse_mapping`/`parse_layout`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Data
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tmlir.layout import DataLayout, LayoutError, parse_layout, parse_layout_expr
from tmlir.mapping import MappingError, TaskMapping, parse_mapping, parse_mapping_expr

__all__ = ["DataLayoutAttr", "TaskMappingAttr"]


@irdl_attr_definition
class TaskMappingAttr(Data[TaskMapping]):
    """``#tm.map<spatial(4, 8, ranks=[1, 0]) * repeat(2, 2)>``: a task mapping (see
    tmlir.mapping), held as the `TaskMapping` itself; printed in its normalized text,
    keywords at their defaults left out."""

    name = "tm.map"

    def __init__(self, mapping: TaskMapping | str) -> None:
        if isinstance(mapping, str):
            try:
                mapping = parse_mapping(mapping)
            except MappingError as exc:
                raise VerifyException(f"invalid task mapping '{mapping}': {exc}") from None
        super().__init__(mapping)

    @property
    def mapping(self) -> TaskMapping:
        return self.data

    @property
    def expr(self) -> StringAttr:
        """The normalized text (what the attribute prints between ``<`` and ``>``)."""
        return StringAttr(str(self.data))

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> TaskMapping:
        with parser.in_angle_brackets():
            return parse_mapping_expr(parser)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")


@irdl_attr_definition
class DataLayoutAttr(Data[DataLayout]):
    """``#tm.layout<row_major(2, 2) * column_major(4, 8, pad=1)>``: a data layout
    (see tmlir.layout), held as the `DataLayout` itself."""

    name = "tm.layout"

    def __init__(self, layout: DataLayout | str) -> None:
        if isinstance(layout, str):
            try:
                layout = parse_layout(layout)
            except LayoutError as exc:
                raise VerifyException(f"invalid data layout '{layout}': {exc}") from None
        super().__init__(layout)

    @property
    def layout(self) -> DataLayout:
        return self.data

    @property
    def expr(self) -> StringAttr:
        """The normalized text (what the attribute prints between ``<`` and ``>``)."""
        return StringAttr(str(self.data))

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> DataLayout:
        with parser.in_angle_brackets():
            return parse_layout_expr(parser)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")
