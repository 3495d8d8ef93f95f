"""``graph.fused``: a fusion group, the ops that become one kernel.

``graph-partition`` groups each anchor (an op with a schedule template of its own: a
matmul, a convolution, a reduction, ...) with the injective ops around it that its kernel
computes on the fly: a *prologue* on its inputs and an *epilogue* on its output. The group
is a region; its ops read values from outside it directly (the region is not isolated),
and ``graph.yield`` names what leaves it::

    %r = graph.fused -> tensor<1x64x56x56xf32> {
      %c = graph.conv %x, %w, %b {...} : (...) -> tensor<1x64x56x56xf32>
      %s = graph.add %c, %res : (...) -> tensor<1x64x56x56xf32>
      %y = graph.relu %s : tensor<1x64x56x56xf32>
      graph.yield %y : tensor<1x64x56x56xf32>
    }

``convert-graph-to-tm`` builds the anchor's kernel with its template and then rewrites the
kernel's loads and stores to compute the rest of the group (see ``docs/fusion.md``).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator
from xdsl.utils.exceptions import VerifyException

__all__ = [
    "FusedOp",
    "YieldOp",
]


@irdl_op_definition
class FusedOp(IRDLOperation):
    """A fusion group: its region's ops become one kernel; its results are the yielded values."""

    name = "graph.fused"
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    def __init__(self, ops: Sequence[Operation], yielded: Sequence[SSAValue]) -> None:
        """A group of `ops` (detached, in order) yielding `yielded` (results of `ops`)."""
        block = Block()
        block.add_ops(ops)
        block.add_op(YieldOp(yielded))
        super().__init__(result_types=[[v.type for v in yielded]], regions=[Region(block)])

    @property
    def members(self) -> list[Operation]:
        """The group's ops, without the terminator."""
        return [op for op in self.body.block.ops if not isinstance(op, YieldOp)]

    @property
    def yielded(self) -> tuple[SSAValue, ...]:
        terminator = self.body.block.last_op
        assert isinstance(terminator, YieldOp)
        return tuple(terminator.values)

    def verify_(self) -> None:
        terminator = self.body.block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("'graph.fused' must end with 'graph.yield'")
        yielded = [v.type for v in terminator.values]
        if yielded != [r.type for r in self.outputs]:
            raise VerifyException(
                f"'graph.fused' yields {_types(yielded)} but has results "
                f"{_types([r.type for r in self.outputs])}")
        if not self.members:
            raise VerifyException("'graph.fused' must hold at least one op")
        for op in self.members:
            if op.dialect_name() != "graph" or isinstance(op, FusedOp):
                raise VerifyException(
                    f"'graph.fused' may hold graph ops only (no nested groups), got '{op.name}'")
            if op.name == "graph.weight":
                raise VerifyException("'graph.fused' must not hold 'graph.weight' (weights "
                                      "stay outside and are read by the group)")

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" -> ")
        printer.print_list([r.type for r in self.outputs], printer.print_attribute)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> FusedOp:
        attrs = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation("->")
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        region = parser.parse_region()
        return cls.create(result_types=types, regions=[region],
                          attributes=attrs.data if attrs else {})


def _types(types: Sequence[Attribute]) -> str:
    return ", ".join(map(str, types)) or "nothing"


@irdl_op_definition
class YieldOp(IRDLOperation):
    """``graph.yield %v : tensor<...>``: the values a ``graph.fused`` group gives out."""

    name = "graph.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(FusedOp))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values: Sequence[SSAValue]) -> None:
        super().__init__(operands=[values])

