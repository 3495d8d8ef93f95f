"""The ONNX frontend's ``Einsum``, lowered to graph ops that have tuned templates.

An equation (explicit ``ab,bc->ac`` or implicit ``ab,bc``, with ``...`` for broadcast
dims, spaces ignored) is lowered in three steps, on float operands (a product needs
``graph.matmul``, whose template is float32 only):

1. per operand, a label repeated in its term takes the diagonal: the repeated dims are
   moved last and merged by ``graph.transpose`` and ``graph.reshape``, and a strided
   ``graph.slice`` (step ``(n^r - 1) / (n - 1)``) keeps the elements ``(i, i, ...)``;
   labels that no other operand and not the output has are summed
   (``graph.reduce_sum``);
2. operands are contracted left to right, two at a time: the labels both have and a
   later operand or the output needs are batch dims, the others they share are summed;
   each side is transposed to ``[batch, own, summed]`` order and reshaped to three dims,
   so one ``graph.matmul`` (the tuned GEMM) computes the product, which is reshaped back;
   ``...`` dims of extent 1 are broadcast with ``graph.expand`` first;
3. the result is transposed into the output's order.

Inner and outer products, batched matrix products, transposes, sums and traces all come
out of these steps; no equation is left that they cannot express, so the only errors
are malformed equations and extents that disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from onnx import NodeProto
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import STRING, onnx_op

Labels = list[str]
"""The label of each dim of an operand: a letter, or ``...k`` for broadcast dim ``k``."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def parse_equation(equation: str, ranks: Sequence[int]) -> tuple[list[Labels], Labels]:
    """The labels of each operand and of the output of `equation` for operands of `ranks`;
    ValueError (one line) for a malformed equation."""
    text = equation.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"equation '{equation}' has {len(terms)} operand terms for "
                         f"{len(ranks)} inputs")
    ellipsis_dims = 0
    letters: list[Labels] = []
    for term, rank in zip(terms, ranks):
        named = term.replace("...", "", 1)
        if not all(c.isascii() and c.isalpha() for c in named):
            raise ValueError(f"equation '{equation}': term '{term}' must be letters and at "
                             "most one '...'")
        extra = rank - len(named)
        if extra < 0 or (extra and "..." not in term):
            raise ValueError(f"equation '{equation}': term '{term}' does not fit an input "
                             f"of rank {rank}")
        ellipsis_dims = max(ellipsis_dims, extra)
        letters.append([*term.partition("...")[0], f"...{extra}", *term.partition("...")[2]]
                       if "..." in term else list(term))
    broadcast = [f"...{k}" for k in range(ellipsis_dims)]
    operands = []
    for term in letters:
        labels: Labels = []
        for label in term:
            if label.startswith("..."):
                labels += broadcast[ellipsis_dims - int(label[3:]):]
            else:
                labels.append(label)
        operands.append(labels)
    if arrow:
        named = output.replace("...", "", 1)
        if not all(c.isascii() and c.isalpha() for c in named) or len(set(named)) != len(named):
            raise ValueError(f"equation '{equation}': output '{output}' must be distinct "
                             "letters and at most one '...'")
        seen = {label for labels in operands for label in labels}
        missing = [c for c in named if c not in seen]
        if missing:
            raise ValueError(f"equation '{equation}': output label '{missing[0]}' is in no input")
        before, dots, after = output.partition("...")
        if broadcast and not dots:
            raise ValueError(f"equation '{equation}': the output must keep the '...' dims")
        return operands, [*before, *(broadcast if dots else []), *after]
    counts: dict[str, int] = {}
    for labels in operands:
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
    once = sorted(c for c, n in counts.items() if n == 1 and not c.startswith("..."))
    return operands, [*broadcast, *once]


class _Lowering:
    """Appends the graph ops of one Einsum node."""

    def __init__(self, ctx: ImportContext, hint: str) -> None:
        self.ctx, self.hint = ctx, hint

    def append(self, op) -> SSAValue:
        return self.ctx.append(op, self.hint)

    def transpose(self, x: SSAValue, labels: Labels, order: Labels) -> SSAValue:
        """`x` with its dims (`labels`) in the `order` of theirs (a repeated label's dims
        in their order)."""
        if labels == order:
            return x
        positions: dict[str, list[int]] = {}
        for d, label in enumerate(labels):
            positions.setdefault(label, []).append(d)
        perm = [positions[label].pop(0) for label in order]
        shape = _shape(x)
        result = TensorType(x.type.get_element_type(), [shape[p] for p in perm])  # type: ignore[attr-defined]
        return self.append(graph.TransposeOp(x, result, perm))

    def reshape(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(shape) == _shape(x):
            return x
        element = x.type.get_element_type()  # type: ignore[attr-defined]
        return self.append(graph.ReshapeOp(x, TensorType(element, list(shape))))

    def diagonal(self, x: SSAValue, labels: Labels) -> tuple[SSAValue, Labels]:
        """`x` with every repeated label reduced to its diagonal (the label moved last)."""
        for label in dict.fromkeys(labels):
            count = labels.count(label)
            if count == 1:
                continue
            extents = {n for lab, n in zip(labels, _shape(x)) if lab == label}
            if len(extents) != 1:
                raise FrontendError(f"{self.ctx.label}: label '{label}' repeats with extents "
                                    f"{sorted(extents)}")
            others = [lab for lab in labels if lab != label]
            x = self.transpose(x, labels, others + [label] * count)
            shape = _shape(x)
            n = shape[-1]
            flat = self.reshape(x, [*shape[:-count], n ** count])
            step = (n ** count - 1) // (n - 1) if n > 1 else 1
            result = TensorType(x.type.get_element_type(), [*shape[:-count], n])  # type: ignore[attr-defined]
            rank = len(shape) - count + 1
            x = self.append(graph.SliceOp(flat, result, [0] * rank, [1] * (rank - 1) + [step]))
            labels = others + [label]
        return x, labels

    def sum_out(self, x: SSAValue, labels: Labels, keep: set[str]) -> tuple[SSAValue, Labels]:
        axes = [d for d, label in enumerate(labels) if label not in keep]
        if not axes:
            return x, labels
        return (self.append(graph.ReduceSumOp(x, axes, False)),
                [label for label in labels if label in keep])

    def contract(self, a: SSAValue, a_labels: Labels, b: SSAValue, b_labels: Labels,
                 keep: set[str]) -> tuple[SSAValue, Labels]:
        """The product of two operands summed over the labels they share and `keep` lacks."""
        extent = dict(zip(a_labels, _shape(a)))
        batch = [lab for lab in a_labels if lab in b_labels and lab in keep]
        summed = [lab for lab in a_labels if lab in b_labels and lab not in keep]
        left = [lab for lab in a_labels if lab not in b_labels]
        right = [lab for lab in b_labels if lab not in a_labels]
        b_extent = dict(zip(b_labels, _shape(b)))
        n_batch, n_left, n_summed = (math.prod(extent[lab] for lab in group)
                                     for group in (batch, left, summed))
        n_right = math.prod(b_extent[lab] for lab in right)
        lead = [n_batch] if batch else []
        lhs = self.reshape(self.transpose(a, a_labels, batch + left + summed),
                           [*lead, n_left, n_summed])
        rhs = self.reshape(self.transpose(b, b_labels, batch + summed + right),
                           [*lead, n_summed, n_right])
        out = [*lead, n_left, n_right]
        product = self.append(graph.MatmulOp(lhs, rhs, TensorType(
            a.type.get_element_type(), out)))  # type: ignore[attr-defined]
        labels = batch + left + right
        shape = [extent[lab] if lab in extent else b_extent[lab] for lab in labels]
        return self.reshape(product, shape), labels

    def broadcast(self, operands: list[tuple[SSAValue, Labels]]) -> list[tuple[SSAValue, Labels]]:
        """Operands with every label at one extent: ``...`` dims of extent 1 expanded; an
        error for other extents that disagree."""
        extent: dict[str, int] = {}
        for x, labels in operands:
            for label, n in zip(labels, _shape(x)):
                if extent.get(label, 1) == 1 or n == 1 and label.startswith("..."):
                    extent[label] = max(extent.get(label, 1), n)
                elif n != extent[label]:
                    raise FrontendError(f"{self.ctx.label}: label '{label}' has extents "
                                        f"{extent[label]} and {n}")
        result = []
        for x, labels in operands:
            wanted = [extent[label] for label in labels]
            if wanted != list(_shape(x)):
                if any(n != 1 and not label.startswith("...")
                       for label, n, m in zip(labels, _shape(x), wanted) if n != m):
                    raise FrontendError(f"{self.ctx.label}: label extents of {list(_shape(x))} "
                                        f"disagree with {wanted}")
                element = x.type.get_element_type()  # type: ignore[attr-defined]
                x = self.append(graph.ExpandOp(x, TensorType(element, wanted)))
            result.append((x, labels))
        return result


@onnx_op("Einsum", attributes={"equation": STRING}, inputs=(dtypes.FLOATS,))
def einsum(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    if "equation" not in attrs:
        raise FrontendError(f"{ctx.label}: attribute 'equation' is required")
    if not node.input:
        raise FrontendError(f"{ctx.label}: expected at least 1 input")
    values = ctx.inputs(node, len(node.input))
    try:
        terms, output = parse_equation(str(attrs["equation"]), [len(_shape(v)) for v in values])
    except ValueError as exc:
        raise FrontendError(f"{ctx.label}: {exc}") from None
    lower = _Lowering(ctx, node.output[0])
    operands = lower.broadcast([lower.diagonal(v, labels) for v, labels in zip(values, terms)])
    for k, (x, labels) in enumerate(operands):
        keep = set(output).union(*(labs for j, (_, labs) in enumerate(operands) if j != k))
        operands[k] = lower.sum_out(x, labels, keep)
    x, labels = operands[0]
    for k, (y, y_labels) in enumerate(operands[1:], start=2):
        keep = set(output).union(*(labs for _, labs in operands[k:]))
        x, labels = lower.contract(x, labels, y, y_labels, keep)
    x, labels = lower.sum_out(x, labels, set(output))
    x = lower.transpose(x, labels, output)
    result_type = TensorType(x.type.get_element_type(), _shape(x))  # type: ignore[attr-defined]
    ctx.check_inferred(node, result_type)
    if any(x is v for v in values):
        ctx.alias(node.output[0], x)
    else:
        ctx.name_result(node.output[0], x)
