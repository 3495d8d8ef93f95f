"""Post-scheduling fusion: an anchor's kernel rewritten to compute its whole fusion group.

A fusion group (a ``graph.fused`` region, or one op alone) has one *anchor*, the op whose
schedule template builds the kernel, and injective ops around it (``injective.py``):

* **upstream** ops (the prologue) compute values that the anchor or the epilogue reads;
* **downstream** ops (the epilogue) are computed from the anchor's result, element by
  element, through bijections only (elementwise ops on the unbroadcast result, transposes,
  reshapes), so each stored element of the anchor's result gives exactly one element of
  each value the group yields.

The template builds the anchor's kernel exactly as without fusion, with arguments
``(anchor operands..., anchor results...)``. `fuse_group` then rewrites it, the paper's
post-scheduling fusion (Hidet, Ding et al., ASPLOS 2023, section 5):

* every ``tm.load`` of an operand computed by the prologue becomes that computation at the
  load's coordinates: the prologue's ``Element``s evaluated down to ``tm.load``s of the
  group's inputs. A guarded load becomes ``if (in range) { prologue } else { 0 }``, as the
  load gave 0 out of range. A ``tm.load_vector`` of such an operand is first split into the
  element loads it stands for (``common.scalar_loads``; templates read prologue operands
  with scalar loads anyway, ``kernel_for(..., prologue=...)``);
* every ``tm.store`` of an anchor result that the epilogue reads is followed by the
  epilogue: for each yielded value downstream of it, its coordinates (the bijections
  applied to the stored coordinates), its element (the epilogue's ``Element``s with the
  stored value in place of the anchor's result) and a ``tm.store`` into its buffer; the
  anchor's own store stays only if its result also leaves the group. A guarded store
  guards the whole epilogue.

No template knows about fusion; a template only has to read its operands with ``tm.load``
and write each element of its results once with ``tm.store``, which every template does.
(A GEMM template copies operands with ``tm.cp_async`` unless told which ones a prologue
computes, ``kernel_for(prologue=...)``; a copy of a prologue's operand that is left is
turned into loads of its elements stored into its destination, 0 where it would fill
zeros, at the same place: correct, but not overlapped.)
The kernel's arguments become the group's inputs (each value once), then its outputs, then
the template's scratch arguments (a split-K workspace and counters: memory, not values of
the group), which fusion leaves alone.
"""

from __future__ import annotations

from collections.abc import Iterator, KeysView, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import MemRefType, StringAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import Rewriter

from tmlir.dialects import graph, tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.schedules.common import scalar_loads
from tmlir.schedules.data_movement import buffer_indices
from tmlir.schedules.injective import (
    element_of,
    forward_index,
    is_bijective_in,
    is_injective,
    reshape_index,
    shape_of,
)
from tmlir.schedules.templates import NoTemplate, check_element_types

__all__ = ["FusionError", "GroupShape", "anchor_of", "fusable", "fuse_group", "is_injective"]


class FusionError(ValueError):
    """A group that cannot be one kernel (a hand-written ``graph.fused`` that breaks the
    rules of the module docstring, or a template that reads its own output); `op` is the
    member (or the ``graph.fused`` op) the error is about, where one is."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.op = op


def _group_op(members: Sequence[Operation]) -> Operation | None:
    """The ``graph.fused`` op holding `members`, if any."""
    return members[0].parent_op() if members else None


# -- the shape of a group ---------------------------------------------------------------------

def fusable(op: Operation) -> bool:
    """Whether `op` can be computed inside another op's kernel: an injective op whose
    element function exists for its element types."""
    if not is_injective(op):
        return False
    try:
        check_element_types(op)
        element_of(op)
    except ValueError:  # NoTemplate, or a table the element cannot hold
        return False
    return True


def anchor_of(members: Sequence[Operation], yielded: Sequence[SSAValue]) -> Operation:
    """The op whose template builds the group's kernel: its one op that is not injective,
    or, in a group of injective ops only, the op of its one yielded value."""
    anchors = [op for op in members if not is_injective(op)]
    if len(anchors) > 1:
        raise FusionError(f"a fusion group has one anchor, got {len(anchors)}: "
                          + ", ".join(f"'{op.name}'" for op in anchors), _group_op(members))
    if anchors:
        return anchors[0]
    owners = {v.owner for v in yielded}
    if len(owners) != 1:
        raise FusionError("a fusion group of injective ops must yield the values of one op", _group_op(members))
    (sink,) = owners
    assert isinstance(sink, Operation)
    if isinstance(sink, graph.ReshapeOp):
        raise FusionError("a fusion group cannot end in 'graph.reshape' (it has no kernel)", _group_op(members))
    return sink


Step = tuple
"""One bijection applied to coordinates: ``("transpose", perm)`` or ``("reshape", from, to)``."""


def extend_map(steps: tuple[Step, ...], op: Operation) -> tuple[Step, ...]:
    """`steps` followed by `op`'s map from an unbroadcast operand to its result, merged so
    that equal maps compare equal (consecutive reshapes and transposes compose)."""
    if isinstance(op, graph.TransposeOp):
        perm = tuple(op.permutation)
        if steps and steps[-1][0] == "transpose":
            prev = steps[-1][1]
            perm = tuple(prev[p] for p in perm)
            steps = steps[:-1]
        return steps if perm == tuple(range(len(perm))) else (*steps, ("transpose", perm))
    if isinstance(op, graph.ReshapeOp):
        source, target = shape_of(op.input), shape_of(op.result)
        if steps and steps[-1][0] == "reshape":
            source = steps[-1][1]
            steps = steps[:-1]
        return steps if source == target else (*steps, ("reshape", source, target))
    return steps


@dataclass
class GroupShape:
    """Which members are downstream of the anchor, and the coordinate map (`extend_map`
    steps) from the anchor's result to each downstream value."""

    anchor: Operation
    maps: dict[SSAValue, tuple[Step, ...]] = field(default_factory=dict)

    @property
    def downstream(self) -> KeysView[SSAValue]:
        return self.maps.keys()

    def join(self, op: Operation) -> tuple[Step, ...] | None:
        """The map of `op`'s result if it can join the epilogue: every operand it reads
        from the anchor's result has one map and `op` is a bijection in it; None if it
        reads none of them; FusionError if it cannot join."""
        reads = [(k, v) for k, v in enumerate(op.operands) if v in self.maps]
        if not reads:
            return None
        if not is_injective(op) or any(not is_bijective_in(op, k) for k, _ in reads):
            raise FusionError(f"'{op.name}' cannot be in the epilogue of '{self.anchor.name}': "
                              "only elementwise ops on the unbroadcast result, transposes and "
                              "reshapes can", op)
        maps = {self.maps[v] for _, v in reads}
        if len(maps) != 1:
            raise FusionError(f"'{op.name}' reads the result of '{self.anchor.name}' at two "
                              "different coordinates; it cannot be in its epilogue", op)
        return extend_map(maps.pop(), op)


def group_shape(anchor: Operation, members: Sequence[Operation]) -> GroupShape:
    """The downstream values of a group (members in order); FusionError for a group whose
    epilogue is not made of bijections, or with a downstream op that the anchor does not
    feed through the group."""
    shape = GroupShape(anchor)
    if len(anchor.results) > 1 and any(
            u.operation in members for r in anchor.results for u in r.uses):
        raise FusionError(f"'{anchor.name}' has {len(anchor.results)} results; only an anchor "
                          "with one result takes an epilogue", anchor)
    for result in anchor.results:
        shape.maps[result] = ()
    seen_anchor = False
    for op in members:
        if op is anchor:
            seen_anchor = True
            continue
        steps = shape.join(op)
        if steps is not None:
            if not seen_anchor:
                raise FusionError(f"'{op.name}' comes before the anchor it reads", op)
            shape.maps[op.results[0]] = steps
    return shape


# -- the rewrite ----------------------------------------------------------------------------

@dataclass
class FusedKernel:
    """The rewritten kernel and the graph value each of its tensor arguments stands for:
    the group's inputs (values from outside it), then its yielded values (its scratch
    arguments follow them)."""

    kernel: tm.KernelOp
    args: list[SSAValue]


def fuse_group(kernel: tm.KernelOp, members: Sequence[Operation],
               yielded: Sequence[SSAValue]) -> FusedKernel:
    """Rewrite `kernel`, built by the anchor's template with arguments ``(anchor operands,
    anchor results)``, to compute the group of `members` (in order) and store `yielded`."""
    anchor = anchor_of(members, yielded)
    for op in members:
        if op is not anchor and not fusable(op):
            try:
                check_element_types(op)
            except NoTemplate as exc:
                raise FusionError(str(exc), op) from exc
            raise FusionError(f"'{op.name}' cannot be fused into another op's kernel", op)
    shape = group_shape(anchor, members)
    inside = {r for op in members for r in op.results}
    for value in yielded:
        if value not in inside:
            raise FusionError("a fusion group yields a value it does not compute", _group_op(members))
        if value not in shape.downstream:
            raise FusionError(f"a prologue value of '{anchor.name}' cannot leave its group "
                              "(only the anchor's results and its epilogue can)", value.owner)
    rewrite = _Rewrite(kernel, inside, yielded)
    old_args = list(kernel.tensor_args)  # the scratch arguments stay, last (`_Rewrite.finish`)
    bound = [*anchor.operands, *anchor.results]
    assert len(bound) == len(old_args), (kernel.sym_name.data, len(bound), len(old_args))
    for arg, value in zip(old_args[:len(anchor.operands)], anchor.operands):
        if value in inside:
            rewrite.prologue(arg, value)
        else:
            rewrite.adopt_input(arg, value)
    for arg, result in zip(old_args[len(anchor.operands):], anchor.results):
        sinks = [v for v in yielded if v in shape.downstream and v not in anchor.results]
        if sinks:
            rewrite.epilogue(arg, result, sinks, members, shape)
        rewrite.adopt_output(arg, result)
    kernel = rewrite.finish()
    epilogue = [op.name.split(".")[-1] for op in members
                if op is not anchor and op.results[0] in shape.downstream]
    prologue = [op.name.split(".")[-1] for op in members
                if op is not anchor and op.results[0] not in shape.downstream]
    parts = [f"{name}: {', '.join(ops)}" for name, ops in
             (("prologue", prologue), ("epilogue", epilogue)) if ops]
    if parts:
        kernel.attributes["tm.fused"] = StringAttr("; ".join(parts))
    return FusedKernel(kernel, rewrite.arg_values)


class _Rewrite:
    """The kernel's new arguments, created as the rewrite needs them, and the evaluation of
    group values at coordinates."""

    def __init__(self, kernel: tm.KernelOp, inside: set[SSAValue],
                 yielded: Sequence[SSAValue]) -> None:
        self.kernel = kernel
        self.inside = inside
        self.yielded = list(yielded)
        self.inputs: dict[SSAValue, BlockArgument] = {}
        self.outputs: dict[SSAValue, BlockArgument] = {}
        self.scratch = list(kernel.scratch_args)  # before the rewrite appends arguments

    # ---- arguments --------------------------------------------------------------------
    def _new_arg(self, value: SSAValue, name: str | None) -> BlockArgument:
        block = self.kernel.body.block
        arg = block.insert_arg(_buffer_type(value), len(block.args))
        arg.name_hint = name or value.name_hint or "t"
        return arg

    def input_arg(self, value: SSAValue, name: str | None = None) -> BlockArgument:
        """The argument holding group input `value` (created on first use)."""
        if value not in self.inputs:
            self.inputs[value] = self._new_arg(value, name)
        return self.inputs[value]

    def output_arg(self, value: SSAValue, name: str | None = None) -> BlockArgument:
        """The argument holding yielded value `value` (created on first use)."""
        if value not in self.outputs:
            self.outputs[value] = self._new_arg(value, name)
        return self.outputs[value]

    def adopt_input(self, arg: BlockArgument, value: SSAValue) -> None:
        """`arg` of the template reads group input `value`."""
        if arg.uses:
            self._replace(arg, self.input_arg(value, arg.name_hint), value)

    def adopt_output(self, arg: BlockArgument, result: SSAValue) -> None:
        """`arg` of the template writes anchor result `result`, which leaves the group (or is
        never read: its stores stay, into a buffer of its own)."""
        if arg.uses:
            self._replace(arg, self.output_arg(result, arg.name_hint), result)

    def _replace(self, arg: BlockArgument, new: BlockArgument, value: SSAValue) -> None:
        if arg.type != new.type:
            raise FusionError(f"kernel @{self.kernel.sym_name.data} takes {arg.type} for a "
                              f"value of type {value.type}")
        arg.replace_all_uses_with(new)

    @property
    def arg_values(self) -> list[SSAValue]:
        return [*self.inputs, *self.outputs]

    def finish(self) -> tm.KernelOp:
        """Order the arguments (inputs, then outputs in yield order, then the template's
        scratch arguments, as they were) and drop the template's tensor arguments."""
        block = self.kernel.body.block
        outputs = sorted(self.outputs, key=lambda v: self.yielded.index(v)
                         if v in self.yielded else len(self.yielded))
        scratch = self.scratch
        before = len(block.args)
        moved: dict[SSAValue, BlockArgument] = {}
        for value, arg in [*self.inputs.items(), *((v, self.outputs[v]) for v in outputs),
                           *((None, a) for a in scratch)]:
            new = block.insert_arg(arg.type, len(block.args))
            new.name_hint = arg.name_hint
            arg.replace_all_uses_with(new)
            if value is not None:
                moved[value] = new
        for arg in list(block.args[:before]):
            assert not arg.uses, f"argument {arg.name_hint} of the template is still used"
            block.erase_arg(arg)
        self.inputs = {v: moved[v] for v in self.inputs}
        self.outputs = {v: moved[v] for v in outputs}
        _unique_names(block.args)
        return self.kernel

    def _accesses(self, arg: BlockArgument, kind: type[tm.LoadOp | tm.StoreOp],
                  what: str) -> Iterator[tuple[Any, IRBuilder, Sequence[int]]]:
        """Each access of `arg` (which must be a `kind`), a builder before it, and the
        shape of the buffer."""
        shape = arg.type.get_shape()  # type: ignore[attr-defined]
        for use in list(arg.uses):
            access = use.operation
            if not isinstance(access, kind) or access.memref is not arg:
                raise FusionError(f"kernel @{self.kernel.sym_name.data} uses its {what} "
                                  f"'{arg.name_hint}' in '{access.name}'; fusion needs "
                                  f"{kind.name}")
            yield access, IRBuilder.before(access), shape

    # ---- prologue ---------------------------------------------------------------------
    def prologue(self, arg: BlockArgument, value: SSAValue) -> None:
        """Every load of `arg` (the anchor's operand `value`, computed in the group) becomes
        the computation of that element (a vector load: of each of its elements; a copy:
        loads of its elements, `_copies_to_loads`)."""
        _copies_to_loads(arg)
        for use in list(arg.uses):
            if isinstance(use.operation, tm.LoadVectorOp):
                scalar_loads(use.operation)
        for load, b, shape in self._accesses(arg, tm.LoadOp, "input"):
            condition = _in_bounds(b, load, shape)
            evaluator = _Evaluator(self, b, {})

            def compute(load: tm.LoadOp = load, evaluator: _Evaluator = evaluator,
                        b: IRBuilder = b, shape: Sequence[int] = shape) -> SSAValue:
                coords = reshape_index(b, list(load.indices), shape, shape_of(value))
                return b.narrow(evaluator.value(value, coords), load.result.type)  # f16: rounded

            result = b.value_if(condition, compute, 0, load.result.type)
            if load.result.name_hint and result.name_hint is None:
                result.name_hint = load.result.name_hint
            load.result.replace_all_uses_with(result)
            Rewriter.erase_op(load)

    # ---- epilogue ---------------------------------------------------------------------
    def epilogue(self, arg: BlockArgument, result: SSAValue, sinks: Sequence[SSAValue],
                 members: Sequence[Operation], shape: GroupShape) -> None:
        """After every store of `arg` (the anchor's `result`), compute and store each of
        `sinks` (yielded downstream values) at the coordinates the stored element maps to;
        the store itself stays only if `result` is yielded."""
        paths = {sink: _path(result, sink, members, shape) for sink in sinks}
        for store, b, buffer_shape in self._accesses(arg, tm.StoreOp, "output"):
            condition = _in_bounds(b, store, buffer_shape)
            with b.if_(condition) if condition is not None else nullcontext():
                coords = reshape_index(b, list(store.indices), buffer_shape, shape_of(result))
                evaluator = _Evaluator(self, b, {result: b.widen(store.value)})
                for sink in sinks:
                    at = coords
                    for op, operand in paths[sink]:
                        mapped = forward_index(b, op, operand, at)
                        assert mapped is not None
                        at = mapped
                    value = evaluator.value(sink, at)
                    b.store(value, self.output_arg(sink), buffer_indices(at))
            if result not in self.yielded:
                Rewriter.erase_op(store)


def _copies_to_loads(arg: BlockArgument) -> None:
    """Each ``tm.cp_async`` from `arg` becomes, where it is, a ``tm.load`` of each element it
    copies (0 where its ``zfill_unless`` condition fails) stored into its destination; the
    elements of a 16-byte copy run along both buffers' last dims."""
    element = arg.type.element_type  # type: ignore[attr-defined]
    for use in list(arg.uses):
        copy = use.operation
        if not (isinstance(copy, tm.CpAsyncOp) and copy.src is arg):
            continue
        b = IRBuilder.before(copy)
        for e in range(copy.bytes.data // (element.bitwidth // 8)):
            src = [b.value(i) for i in (*copy.src_indices[:-1], b.add(copy.src_indices[-1], e))]
            dst = [b.value(i) for i in (*copy.dst_indices[:-1], b.add(copy.dst_indices[-1], e))]
            value = b.value_if(copy.inside, lambda src=src: b.insert(tm.LoadOp(arg, src)).results[0], 0, element)
            b.insert(tm.StoreOp(value, copy.dst, dst))
        Rewriter.erase_op(copy)


def _path(source: SSAValue, target: SSAValue, members: Sequence[Operation],
          shape: GroupShape) -> list[tuple[Operation, int]]:
    """One chain of (op, operand number) through downstream values from `source` to `target`."""
    previous: dict[SSAValue, tuple[Operation, int, SSAValue]] = {}
    frontier = [source]
    while frontier:
        value = frontier.pop(0)
        if value is target:
            break
        for use in value.uses:
            op = use.operation
            if op in members and op.results and op.results[0] in shape.downstream \
                    and op.results[0] not in previous:
                previous[op.results[0]] = (op, use.index, value)
                frontier.append(op.results[0])
    steps, value = [], target
    while value is not source:
        op, operand, value = previous[value]
        steps.append((op, operand))
    return steps[::-1]


class _Evaluator:
    """Elements of group values at coordinates, inserted at the builder's point: group
    members through their ``Element``, inputs through ``tm.load``; `known` values (the
    stored element of the anchor's result) as given. Equal requests in one block share
    their result."""

    def __init__(self, rewrite: _Rewrite, b: IRBuilder, known: dict[SSAValue, SSAValue]):
        self.rewrite = rewrite
        self.b = b
        self.known = known
        self.memo: dict[tuple, SSAValue] = {}

    def value(self, value: SSAValue, coords: Sequence[Index]) -> SSAValue:
        if value in self.known:
            return self.known[value]
        key = (value, tuple(coords), self.b.block)
        if key in self.memo:
            return self.memo[key]
        if value in self.rewrite.inside:
            op = value.owner
            assert isinstance(op, Operation)
            try:
                element = element_of(op)
            except ValueError as exc:
                raise FusionError(f"'{op.name}': {exc}", op) from exc
            result = element(self.b, list(coords),
                             lambda k, at: self.value(op.operands[k], at))
        else:
            result = self.b.load(self.rewrite.input_arg(value), buffer_indices(coords))
        self.memo[key] = result
        return result


def _in_bounds(b: IRBuilder, access: tm.LoadOp | tm.StoreOp,
               shape: Sequence[int]) -> SSAValue | None:
    """The condition that `access`'s guarded indices are in range (None if unguarded)."""
    checks = [b.lt(access.indices[d], shape[d]) for d in access.guarded_dims]
    condition = b.all_of(checks)
    if condition is not None:
        condition.name_hint = "in_range"
    return condition


def _buffer_type(value: SSAValue) -> MemRefType:
    element = value.type.get_element_type()  # type: ignore[attr-defined]
    return MemRefType(element, shape_of(value) or (1,))


def _unique_names(args: Sequence[BlockArgument]) -> None:
    """Distinct argument names (they become CUDA parameter names)."""
    seen: dict[str, int] = {}
    for arg in args:
        name = arg.name_hint or "arg"
        if name in seen:
            seen[name] += 1
            arg.name_hint = f"{name}_{seen[name]}"
        else:
            seen[name] = 0
