"""The ONNX frontend's matrix products.

- ``MatMul``: ``graph.matmul`` of operands of rank 2 or more (batched, broadcast). A 1-D
  operand follows numpy: a 1-D lhs ``(K)`` is reshaped to ``(1, K)``, a 1-D rhs ``(K)`` to
  ``(K, 1)``, and the added dim is removed from the product by a ``graph.reshape``, so the
  tuned matmul template computes it.
- ``Gemm``: ``graph.matmul`` with ``transA`` / ``transB``, ``alpha`` and, with the optional
  ``C`` (unidirectionally broadcast to the result), ``beta``.
"""

from __future__ import annotations

from onnx import NodeProto
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import F64, FLOAT, INT, Attr, onnx_op


@onnx_op("MatMul", inputs=(F64,))
def matmul(ctx: ImportContext, node: NodeProto) -> None:
    lhs, rhs = ctx.inputs(node, 2)
    lhs_shape, rhs_shape = (list(v.type.get_shape()) for v in (lhs, rhs))
    if not lhs_shape or not rhs_shape:
        raise FrontendError(f"{ctx.label}: MatMul operands must have rank 1 or more, got "
                            f"shapes {lhs_shape} and {rhs_shape}")
    result_type = ctx.result_type(node)
    if len(lhs_shape) >= 2 and len(rhs_shape) >= 2:
        ctx.define(node.output[0], graph.MatmulOp(lhs, rhs, result_type))
        return
    # numpy's 1-D operands: a matrix product of (1, K) or (K, 1), the added dim removed.
    if len(lhs_shape) == 1:
        lhs = _reshaped(ctx, lhs, [1, *lhs_shape], f"{node.output[0]}_lhs")
    if len(rhs_shape) == 1:
        rhs = _reshaped(ctx, rhs, [*rhs_shape, 1], f"{node.output[0]}_rhs")
    out = list(result_type.get_shape())
    full = out + [1] if len(rhs_shape) == 1 else list(out)
    if len(lhs_shape) == 1:
        full.insert(len(full) - 1, 1)
    element = result_type.get_element_type()
    product = ctx.append(graph.MatmulOp(lhs, rhs, TensorType(element, full)),
                         f"{node.output[0]}_2d")
    ctx.define(node.output[0], graph.ReshapeOp(product, result_type))


def _reshaped(ctx: ImportContext, value: SSAValue, shape: list[int], hint: str) -> SSAValue:
    """`value` reshaped to `shape` (same elements)."""
    element = value.type.get_element_type()  # type: ignore[attr-defined]
    return ctx.append(graph.ReshapeOp(value, TensorType(element, shape)), hint)


@onnx_op("Gemm", attributes={"transA": Attr(INT, (0, 1)), "transB": Attr(INT, (0, 1)),
                             "alpha": FLOAT, "beta": FLOAT}, inputs=(F64,))
def gemm(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    a, b, c = ctx.inputs(node, 2, optional=1)
    for operand, what in ((a, "A"), (b, "B")):
        if len(operand.type.get_shape()) != 2:
            raise FrontendError(f"{ctx.label}: operand {what} must be 2-D, "
                                f"got shape {list(operand.type.get_shape())}")
    result_type = ctx.result_type(node)
    if c is not None:  # unidirectional broadcast of C to (M, N)
        bias, out = list(c.type.get_shape()), list(result_type.get_shape())
        if len(bias) > 2 or any(d not in (1, o) for d, o in zip(bias[::-1], out[::-1])):
            raise FrontendError(f"{ctx.label}: C of shape {bias} does not broadcast to "
                                f"the result shape {out}")
    op = graph.MatmulOp(
        a, b, result_type, c,
        transpose_lhs=attrs.get("transA", 0) == 1,
        transpose_rhs=attrs.get("transB", 0) == 1,
        alpha=float(attrs.get("alpha", 1.0)),
        beta=float(attrs.get("beta", 1.0)) if c is not None else 1.0,
    )
    ctx.define(node.output[0], op)
