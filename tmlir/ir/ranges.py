"""Integer ranges of index values: `upper_bound`, an exclusive upper bound of a value
known to be non-negative.

One analysis for every user: ``tm.for_task`` checks that its worker id reaches every
worker of its mapping, ``tm-lower-mappings`` leaves out the ``%w < workers`` guard when the
worker id cannot exceed it, and ``arith-simplify`` decides ``x % c``, ``x / c`` and
``x < c``. Bounds come from constants, ops with the `HasUpperBound` trait (the worker
ids: ``tm.thread_id`` is below the kernel's block, ``tm.block_id`` below its grid),
``scf.for`` induction variables with constant non-negative bounds, and ``+ * / %``
(unsigned division and remainder) of such values::

    %tid = tm.thread_id            // below 128 in a kernel of block(128)
    %w = arith.divui %tid, %c32    // below 4
    %l = arith.remui %tid, %c32    // below 32
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import OpTrait

MAX_DEPTH = 16
"""How deep `upper_bound` follows operands before giving up (None)."""


@dataclass(frozen=True)
class HasUpperBound(OpTrait):
    """An op whose single result is a non-negative index with a bound the op knows."""

    @abstractmethod
    def upper_bound(self, op: Operation) -> int | None:
        """An exclusive upper bound of `op`'s result, or None."""


def constant(value: SSAValue) -> int | None:
    """The value of an integer ``arith.constant``, else None."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def upper_bound(value: SSAValue, depth: int = 0) -> int | None:
    """An exclusive upper bound of a value known to be non-negative, else None."""
    if depth > MAX_DEPTH:
        return None
    op = value.owner
    if (c := constant(value)) is not None:
        return c + 1 if c >= 0 else None
    if isinstance(op, Block):
        for_op = op.parent_op()
        if isinstance(for_op, scf.ForOp) and value is op.args[0]:
            lower = constant(for_op.lb)
            return constant(for_op.ub) if lower is not None and lower >= 0 else None
        return None
    if (trait := op.get_trait(HasUpperBound)) is not None:
        return trait.upper_bound(op)
    if not isinstance(op, arith.AddiOp | arith.MuliOp | arith.DivUIOp | arith.RemUIOp):
        return None
    lhs, rhs = upper_bound(op.lhs, depth + 1), upper_bound(op.rhs, depth + 1)
    divisor = constant(op.rhs)
    if isinstance(op, arith.RemUIOp):
        if divisor is None or divisor < 1:
            return None
        return divisor if lhs is None else min(divisor, lhs)
    if lhs is None or rhs is None:
        return None
    if isinstance(op, arith.AddiOp):
        return lhs + rhs - 1
    if isinstance(op, arith.MuliOp):
        return (lhs - 1) * (rhs - 1) + 1
    return None if divisor is None or divisor < 1 else -(-lhs // divisor)
