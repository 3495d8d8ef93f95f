"""The ONNX frontend's matrix products.

- ``MatMul``: ``graph.matmul`` of operands of rank 2 or more (batched, broadcast); 1-D
  operands are not supported yet.
- ``Gemm``: ``graph.matmul`` with ``transA`` / ``transB``, ``alpha`` and, with the optional
  ``C`` (unidirectionally broadcast to the result), ``beta``.
"""

from __future__ import annotations

from onnx import NodeProto

from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import FLOAT, INT, Attr, onnx_op


@onnx_op("MatMul")
def matmul(ctx: ImportContext, node: NodeProto) -> None:
    lhs, rhs = ctx.inputs(node, 2)
    shapes = [list(v.type.get_shape()) for v in (lhs, rhs)]
    if min(len(s) for s in shapes) < 2:
        raise FrontendError(f"{ctx.label}: 1-D MatMul operands are not supported yet "
                            f"(shapes {shapes[0]} and {shapes[1]})")
    ctx.define(node.output[0], graph.MatmulOp(lhs, rhs, ctx.result_type(node)))


@onnx_op("Gemm", attributes={"transA": Attr(INT, (0, 1)), "transB": Attr(INT, (0, 1)),
                             "alpha": FLOAT, "beta": FLOAT})
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
