"""``graph-outline-constants``: inline ``graph.constant`` data moves into the weight table.

In: graph-level IR that may hold ``graph.constant dense<...>`` ops (hand-written modules
carry small weights that way). Out: each is replaced by a ``graph.weight`` of the same
type, named after the constant's SSA name (``%w`` -> ``"w"``; ``constant`` when it has
none; numbered ``w_1``, ``w_2``, ... when the name is taken by the table or by another
``graph.weight`` of the module), and its data joins the context's weight table under that
name (see ``tmlir.context``). When the context has no table (``tm-opt`` on a ``.mlir``
file), the pass gives it one. It is the first pass of ``lower-to-cuda``, so no later pass
sees a constant; on its own it prints IR whose weights name data kept outside the text.

    %w = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>   ->   %w = graph.weight "w" : tensor<2xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from tmlir.context import TmContext, fresh_weight_name
from tmlir.dialects import graph


@dataclass(frozen=True)
class GraphOutlineConstants(ModulePass):
    """Replace every ``graph.constant`` by a ``graph.weight`` whose data joins the weight table."""

    name = "graph-outline-constants"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        constants = [c for c in op.walk() if isinstance(c, graph.ConstantOp)]
        if not constants:
            return
        if not isinstance(ctx, TmContext):
            raise PassFailedException("graph-outline-constants: the context has no weight table "
                                      "(make it with tmlir.registry.make_context)")
        if ctx.weights is None:
            ctx.weights = {}
        table = ctx.weights
        taken = {w.weight_name.data for w in op.walk() if isinstance(w, graph.WeightOp)}
        for constant in constants:
            name = fresh_weight_name(table, constant.result.name_hint or "constant", taken)
            taken.add(name)
            table[name] = constant.array()
            weight = graph.WeightOp(name, constant.result.type)
            weight.result.name_hint = constant.result.name_hint
            Rewriter.replace_op(constant, weight)
