"""The compilation context: xDSL's ``Context`` plus the weight table of the model.

Tensor data lives outside the IR: ``graph.weight "conv1.weight"`` names an entry of a side
table (``ImportedModel.weights``). Hand-written IR may hold small constants inline
(``graph.constant dense<...>``); ``graph-outline-constants``, the first pass of
``lower-to-cuda``, moves their data into the table, creating one if the context has none.
A pass sees only the module and the context, so a pass that computes new weights from old
ones (``graph-fold-batchnorm``) finds the table in the context -- as MLIR keeps the data
of ``dense_resource`` attributes in the ``MLIRContext``, and the module only names it.
The frontend's callers put it there: ``InferenceSession`` (through
``make_context(weights=...)``) and ``tm-opt`` when it imports an ``.onnx`` file. A
``.mlir`` file has no table (``weights`` is None) until ``graph-outline-constants`` makes
one, and passes that need one leave the IR as it is.

Passes add entries and never change or remove an entry that existed before them: a
weight may be shared by several ops, and the caller may hold the same arrays.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.context import Context

if TYPE_CHECKING:
    import numpy as np
    from xdsl.ir import Attribute, Operation, SSAValue

WeightTable = dict[str, "np.ndarray"]
"""``graph.weight`` name -> float32 C-contiguous array."""


@dataclass
class TmContext(Context):
    """A Context that may carry the weight table of the module being compiled."""

    weights: WeightTable | None = field(default=None, compare=False, repr=False)

    def clone(self) -> TmContext:
        clone = TmContext(self.allow_unregistered, self._loaded_dialects.copy(),
                          self._loaded_ops.copy(), self._loaded_attrs.copy(),
                          self._loaded_types.copy(), self._registered_dialects.copy())
        clone.weights = self.weights  # the same table: weights are not copied
        return clone


def weight_table(ctx: Context) -> WeightTable | None:
    """The weight table carried by `ctx`, or None (a plain Context, or no model)."""
    return ctx.weights if isinstance(ctx, TmContext) else None


def fresh_weight_name(table: WeightTable, base: str, taken: Iterable[str] = ()) -> str:
    """`base`, or ``base_1``, ``base_2``, ...: the first name that is neither in `table`
    nor in `taken`."""
    taken = set(taken)
    name, number = base, 0
    while name in table or name in taken:
        number += 1
        name = f"{base}_{number}"
    return name


# ---- graph weights a pass reads, derives and drops -----------------------------------------
# (graph.weight is imported where used: this module stays importable without the dialects)

def weight_array(table: WeightTable, value: SSAValue | None) -> np.ndarray | None:
    """The data of a ``graph.weight`` value, None for anything else (or a missing entry)."""
    from tmlir.dialects import graph

    owner = value.owner if value is not None else None
    return table.get(owner.weight_name.data) if isinstance(owner, graph.WeightOp) else None


def derived_weight(table: WeightTable, before: Operation, old: SSAValue, suffix: str, array: np.ndarray,
                   element: Attribute) -> SSAValue:
    """A new ``graph.weight`` of `element`, inserted before `before`, holding `array` (stored
    as given) in a new entry named after `old`'s weight: ``<name>.<suffix>`` (numbered if
    taken); its value is hinted ``<old hint>_<suffix>``."""
    from xdsl.dialects.builtin import TensorType
    from xdsl.rewriter import InsertPoint, Rewriter

    from tmlir.dialects import graph

    assert isinstance(old.owner, graph.WeightOp)
    name = fresh_weight_name(table, f"{old.owner.weight_name.data}.{suffix}")
    table[name] = array
    op = graph.WeightOp(name, TensorType(element, array.shape))
    op.result.name_hint = f"{old.name_hint}_{suffix}" if old.name_hint else None
    Rewriter.insert_op(op, InsertPoint.before(before))
    return op.result


def erase_unused_weights(values: Iterable[SSAValue]) -> None:
    """Erase the ``graph.weight`` ops among `values`' owners that nothing reads any more
    (their table entries stay)."""
    from xdsl.rewriter import Rewriter

    from tmlir.dialects import graph

    for value in values:
        owner = value.owner
        if isinstance(owner, graph.WeightOp) and not value.uses and owner.parent is not None:
            Rewriter.erase_op(owner)
