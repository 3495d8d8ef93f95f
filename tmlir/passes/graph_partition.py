"""``graph-partition``: group the graph into fusion groups, one kernel each.

In: ``graph`` IR. Out: the same ops, those that will share a kernel moved into
``graph.fused`` regions (an op left outside is a kernel of its own, or a ``graph.reshape``,
which costs none). ``convert-graph-to-tm`` builds each group's anchor with its template
and fuses the rest into its loads and stores (``tmlir/schedules/fusion.py``).

Every op with a schedule template of its own that is not injective (matmul, convolution,
reductions, softmax, layer norm, pooling, run-time gathers, split) is an *anchor*. In
program order, each anchor first grows an **epilogue**: the ops that read its result,
as long as each is injective and a bijection in what it reads from the group (elementwise
ops on the unbroadcast result, transposes, reshapes), all at one coordinate map, and the
group ends with exactly one value that leaves it (a chain, or a diamond such as GELU's
``x * f(x)``, that closes again) -- but not in a widening float cast (``f16 -> f32``)
that one kernel reads: the narrow value leaves and the reader's prologue widens it
(exactly), so no 32-bit copy of a 16-bit value crosses between kernels (if no reader's
group takes the cast after all, it goes back to the epilogue rather than be a kernel of
its own). Then each anchor takes its **narrow copies**: a narrowing float cast
(``f32 -> f16``/``bf16``, ``graph-mixed-precision``'s cast of a matmul operand) of a value
that leaves the group, when only anchors (or the function's return) read the cast and one
reader would copy it as stored (``templates.copied_half_operands``: a tensor-core
matmul's operands, ``cp.async`` 16 bytes at a time): the group writes the 16-bit copy
beside the value its other readers take, instead of the reader gathering it through a
cast prologue (a convolution's input, unless a 1x1 convolution's, is gathered through
im2col anyway: there the copy would only move bytes from its reads to the producer's
writes). Then each anchor grows a
**prologue**: every injective op (elementwise with broadcasting, cast, transpose,
reshape, expand, slice, constant gather, tile, pad, concat, resize) whose result only the
group reads, recursively (a tensor-core template reads an operand with a prologue through
``tm.load``, not ``cp.async``: ``convert-graph-to-tm`` tells it which).
Injective ops left over become groups of their own, from the last backwards, each taking
its producers as a prologue under the same rule.

The rules that keep fusion correct (see ``docs/fusion.md``): no anchor's work is ever
duplicated (an anchor is in one group); a value read outside its group leaves it and is
stored, so a prologue is never computed for two consumers; an epilogue is a bijection of
the anchor's result, so every stored element of it gives one element of the output;
a group has one value that leaves it (or the results of an anchor without epilogue), and
at most narrow copies of values that leave it beside (a cast reads nothing else), so
groups never depend on each other in a cycle. Ops are reordered (stably) only where a
group must come after an input of a later member.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from tmlir.dialects import graph
from tmlir.schedules.fusion import FusionError, GroupShape, fusable, group_shape, is_injective
from tmlir.schedules.templates import copied_half_operands

#: At most this many ops in one group (a bound on kernel size, not a schedule choice).
MAX_GROUP_OPS = 48


@dataclass(eq=False)
class _Group:
    anchor: Operation
    members: list[Operation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.members.append(self.anchor)


@dataclass(frozen=True)
class GraphPartition(ModulePass):
    """Move the ops that will share a kernel into ``graph.fused`` groups."""

    name = "graph-partition"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            _Partition(function.body.block).run()


class _Partition:
    def __init__(self, block: Block) -> None:
        self.block = block
        self.ops = [op for op in block.ops if not isinstance(op, func.ReturnOp)]
        self.position = {op: i for i, op in enumerate(self.ops)}
        self.group_of: dict[Operation, _Group] = {}
        self.widened: list[tuple[_Group, Operation]] = []  # (group, cast) of `stays_narrow`

    def free(self, op: Operation) -> bool:
        """An op of this block that no group holds yet."""
        return op in self.position and op not in self.group_of

    def run(self) -> None:
        anchors = [op for op in self.ops if _is_anchor(op)]
        groups = [self.new_group(op) for op in anchors]
        for group in groups:
            self.grow_epilogue(group)
        for group in groups:
            self.take_narrow_copies(group)
        for group in groups:
            self.grow_prologue(group)
        for op in reversed(self.ops):
            if self.free(op) and fusable(op) and not isinstance(op, graph.ReshapeOp):
                group = self.new_group(op)
                self.grow_prologue(group)
                groups.append(group)
        self.restore_widened(groups)
        self.materialize([g for g in groups if len(g.members) > 1])

    def new_group(self, anchor: Operation) -> _Group:
        group = _Group(anchor)
        self.group_of[anchor] = group
        return group

    def add(self, group: _Group, op: Operation) -> None:
        group.members.append(op)
        self.group_of[op] = group

    # -- epilogue ---------------------------------------------------------------------------
    def grow_epilogue(self, group: _Group) -> None:
        """Take the readers of the anchor's result, earliest first, while they can join; keep
        the longest prefix after which one value leaves the group."""
        anchor = group.anchor
        if len(anchor.results) != 1:
            return
        shape = GroupShape(anchor, {anchor.results[0]: ()})
        taken: list[Operation] = []
        best = 0
        leaving = self.leaving({anchor})
        while len(group.members) + len(taken) < MAX_GROUP_OPS:
            members = {anchor, *taken}
            readers = [u.operation for v in leaving for u in v.uses
                       if u.operation not in members]
            if not readers:
                break
            reader = min(readers, key=lambda o: self.position.get(o, len(self.position)))
            if not self.free(reader) or not fusable(reader):
                break
            try:
                steps = shape.join(reader)
            except FusionError:
                break
            assert steps is not None
            shape.maps[reader.results[0]] = steps
            taken.append(reader)
            leaving = self.leaving({anchor, *taken})
            if len(leaving) == 1:
                best = len(taken)
        if best and self.stays_narrow(taken[best - 1]):
            best -= 1
            self.widened.append((group, taken[best]))
        for op in taken[:best]:
            self.add(group, op)

    def stays_narrow(self, op: Operation) -> bool:
        """Whether `op`, the last op of an epilogue, is a widening float cast (``f16 ->
        f32``) that one kernel's group reads (an anchor, or an injective op that will be in
        a group): the epilogue then stores the narrow value and the reader's prologue widens
        it, exactly, instead of a 32-bit copy crossing between kernels."""
        if not isinstance(op, graph.CastOp) or not op.widens_float:
            return False
        readers = {u.operation for u in op.result.uses}
        if len(readers) != 1:
            return False
        (reader,) = readers
        return reader in self.position and not isinstance(reader, graph.ReshapeOp) \
            and (_is_anchor(reader) or fusable(reader))

    def restore_widened(self, groups: list[_Group]) -> None:
        """A widening cast left out of an epilogue (`stays_narrow`) that no reader's group
        took as a prologue (it would be a kernel of its own) goes back to its epilogue."""
        for group, cast in self.widened:
            owner = self.group_of.get(cast)
            if owner is not None and owner.anchor is not cast:
                continue
            if owner is not None:
                assert owner.members == [cast], "a cast's own group has a prologue from another group"
                groups.remove(owner)
                del self.group_of[cast]
            self.add(group, cast)

    @staticmethod
    def leaving(members: set[Operation]) -> list[SSAValue]:
        """The members' results read outside `members` (or returned)."""
        return [r for op in members for r in op.results
                if any(u.operation not in members for u in r.uses)]

    # -- narrow copies -----------------------------------------------------------------------
    def take_narrow_copies(self, group: _Group) -> None:
        """Take each narrowing float cast (``f32 -> f16``) of a value that leaves the group
        and that its readers take better as stored (`_is_narrow_copy`: a tensor-core
        matmul's operand): the group writes the narrow copy beside the value, and the
        matmul copies it with ``cp.async`` instead of gathering it through a cast prologue."""
        anchor = group.anchor
        if len(anchor.results) != 1:
            return  # only an anchor with one result takes an epilogue
        members = sorted(group.members, key=self.position.__getitem__)
        shape = group_shape(anchor, members)
        for value in self.leaving(set(members)):
            for cast in [u.operation for u in value.uses]:
                if len(group.members) >= MAX_GROUP_OPS:
                    return
                if not _is_narrow_copy(cast) or not self.free(cast) or not fusable(cast):
                    continue
                steps = shape.join(cast)  # the value's own map: an elementwise op reading it
                assert steps is not None
                shape.maps[cast.results[0]] = steps
                self.add(group, cast)

    # -- prologue ---------------------------------------------------------------------------
    def grow_prologue(self, group: _Group) -> None:
        """Take every injective producer whose result only the group reads, recursively."""
        pending = [v for op in group.members for v in op.operands]
        while pending and len(group.members) < MAX_GROUP_OPS:
            value = pending.pop(0)
            producer = value.owner
            if (not isinstance(producer, Operation) or not self.free(producer)
                    or len(producer.results) != 1 or not fusable(producer)
                    or any(u.operation not in group.members for u in value.uses)):
                continue
            self.add(group, producer)
            pending.extend(producer.operands)

    # -- the new block ----------------------------------------------------------------------
    def materialize(self, groups: list[_Group]) -> None:
        """Rebuild the block: each group a ``graph.fused`` at a place where its inputs are
        computed, the other ops in their order."""
        for group in groups:
            group.members.sort(key=self.position.__getitem__)
        units: list[Operation | _Group] = []
        for op in self.ops:
            owner = self.group_of.get(op)
            if owner is None or len(owner.members) == 1:
                units.append(op)
            elif owner.members[0] is op:
                units.append(owner)
        ordered = self.topological(units)
        ret = self.block.last_op
        for op in self.ops:
            op.detach()
        for unit in ordered:
            if isinstance(unit, Operation):
                self.block.insert_op_before(unit, ret)
                continue
            members = set(unit.members)
            yielded = self.leaving(members)
            yielded.sort(key=lambda v: (self.position[v.owner], v.index))  # type: ignore
            fused = graph.FusedOp(unit.members, yielded)
            self.block.insert_op_before(fused, ret)
            for value, result in zip(yielded, fused.outputs):
                result.name_hint = value.name_hint
                for use in list(value.uses):
                    if use.operation not in members and use.operation.parent_op() is not fused:
                        use.operation.operands[use.index] = result

    def topological(self, units: list[Operation | _Group]) -> list[Operation | _Group]:
        """`units` in an order where each comes after the units computing its inputs,
        otherwise as close to program order as possible."""
        unit_of: dict[Operation, int] = {}
        for i, unit in enumerate(units):
            for op in (unit.members if isinstance(unit, _Group) else [unit]):
                unit_of[op] = i
        needs: list[set[int]] = [set() for _ in units]
        for i, unit in enumerate(units):
            for op in (unit.members if isinstance(unit, _Group) else [unit]):
                for operand in op.operands:
                    j = unit_of.get(operand.owner)  # type: ignore[arg-type]
                    if j is not None and j != i:
                        needs[i].add(j)
        users: list[list[int]] = [[] for _ in units]
        for i, deps in enumerate(needs):
            for j in deps:
                users[j].append(i)
        waiting = [len(deps) for deps in needs]
        ready = [i for i, n in enumerate(waiting) if n == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            i = heapq.heappop(ready)
            order.append(i)
            for k in users[i]:
                waiting[k] -= 1
                if waiting[k] == 0:
                    heapq.heappush(ready, k)
        assert len(order) == len(units), "fusion groups depend on each other in a cycle"
        return [units[i] for i in order]


def _is_narrow_copy(op: Operation) -> bool:
    """A narrowing float cast whose every reader is an anchor or the function's return, and
    one reader gains from reading it as stored: a template that copies that operand by
    ``cp.async`` unless a prologue computes it (``templates.copied_half_operands``: the
    tensor-core matmul; asked for the default architecture, as the partition has no target:
    before sm_80 the SIMT template reads the copy element by element, costing no more bytes
    than the prologue did), or the return (the cast would otherwise be a kernel of its own)."""
    if not isinstance(op, graph.CastOp) or not op.narrows_float or not op.result.uses:
        return False
    readers = [(u.operation, u.index) for u in op.result.uses]
    if not all(isinstance(r, func.ReturnOp) or _is_anchor(r) for r, _ in readers):
        return False
    return any(isinstance(r, func.ReturnOp) or k in copied_half_operands(r) for r, k in readers)


def _is_anchor(op: Operation) -> bool:
    """An op with a schedule template of its own that is not injective."""
    return not isinstance(op, graph.WeightOp | graph.FusedOp) and not is_injective(op)
