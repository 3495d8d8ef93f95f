"""Injective graph ops as per-element functions: what fusion computes in place of a load.

An op is *injective* (it has the ``Injective`` trait) when each element of its result is a
function of a few operand elements at coordinates computed from the result's coordinates:
elementwise ops (with numpy broadcasting), comparisons, logic, ``where``, ``cast``,
``batch_norm`` (per-channel statistics), ``reshape`` and the data-movement ops (transpose,
slice, constant gather, expand, tile, pad, concat, resize). For each, `element_of` gives an
``Element``: the result element at coordinates ``i`` from a ``Load`` of operand elements,
so that

* a stand-alone kernel stores ``element(i)`` with loads of its arguments, and
* post-scheduling fusion (``fusion.py``) evaluates ``element(i)`` in place of a kernel's
  load of the op's result, with loads that evaluate the operands in turn (a *prologue*).

For an *epilogue* the direction is reversed: an anchor kernel stores an element of the
anchor's result at some coordinates, and `forward_index` gives the coordinates of the
element of an op's result that it becomes. Only bijections have one: elementwise ops whose
operand is not broadcast, transposes and reshapes.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.ir import Operation, SSAValue

from tmlir.dialects import graph
from tmlir.ir.builder import Index, IRBuilder
from tmlir.schedules.common import broadcast_index
from tmlir.schedules.data_movement_elements import Element, Load, element_for
from tmlir.schedules.elementwise_functions import element_function


def shape_of(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())  # type: ignore[attr-defined]


def is_injective(op: Operation) -> bool:
    """Whether `op` has an `Element` (see the module docstring): whether it has the
    ``Injective`` trait."""
    return op.has_trait(graph.Injective)


def element_of(op: Operation) -> Element:
    """The `Element` of an injective op (`is_injective`); ValueError for what cannot be
    built (see ``data_movement.element_for``)."""
    out_shape = shape_of(op.results[0])
    if isinstance(op, graph.ReshapeOp):
        in_shape = shape_of(op.input)
        return lambda b, i, load: load(0, reshape_index(b, i, out_shape, in_shape))
    if isinstance(op, graph.BatchNormOp):
        return _batch_norm_element(op)
    function = element_function(op)
    if function is None:  # data movement
        return element_for(op)[0]
    _, compute = function
    in_shapes = [shape_of(v) for v in op.operands]

    def element(b: IRBuilder, i: list[Index], load: Load) -> SSAValue:
        return compute(b, [load(k, broadcast_index(i, out_shape, shape))
                           for k, shape in enumerate(in_shapes)])
    return element


def _batch_norm_element(op: graph.BatchNormOp) -> Element:
    """``(x - mean) * (scale / sqrt(var + epsilon)) + bias``, the statistics at the channel."""
    epsilon = op.epsilon_value

    def element(b: IRBuilder, i: list[Index], load: Load) -> SSAValue:
        x = load(0, i)
        scale, bias, mean, var = (load(k, [i[1]]) for k in range(1, 5))
        std = b.fop(xmath.SqrtOp, b.fop(arith.AddfOp, var, b.f32(epsilon)))
        factor = b.fop(arith.DivfOp, scale, std)
        return b.fop(arith.AddfOp, b.fop(arith.MulfOp, b.fop(arith.SubfOp, x, mean), factor),
                     bias)
    return element


def forward_index(b: IRBuilder, op: Operation, operand: int,
                  coords: Sequence[Index]) -> list[Index] | None:
    """The coordinates of the element of `op`'s result that the element of operand number
    `operand` at `coords` becomes, when `op` maps that operand one-to-one onto its result;
    None otherwise (see `is_bijective_in`)."""
    if not is_bijective_in(op, operand):
        return None
    if isinstance(op, graph.TransposeOp):
        return [coords[p] for p in op.permutation]
    if isinstance(op, graph.ReshapeOp):
        return reshape_index(b, coords, shape_of(op.input), shape_of(op.result))
    return list(coords)


def is_bijective_in(op: Operation, operand: int) -> bool:
    """Whether every element of `op`'s result comes from exactly one element of operand
    number `operand` and each of those elements goes to exactly one result element:
    transposes, reshapes, and elementwise ops whose operand has the result's shape."""
    if isinstance(op, graph.TransposeOp | graph.ReshapeOp):
        return True
    if isinstance(op, graph.BatchNormOp):
        return operand == 0
    if element_function(op) is None:  # data movement (transposes are above)
        return False
    return shape_of(op.operands[operand]) == shape_of(op.results[0])


def reshape_index(b: IRBuilder, coords: Sequence[Index], source: Sequence[int],
                  target: Sequence[int]) -> list[Index]:
    """The coordinates in `target` of the element at `coords` in `source`, both shapes of
    the same row-major data.

    The dims are cut into the smallest groups whose products agree on both sides (where
    the running products meet), so a reshape that splits or merges dims costs arithmetic
    only within the dims it changes: ``(B, S, 768) -> (B, S, 12, 64)`` maps ``(b, s, c)`` to
    ``(b, s, c / 64, c % 64)``, and adding or removing unit dims costs nothing.
    """
    if tuple(source) == tuple(target):
        return list(coords)
    if math.prod(source) == 0:  # no element: nothing is ever indexed
        return [0] * len(target)
    meet = sorted(set(itertools.accumulate(source, _mul)) & set(itertools.accumulate(target, _mul))
                  | {math.prod(source)})

    def group(shape: Sequence[int]) -> list[list[int]]:
        groups: list[list[int]] = [[] for _ in meet]
        for d, running in enumerate(itertools.accumulate(shape, _mul)):
            groups[bisect.bisect_left(meet, running)].append(d)
        return groups

    out: list[Index] = [0] * len(target)
    for src_dims, dst_dims in zip(group(source), group(target)):
        src = [d for d in src_dims if source[d] != 1]
        dst = [d for d in dst_dims if target[d] != 1]
        if [source[d] for d in src] == [target[d] for d in dst]:
            for s, t in zip(src, dst):
                out[t] = coords[s]
            continue
        linear: Index = 0
        for d in src:
            linear = b.add(b.mul(linear, source[d]), coords[d])
        for t, c in zip(dst, b.unravel(linear, [target[d] for d in dst], in_range=True)):
            out[t] = c
    return out


def _mul(a: int, b: int) -> int:
    return a * b
