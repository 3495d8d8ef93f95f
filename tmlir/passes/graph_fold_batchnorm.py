"""``graph-fold-batchnorm``: fold per-channel affine ops into the convolution before them.

In: ``graph`` IR and, in the context, the model's weight table (``tmlir.context``). Out:
every ``graph.conv`` with constant weights whose only user is a per-channel affine op of
constants -- a ``graph.batch_norm`` whose statistics are ``graph.weight``s, or a
``graph.mul`` / ``graph.add`` / ``graph.sub`` / ``graph.div`` with a weight that varies
at most along the channels (``(C, 1, 1)``, ``(1, C, 1, 1)``, a scalar) -- becomes one
``graph.conv`` with new weights: ``y = conv(x, W) + b`` followed by ``y * s + t`` is
``conv(x, W * s[co]) + (b * s + t)``, with ``s = scale / sqrt(var + epsilon)``, ``t =
bias - mean * s`` for a batch normalization. A chain of such ops, each the only user of
the value before it, folds at once.

The new arrays are computed in float64, stored as float32 under new names
(``<weight>.folded``, ``<bias>.folded``, or ``<weight>.folded_bias`` when the convolution
had no bias; numbered if taken) and added to the table. Existing entries are never
changed, so a weight shared with another op keeps its value for it. Weights no op uses
any more leave the IR (their entries stay in the table). Without a weight table (a
``.mlir`` file) the pass changes nothing: folding needs the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tmlir.context import WeightTable, derived_weight, erase_unused_weights, weight_array, weight_table
from tmlir.dialects import graph

_AFFINE_BINARY = (graph.MulOp, graph.AddOp, graph.SubOp, graph.DivOp)


@dataclass(frozen=True)
class GraphFoldBatchnorm(ModulePass):
    """Fold batch normalizations and per-channel mul/add/sub/div into convolutions."""

    name = "graph-fold-batchnorm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = weight_table(ctx)
        if table is None:
            return
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            _Folder(table).run(function)


@dataclass
class _Folder:
    """Folds into the convolutions of one function, adding arrays to `table`."""

    table: WeightTable

    def run(self, function: func.FuncOp) -> None:
        for conv in [o for o in function.walk() if isinstance(o, graph.ConvOp)]:
            self.fold_users(conv)

    def array(self, value: SSAValue | None) -> np.ndarray | None:
        """The data of a ``graph.weight`` value, None for anything else."""
        return weight_array(self.table, value)

    def affine(self, value: SSAValue, user: Operation) -> tuple[np.ndarray, np.ndarray] | None:
        """(s, t) with ``user(value) = value * s + t`` per channel, if `user` is such an op
        of constants and `value` an ``(N, C, ...)`` tensor."""
        shape = tuple(value.type.get_shape())
        if isinstance(user, graph.BatchNormOp):
            stats = [self.array(v) for v in (user.scale, user.bias, user.mean, user.var)]
            if user.input is not value or any(a is None for a in stats):
                return None
            scale, bias, mean, var = (a.astype(np.float64) for a in stats)
            s = scale / np.sqrt(var + np.float64(np.float32(user.epsilon_value)))
            return s, bias - mean * s
        if not isinstance(user, _AFFINE_BINARY) or user.result.type != value.type:
            return None
        value_is_lhs = user.lhs is value
        other = user.rhs if value_is_lhs else user.lhs
        if other is value or (isinstance(user, graph.DivOp) and not value_is_lhs):
            return None
        array = self.array(other)
        c = None if array is None else _per_channel(array, shape)
        if c is None:
            return None
        one, zero = np.ones(shape[1]), np.zeros(shape[1])
        if isinstance(user, graph.MulOp):
            return c, zero
        if isinstance(user, graph.AddOp):
            return one, c
        if isinstance(user, graph.SubOp):
            return (one, -c) if value_is_lhs else (-one, c)
        return 1 / c, zero

    def fold_users(self, conv: graph.ConvOp) -> None:
        """Fold the chain of affine ops that follows `conv` (each the only user of the value
        before it) into a new convolution."""
        weight = self.array(conv.weight)
        bias = np.zeros(conv.result.type.get_shape()[1]) if conv.bias is None else \
            self.array(conv.bias)
        if weight is None or bias is None:
            return
        s, t = np.ones(len(bias)), np.zeros(len(bias))
        chain: list[Operation] = []
        value: SSAValue = conv.result
        while len(uses := list(value.uses)) == 1:
            user = uses[0].operation
            if (affine := self.affine(value, user)) is None:
                break
            s, t = s * affine[0], t * affine[0] + affine[1]
            chain.append(user)
            value = user.results[0]
        if not chain:
            return
        new_weight = weight.astype(np.float64) * s.reshape((-1, *([1] * (weight.ndim - 1))))
        new_bias = bias.astype(np.float64) * s + t
        w_value = self.new_weight(conv, conv.weight, new_weight, "folded")
        b_value = None
        if conv.bias is not None:
            b_value = self.new_weight(conv, conv.bias, new_bias, "folded")
        elif np.any(new_bias != 0):
            b_value = self.new_weight(conv, conv.weight, new_bias, "folded_bias")
        strides, pads, dilations, group = conv.attributes_tuple()
        folded = graph.ConvOp(conv.input, w_value, b_value, strides, pads, dilations, group,
                              conv.result.type)
        folded.result.name_hint = value.name_hint
        folded.attributes.update(conv.attributes)  # a pinned schedule stays with the conv
        Rewriter.insert_op(folded, InsertPoint.before(conv))
        value.replace_all_uses_with(folded.result)
        operands = [*conv.operands, *(v for op in chain for v in op.operands)]
        for op in (*reversed(chain), conv):
            Rewriter.erase_op(op)
        erase_unused_weights(operands)

    def new_weight(self, conv: graph.ConvOp, old: SSAValue, array: np.ndarray,
                   suffix: str) -> SSAValue:
        """A new float32 ``graph.weight`` before `conv` holding `array`, named after `old`'s:
        ``<name>.<suffix>`` (numbered if taken)."""
        return derived_weight(self.table, conv, old, suffix, np.ascontiguousarray(array, dtype=np.float32),
                              Float32Type())


def _per_channel(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """`array` as a ``(C,)`` vector if it broadcasts to `shape` ``(N, C, ...)`` varying at
    most along dim 1, else None."""
    if array.ndim > len(shape):
        return None
    padded = array.reshape((1,) * (len(shape) - array.ndim) + array.shape)
    if any(n != 1 for d, n in enumerate(padded.shape) if d != 1):
        return None
    if padded.shape[1] not in (1, shape[1]):
        return None
    return np.broadcast_to(padded.reshape(-1).astype(np.float64), (shape[1],)).copy()
