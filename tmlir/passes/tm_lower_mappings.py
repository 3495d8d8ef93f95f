"""``tm-lower-mappings``: task mappings to loops and index arithmetic.

Each ``tm.for_task (%i...) in f1 * f2 * ... on %w`` becomes, before its body:

* the worker id of each atom, the high part of ``%w`` for outer atoms
  (``w / workers(inner atoms) % workers(atom)``);
* ``spatial`` atoms: the atom's coordinates by division and remainder of its worker id,
  unravelled over the dimensions in rank order (rank 0 the high digit);
* ``repeat`` atoms: one ``scf.for`` per dimension of extent > 1, nested in rank order
  (rank 0 outermost), marked ``tm.unroll`` per the atom's ``unroll`` flags (by default
  extents <= 16);
* task indices composed as ``outer * inner_extent + inner`` per dimension.

Arithmetic on constants is folded, so extents of 1 and single-worker atoms cost nothing.
The body runs only for ``%w < workers(mapping)``; that guard is emitted only when ``%w``
may exceed it (its range, from tmlir.ir.ranges, is not known to be within the workers).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tmlir.dialects import tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.ir.ranges import upper_bound


class LowerForTask(RewritePattern):
    """Replace one tm.for_task by its loops and index arithmetic."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tm.ForTaskOp, rewriter: PatternRewriter) -> None:
        mapping = op.task_mapping
        b = IRBuilder.from_rewriter(rewriter)
        worker: Index = op.worker if op.worker is not None else 0
        with ExitStack() as scopes:  # the guard and the repeat loops, closed at the end
            if isinstance(worker, SSAValue):
                bound = upper_bound(worker)
                if bound is None or bound > mapping.num_workers:
                    scopes.enter_context(b.if_(b.lt(worker, mapping.num_workers)))
            task: list[Index] = [0] * mapping.rank
            inner_workers = mapping.num_workers
            first_spatial = True
            for atom in mapping.atoms:
                inner_workers //= atom.num_workers
                coords: list[Index] = [0] * mapping.rank
                if atom.kind == "spatial":
                    wid = b.div(worker, inner_workers)
                    if not first_spatial:  # the outermost worker digit needs no remainder
                        wid = b.rem(wid, atom.num_workers)
                    first_spatial = False
                    digits = b.unravel(wid, [atom.shape[d] for d in atom.order], in_range=True)
                    for d, digit in zip(atom.order, digits):
                        coords[d] = digit
                else:
                    for d in atom.order:
                        if atom.shape[d] > 1:
                            loop = b.loop(0, atom.shape[d], unroll=atom.unroll_flags[d])
                            coords[d] = scopes.enter_context(loop)
                task = [b.add(b.mul(t, extent), c) for t, extent, c in zip(task, atom.shape, coords)]
            block = op.body.block
            values = [b.value(index) for index in task]
            for arg, value in zip(block.args, values):
                if arg.name_hint and value.name_hint is None and not isinstance(
                    value.owner, (tm.WorkerIdOp, arith.ConstantOp)
                ):
                    value.name_hint = arg.name_hint
            rewriter.inline_block(block, b.insertion_point, values)
        rewriter.erase(op)


@dataclass(frozen=True)
class TmLowerMappings(ModulePass):
    """Lower every tm.for_task to scf loops and index arithmetic (outer ones first)."""

    name = "tm-lower-mappings"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(LowerForTask(), apply_recursively=False).rewrite_module(op)
