"""``graph-canonicalize``: simplify graph-level IR with local rewrites, to a fixed point.

In: ``graph`` IR with static shapes. Out: the same computation with fewer ops, every
rewritten value keeping its exact type: chains of transposes compose into one (none when
the composition is the identity), a transpose that moves only extent-1 dims becomes a
``graph.reshape`` (no kernel: a buffer view), a transpose separated from another by a
reshape that only splits or merges dims moves above the reshape to compose with it, chains
of reshapes, expands, tiles and slices become one op, ops that copy their input unchanged
(a reshape, expand or cast to the input's type, an identity tile, slice, pad or resize, a concat,
split or n-ary elementwise op of one input, a reduction over extent-1 dims) disappear or
become reshapes, a transpose of the last two dims feeding a ``graph.matmul`` becomes its
``transpose_lhs`` / ``transpose_rhs`` flag, and an expand feeding a broadcasting
elementwise op is dropped when broadcasting gives the same result. Ops left unused are
erased. Function signatures never change; a returned value may be replaced by another of
the same type. Nothing reads weight data, so ``.mlir`` files canonicalize as imported models.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects import graph

# -- shape and permutation helpers ----------------------------------------------------------


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _with_shape(value: SSAValue, shape: Sequence[int]) -> TensorType:
    """A tensor type of `value`'s element type and `shape`."""
    assert isinstance(value.type, TensorType)
    return TensorType(value.type.get_element_type(), list(shape))


def _moves_only_unit_dims(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """Whether transposing `shape` by `perm` keeps the dims of extent > 1 in order, so that
    the elements keep their row-major order (the transpose is a reshape)."""
    moved = [d for d in perm if shape[d] != 1]
    return moved == sorted(moved)


def _compose(inner: Sequence[int], outer: Sequence[int]) -> tuple[int, ...]:
    """The permutation of ``transpose(transpose(x, inner), outer)``."""
    return tuple(inner[d] for d in outer)


def _factor_ranges(shape: Sequence[int], cuts: Sequence[int]) -> dict[int, range]:
    """For each dim of extent > 1, the factors (row-major numbers) it is made of, given the
    ascending suffix products `cuts` that bound the factors."""
    ranges, inner, count = {}, 1, len(cuts) - 1
    for d in reversed(range(len(shape))):
        if shape[d] != 1:
            lo, hi = cuts.index(inner), cuts.index(inner * shape[d])
            ranges[d] = range(count - hi, count - lo)
            inner *= shape[d]
    return ranges


def _suffix_products(shape: Sequence[int]) -> set[int]:
    products, p = {1}, 1
    for n in reversed(shape):
        p *= n
        products.add(p)
    return products


def _hoisted_perm(src: Sequence[int], dst: Sequence[int], perm: Sequence[int]) -> tuple[int, ...] | None:
    """``q`` with ``transpose(reshape(x: src -> dst), perm) == reshape(transpose(x, q))``,
    or None when the reshape mixes dims the transpose separates.

    The dims of `dst` that the transpose keeps together (consecutive, in order) count as
    one; then both shapes are cut into common factors (``[6, 4] -> [2, 12]``: 2, 3, 4),
    which works when every dim of each is a run of consecutive factors, and the transpose
    must move each dim of `src` as a whole.
    """
    if any(n < 1 for n in src):
        return None  # empty (or not static)
    runs = _kept_together(dst, perm)  # in the transpose's output order
    in_dst_order = sorted(runs)
    dst = [math.prod(dst[d] for d in run) for run in in_dst_order]
    perm = [in_dst_order.index(run) for run in runs]
    cuts = sorted(_suffix_products(src) | _suffix_products(dst))
    if any(b % a for a, b in itertools.pairwise(cuts)):
        return None  # no common factors: [6, 4] -> [4, 6]
    src_ranges, dst_ranges = _factor_ranges(src, cuts), _factor_ranges(dst, cuts)
    moved = [f for d in perm for f in dst_ranges[d]]
    starts = {r.start: d for d, r in src_ranges.items()}
    order, i = [], 0
    while i < len(moved):
        d = starts.get(moved[i])
        if d is None or moved[i:i + len(src_ranges[d])] != list(src_ranges[d]):
            return None
        order.append(d)
        i += len(src_ranges[d])
    slots = sorted(src_ranges)  # extent-1 dims of src stay where they are
    q = list(range(len(src)))
    for slot, d in zip(slots, order):
        q[slot] = d
    return tuple(q)


def _kept_together(shape: Sequence[int], perm: Sequence[int]) -> list[tuple[int, ...]]:
    """The dims of extent > 1 of `shape` in the order `perm` puts them, grouped in runs
    that stay next to each other and in order."""
    kept = [d for d in range(len(shape)) if shape[d] != 1]
    position = {d: i for i, d in enumerate(kept)}
    runs: list[list[int]] = []
    for d in (d for d in perm if shape[d] != 1):
        if runs and position[d] == position[runs[-1][-1]] + 1:
            runs[-1].append(d)
        else:
            runs.append([d])
    return [tuple(run) for run in runs]


def _replace_by(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replace `op`'s one result by `value`, which must have its type."""
    assert value.type == op.results[0].type, f"{op.name}: {value.type} != {op.results[0].type}"
    rewriter.replace(op, [], [value])


def _replace_by_reshape(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replace `op`'s one result by `value` reshaped to its type (`value` if it has it)."""
    result = op.results[0]
    if value.type == result.type:
        _replace_by(rewriter, op, value)
    else:
        assert isinstance(result.type, TensorType)
        rewriter.replace(op, graph.ReshapeOp(value, result.type))


# -- transposes -----------------------------------------------------------------------------


class FoldTransposeOfTranspose(RewritePattern):
    """``transpose(transpose(x, p), q)`` → ``transpose(x, p∘q)``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, graph.TransposeOp):
            perm = _compose(inner.permutation, op.permutation)
            rewriter.replace(op, graph.TransposeOp(inner.input, op.result.type, perm))


class TransposeOfUnitDimsToReshape(RewritePattern):
    """A transpose that moves only extent-1 dims (or none) → a reshape (or its input)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter) -> None:
        if _moves_only_unit_dims(_shape(op.input), op.permutation):
            _replace_by_reshape(rewriter, op, op.input)


class HoistTransposeAboveReshape(RewritePattern):
    """``transpose(reshape(transpose(x)))`` → ``reshape(transpose(transpose(x)))`` when the
    reshape only splits or merges dims that the second transpose moves as a whole, so the
    transposes compose (``FoldTransposeOfTranspose``)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter) -> None:
        reshape = op.input.owner
        if not isinstance(reshape, graph.ReshapeOp) or not isinstance(reshape.input.owner, graph.TransposeOp):
            return
        src = _shape(reshape.input)
        if _moves_only_unit_dims(_shape(op.input), op.permutation):
            return  # TransposeOfUnitDimsToReshape's
        q = _hoisted_perm(src, _shape(op.input), op.permutation)
        if q is None:
            return
        transpose = graph.TransposeOp(reshape.input, _with_shape(reshape.input, [src[d] for d in q]), q)
        transpose.result.name_hint = reshape.input.name_hint  # it composes with that transpose
        rewriter.replace(op, [transpose, graph.ReshapeOp(transpose.result, op.result.type)])


class FoldTransposeIntoMatmul(RewritePattern):
    """``matmul(transpose(a), b)`` with a transpose of the last two dims (and moves of
    extent-1 dims) → ``matmul(a', b)`` with ``transpose_lhs`` toggled (``a'``: `a`
    reshaped if extent-1 dims moved); the same for ``rhs``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatmulOp, rewriter: PatternRewriter) -> None:
        for index, flag in ((0, "transpose_lhs"), (1, "transpose_rhs")):
            transpose = op.operands[index].owner
            if not isinstance(transpose, graph.TransposeOp):
                continue
            perm = transpose.permutation
            swapped = (*perm[:-2], perm[-1], perm[-2])
            if not _moves_only_unit_dims(_shape(transpose.input), swapped):
                continue
            out = _shape(transpose.result)
            operand = transpose.input
            shape = (*out[:-2], out[-1], out[-2])
            if _shape(operand) != shape:
                operand = rewriter.insert(graph.ReshapeOp(operand, _with_shape(operand, shape))).result
            op.operands[index] = operand
            if flag in op.properties:
                del op.properties[flag]
            else:
                op.properties[flag] = UnitAttr()
            rewriter.notify_op_modified(op)


# -- reshapes and copies --------------------------------------------------------------------


class FoldReshapeOfReshape(RewritePattern):
    """``reshape(reshape(x))`` → ``reshape(x)``, or `x` when it has the result's type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter) -> None:
        if isinstance(inner := op.input.owner, graph.ReshapeOp):
            _replace_by_reshape(rewriter, op, inner.input)


class FoldExpandOfExpand(RewritePattern):
    """``expand(expand(x))`` → ``expand(x)``: broadcasting twice is broadcasting once."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ExpandOp, rewriter: PatternRewriter) -> None:
        if isinstance(inner := op.input.owner, graph.ExpandOp):
            rewriter.replace(op, graph.ExpandOp(inner.input, op.result.type))


class FoldTileOfTile(RewritePattern):
    """``tile(tile(x))`` → ``tile(x)``: ``(i % (n * r)) % n == i % n``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TileOp, rewriter: PatternRewriter) -> None:
        if isinstance(inner := op.input.owner, graph.TileOp):
            rewriter.replace(op, graph.TileOp(inner.input, op.result.type))


class FoldSliceOfSlice(RewritePattern):
    """``slice(slice(x, a, s), b, t)`` → ``slice(x, a + b * s, s * t)`` per dim."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SliceOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, graph.SliceOp):
            return
        a, s = _ints(inner.starts), _ints(inner.steps)
        b, t = _ints(op.starts), _ints(op.steps)
        starts = [ai + bi * si for ai, bi, si in zip(a, b, s)]
        steps = [si * ti for si, ti in zip(s, t)]
        rewriter.replace(op, graph.SliceOp(inner.input, op.result.type, starts, steps))


def _ints(attr) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


class RemoveNoOpCopy(RewritePattern):
    """An op that returns its input unchanged (the ``NoOpWhen`` trait) → its input; a
    reduction over extent-1 dims only → a reshape of its input (its input when
    ``keepdims``)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        no_op = op.get_trait(graph.NoOpWhen)
        if no_op is None or len(op.results) != 1 or not no_op.predicate(op):
            return
        value = op.operands[0]
        if value.type == op.results[0].type:
            _replace_by(rewriter, op, value)
        elif no_op.reshape:
            _replace_by_reshape(rewriter, op, value)


# -- elementwise ----------------------------------------------------------------------------


class FoldExpandIntoElementwise(RewritePattern):
    """An ``expand`` operand of a broadcasting elementwise op → the expand's input, when the
    op's result shape stays the broadcast shape (the op broadcasts it itself)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BinaryElementwiseOp | graph.VariadicElementwiseOp,
                          rewriter: PatternRewriter) -> None:
        operands, changed = list(op.operands), False
        for index, value in enumerate(operands):
            if not isinstance(expand := value.owner, graph.ExpandOp):
                continue
            trial = [*operands[:index], expand.input, *operands[index + 1:]]
            if _broadcasts_to([_shape(v) for v in trial], _shape(op.result)):
                operands, changed = trial, True
        if changed:
            op.operands = operands
            rewriter.notify_op_modified(op)


def _broadcasts_to(shapes: Sequence[tuple[int, ...]], out: tuple[int, ...]) -> bool:
    try:
        return graph.broadcast_shapes(*shapes) == out
    except VerifyException:
        return False


PATTERNS: tuple[type[RewritePattern], ...] = (
    RemoveNoOpCopy,
    TransposeOfUnitDimsToReshape,
    FoldTransposeOfTranspose,
    HoistTransposeAboveReshape,
    FoldReshapeOfReshape,
    FoldExpandOfExpand,
    FoldTileOfTile,
    FoldSliceOfSlice,
    FoldTransposeIntoMatmul,
    FoldExpandIntoElementwise,
)


@dataclass(frozen=True)
class GraphCanonicalize(ModulePass):
    """Simplify graph IR: compose transposes and reshapes, drop ops that copy their input.

    The rewrites and what they keep are listed in the module docstring."""

    name = "graph-canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        applier = GreedyRewritePatternApplier([pattern() for pattern in PATTERNS])
        PatternRewriteWalker(applier).rewrite_module(op)
