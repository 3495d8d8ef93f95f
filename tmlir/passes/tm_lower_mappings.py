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
may exceed it (a worker id whose range is not known from ``tm.thread_id``/``tm.block_id``
and the kernel's sizes).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from tmlir.dialects import tm
from tmlir.ir.builder import Index, IRBuilder


def lower_for_task(op: tm.ForTaskOp) -> None:
    """Replace one tm.for_task by its loops and index arithmetic."""
    mapping = op.task_mapping
    b = IRBuilder.before(op)
    worker: Index = op.worker if op.worker is not None else 0
    with ExitStack() as scopes:  # the guard and the repeat loops, closed at the end
        if isinstance(worker, SSAValue):
            bound = tm.worker_bound(worker)
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
        for arg, index in zip(block.args, task):
            value = b.value(index)
            if arg.name_hint and value.name_hint is None and not isinstance(
                value.owner, (tm.WorkerIdOp, arith.ConstantOp)
            ):
                value.name_hint = arg.name_hint
            arg.replace_all_uses_with(value)
        for inner in list(block.ops):
            inner.detach()
            b.insert(inner)
    op.detach()
    op.erase()


@dataclass(frozen=True)
class TmLowerMappings(ModulePass):
    """Lower every tm.for_task to scf loops and index arithmetic."""

    name = "tm-lower-mappings"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for for_task in [o for o in op.walk() if isinstance(o, tm.ForTaskOp)]:
            lower_for_task(for_task)
