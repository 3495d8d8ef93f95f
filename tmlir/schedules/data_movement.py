"""The data-movement template: one thread per output element, which computes where its
element comes from.

Transpose, slice, gather (constant indices), expand, tile, pad, concat and split copy
elements and compute nothing; what differs is the source index of an output element. The
kernel gives each of ``grid * block`` threads the global id ``gid = bid * block + tid``
and maps the output's elements onto them with one task mapping,

    tm.for_task (%i0, %i1, ...) in spatial(<output shape>) on %gid { out[i] = x[src(i)] }

so consecutive threads write consecutive elements (stores coalesce; loads follow the
source index). ``tm-lower-mappings`` unravels ``gid`` into the coordinates and guards
``gid < elements`` when the last block overhangs. ``src(i)`` per op:

* transpose: ``x[i[inverse perm]]``; slice: ``x[start + i * step]`` (a negative step
  counts down); gather: ``x[..., indices[i...], ...]`` with the constant indices folded
  into index arithmetic when they are a progression, else a chain of selects; expand:
  numpy broadcasting (extent-1 dims read index 0); tile: ``x[i % shape]``;
* pad: ``x[i - begin]``; where that leaves the input, ``constant`` mode loads nothing and
  stores the pad value, ``edge`` clamps, ``reflect`` mirrors, ``wrap`` wraps around;
* concat: one kernel for all inputs, over the output; each thread stores from the input
  whose segment of ``axis`` holds its coordinate (one ``if`` per input); split: one
  kernel for all outputs, over the input, the mirror image.

Every op but split is written as an `Element` (``data_movement_elements.py``): the value
of output element ``i`` from a `Load` of its operands' elements, registered there for its op
type with ``@element_of_op``. `data_movement_op_kernel`, the kernel builder of every
registered op (and split), stores it (``out[i] = element(i)``, loads being ``tm.load``s of
the kernel's arguments); post-scheduling fusion evaluates the same `Element` inside another
kernel with loads that compute the operands in turn (``tmlir/schedules/fusion.py``). Each
kernel has ``tm.template = "data_movement"`` and its arguments ``(inputs..., outputs...)``,
or is None when the output has no elements.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import Float32Type, MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import spatial
from tmlir.schedules.common import kernel_attributes, name_args
from tmlir.schedules.data_movement_elements import (
    comma_list,
    element_for,
    element_op_types,
    shape_of,
)
from tmlir.schedules.registry import schedules

Body = Callable[[IRBuilder, list[Index], Sequence[SSAValue], Sequence[SSAValue]], None]
"""Fills the body for one task: (builder, coordinates, inputs, outputs)."""


@dataclass(frozen=True)
class DataMovementParams:
    """Threads per block (the last block may overhang the elements)."""

    block: int = 256


def data_movement_kernel(
    name: str, op: str, in_shapes: Sequence[Sequence[int]], out_shapes: Sequence[Sequence[int]],
    space: Sequence[int], body: Body, info: dict[str, int | str] | None = None,
    params: DataMovementParams = DataMovementParams(),
    element: Attribute | Sequence[Attribute] = Float32Type(),
) -> tm.KernelOp | None:
    """A kernel ``(inputs..., outputs...)`` running `body` once per element of `space`
    (one thread each); None when `space` is empty. Rank-0 tensors are 1-element buffers
    (the body gets no coordinates for a rank-0 space). `element`: the element type of
    every argument, or one per argument."""
    total = math.prod(space)
    if total == 0:
        return None
    block = min(params.block, 32 * math.ceil(total / 32))
    grid = math.ceil(total / block)
    shapes = [tuple(s) or (1,) for s in (*in_shapes, *out_shapes)]
    elements = [element] * len(shapes) if isinstance(element, Attribute) else list(element)
    kernel = tm.KernelOp(
        name, [MemRefType(t, s) for t, s in zip(elements, shapes, strict=True)], grid, block,
        kernel_attributes("data_movement", {"op": op, **(info or {}), "block": block}),
    )
    names = ["x"] if len(in_shapes) == 1 else [f"x{i}" for i in range(len(in_shapes))]
    names += ["out"] if len(out_shapes) == 1 else [f"out{i}" for i in range(len(out_shapes))]
    name_args(kernel, names)
    args = kernel.args
    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    gid = b.add(b.mul(bid, block), tid, "gid")
    rank = len(space)
    with b.for_task(spatial(*(space or (1,))), b.value(gid), [f"i{d}" for d in range(rank)]) \
            as coords:
        body(b, list(coords[:rank]), args[:len(in_shapes)], args[len(in_shapes):])
    return kernel


def buffer_indices(indices: Sequence[Index]) -> list[Index]:
    """Indices of a buffer: a rank-0 tensor's buffer has one element."""
    return list(indices) or [0]



def split_kernel(name: str, in_shape: Sequence[int], out_shapes: Sequence[Sequence[int]],
                 axis: int,
                 params: DataMovementParams = DataMovementParams(),
                 element: Attribute = Float32Type()) -> tm.KernelOp | None:
    """One thread per input element, which stores it into the output whose segment of
    `axis` holds it."""
    extents = [s[axis] for s in out_shapes]

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        v = b.load(xs[0], buffer_indices(i), name="v")
        for k, offset, condition in _segments(b, i[axis], extents):
            def fill(k: int = k, offset: int = offset) -> None:
                b.store(v, outs[k], [*i[:axis], b.sub(i[axis], offset), *i[axis + 1:]])
            _in_segment(b, condition, fill)

    return data_movement_kernel(name, "split", [in_shape], out_shapes, in_shape, body,
                                {"axis": axis, "sizes": comma_list(extents)}, params,
                                element)


def _segments(b: IRBuilder, c: Index, extents: Sequence[int]) -> list[tuple[int, int, SSAValue | None]]:
    """For each non-empty segment of an axis cut into `extents`: (its index, its offset,
    the condition that coordinate `c` lies in it, None if it always does)."""
    bounds = [sum(extents[:k]) for k in range(len(extents) + 1)]
    pieces = [k for k, n in enumerate(extents) if n > 0]
    segments = []
    for k in pieces:
        lo, hi = bounds[k], bounds[k + 1]
        checks = ([b.ge(c, lo)] if k != pieces[0] else []) + \
                 ([b.lt(c, hi)] if k != pieces[-1] else [])
        condition = b.all_of(checks)
        if condition is not None:
            condition.name_hint = f"in{k}"
        segments.append((k, lo, condition))
    return segments


def _in_segment(b: IRBuilder, condition: SSAValue | None, fill: Callable[[], None]) -> None:
    if condition is None:
        fill()
        return
    with b.if_(condition):
        fill()


# -- graph ops --------------------------------------------------------------------------------

@schedules(graph.SplitOp, *element_op_types())
def data_movement_op_kernel(name: str, op: Operation,
                            params: DataMovementParams = DataMovementParams()
                            ) -> tm.KernelOp | None:
    """The kernel of a data-movement graph op (arguments: its operands, then its results;
    ``graph.reshape`` needs none); None when it writes no element. Raises ValueError for
    what the template cannot do."""
    element_type = op.operands[0].type.get_element_type()  # type: ignore[attr-defined]
    if isinstance(op, graph.SplitOp):
        return split_kernel(name, shape_of(op.input), [shape_of(v) for v in op.outputs],
                            op.axis_value, params, element_type)
    element, info = element_for(op)
    in_shapes = [shape_of(v) for v in op.operands]
    out_shape = shape_of(op.results[0])

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        def load(k: int, at: Sequence[Index]) -> SSAValue:
            return b.load(xs[k], buffer_indices(at))
        value = element(b, i, load)
        if value.name_hint is None:
            value.name_hint = "v"
        b.store(value, outs[0], buffer_indices(i))

    kind = op.name.split(".")[-1]
    return data_movement_kernel(name, kind, in_shapes, [out_shape], out_shape, body, info,
                                params, element_type)
