"""How wide a kernel's ``index`` values must be in C: `needs_wide_index`.

Generated kernels compute indices in ``int`` (32-bit, the fastest on a GPU) unless a value
could pass ``INT_MAX = 2**31 - 1``; then the whole kernel computes them in ``long long``.
The decision is per kernel, from what is known at compile time, and it is conservative
in the direction that matters (a kernel that *may* overflow is widened):

* every buffer the kernel reads or writes: the CUDA printer linearizes an access as
  ``i * stride + j``, which reaches the buffer's element count minus one;
* the threads of the launch (``grid * block``): a global thread id reaches that;
* every ``index`` value of the kernel's arithmetic whose magnitude has a known bound
  (`magnitude_bounds`: constants, worker ids, loop counters, ``+ - * / %``, selects):
  e.g. ``(bid * 256 + tid) * 4 + r`` in a kernel whose threads each take 4 tasks.

Values read from memory (a gather's indices) have no bound; they are clamped to a buffer
by the templates, so the buffer sizes bound them.

    needs_wide_index(kernel, grid=3_906_250, block=256)  # a 3 x 10^9 input: True
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import Operation, SSAValue

from tmlir.ir.ranges import HasUpperBound

INT_MAX = 2**31 - 1
"""The largest index value a 32-bit (``int``) kernel may compute."""

_SUMS = (arith.AddiOp, arith.SubiOp)
_QUOTIENTS = (arith.DivUIOp, arith.DivSIOp, arith.FloorDivSIOp, arith.CeilDivSIOp, arith.CeilDivUIOp)
_REMAINDERS = (arith.RemUIOp, arith.RemSIOp)
_EXTREMA = (arith.MaxSIOp, arith.MaxUIOp, arith.MinSIOp, arith.MinUIOp)


def magnitude_bounds(root: Operation) -> dict[SSAValue, int]:
    """An exclusive bound of ``|v|`` for each ``index`` value `v` defined in `root`'s regions
    whose bound follows from constants, worker ids (`HasUpperBound`), loop counters and
    integer arithmetic; values without one are left out. One pass, in program order."""
    return _scan(root)[0]


def _scan(root: Operation) -> tuple[dict[SSAValue, int], int]:
    """`magnitude_bounds` and the most elements of a buffer defined in `root` (its block
    arguments included), in one walk."""
    bounds: dict[SSAValue, int] = {}
    elements = max((math.prod(a.type.get_shape()) for r in root.regions for b in r.blocks
                    for a in b.args if isinstance(a.type, MemRefType)), default=0)
    for op in root.walk():
        if isinstance(op, scf.ForOp):
            lower, upper = bounds.get(op.lb), bounds.get(op.ub)
            if lower is not None and upper is not None:
                bounds[op.body.block.args[0]] = max(lower, upper)
        if len(op.results) != 1:
            continue
        type = op.results[0].type
        if isinstance(type, MemRefType):
            elements = max(elements, math.prod(type.get_shape()))
        elif isinstance(type, IndexType) and (bound := _bound(op, bounds.get)) is not None:
            bounds[op.results[0]] = bound
    return bounds, elements


def _bound(op: Operation, get) -> int | None:
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return abs(op.value.value.data) + 1
    if (trait := op.get_trait(HasUpperBound)) is not None:
        return trait.upper_bound(op)
    operands = [get(o) for o in op.operands]
    if isinstance(op, arith.SelectOp):
        operands = operands[1:]
    if not operands or any(b is None for b in operands):
        return None
    if isinstance(op, _SUMS):
        return operands[0] + operands[1] - 1
    if isinstance(op, arith.MuliOp):
        return (operands[0] - 1) * (operands[1] - 1) + 1
    if isinstance(op, _QUOTIENTS):
        return operands[0]
    if isinstance(op, _REMAINDERS):
        return min(operands)
    if isinstance(op, (*_EXTREMA, arith.SelectOp)):
        return max(operands)
    return None


def largest_index(kernel: Operation, threads: int) -> int:
    """The largest index value the kernel may compute, as far as known (see the module
    docstring): over its buffers' element counts, its `threads` and its index arithmetic."""
    bounds, elements = _scan(kernel)
    return max(threads, elements, *bounds.values()) - 1


def needs_wide_index(kernel: Operation, grid: int, block: int) -> bool:
    """Whether `kernel`, launched as `grid` blocks of `block` threads, needs 64-bit indices."""
    return largest_index(kernel, grid * block) > INT_MAX
