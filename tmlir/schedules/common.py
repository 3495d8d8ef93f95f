"""Pieces shared by schedule templates: buffer types, index helpers, kernel attributes,
`per_element` (one thread per element of a shape), `half_arguments`, which makes a
template that computes in f32 serve float16 tensors, and `scalar_loads`, which splits a
vector load into the element loads it stands for."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    Float32Type,
    IntegerAttr,
    MemRefType,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.rewriter import Rewriter

from tmlir import dtypes
from tmlir.dialects import tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.ir.kernel_ops import BRANCH_WEIGHTS
from tmlir.ir.vector_ops import vector_widths
from tmlir.mapping import spatial


def f32_memref(shape: Sequence[int]) -> MemRefType:
    return MemRefType(Float32Type(), list(shape))


def kernel_attributes(template: str, params: dict[str, int | str]) -> dict[str, Attribute]:
    """``tm.template`` and ``tm.params``: what the CUDA header comment reports."""
    values = {k: IntegerAttr(v, i64) if isinstance(v, int) else StringAttr(v) for k, v in params.items()}
    return {"tm.template": StringAttr(template), "tm.params": DictionaryAttr(values)}


def broadcast_index(coords: Sequence[Index], out_shape: Sequence[int],
                    in_shape: Sequence[int]) -> list[Index]:
    """Indices into an operand of `in_shape` broadcast (numpy rules) to `out_shape`."""
    offset = len(out_shape) - len(in_shape)
    return [
        0 if extent == 1 and out_shape[d + offset] != 1 else coords[d + offset]
        for d, extent in enumerate(in_shape)
    ]


def broadcast_guards(out_shape: Sequence[int], in_shape: Sequence[int],
                     guarded_out_dims: set[int]) -> list[int]:
    """Operand dims that need a bound guard: those indexed by a guarded output dim, unless
    broadcast there (indexed by the constant 0)."""
    offset = len(out_shape) - len(in_shape)
    return [
        d for d, extent in enumerate(in_shape)
        if d + offset in guarded_out_dims and not (extent == 1 and out_shape[d + offset] != 1)
    ]


_SPATIAL_LETTERS = {1: "w", 2: "hw", 3: "dhw"}


def spatial_names(prefix: str, k: int) -> list[str]:
    """Names of `k` spatial dims: ``ow`` (1-D), ``oh``, ``ow`` (2-D), ``od``, ``oh``, ``ow``
    (3-D), ``o0``, ``o1``, ... past that (for ``prefix = "o"``)."""
    letters = _SPATIAL_LETTERS.get(k)
    return [f"{prefix}{letters[d]}" if letters else f"{prefix}{d}" for d in range(k)]


@contextmanager
def per_element(b: IRBuilder, bid: SSAValue, tid: SSAValue, grid: int, block: int,
                shape: Sequence[int], names: Sequence[str], partial: bool) -> Iterator[list[Index]]:
    """One thread per element of `shape`: ``spatial(grid)`` on the block id and
    ``spatial(block)`` on the thread id, the linear index unravelled over `shape` into the
    coordinates it yields, named `names` (where a value has no name yet). With `partial`
    (``grid * block`` exceeds the elements) the first coordinate may be past its extent:
    the caller guards it."""
    with (b.for_task(spatial(grid), bid, ["blk"]) as (blk,),
          b.for_task(spatial(block), tid, ["t"]) as (t,)):
        coords = b.unravel(b.add(b.mul(blk, block), t, "idx"), shape, in_range=not partial)
        for value, hint in zip(coords, names):
            if isinstance(value, SSAValue) and value.name_hint is None:
                value.name_hint = hint
        yield coords


@contextmanager
def weighted_if(b: IRBuilder, condition: SSAValue, then: int, other: int) -> Iterator[None]:
    """``b.if_(condition)`` taken `then` times for every `other` times it is not (for the
    cost report, ``tm.branch_weights``; the attention templates' causal key tiles)."""
    body = Block()
    op = scf.IfOp(condition, [], [body])
    op.attributes[BRANCH_WEIGHTS] = DenseArrayBase.from_list(i64, [then, other])
    b.insert(op)
    with b.at(body):
        yield
        b.insert(scf.YieldOp())


def name_args(kernel, names: Sequence[str]) -> None:
    """Give the kernel's arguments readable names (they become CUDA parameter names)."""
    for arg, name in zip(kernel.body.block.args, names, strict=True):
        arg.name_hint = name


def half_arguments(kernel: tm.KernelOp, elements: Sequence[Attribute]) -> tm.KernelOp:
    """Retype each ``f32`` argument of `kernel` whose tensor is ``f16`` (`elements`: the
    tensor element type of each tensor argument, in order; scratch arguments stay) to an
    ``f16`` buffer: its ``tm.load``s widen what they read (``arith.extf``) and its
    ``tm.store``s round what they write to nearest even (``arith.truncf``), so a template
    that computes in f32 serves float16 tensors with one rounding per stored element. Uses
    the interface every template shares (an argument is read only by ``tm.load`` -- or
    ``tm.load_vector``, which reads the same width of ``f16``s, or element by element where
    that width has no vector -- and written only by ``tm.store``). Returns `kernel`,
    changed in place."""
    block = kernel.body.block
    assert len(kernel.tensor_args) == len(elements), "one element type per tensor argument"
    for index, element in enumerate(elements):
        old = block.args[index]
        if not (dtypes.is_narrow_float(element) and old.type.element_type == Float32Type()):  # type: ignore[attr-defined]
            continue
        new = block.insert_arg(MemRefType(element, old.type.get_shape()), index)  # type: ignore[attr-defined]
        new.name_hint = old.name_hint
        for use in list(old.uses):
            access = use.operation
            assert isinstance(access, tm.LoadOp | tm.LoadVectorOp | tm.StoreOp) and access.memref is old, access
            b = IRBuilder.before(access)
            if isinstance(access, tm.LoadVectorOp) and access.width in vector_widths(element):
                vector = b.insert(tm.LoadVectorOp(new, list(access.indices), access.width, access.guarded_dims))
                vector.attributes.update(access.attributes)
                for result, value in zip(access.res, vector.results):
                    result.replace_all_uses_with(b.widen(value, result.name_hint))
                Rewriter.erase_op(access)
            elif isinstance(access, tm.LoadVectorOp):  # no vector of this width: element by element
                for load in scalar_loads(access):
                    b = IRBuilder.before(load)
                    widened = b.insert(tm.LoadOp(new, list(load.indices), load.guarded_dims))
                    load.result.replace_all_uses_with(b.widen(widened.results[0], load.result.name_hint))
                    Rewriter.erase_op(load)
            elif isinstance(access, tm.LoadOp):
                load = b.insert(tm.LoadOp(new, list(access.indices), access.guarded_dims))
                load.attributes.update(access.attributes)
                access.result.replace_all_uses_with(b.widen(load.results[0], access.result.name_hint))
                Rewriter.erase_op(access)
            else:
                store = tm.StoreOp(b.narrow(access.value, element), new, list(access.indices),
                                   access.guarded_dims)
                store.attributes.update(access.attributes)
                Rewriter.replace_op(access, store)
        block.erase_arg(old)
    return kernel


def scalar_loads(vector: tm.LoadVectorOp) -> list[tm.LoadOp]:
    """Replace `vector` (``tm.load_vector xN %x[..., %k]``) by the N ``tm.load``s of
    ``x[..., k + j]`` it stands for, with its guard, named as its results; returns them
    (fusion rewrites element loads, and a narrow view may have no vector of that width)."""
    b = IRBuilder.before(vector)
    *lead, last = vector.indices
    loads = []
    for j, result in enumerate(vector.res):
        load = b.insert(tm.LoadOp(vector.memref, [*lead, b.value(b.add(last, j))], vector.guarded_dims))
        load.attributes.update(vector.attributes)
        load.results[0].name_hint = result.name_hint
        result.replace_all_uses_with(load.results[0])
        loads.append(load)
    Rewriter.erase_op(vector)
    return loads
