"""``graph-fold-empty``: tensors with no element become empty constants, before scheduling.

A tensor with a dimension of 0 holds no data, so no kernel needs to compute it. In: ``graph``
IR. Out: every op whose results all have no element is replaced by empty ``graph.weight``s
(named ``<result>_empty``, numbered if taken; an empty array joins the weight table when
the context has one), so no schedule sees a 0 extent and no kernel is launched for an
empty result; a ``graph.concat`` drops its empty operands (a single operand left replaces
it). A multi-result op with some empty results keeps its other results. An op that reads
an empty tensor into a non-empty result is an error naming it: its value is no
computation on data (a reduction over an empty axis is its identity element, a matmul
with an empty inner dimension zeros) and the ONNX frontend computes it when it imports
the model (``tmlir.frontends.onnx_empty``), where onnxruntime's conventions are known.
Function arguments and results may be empty: the runtime passes and returns empty arrays.

    %r = graph.relu %x : tensor<0x3xf32>      ->   %r = graph.weight "r_empty" : tensor<0x3xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tmlir import dtypes
from tmlir.context import WeightTable, fresh_weight_name, weight_table
from tmlir.dialects import graph
from tmlir.ir.diagnostics import OpError


def is_empty(type: Attribute) -> bool:
    """Whether `type` is a tensor type with no element (a dimension of 0)."""
    return isinstance(type, TensorType) and math.prod(type.get_shape()) == 0


@dataclass(frozen=True)
class GraphFoldEmpty(ModulePass):
    """Replace ops with empty results by empty weights; drop empty concat operands."""

    name = "graph-fold-empty"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = weight_table(ctx)
        taken = {w.weight_name.data for w in op.walk() if isinstance(w, graph.WeightOp)}
        created: list[graph.WeightOp] = []
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            for inner in list(function.body.ops):
                _fold(inner, table, taken, created)
        for weight in created:
            dtype = dtypes.from_ir(weight.result.type.get_element_type())
            if not weight.result.uses:  # read only by ops that went
                Rewriter.erase_op(weight)
            elif table is not None and dtype is not None:
                table[weight.weight_name.data] = np.empty(weight.result.type.get_shape(), dtype.numpy)


def _fold(op: Operation, table: WeightTable | None, taken: set[str],
          created: list[graph.WeightOp]) -> None:
    if isinstance(op, graph.WeightOp | func.ReturnOp) or not op.results:
        return
    empty_results = [r for r in op.results if is_empty(r.type)]
    for result in empty_results:
        if result.uses or len(empty_results) == len(op.results):
            weight = _empty_weight(op, result, table, taken)
            created.append(weight)
            result.replace_all_uses_with(weight.result)
    if len(empty_results) == len(op.results):
        Rewriter.erase_op(op)
        return
    empty_operands = [v for v in op.operands if is_empty(v.type)]
    if not empty_operands:
        return
    if isinstance(op, graph.ConcatOp):
        kept = [v for v in op.inputs if not is_empty(v.type)]
        if len(kept) == 1:
            op.result.replace_all_uses_with(kept[0])
            Rewriter.erase_op(op)
        else:
            Rewriter.replace_op(op, graph.ConcatOp(kept, op.result.type, op.axis_value))
        return
    raise OpError(
        op, f"graph-fold-empty: '{op.name}'{_named(op.results[0])}: reads the empty "
        f"{empty_operands[0].type}{_named(empty_operands[0])} into a non-empty result; such "
        "values are computed by the ONNX frontend, not by kernels")


def _named(value: SSAValue) -> str:
    return f" (%{value.name_hint})" if value.name_hint else ""


def _empty_weight(op: Operation, result: SSAValue, table: WeightTable | None,
                  taken: set[str]) -> graph.WeightOp:
    """A ``graph.weight`` of `result`'s empty type, inserted before `op`."""
    base = f"{result.name_hint or op.name.split('.')[-1]}_empty"
    name = fresh_weight_name(table if table is not None else {}, base, taken)
    taken.add(name)
    assert isinstance(result.type, TensorType)
    weight = graph.WeightOp(name, result.type)
    weight.result.name_hint = result.name_hint
    Rewriter.insert_op(weight, InsertPoint.before(op))
    return weight
