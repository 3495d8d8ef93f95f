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
