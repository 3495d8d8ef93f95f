"""SSA dominance and source locations (tmlir.ir.ssa): checks xDSL 0.74 does not make."""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import VerifyException

from tmlir.ir.ssa import LocatingParser, verify_dominance, verify_module
from tmlir.registry import make_context


def _parse(text: str):
    parser = LocatingParser(make_context(), text, "in.mlir")
    return parser.parse_module(), parser.spans


GOOD = """
func.func @f(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %a = graph.relu %x : tensor<4xf32>
  %b = scf.if %c -> (tensor<4xf32>) {
    %in = graph.relu %a : tensor<4xf32>
    scf.yield %in : tensor<4xf32>
  } else {
    scf.yield %a : tensor<4xf32>
  }
  func.return %b : tensor<4xf32>
}
"""

BRANCHES = """
func.func @g(%c: i1, %x: i32) -> i32 {
  cf.cond_br %c, ^left, ^right
^left:
  %one = arith.constant 1 : i32
  cf.br ^join(%one : i32)
^right:
  cf.br ^join(%x : i32)
^join(%v: i32):
  %w = arith.addi %v, %x : i32
  func.return %w : i32
}
"""


def test_valid_ir_with_nested_regions_and_blocks_passes() -> None:
    for text in (GOOD, BRANCHES):
        module, spans = _parse(text)
        verify_module(module, spans)


def test_use_of_a_value_from_a_block_that_does_not_dominate_is_an_error() -> None:
    text = BRANCHES.replace("%w = arith.addi %v, %x", "%w = arith.addi %one, %x")
    module, spans = _parse(text)
    with pytest.raises(VerifyException, match=r"in.mlir:10:3: operand #0 of 'arith.addi' uses %one, "
                                              r"which is not defined where it is used"):
        verify_dominance(module, spans)


def test_own_result_and_use_before_def_name_the_line() -> None:
    module, spans = _parse(GOOD.replace("%a = graph.relu %x", "%a = graph.relu %a"))
    with pytest.raises(VerifyException, match=r"^in.mlir:3:3: operand #0 of 'graph.relu' uses its own result %a"):
        verify_module(module, spans)
    module, spans = _parse(GOOD.replace("%in = graph.relu %a", "%in = graph.relu %b"))
    with pytest.raises(VerifyException, match=r"in.mlir:5:5: .*uses %b before its definition"):
        verify_module(module, spans)


def test_without_spans_the_op_is_printed() -> None:
    module, _ = _parse(GOOD.replace("%a = graph.relu %x", "%a = graph.relu %a"))
    with pytest.raises(VerifyException, match=r"uses its own result %a .*\n  %a = graph.relu %a"):
        verify_dominance(module)


def test_split_chunks_count_lines_from_their_offset() -> None:
    module, spans = _parse("func.func @f(%x: tensor<4xf32>) {\n  %y = graph.relu %y : tensor<4xf32>\n"
                           "  func.return\n}\n")
    with pytest.raises(VerifyException, match=r"^in.mlir:12:3:"):
        verify_module(module, spans, line_offset=10)


@pytest.mark.parametrize("text, width", [
    ("func.func @f(%x: tensor<4xi999999999>) {\n  func.return\n}\n", "999999999"),
    ('"test.op"() {a = array<i64294967296: 1, 2, 0>} : () -> ()\n', "64294967296"),
    ('"test.op"() {a = 1 : ui16777216} : () -> ()\n', "16777216"),
])
def test_integer_widths_past_mlirs_limit_are_a_parse_error(text: str, width: str) -> None:
    from xdsl.utils.exceptions import ParseError

    with pytest.raises(ParseError, match=f"integer type width {width} is larger than 16777215"):
        _parse(text)


def test_widths_within_the_limit_and_strings_parse() -> None:
    module, _ = _parse('"test.op"() {a = 1 : i16777215, s = "i999999999", b = 2 : si8} : () -> ()\n')
    assert "i16777215" in str(module)
