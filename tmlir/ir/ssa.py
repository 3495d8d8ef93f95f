"""SSA checks xDSL 0.74 does not make, and where ops came from in the text.

xDSL's parser accepts forward references anywhere (``%y = graph.relu %y``) and its
verifier does not check dominance, so such IR used to reach the passes: a kernel reading
its own output, or a ``KeyError`` deep inside a pass. `verify_dominance` rejects it before
any pass runs: every operand must be defined by an op that properly dominates its use (an
earlier op of the same block, or of a block dominating it in the same region, or an
enclosing region's), or be an argument of a block that dominates the use.

`LocatingParser` is xDSL's parser recording the span of each op it parses, so an error
names ``file:line:col`` of the op in the input text and shows that line.
"""

from __future__ import annotations

import dataclasses
import re

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.irdl.dominance import DominanceInfo
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

from tmlir.ir.diagnostics import OpVerifyError

MAX_INTEGER_WIDTH = (1 << 24) - 1
"""MLIR's limit on the width of an integer type (``i<N>``, ``si<N>``, ``ui<N>``)."""
_INTEGER_TYPE = re.compile(rb'"(?:[^"\\]|\\.)*"|(?:(?<=\dx)|(?<![\w$.#@%^!-]))[su]?i(\d+)(?![\w$.-])')


class LocatingParser(Parser):
    """xDSL's parser, keeping the source span of every parsed op in `spans`, and refusing
    integer types wider than MLIR allows before xDSL tries to build them (it overflows,
    or works for minutes on ``array<i64294967296: ...>``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.spans: dict[Operation, Span] = {}
        text = self.lexer.input.content
        data = text.encode() if isinstance(text, str) else text
        for match in _INTEGER_TYPE.finditer(data):
            if match.group(1) is None:  # a string literal
                continue
            if len(match.group(1)) > 8 or int(match.group(1)) > MAX_INTEGER_WIDTH:
                start = len(data[:match.start()].decode(errors="replace")) if isinstance(text, str) \
                    else match.start()
                raise ParseError(Span(start, start + len(match.group(0)), self.lexer.input),
                                 f"integer type width {match.group(1).decode()} is larger than "
                                 f"{MAX_INTEGER_WIDTH}")

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        self.spans[op] = start
        return op


def describe(op: Operation, spans: dict[Operation, Span] | None, message: str) -> str:
    """`message` about `op`: ``file:line:col: message`` and the op's source line with a
    caret where the op was parsed from text, else the message and the op printed."""
    span = (spans or {}).get(op)
    if span is None:
        text = str(op).splitlines()[0] if op.regions else str(op)
        return f"{message}\n  {text}"
    location = span.get_location()
    line_start = span.input.get_start_of_line(span.start)
    line = span.input.content[line_start:span.input.get_end_of_line(span.start)]
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    return f"{location}: {message}\n  {line.rstrip()}\n  {' ' * (location.col - 1)}^"


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def _ancestor_in(block: Block, op: Operation) -> Operation | None:
    """The op of `block` that is `op` or contains it, if any."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


class _Dominance:
    """Dominance of blocks, computed once per multi-block region."""

    def __init__(self) -> None:
        self._regions: dict[Region, DominanceInfo] = {}

    def block_dominates(self, a: Block, b: Block) -> bool:
        region = a.parent
        if region is None or b.parent is not region:
            return False
        if len(region.blocks) == 1:
            return a is b
        if region not in self._regions:
            self._regions[region] = DominanceInfo(region)
        return self._regions[region].dominates(a, b)

    def defined_before(self, value: SSAValue, user: Operation) -> bool:
        """Whether `value` is available at `user` (properly dominates it)."""
        if isinstance(value, BlockArgument):
            home = value.block
            at: Operation | None = user
            while at is not None:  # some enclosing block of the user must be dominated by home
                block = at.parent_block()
                if block is not None and self.block_dominates(home, block):
                    return True
                at = at.parent_op()
            return False
        if not isinstance(value, OpResult):  # a forward reference the parser never bound
            return False
        definer = value.op
        home = definer.parent_block()
        if home is None:
            return False
        at = user
        while at is not None:
            block = at.parent_block()
            if block is home:
                return definer is not at and block.get_operation_index(definer) < block.get_operation_index(at)
            if block is not None and block.parent is home.parent and self.block_dominates(home, block):
                return True
            at = at.parent_op()
        return False


def verify_dominance(root: Operation, spans: dict[Operation, Span] | None = None) -> None:
    """Raise a VerifyException naming the first use of a value that its definition does
    not dominate (an op using its own result, a use before the definition, a value of
    another function)."""
    dominance = _Dominance()
    for op in root.walk():
        for index, operand in enumerate(op.operands):
            if not dominance.defined_before(operand, op):
                if isinstance(operand, OpResult) and operand.op is op:
                    why = f"uses its own result {_name(operand)}"
                elif isinstance(operand, OpResult) and _ancestor_in(operand.op.parent_block(), op) is not None:
                    why = f"uses {_name(operand)} before its definition"
                else:
                    why = f"uses {_name(operand)}, which is not defined where it is used"
                message = f"operand #{index} of '{op.name}' {why} (SSA values must be defined before use)"
                raise OpVerifyError(op, message, describe(op, spans, message))


def offset_spans(spans: dict[Operation, Span], line_offset: int) -> dict[Operation, Span]:
    """`spans` reporting lines `line_offset` further down (a chunk of a split input file)."""
    if not line_offset:
        return spans
    return {op: dataclasses.replace(span, line_offset=line_offset) for op, span in spans.items()}


def verify_module(module: ModuleOp, spans: dict[Operation, Span] | None = None,
                  line_offset: int = 0, dominance: bool = True) -> None:
    """Dominance (unless `dominance` is false), then each op's verifier, innermost first;
    an error is an `OpVerifyError` naming the op and, for parsed text, ``file:line:col``
    (lines counted from `line_offset`)."""
    if spans and line_offset:
        spans = offset_spans(spans, line_offset)
    if dominance:
        verify_dominance(module, spans)
    for op in module.walk(region_first=True):
        try:  # xDSL re-raises the op's own VerifyException, the reason its message
            op.verify(verify_nested_ops=False)
        except VerifyException as exc:
            reason = next((line for line in str(exc).strip().splitlines() if line.strip()),
                          "verification failed")
            message = f"'{op.name}' op does not verify: {reason}"
            raise OpVerifyError(op, message, describe(op, spans, message)) from None
