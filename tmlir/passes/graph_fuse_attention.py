"""``graph-fuse-attention``: the matmul, scale, mask, softmax and matmul of an attention
become one ``graph.attention``.

In: ``graph`` IR as exporters write scaled dot-product attention, and, in the context, the
model's weight table (scalars and masks are read from ``graph.weight``s there, or from
``graph.constant``s). Out: each match replaced by a ``graph.attention`` (its template keeps
the score matrix on chip, ``tmlir/schedules/attention.py``); the ops only the match used
are erased. What matches, from the softmax outwards::

    %s = graph.matmul %q', %k'            (k' = kᵀ [.., D, Sk], or k with transpose_rhs)
    ... scalings, a bias add, a causal mask, in any order ...
    %p = graph.softmax %x {axes = [last]}
    [%n = graph.is_nan %p ; %p' = graph.where %n, 0, %p]     -> zero_masked_rows
    %o = graph.matmul %p', %v

* **scale**: ``graph.mul`` by a scalar constant (either side) or ``graph.div`` by one, of
  ``q`` (``q'``), of ``kᵀ`` (``k'``) or of the scores (before the bias: ``(s + b) * c`` is
  left alone), and the matmul's ``alpha``; each positive and finite; their product is the
  op's ``scale``.
* **bias**: one ``graph.add`` of the scores and another tensor that broadcasts to them
  (BERT's ``where(mask, 0, min)``, a ``(1 - cast(mask)) * -10000``, ...) becomes the op's
  bias; an all-zero constant (ViT's) is dropped.
* **causal**: a constant bias that is 0 on and below the diagonal and ``-inf`` above it
  (GPT-2's, where float32's lowest stands for ``-inf``), or ``graph.where %tril, %s, %fill``
  (``graph.where %triu, %fill, %s``) with a constant lower (strictly upper) triangle and a
  ``-inf`` scalar fill, becomes ``causal`` (query ``i`` sees keys ``j <= i``). A finite
  value counts as ``-inf`` when, times the scalings after it, it is at most ``-1e30``
  (``exp`` of it minus a row's max is 0, as for a skipped key) and no other mask is added:
  then every row keeps key 0, while a row a second mask hid entirely would spread
  softmax's weight over the causally hidden keys, not give the fully masked row's value.
* **where mask**: ``graph.where`` on the scores with a run-time condition and a scalar
  fill of ``-inf`` (or at most ``-1e38``: ``s + fill == fill`` in f32, and at most ``-1e30``
  once scaled) becomes the bias ``where(cond, 0, fill)`` (one mask per attention).
* **NaN guard**: ``where(is_nan(p), 0, p)`` sets ``zero_masked_rows`` (softmax's NaN rows
  are whole rows, so this is exactly the op's rule).

Each intermediate value must have no other reader (a score matrix that is also an output,
say, stays as it is), the softmax be over the last axis only, the second matmul plain
(no transposes, ``alpha``, bias or pinned schedule), and the template must take the shape
(``attention_params.supports``); anything else is left untouched. When ``k'`` is a transpose of
the last two dims of another tensor (kᵀ from ``[B, S, H, D]``), the op takes ``k`` as
stored instead (the transpose's permutation with its last two entries swapped), so its
kernel reads keys along their contiguous dim. ``lower-to-cuda`` runs this pass with fusion,
before ``graph-partition``, which makes each ``graph.attention`` an anchor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from tmlir.context import WeightTable, fresh_weight_name, weight_array, weight_table
from tmlir.dialects import graph
from tmlir.schedules.attention_params import AttentionProblem, supports

#: A causal fill or constant mask at most this (and finite) still hides a key: exp underflows.
CAUSAL_FILL = -1e30
#: A run-time where's finite fill at most this absorbs any score (s + fill == fill in f32).
ABSORBING_FILL = -1e38
_FLOATS = (Float32Type, Float16Type, BFloat16Type)
#: A pinned schedule (see graph-merge-matmuls) keeps its matmul.
_SCHEDULE = "schedule"


@dataclass(frozen=True)
class GraphFuseAttention(ModulePass):
    """Replace softmax(scale * q @ kᵀ + mask) @ v patterns by ``graph.attention``."""

    name = "graph-fuse-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = weight_table(ctx)
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            for block in [b for region in function.regions for b in region.blocks]:
                for softmax in [o for o in block.ops if isinstance(o, graph.SoftmaxOp)]:
                    match = _Matcher(table).match(softmax)
                    if match is not None:
                        _rewrite(match, table)


# -- constants --------------------------------------------------------------------------------

def _array(value: SSAValue, table: WeightTable | None) -> np.ndarray | None:
    """The data of a ``graph.constant`` or (with a table) a ``graph.weight``."""
    owner = value.owner
    if isinstance(owner, graph.ConstantOp):
        return owner.array()
    return weight_array(table, value) if table is not None else None


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _is_f32(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and isinstance(value.type.get_element_type(), Float32Type)


def _only_use(value: SSAValue, user: Operation) -> bool:
    uses = list(value.uses)
    return len(uses) == 1 and uses[0].operation is user


# -- the match --------------------------------------------------------------------------------

@dataclass
class _Match:
    softmax: graph.SoftmaxOp
    pv: graph.MatmulOp
    q: SSAValue
    k: SSAValue
    v: SSAValue
    bias: SSAValue | None
    scale: float
    causal: bool
    k_transposed: bool
    zero: bool
    mask_where: tuple[SSAValue, SSAValue, bool] | None  # (condition, fill, fill is lhs)
    erased: list[Operation] = field(default_factory=list)  # in program order
    dropped: list[SSAValue] = field(default_factory=list)  # constants no longer read


class _Matcher:
    def __init__(self, table: WeightTable | None) -> None:
        self.table = table

    def scalar(self, value: SSAValue) -> float | None:
        array = _array(value, self.table)
        if array is None or array.size != 1 or array.dtype.kind != "f":
            return None
        return float(array.reshape(()))

    def scaling(self, op: Operation | None, value: SSAValue) -> tuple[SSAValue, float, SSAValue] | None:
        """(the scaled value, the factor, the constant) when `op` is a multiplication (by a
        positive finite scalar constant, either side) or a division by one that keeps
        `value`'s type."""
        if isinstance(op, graph.MulOp):
            pairs = ((op.lhs, op.rhs), (op.rhs, op.lhs))
        elif isinstance(op, graph.DivOp):
            pairs = ((op.lhs, op.rhs),)
        else:
            return None
        for scaled, constant in pairs:
            factor = self.scalar(constant)
            if factor is None or scaled.type != value.type or not (math.isfinite(factor) and factor > 0):
                continue
            return scaled, (1.0 / factor if isinstance(op, graph.DivOp) else factor), constant
        return None

    def match(self, softmax: graph.SoftmaxOp) -> _Match | None:
        rank = len(_shape(softmax.input))
        if rank < 2 or softmax.reduced_axes not in ((rank - 1,), (-1,)):
            return None
        erased: list[Operation] = [softmax]
        dropped: list[SSAValue] = []
        # the NaN guard and the second matmul
        p = softmax.result
        users = [u.operation for u in p.uses]
        zero = False
        if len(users) == 2:
            nan = next((u for u in users if isinstance(u, graph.IsNanOp)), None)
            guard = next((u for u in users if isinstance(u, graph.WhereOp)), None)
            if nan is None or guard is None or not _only_use(nan.result, guard) or guard.condition != nan.result \
                    or guard.rhs != p or guard.lhs == p or self.scalar(guard.lhs) != 0.0 \
                    or guard.result.type != p.type:
                return None
            zero = True
            erased += [nan, guard]
            dropped.append(guard.lhs)
            p = guard.result
            users = [u.operation for u in p.uses]
        if len(users) != 1 or not isinstance(pv := users[0], graph.MatmulOp) or pv.lhs != p or pv.rhs == p:
            return None
        if pv.transpose_lhs or pv.transpose_rhs or pv.bias is not None or pv.alpha_value != 1.0 \
                or _SCHEDULE in pv.attributes:
            return None
        erased.append(pv)
        # from the softmax back to the first matmul
        x = softmax.input
        after: list[Operation] = [softmax]  # the op reading x
        scale, bias, causal, finite_fill = 1.0, None, False, False
        mask_where: tuple[SSAValue, SSAValue, bool] | None = None
        after_scale = 1.0  # the scalings between x and the softmax
        while True:
            op = x.owner
            if not isinstance(op, Operation) or not _only_use(x, after[-1]):
                return None
            if isinstance(op, graph.MatmulOp):
                qk = op
                break
            if (scaling := self.scaling(op, x)) is not None:
                x, factor, constant = scaling
                scale *= factor
                after_scale *= factor
                dropped.append(constant)
            elif isinstance(op, graph.AddOp):
                lhs_scores = op.lhs.type == op.result.type and self.reaches_matmul(op.lhs)
                scores, other = (op.lhs, op.rhs) if lhs_scores else (op.rhs, op.lhs)
                if scores.type != op.result.type or not self.reaches_matmul(scores):
                    return None
                kind = self.constant_mask(other, _shape(scores), after_scale)
                if kind == "zero" or (kind == "causal" and not causal):
                    causal = causal or kind == "causal"
                elif kind == "causal_finite" and not causal:
                    causal = finite_fill = True
                elif kind is None and bias is None and mask_where is None and after_scale == 1.0:
                    bias = other  # (s + b) * c would scale the bias too
                else:
                    return None
                if kind is not None:
                    dropped.append(other)
                x = scores
            elif isinstance(op, graph.WhereOp) and op.result.type in (op.lhs.type, op.rhs.type):
                fill_is_lhs = op.rhs.type == op.result.type and self.reaches_matmul(op.rhs)
                scores, fill_value = (op.rhs, op.lhs) if fill_is_lhs else (op.lhs, op.rhs)
                fill = self.scalar(fill_value)
                if fill is None or scores.type != op.result.type or not self.reaches_matmul(scores):
                    return None
                cond = _array(op.condition, self.table)
                finite = math.isfinite(fill)
                if cond is not None and cond.dtype == bool and self.is_causal(cond, _shape(scores), fill_is_lhs) \
                        and not causal and (fill == -math.inf or (finite and fill * after_scale <= CAUSAL_FILL)):
                    causal, finite_fill = True, finite_fill or finite
                    dropped += [op.condition, fill_value]
                elif mask_where is None and bias is None and _is_f32(scores) and \
                        (fill == -math.inf or (finite and fill <= ABSORBING_FILL and fill * after_scale <= CAUSAL_FILL)):
                    mask_where = (op.condition, fill_value, fill_is_lhs)
                else:
                    return None
                x = scores
            else:
                return None
            erased.append(op)
            after.append(op)
        if qk.transpose_lhs or _SCHEDULE in qk.attributes:
            return None
        if qk.bias is not None:
            if after_scale != 1.0 or bias is not None or mask_where is not None or qk.beta_value != 1.0:
                return None
            bias = qk.bias
        scale *= qk.alpha_value
        erased.append(qk)
        if finite_fill and (bias is not None or mask_where is not None):
            return None  # a finite causal fill differs from skipping keys where a row is fully masked
        q, k = qk.lhs, qk.rhs
        for which in ("q", "k"):
            value = q if which == "q" else k
            scaling = self.scaling(value.owner, value) if _only_use(value, qk) else None
            if scaling is not None:
                scale *= scaling[1]
                dropped.append(scaling[2])
                erased.append(value.owner)  # type: ignore[arg-type]
                if which == "q":
                    q = scaling[0]
                else:
                    k = scaling[0]
        k_transposed = qk.transpose_rhs is None
        match = _Match(softmax, pv, q, k, pv.rhs, bias, scale, causal, k_transposed, zero, mask_where,
                       sorted(erased, key=_position), dropped)
        problem = self.problem(match)
        if problem is None or problem.out_shape != _shape(pv.result) or not supports(problem):
            return None
        elements = {v.type.get_element_type() for v in (q, k, pv.rhs, pv.result)}  # type: ignore[attr-defined]
        if len(elements) != 1 or not isinstance(elements.pop(), _FLOATS) or (
                bias is not None and not isinstance(bias.type.get_element_type(), _FLOATS)):  # type: ignore[attr-defined]
            return None
        return match

    def reaches_matmul(self, value: SSAValue) -> bool:
        """Whether `value` is scores: a ``graph.matmul``'s result, maybe through scalings,
        adds and wheres of its type."""
        seen = 0
        while seen < 16:
            op = value.owner
            if isinstance(op, graph.MatmulOp):
                return True
            if (scaling := self.scaling(op, value)) is not None:
                value = scaling[0]
            elif isinstance(op, graph.AddOp | graph.WhereOp):
                candidates = [v for v in op.operands[-2:] if v.type == value.type]
                if not candidates:
                    return False
                return any(self.reaches_matmul(v) for v in candidates)
            else:
                return False
            seen += 1
        return False

    def constant_mask(self, value: SSAValue, scores: tuple[int, ...], after_scale: float) -> str | None:
        """``zero`` for an all-zero constant, ``causal`` (``causal_finite``) for a constant
        that is 0 on and below the diagonal and -inf (finite, at most `CAUSAL_FILL` once
        scaled by `after_scale`) above it, else None."""
        array = _array(value, self.table)
        if array is None or array.dtype.kind != "f":
            return None
        if not array.any():
            return "zero"
        shape = array.shape
        if len(shape) < 2 or shape[-2:] != scores[-2:] or any(d != 1 for d in shape[:-2]):
            return None
        plane = array.reshape(shape[-2:])
        below = np.tril(np.ones(plane.shape, bool))
        if np.any(plane[below] != 0):
            return None
        above = plane[~below]
        if np.all(above == -np.inf):
            return "causal"
        if np.all(np.isfinite(above)) and np.all(above * after_scale <= CAUSAL_FILL):
            return "causal_finite"
        return None

    @staticmethod
    def is_causal(cond: np.ndarray, scores: tuple[int, ...], fill_is_lhs: bool) -> bool:
        """Whether a where's condition keeps exactly the keys on and below the diagonal."""
        shape = cond.shape
        if len(shape) < 2 or shape[-2:] != scores[-2:] or any(d != 1 for d in shape[:-2]):
            return False
        keep = np.tril(np.ones(shape[-2:], bool))
        plane = cond.reshape(shape[-2:])
        return bool(np.array_equal(plane, ~keep if fill_is_lhs else keep))

    @staticmethod
    def problem(match: _Match) -> AttentionProblem | None:
        try:
            return AttentionProblem(_shape(match.q), _shape(match.k), _shape(match.v),
                                    _shape(match.bias) if match.bias is not None else None,
                                    match.scale, match.causal, match.k_transposed, match.zero)
        except VerifyException:
            return None


def _position(op: Operation) -> int:
    block = op.parent_block()
    assert block is not None
    return block.get_operation_index(op)


# -- the rewrite ------------------------------------------------------------------------------

def _rewrite(match: _Match, table: WeightTable | None) -> None:
    pv = match.pv
    point = InsertPoint.before(pv)
    bias = match.bias
    if match.mask_where is not None:
        bias = _where_bias(match, table, point)
    k, k_transposed = match.k, match.k_transposed
    transpose = k.owner
    if k_transposed and isinstance(transpose, graph.TransposeOp) and k.uses.get_length() == 1:
        k = _untransposed(transpose, point)
        k_transposed = False
        match.erased.insert(0, transpose)
    op = graph.AttentionOp(match.q, k, match.v, bias, scale=match.scale, causal=match.causal,
                           k_transposed=k_transposed, zero_masked_rows=match.zero,
                           result_type=pv.result.type)  # type: ignore[arg-type]
    op.result.name_hint = pv.result.name_hint
    Rewriter.insert_op(op, point)
    pv.result.replace_all_uses_with(op.result)
    for dead in reversed(match.erased):
        if dead.parent is not None and not any(r.uses for r in dead.results):
            Rewriter.erase_op(dead)
    for value in match.dropped:
        owner = value.owner
        if isinstance(owner, graph.WeightOp | graph.ConstantOp) and not value.uses and owner.parent is not None:
            Rewriter.erase_op(owner)


def _zero(table: WeightTable | None, point: InsertPoint) -> SSAValue:
    """An f32 scalar 0: a new ``graph.weight`` when there is a weight table (``lower-to-cuda``
    has outlined every constant by now), else a ``graph.constant``."""
    array = np.zeros((), np.float32)
    if table is None:
        op: graph.ConstantOp | graph.WeightOp = graph.ConstantOp.from_array(array)
    else:
        entry = fresh_weight_name(table, "mask_zero")
        table[entry] = array
        op = graph.WeightOp(entry, TensorType(Float32Type(), []))
    op.result.name_hint = "mask_zero"
    Rewriter.insert_op(op, point)
    return op.result


def _where_bias(match: _Match, table: WeightTable | None, point: InsertPoint) -> SSAValue:
    """``where(cond, 0, fill)`` (``where(cond, fill, 0)``): the additive mask of a
    ``graph.where`` on the (f32) scores, with its scalar fill."""
    assert match.mask_where is not None
    cond, fill, fill_is_lhs = match.mask_where
    zero = _zero(table, point)
    lhs, rhs = (fill, zero) if fill_is_lhs else (zero, fill)
    where = graph.WhereOp(cond, lhs, rhs, TensorType(Float32Type(), _shape(cond)))
    where.result.name_hint = "mask"
    Rewriter.insert_op(where, point)
    return where.result


def _untransposed(transpose: graph.TransposeOp, point: InsertPoint) -> SSAValue:
    """`transpose` with its last two result dims swapped back: ``k`` as stored."""
    perm = transpose.permutation
    swapped = (*perm[:-2], perm[-1], perm[-2])
    if swapped == tuple(range(len(perm))):
        return transpose.input
    source = _shape(transpose.input)
    element = transpose.result.type.get_element_type()  # type: ignore[attr-defined]
    op = graph.TransposeOp(transpose.input, TensorType(element, [source[p] for p in swapped]), swapped)
    op.result.name_hint = transpose.result.name_hint
    Rewriter.insert_op(op, point)
    return op.result
