"""``arith-simplify``: fold the integer arithmetic that ``canonicalize`` leaves behind.

xDSL 0.74's ``canonicalize`` folds ``addi``/``muli``/``subi`` of constants but not
``cmpi``, ``divui``, ``remui`` or ``divsi``/``remsi``, and ``arith.remui`` has no traits,
so ``cse`` never merges two ``tid % 8``. Once a one-iteration ``scf.for`` is inlined,
the CUDA C then shows ``1 < 1`` and ``0 % 2``. This pass, run after ``canonicalize``:

* folds integer ops whose operands are all constants (``0 % 2`` → ``0``, ``1 < 1`` →
  ``false``), keeping results that fit the 32-bit ``int`` the C code computes in;
* folds with value ranges: ``x % c`` → ``x`` and ``x / c`` → ``0`` when ``x < c``, and
  ``x < c`` → ``true`` (``x >= c`` → ``false``) when that holds for every value of
  ``x`` -- ranges (tmlir.ir.ranges) come from constants, ``tmgpu.thread_id x``
  (below the kernel's block), ``scf.for`` induction variables with constant bounds and
  ``+ * / %`` of such values, all non-negative;
* ``andi``/``ori`` with a constant operand and ``select`` on a constant condition;
* merges identical ``arith.remui`` ops where the first dominates the second (what
  ``cse`` would do if the op were marked pure) and erases unused ones.

Constants lose their names: after folding (and ``cse`` merging equal constants) a
constant named ``%kt`` or ``%stage`` would be a lie. ``scf.if`` on a now-constant
condition is left to the ``canonicalize`` that follows.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from tmlir.dialects import tmgpu
from tmlir.ir.ranges import constant, upper_bound

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
"""Index arithmetic is emitted as C ``int``; folds that leave this range are not done."""


def _c_div(a: int, b: int) -> int:
    """C's truncating division."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _c_rem(a: int, b: int) -> int:
    return a - b * _c_div(a, b)


def _unsigned(f: Callable[[int, int], int]) -> Callable[[int, int], int | None]:
    return lambda a, b: f(a, b) if a >= 0 and b > 0 else None


def _signed(f: Callable[[int, int], int]) -> Callable[[int, int], int | None]:
    return lambda a, b: f(a, b) if b != 0 else None


BINARY: dict[type[Operation], Callable[[int, int], int | None]] = {
    arith.AddiOp: operator.add,
    arith.SubiOp: operator.sub,
    arith.MuliOp: operator.mul,
    arith.DivUIOp: _unsigned(operator.floordiv),
    arith.RemUIOp: _unsigned(operator.mod),
    arith.DivSIOp: _signed(_c_div),
    arith.RemSIOp: _signed(_c_rem),
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.MinUIOp: _unsigned(min),
    arith.MaxUIOp: _unsigned(max),
    arith.AndIOp: operator.and_,
    arith.OrIOp: operator.or_,
    arith.XOrIOp: operator.xor,
}
"""Integer ops folded when both operands are constants, with their C semantics."""

COMPARE: dict[str, Callable[[int, int], bool]] = {
    "eq": operator.eq, "ne": operator.ne,
    "slt": operator.lt, "sle": operator.le, "sgt": operator.gt, "sge": operator.ge,
    "ult": operator.lt, "ule": operator.le, "ugt": operator.gt, "uge": operator.ge,
}


def _fits(value: int, type_) -> bool:
    if isinstance(type_, IndexType):
        return INT_MIN <= value <= INT_MAX
    assert isinstance(type_, IntegerType)
    width = type_.width.data
    return width == 1 or -(2 ** (width - 1)) <= value < 2**width


def _replace_by_constant(rewriter: PatternRewriter, op: Operation, value: int) -> None:
    type_ = op.results[0].type
    if isinstance(type_, IntegerType) and type_.width.data == 1:
        value = 1 if value else 0
    rewriter.replace(op, arith.ConstantOp(IntegerAttr(value, type_)))


class FoldConstantOperands(RewritePattern):
    """An integer op of constants becomes a constant."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, arith.CmpiOp):
            lhs, rhs = constant(op.lhs), constant(op.rhs)
            predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            if lhs is None or rhs is None or (predicate[0] == "u" and min(lhs, rhs) < 0):
                return
            _replace_by_constant(rewriter, op, COMPARE[predicate](lhs, rhs))
            return
        fold = BINARY.get(type(op))
        if fold is None or not isinstance(op.results[0].type, IndexType | IntegerType):
            return
        lhs, rhs = constant(op.operands[0]), constant(op.operands[1])
        if lhs is None or rhs is None:
            return
        result = fold(lhs, rhs)
        if result is not None and _fits(result, op.results[0].type):
            _replace_by_constant(rewriter, op, result)


class FoldByRange(RewritePattern):
    """``x % c``, ``x / c`` and ``x < c`` decided by the range of ``x``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, arith.RemUIOp | arith.DivUIOp):
            divisor, bound = constant(op.rhs), upper_bound(op.lhs)
            if divisor is None or bound is None or bound > divisor:
                return
            if isinstance(op, arith.RemUIOp):
                rewriter.replace(op, [], [op.lhs])
            else:
                _replace_by_constant(rewriter, op, 0)
        elif isinstance(op, arith.CmpiOp):
            predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            limit, bound = constant(op.rhs), upper_bound(op.lhs)
            if limit is None or bound is None or bound > limit:
                return
            if predicate in ("slt", "ult", "ne"):
                _replace_by_constant(rewriter, op, 1)
            elif predicate in ("sge", "uge", "eq") and limit >= 0:
                _replace_by_constant(rewriter, op, 0)


class FoldLogic(RewritePattern):
    """``a && true`` → ``a``, ``a && false`` → ``false`` (and ``||``); constant selects."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, arith.SelectOp):
            if (cond := constant(op.cond)) is not None:
                rewriter.replace(op, [], [op.lhs if cond else op.rhs])
            return
        if not isinstance(op, arith.AndIOp | arith.OrIOp):
            return
        if op.result.type != IntegerType(1):
            return
        absorbing = 0 if isinstance(op, arith.AndIOp) else 1
        for this, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            value = constant(this)
            if value is None:
                continue
            if bool(value) == bool(absorbing):
                _replace_by_constant(rewriter, op, absorbing)
            else:
                rewriter.replace(op, [], [other])
            return


def merge_remainders(root: Operation) -> None:
    """Replace each ``arith.remui`` by an identical one that dominates it; erase unused ones.

    A scoped walk like ``cse``'s: a region sees the ops of the blocks that enclose it.
    """

    def walk(block: Block, known: dict[tuple[SSAValue, SSAValue | int], SSAValue]) -> None:
        for op in list(block.ops):
            if isinstance(op, arith.RemUIOp):
                divisor = constant(op.rhs)
                key = (op.lhs, op.rhs if divisor is None else divisor)
                if key in known:
                    op.result.replace_all_uses_with(known[key])
                    op.detach()
                    op.erase()
                    continue
                known[key] = op.result
            if not isinstance(op, tmgpu.KernelOp):
                for region in op.regions:
                    for inner in region.blocks:
                        walk(inner, dict(known))
            else:
                walk(op.body.block, {})

    for region in root.regions:
        for block in region.blocks:
            walk(block, {})
    for op in list(root.walk(reverse=True)):
        if isinstance(op, arith.RemUIOp) and not op.result.uses:
            op.detach()
            op.erase()


@dataclass(frozen=True)
class ArithSimplify(ModulePass):
    """Fold constant and range-decided integer arithmetic; merge duplicate remainders."""

    name = "arith-simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        merge_remainders(op)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FoldConstantOperands(), FoldByRange(), FoldLogic()]),
        ).rewrite_module(op)
        merge_remainders(op)
        for constant_op in op.walk():
            if isinstance(constant_op, arith.ConstantOp):
                constant_op.result.name_hint = None

