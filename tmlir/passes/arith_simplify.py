"""``arith-simplify``: the gpu-level cleanup -- folds, trivial control flow, dead code.

After ``convert-tm-to-gpu`` the kernels hold index arithmetic on constants (a task
mapping's single-worker atom turns a task index into a constant; a repeat of extent one is
a one-trip loop), and the CUDA C would show ``0 * 64 + 3`` and ``1 < 1``. This pass folds
all of it in **one forward walk** per kernel: ops are visited in program order, so an op's
operands are final when it is reached, and a greedy rewriter's iterations, trait lookups
and liveness fixpoints (xDSL's ``canonicalize`` spent 9 s of ResNet-50's 22 s compile on
them) are not needed. It does what ``canonicalize`` did here, with C's semantics:

* integer ops whose operands are all constants (``0 % 2`` → ``0``, ``1 < 1`` →
  ``false``), keeping results that fit the 32-bit ``int`` the C code computes in; float
  ``+ - *`` of two constants;
* units and zeros (``x + 0``, ``x * 1``, ``x * 0``, ``x / 1``, ``x % 1``, ``x ^ 0``,
  ``x >> 0``, ``x & 0``), a constant operand of a commutative op moved to the right,
  ``x == x``;
* folds with value ranges: ``x % c`` → ``x`` and ``x / c`` → ``0`` when ``x < c``, and
  ``x < c`` → ``true`` (``x >= c`` → ``false``) when that holds for every value of
  ``x`` -- ranges (tmlir.ir.ranges) come from constants, ``tmgpu.thread_id x``
  (below the kernel's block), ``scf.for`` induction variables with constant bounds and
  ``+ * / %`` of such values, all non-negative;
* ``andi``/``ori`` with a constant operand and ``select`` on a constant condition (or of
  two equal values);
* ``scf.for`` of zero trips erased and of one trip inlined, ``scf.if`` on a constant
  condition replaced by the branch taken; constants moved out of loops (``cse`` then merges
  them);
* merges identical ``arith.remui`` ops where the first dominates the second (what
  ``cse`` would do if the op were marked pure), then erases every op whose results are
  unused and that has no other effect.

Constants lose their names: after folding (and ``cse`` merging equal constants) a
constant named ``%kt`` or ``%stage`` would be a lie. The CUDA C of the example and
full-size models is byte-identical to what ``canonicalize, arith-simplify, canonicalize``
gave before this pass took over their work.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import would_be_trivially_dead

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


def _shift(f: Callable[[int, int], int]) -> Callable[[int, int], int | None]:
    """A shift of a non-negative value by less than 32 bits (C leaves wider ones undefined)."""
    return lambda a, b: f(a, b) if a >= 0 and 0 <= b < 32 else None


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
    arith.ShLIOp: _shift(operator.lshift),
    arith.ShRUIOp: _shift(operator.rshift),
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


def _replace(op: Operation, value: SSAValue) -> None:
    """Replace `op`'s single result by `value` and erase `op`."""
    op.results[0].replace_all_uses_with(value)
    op.detach()
    op.erase()


def _replace_by_constant(op: Operation, value: int | float) -> None:
    """Replace `op`'s single result by an ``arith.constant`` of `value` (of the result's
    type) inserted before it."""
    type_ = op.results[0].type
    if isinstance(type_, IntegerType) and type_.width.data == 1:
        value = 1 if value else 0
    attr = FloatAttr(value, type_) if isinstance(value, float) else IntegerAttr(value, type_)
    new = arith.ConstantOp(attr)
    parent = op.parent_block()
    assert parent is not None
    parent.insert_op_before(new, op)
    _replace(op, new.result)


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
                    _replace(op, known[key])
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


COMMUTATIVE = (arith.AddiOp, arith.MuliOp, arith.AndIOp, arith.OrIOp, arith.XOrIOp,
               arith.MinSIOp, arith.MaxSIOp, arith.MinUIOp, arith.MaxUIOp)
"""Integer ops whose constant operand goes to the right (as ``canonicalize`` puts it)."""

RIGHT_UNIT: dict[type[Operation], int] = {
    arith.AddiOp: 0, arith.SubiOp: 0, arith.MuliOp: 1, arith.DivUIOp: 1, arith.DivSIOp: 1,
    arith.OrIOp: 0, arith.XOrIOp: 0, arith.ShLIOp: 0, arith.ShRUIOp: 0, arith.ShRSIOp: 0,
}
"""``x op c`` is ``x`` for these constants ``c``."""

FLOAT_BINARY: dict[type[Operation], Callable[[float, float], float]] = {
    arith.AddfOp: operator.add, arith.SubfOp: operator.sub, arith.MulfOp: operator.mul,
}
"""Float ops of two constants folded (division is left to the C compiler)."""


def fold_block(block: Block) -> None:
    """Fold every op of `block` in one forward walk, each once its operands are final.

    Ops are visited in program order, so an op's operands are already folded when it is
    reached: one walk reaches what a greedy rewriter reaches by iterating, without its
    per-op cost. The body of an inlined loop or branch is walked where it lands.
    """
    op = block.first_op
    while op is not None:
        op = _fold_op(op)


def _fold_op(op: Operation) -> Operation | None:
    """Fold `op`; return the next op to visit."""
    following = op.next_op
    if isinstance(op, scf.ForOp | scf.IfOp) and (inlined := _control(op)) is not _KEEP:
        return inlined
    for region in op.regions:
        for block in region.blocks:
            fold_block(block)
    if isinstance(op, arith.ConstantOp):
        _hoist(op)
        return following
    replacement = _fold(op)
    if isinstance(replacement, SSAValue):
        _replace(op, replacement)
    elif replacement is not None:
        _replace_by_constant(op, replacement)
    return following


_KEEP = object()
"""`_control`'s answer for a loop or branch that stays."""


def _control(op: scf.ForOp | scf.IfOp) -> Operation | None | object:
    """Inline a one-trip loop or a branch on a constant (erase a zero-trip loop or an
    untaken branch); return the first op to visit next, or _KEEP to keep `op`."""
    if isinstance(op, scf.IfOp):
        cond = constant(op.cond)
        if cond is None:
            return _KEEP
        region = op.true_region if cond else op.false_region
        return _inline(op, region.block if region.blocks else None, ())
    lower, upper, step = constant(op.lb), constant(op.ub), constant(op.step)
    if lower is None or upper is None or op.iter_args:
        return _KEEP
    if upper <= lower:
        return _inline(op, None, ())
    if step is None or step < upper - lower:
        return _KEEP
    return _inline(op, op.body.block, (op.lb,))


def _inline(op: Operation, block: Block | None, args: tuple[SSAValue, ...]) -> Operation | None:
    """Replace `op` by the ops of `block` (its args bound to `args`, its yield giving
    `op`'s results), or by nothing; return the first op to visit next."""
    following = op.next_op
    parent = op.parent_block()
    assert parent is not None
    first: Operation | None = None
    if block is not None:
        for arg, value in zip(block.args, args):
            arg.replace_all_uses_with(value)
        terminator = block.last_op
        yielded = list(terminator.operands) if isinstance(terminator, scf.YieldOp) else []
        for result, value in zip(op.results, yielded):
            result.replace_all_uses_with(value)
        for inner in list(block.ops):
            if inner is terminator and isinstance(inner, scf.YieldOp):
                break
            inner.detach()
            parent.insert_op_before(inner, op)
            first = first or inner
    op.detach()
    op.erase()
    return first or following


def _fold(op: Operation) -> SSAValue | int | float | None:
    """A value, or the constant, to replace `op`'s single result with; else None."""
    if isinstance(op, arith.CmpiOp):
        return _fold_compare(op)
    if isinstance(op, arith.SelectOp):
        if (cond := constant(op.cond)) is not None:
            return op.lhs if cond else op.rhs
        return op.lhs if op.lhs == op.rhs else None
    if type(op) in FLOAT_BINARY:
        return _fold_float(op)
    fold = BINARY.get(type(op))
    if fold is None or not isinstance(op.results[0].type, IndexType | IntegerType):
        return None
    lhs, rhs = constant(op.operands[0]), constant(op.operands[1])
    if lhs is not None and rhs is not None:
        result = fold(lhs, rhs)
        return result if result is not None and _fits(result, op.results[0].type) else None
    if lhs is not None and isinstance(op, COMMUTATIVE):  # the constant goes right
        op.operands = [op.operands[1], op.operands[0]]
        lhs, rhs = rhs, lhs
    return _fold_one_constant(op, rhs)


def _hoist(constant_op: arith.ConstantOp) -> None:
    """Move a constant out of the loops it sits in directly (not out of an ``scf.if``), so
    that ``cse`` merges it with its equals outside."""
    loop = constant_op.parent_op()
    if not isinstance(loop, scf.ForOp):
        return
    while isinstance(outer := loop.parent_op(), scf.ForOp):
        loop = outer
    constant_op.detach()
    parent = loop.parent_block()
    assert parent is not None
    parent.insert_op_before(constant_op, loop)


def _fold_compare(op: arith.CmpiOp) -> int | None:
    predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    lhs, rhs = constant(op.lhs), constant(op.rhs)
    if lhs is not None and rhs is not None:
        if predicate[0] == "u" and min(lhs, rhs) < 0:
            return None
        return int(COMPARE[predicate](lhs, rhs))
    if op.lhs == op.rhs:
        return int(predicate in ("eq", "sle", "sge", "ule", "uge"))
    bound = upper_bound(op.lhs)
    if rhs is None or bound is None or bound > rhs:
        return None
    if predicate in ("slt", "ult", "ne"):
        return 1
    if predicate in ("sge", "uge", "eq") and rhs >= 0:
        return 0
    return None


def _fold_one_constant(op: Operation, rhs: int | None) -> SSAValue | int | None:
    """``x op c``: units, zeros, logic with a constant, and range-decided ``/`` and ``%``."""
    lhs = op.operands[0]
    if rhs is None:
        return None
    if RIGHT_UNIT.get(type(op)) == rhs:
        return lhs
    if isinstance(op, arith.MuliOp | arith.AndIOp) and rhs == 0:
        return 0
    if isinstance(op, arith.AndIOp | arith.OrIOp) and op.results[0].type == IntegerType(1):
        absorbing = 0 if isinstance(op, arith.AndIOp) else 1
        return absorbing if bool(rhs) == bool(absorbing) else lhs
    if isinstance(op, arith.RemUIOp | arith.DivUIOp):
        bound = upper_bound(lhs)
        if rhs == 1 and isinstance(op, arith.RemUIOp):
            return 0
        if bound is not None and rhs >= 1 and bound <= rhs:
            return lhs if isinstance(op, arith.RemUIOp) else 0
    return None


def _fold_float(op: Operation) -> float | None:
    lhs, rhs = op.operands[0].owner, op.operands[1].owner
    if not (isinstance(lhs, arith.ConstantOp) and isinstance(rhs, arith.ConstantOp)
            and isinstance(lhs.value, FloatAttr) and isinstance(rhs.value, FloatAttr)):
        return None
    return FLOAT_BINARY[type(op)](lhs.value.value.data, rhs.value.value.data)


def _erasable(op: Operation, known: dict[type[Operation], bool]) -> bool:
    """`op` has no effect but its results (so it can go once they are unused)."""
    if op.regions:
        return isinstance(op, scf.ForOp | scf.IfOp) and all(
            _erasable(inner, known) or isinstance(inner, scf.YieldOp)
            for region in op.regions for inner in region.walk())
    kind = type(op)
    if kind not in known:
        known[kind] = would_be_trivially_dead(op)
    return known[kind]


def erase_dead(root: Operation) -> None:
    """Erase every op whose results are unused and that has no other effect (users
    first: a reverse walk sees them before the ops they read)."""
    known: dict[type[Operation], bool] = {}
    for op in list(root.walk(reverse=True)):
        if op.parent is None or isinstance(op, ModuleOp) or any(r.uses for r in op.results):
            continue
        if _erasable(op, known):
            op.detach()
            op.erase()


@dataclass(frozen=True)
class ArithSimplify(ModulePass):
    """Fold constant index arithmetic, trivial loops and branches; erase dead code.

    Folds use constants and value ranges, and merge duplicate remainders (see the module
    docstring)."""

    name = "arith-simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_block(op.body.block)
        merge_remainders(op)
        erase_dead(op)
        for constant_op in op.walk():
            if isinstance(constant_op, arith.ConstantOp):
                constant_op.result.name_hint = None
