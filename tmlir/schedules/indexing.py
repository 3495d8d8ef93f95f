"""Gathers with run-time indices (``graph.take``, ``graph.take_along_axis``,
``graph.gather_nd``) on the data-movement template: one thread per output element, which
loads its index from the index tensor and copies one element of the input.

An index read at run time is cast to ``index`` (C ``int``), wrapped once if negative
(``i < 0 ? i + n : i``, ONNX's counting from the end) and clamped to ``[0, n - 1]``, so
no index, however wrong, reads outside the input. Each kernel's arguments are
``(input, indices, output)``.

The scatters (``graph.scatter_elements``, ``graph.scatter_nd``) are computed from the
output's side, deterministically and without atomics: one thread per output element
copies its input element into a register, scans the updates that can hit it (for
``scatter_elements`` the ``indices.shape[axis]`` ones on its line along ``axis``, for
``scatter_nd`` every index row) in their row-major order, combines each hit with the
reduction (``none`` replaces, so the last duplicate wins, as in onnxruntime; ONNX leaves
duplicates undefined there) and stores the element once. So a scatter keeps the
interface every template has (operands read with ``tm.load``, each result element stored
once) and fuses with a prologue and an epilogue like any anchor. The work is
``elements * indices.shape[axis]``, resp. ``elements * index rows``: meant for the few
rows that models scatter (cache updates, masks), not for scatters of millions of rows.
``graph.one_hot`` compares one index per output element; ``graph.eye`` loads nothing.
Arguments: ``(input, indices, updates, output)``, ``(indices, values, output)``,
``(output)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import nullcontext

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, MemRefType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from tmlir import dtypes
from tmlir.dialects import graph, tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.schedules.data_movement import (
    Body,
    DataMovementParams,
    buffer_indices,
    data_movement_kernel,
)
from tmlir.schedules.registry import schedules


def axis_index(b: IRBuilder, raw: SSAValue, extent: int, name: str) -> Index:
    """The loaded integer `raw` (i64 or i32) as an index into an axis of `extent`: negative
    values count from the end, and the result is clamped to ``[0, extent - 1]`` before it
    is narrowed to ``index`` (so a huge int64 cannot wrap into range)."""
    if extent == 1:
        return 0
    zero, n, last = (b.constant(v, raw.type) for v in (0, extent, extent - 1))
    negative = b.insert(arith.CmpiOp(raw, zero, "slt")).results[0]
    wrapped = b.fop(arith.SelectOp, negative, b.fop(arith.AddiOp, raw, n), raw,
                    name=f"{name}_wrapped")
    below = b.insert(arith.CmpiOp(wrapped, zero, "slt")).results[0]
    above = b.insert(arith.CmpiOp(wrapped, last, "sgt")).results[0]
    clamped = b.fop(arith.SelectOp, below, zero, b.fop(arith.SelectOp, above, last, wrapped))
    return b.insert(arith.IndexCastOp(clamped, IndexType()), name).results[0]


def take_kernel(name: str, in_shape: Sequence[int], index_shape: Sequence[int], axis: int,
                element: Attribute, index_element: Attribute,
                params: DataMovementParams = DataMovementParams()) -> tm.KernelOp | None:
    """``out[a, k, c] = x[a, indices[k], c]`` (``a``: the dims before `axis`, ``k``: the
    index dims, ``c``: the dims after)."""
    out_shape = [*in_shape[:axis], *index_shape, *in_shape[axis + 1:]]
    rank = len(index_shape)

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        x, indices = xs
        raw = b.load(indices, buffer_indices(i[axis:axis + rank]), name="raw")
        j = [*i[:axis], axis_index(b, raw, in_shape[axis], "k"), *i[axis + rank:]]
        b.store(b.load(x, buffer_indices(j), name="v"), outs[0], buffer_indices(i))

    return data_movement_kernel(name, "take", [in_shape, index_shape], [out_shape], out_shape,
                                body, {"axis": axis}, params,
                                [element, index_element, element])


def take_along_axis_kernel(name: str, in_shape: Sequence[int], index_shape: Sequence[int],
                           axis: int, element: Attribute, index_element: Attribute,
                           params: DataMovementParams = DataMovementParams(),
                           ) -> tm.KernelOp | None:
    """``out[i] = x[i with i[axis] = indices[i]]``, over the indices' shape."""

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        x, indices = xs
        raw = b.load(indices, buffer_indices(i), name="raw")
        j = list(i)
        j[axis] = axis_index(b, raw, in_shape[axis], "k")
        b.store(b.load(x, buffer_indices(j), name="v"), outs[0], buffer_indices(i))

    return data_movement_kernel(name, "take_along_axis", [in_shape, index_shape],
                                [index_shape], index_shape, body, {"axis": axis}, params,
                                [element, index_element, element])


def gather_nd_kernel(name: str, in_shape: Sequence[int], index_shape: Sequence[int],
                     batch_dims: int, element: Attribute, index_element: Attribute,
                     params: DataMovementParams = DataMovementParams()) -> tm.KernelOp | None:
    """ONNX ``GatherND`` (see ``graph.GatherNdOp``): the output's coordinates ``(p, q,
    c)`` read ``k = index_shape[-1]`` indices at ``indices[p, q, :]``, which replace the
    input dims ``b .. b + k - 1``."""
    b_dims, k = batch_dims, index_shape[-1]
    lead = list(index_shape[:-1])  # p and q
    out_shape = [*lead, *in_shape[b_dims + k:]]

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        x, indices = xs
        head = i[:len(lead)]
        picked = [axis_index(b, b.load(indices, [*head, d], name=f"raw{d}"),
                             in_shape[b_dims + d], f"k{d}") for d in range(k)]
        j = [*head[:b_dims], *picked, *i[len(lead):]]
        b.store(b.load(x, buffer_indices(j), name="v"), outs[0], buffer_indices(i))

    return data_movement_kernel(name, "gather_nd", [in_shape, index_shape], [out_shape],
                                out_shape, body, {"batch_dims": batch_dims}, params,
                                [element, index_element, element])


def _hits(b: IRBuilder, raw: SSAValue, extent: int, coordinate: Index) -> SSAValue:
    """Whether the loaded index `raw` (negative: from the end of an axis of `extent`)
    names `coordinate`; an index outside the axis names none."""
    zero, n = b.constant(0, raw.type), b.constant(extent, raw.type)
    negative = b.insert(arith.CmpiOp(raw, zero, "slt")).results[0]
    wrapped = b.fop(arith.SelectOp, negative, b.fop(arith.AddiOp, raw, n), raw)
    target = b.insert(arith.IndexCastOp(b.value(coordinate), raw.type)).results[0]
    return b.insert(arith.CmpiOp(wrapped, target, "eq"), "hit").results[0]


def _combine(b: IRBuilder, reduction: str, old: SSAValue, new: SSAValue) -> SSAValue:
    """`new` combined into `old` by a scatter's `reduction` (max and min as numpy's: a NaN
    wins)."""
    if reduction == "none":
        return new
    is_float = dtypes.is_float(old.type)
    if reduction in ("max", "min"):
        if is_float:
            better = b.insert(arith.CmpfOp(old, new, "olt" if reduction == "max" else "ogt"))
            nan = b.insert(arith.CmpfOp(new, new, "une"))
            take = b.fop(arith.OrIOp, better.results[0], nan.results[0])
        else:
            take = b.insert(arith.CmpiOp(old, new, "slt" if reduction == "max" else "sgt")
                            ).results[0]
        return b.fop(arith.SelectOp, take, new, old, name="combined")
    op_type = {("add", True): arith.AddfOp, ("add", False): arith.AddiOp,
               ("mul", True): arith.MulfOp, ("mul", False): arith.MuliOp}[reduction, is_float]
    return b.fop(op_type, old, new, name="combined")


def _scatter_body(element: Attribute, reduction: str, scan: Callable[..., None]) -> Body:
    """The body of a scatter kernel: the input element in a register, `scan` (given the
    builder, the coordinates, the kernel's indices and updates, and an `apply` that
    combines one update into the register), then one store."""

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        data, indices, updates = xs
        acc = b.insert(tm.AllocOp("register", MemRefType(element, [1])), "acc").results[0]
        b.store(b.load(data, buffer_indices(i), name="v"), acc, [0])

        def apply(update: SSAValue) -> None:
            old = b.load(acc, [0], name="old") if reduction != "none" else update
            b.store(_combine(b, reduction, old, update), acc, [0])

        scan(b, i, indices, updates, apply)
        b.store(b.load(acc, [0], name="v"), outs[0], buffer_indices(i))

    return body


def scatter_elements_kernel(name: str, shape: Sequence[int], index_shape: Sequence[int],
                            axis: int, reduction: str, element: Attribute,
                            index_element: Attribute,
                            params: DataMovementParams = DataMovementParams(),
                            ) -> tm.KernelOp | None:
    """``out[i]``: ``x[i]`` combined with every ``updates[p]`` (in order) whose position
    ``p`` equals ``i`` outside `axis` and whose index ``indices[p]`` is ``i[axis]``."""
    rank = len(shape)

    def scan(b: IRBuilder, i: list[Index], indices: SSAValue, updates: SSAValue,
             apply: Callable[[SSAValue], None]) -> None:
        on_line = b.all_of([b.lt(i[d], index_shape[d]) for d in range(rank)
                            if d != axis and index_shape[d] < shape[d]])
        with b.if_(on_line) if on_line is not None else nullcontext():
            with b.loop(0, index_shape[axis], name="j") as j:
                p = [*i[:axis], j, *i[axis + 1:]]
                with b.if_(_hits(b, b.load(indices, p, name="raw"), shape[axis], i[axis])):
                    apply(b.load(updates, p, name="u"))

    return data_movement_kernel(name, "scatter_elements", [shape, index_shape, index_shape],
                                [shape], shape, _scatter_body(element, reduction, scan),
                                {"axis": axis, "reduction": reduction}, params,
                                [element, index_element, element, element])


def scatter_nd_kernel(name: str, shape: Sequence[int], index_shape: Sequence[int],
                      reduction: str, element: Attribute, index_element: Attribute,
                      params: DataMovementParams = DataMovementParams()) -> tm.KernelOp | None:
    """``out[i]``: ``x[i]`` combined with ``updates[q, i[k:]]`` for every index row ``q``
    (in order) with ``indices[q, :] == i[:k]`` (``k = index_shape[-1]``)."""
    k, rows = index_shape[-1], list(index_shape[:-1])
    update_shape = [*rows, *shape[k:]]

    def scan(b: IRBuilder, i: list[Index], indices: SSAValue, updates: SSAValue,
             apply: Callable[[SSAValue], None]) -> None:
        def row(q: list[Index]) -> None:
            hits = [_hits(b, b.load(indices, [*q, d], name=f"raw{d}"), shape[d], i[d])
                    for d in range(k)]
            with b.if_(b.all_of(hits)):  # type: ignore[arg-type]
                apply(b.load(updates, buffer_indices([*q, *i[k:]]), name="u"))

        if not rows:
            row([])
        elif math.prod(rows):
            with b.loop(0, math.prod(rows), name="q") as q:
                row(b.unravel(q, rows, in_range=True))

    return data_movement_kernel(name, "scatter_nd", [shape, index_shape, update_shape],
                                [shape], shape, _scatter_body(element, reduction, scan),
                                {"reduction": reduction}, params,
                                [element, index_element, element, element])


def one_hot_kernel(name: str, index_shape: Sequence[int], axis: int, depth: int,
                   element: Attribute, index_element: Attribute,
                   params: DataMovementParams = DataMovementParams()) -> tm.KernelOp | None:
    """``out[a, j, c] = values[1] if indices[a, c] names j else values[0]``."""
    out_shape = [*index_shape[:axis], depth, *index_shape[axis:]]

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        indices, values = xs
        raw = b.load(indices, buffer_indices([*i[:axis], *i[axis + 1:]]), name="raw")
        off, on = b.load(values, [0], name="off"), b.load(values, [1], name="on")
        hit = _hits(b, raw, depth, i[axis])
        b.store(b.fop(arith.SelectOp, hit, on, off, name="v"), outs[0], buffer_indices(i))

    return data_movement_kernel(name, "one_hot", [index_shape, [2]], [out_shape], out_shape,
                                body, {"axis": axis, "depth": depth}, params,
                                [index_element, element, element])


def eye_kernel(name: str, shape: Sequence[int], k: int, element: Attribute,
               params: DataMovementParams = DataMovementParams()) -> tm.KernelOp | None:
    """``out[r, c] = 1 if c == r + k else 0``."""

    def body(b: IRBuilder, i: list[Index], xs: Sequence[SSAValue], outs: Sequence[SSAValue]):
        on = b.eq(b.add(i[1], max(-k, 0)), b.add(i[0], max(k, 0)), "diagonal")
        computed = b.computed_type(element)
        value = b.fop(arith.SelectOp, on, b.constant(1, computed), b.constant(0, computed),
                      name="v")
        b.store(value, outs[0], i)

    return data_movement_kernel(name, "eye", [], [shape], shape, body, {"k": k}, params,
                                [element])


@schedules(graph.ScatterElementsOp, graph.ScatterNdOp, graph.OneHotOp, graph.EyeOp)
def generating_kernel(name: str, op: Operation,
                      params: DataMovementParams = DataMovementParams()) -> tm.KernelOp | None:
    """The kernel of a scatter, ``graph.one_hot`` or ``graph.eye``; None when the output
    has no elements."""
    result = op.results[0].type
    assert isinstance(result, TensorType)
    shape, element = tuple(result.get_shape()), result.get_element_type()
    match op:
        case graph.EyeOp():
            return eye_kernel(name, shape, op.k_value, element, params)
        case graph.OneHotOp():
            indices = op.indices.type
            assert isinstance(indices, TensorType)
            return one_hot_kernel(name, tuple(indices.get_shape()), op.axis_value, op.depth,
                                  element, indices.get_element_type(), params)
    indices = op.operands[1].type
    assert isinstance(indices, TensorType)
    index_shape, index_element = tuple(indices.get_shape()), indices.get_element_type()
    match op:
        case graph.ScatterElementsOp():
            return scatter_elements_kernel(name, shape, index_shape, op.axis_value,
                                           op.reduction_value, element, index_element, params)
        case graph.ScatterNdOp():
            return scatter_nd_kernel(name, shape, index_shape, op.reduction_value, element,
                                     index_element, params)
    raise AssertionError(f"not a scatter or generating op: {op.name}")


@schedules(graph.TakeOp, graph.TakeAlongAxisOp, graph.GatherNdOp)
def indexing_kernel(name: str, op: Operation,
                    params: DataMovementParams = DataMovementParams()) -> tm.KernelOp | None:
    """The kernel ``(input, indices, output)`` of a ``graph.take``, ``graph.take_along_axis``
    or ``graph.gather_nd``; None when the output has no elements."""
    x, indices = op.operands
    assert isinstance(x.type, TensorType) and isinstance(indices.type, TensorType)
    shape, index_shape = tuple(x.type.get_shape()), tuple(indices.type.get_shape())
    element, index_element = x.type.get_element_type(), indices.type.get_element_type()
    if math.prod(shape) == 0:
        return None  # nothing to read: the verifier made sure nothing is wanted either
    match op:
        case graph.TakeOp():
            return take_kernel(name, shape, index_shape, op.axis_value, element,
                               index_element, params)
        case graph.TakeAlongAxisOp():
            return take_along_axis_kernel(name, shape, index_shape, op.axis_value, element,
                                          index_element, params)
        case graph.GatherNdOp():
            return gather_nd_kernel(name, shape, index_shape, op.batch_dims_value, element,
                                    index_element, params)
    raise AssertionError(f"not an indexing op: {op.name}")
