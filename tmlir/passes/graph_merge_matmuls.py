"""``graph-merge-matmuls``: matmuls of one input by constant weights become one wider matmul.

In: ``graph`` IR and, in the context, the model's weight table (``tmlir.context``). Out:
every set of two or more ``graph.matmul``s that multiply the same value by ``graph.weight``
matrices of the same K (a transformer layer's query, key and value projections) becomes
one ``graph.matmul`` by the weights laid side by side (``concat`` along N) and one
``graph.slice`` per old result, its columns of the wide result:

    %q = graph.matmul %x, %wq : (tensor<128x768xf32>, tensor<768x768xf32>) -> tensor<128x768xf32>
    %k = graph.matmul %x, %wk : (tensor<128x768xf32>, tensor<768x768xf32>) -> tensor<128x768xf32>

becomes

    %wq_merged = graph.weight "wq.merged" : tensor<768x1536xf32>
    %q_merged = graph.matmul %x, %wq_merged : (...) -> tensor<128x1536xf32>
    %q = graph.slice %q_merged {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : ... -> tensor<128x768xf32>
    %k = graph.slice %q_merged {starts = array<i64: 0, 768>, ...} : ... -> tensor<128x768xf32>

Why: at batch 1 each projection is a small GEMM (BERT-base's 128 x 768 x 768 fills 96 of an
H100's 132 SMs with one block each) that pays a launch, the pipeline's fill and a tail of
its own; the wide one (128 x 2304 x 768) fills the GPU once. The slices cost nothing of
their own with fusion: ``graph-partition`` puts each (and the bias add, reshape and
transpose after it) into the prologue of the op that reads it, as GPT-2's exported graph
already has it. Without fusion each slice would be a kernel, so ``lower-to-cuda`` runs
this pass only with fusion.

Merged only where nothing changes but the layout: the same left operand (the same SSA
value), right operands that are 2-D ``graph.weight``s of one element type and one K
(``transpose_rhs`` alike: N x K weights are stacked along rows), results of one element
type, the same ``transpose_lhs``, ``alpha`` and other attributes, no ``schedule`` pinned
on any of them, none an output of the function (its slice would be a copy kernel), and either no bias on any or a 1-D weight bias on each (the biases are
laid side by side too, and ``beta`` alike). The merged matmul stands where the first of
them stood; the others' results are only used after their own op, which comes later in
the block, so every slice still dominates its uses. The merged arrays are new entries of
the table (``<first weight>.merged``, numbered if taken); weights no op uses any more
leave the IR. Without a weight table (a ``.mlir`` file) the pass changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tmlir.context import WeightTable, derived_weight, erase_unused_weights, weight_array, weight_table
from tmlir.dialects import graph

#: A pinned schedule belongs to one op's problem: such an op is never merged.
_SCHEDULE = "schedule"


@dataclass(frozen=True)
class GraphMergeMatmuls(ModulePass):
    """Merge matmuls of one value by constant weights into one wider matmul and slices."""

    name = "graph-merge-matmuls"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = weight_table(ctx)
        if table is None:
            return
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            for block in [b for region in function.regions for b in region.blocks]:
                _merge_block(block, table)


def _key(op: graph.MatmulOp, table: WeightTable) -> tuple | None:
    """What must be equal for matmuls of one left operand to merge, None for a matmul that
    cannot (its right operand or bias is not a weight of the right rank, a pinned schedule)
    or should not (its result is an output of the function: its slice would be a copy)."""
    if _SCHEDULE in op.attributes or any(isinstance(use.operation, func.ReturnOp) for use in op.result.uses):
        return None
    rhs, result = op.rhs.type, op.result.type
    assert isinstance(rhs, TensorType) and isinstance(result, TensorType)
    if rhs.get_num_dims() != 2 or weight_array(table, op.rhs) is None:
        return None
    if op.bias is not None:
        bias = op.bias.type
        assert isinstance(bias, TensorType)
        if bias.get_num_dims() != 1 or weight_array(table, op.bias) is None:
            return None
    transposed = op.transpose_rhs is not None
    k = rhs.get_shape()[1 if transposed else 0]
    attributes = tuple(sorted((name, str(value)) for name, value in op.attributes.items()))
    properties = tuple(sorted((name, str(value)) for name, value in op.properties.items()))
    return (rhs.get_element_type(), result.get_element_type(), k, op.bias is not None,
            attributes, properties)


def _merge_block(block: Block, table: WeightTable) -> None:
    groups: dict[tuple, list[graph.MatmulOp]] = defaultdict(list)
    for op in block.ops:
        if isinstance(op, graph.MatmulOp) and (key := _key(op, table)) is not None:
            groups[(op.lhs, *key)].append(op)
    for members in groups.values():
        if len(members) > 1:
            _merge(members, table)


def _merge(members: list[graph.MatmulOp], table: WeightTable) -> None:
    first = members[0]
    transposed = first.transpose_rhs is not None
    axis = 0 if transposed else 1  # N's axis of the right operands
    arrays = [weight_array(table, m.rhs) for m in members]
    widths = [int(a.shape[axis]) for a in arrays]  # type: ignore[union-attr]
    rhs = _merged_weight(table, first, first.rhs, np.concatenate(arrays, axis=axis))  # type: ignore[arg-type]
    bias = None
    if first.bias is not None:
        bias = _merged_weight(table, first, first.bias,
                              np.concatenate([weight_array(table, m.bias) for m in members]))  # type: ignore[misc]
    result_type = first.result.type
    assert isinstance(result_type, TensorType)
    shape = list(result_type.get_shape())
    wide_type = TensorType(result_type.get_element_type(), [*shape[:-1], sum(widths)])
    merged = graph.MatmulOp(first.lhs, rhs, wide_type, bias)
    merged.properties.update(first.properties)
    merged.attributes.update(first.attributes)
    merged.result.name_hint = f"{first.result.name_hint}_merged" if first.result.name_hint else None
    Rewriter.insert_op(merged, InsertPoint.before(first))
    offset = 0
    anchor: graph.MatmulOp | graph.SliceOp = merged
    old_operands = [v for m in members for v in m.operands]
    for member, width in zip(members, widths):
        old = member.result.type
        assert isinstance(old, TensorType)
        starts = [0] * (len(shape) - 1) + [offset]
        piece = graph.SliceOp(merged.result, old, starts, [1] * len(shape))
        piece.result.name_hint = member.result.name_hint
        Rewriter.insert_op(piece, InsertPoint.after(anchor))
        anchor = piece
        member.result.replace_all_uses_with(piece.result)
        Rewriter.erase_op(member)
        offset += width
    erase_unused_weights(old_operands)


def _merged_weight(table: WeightTable, before: graph.MatmulOp, old: SSAValue, array: np.ndarray) -> SSAValue:
    """A new ``graph.weight`` before `before` holding `array` (in its own dtype, as `old`'s
    element type), named after `old`'s: ``<name>.merged`` (numbered if taken)."""
    old_type = old.type
    assert isinstance(old_type, TensorType)
    return derived_weight(table, before, old, "merged", np.ascontiguousarray(array), old_type.get_element_type())
