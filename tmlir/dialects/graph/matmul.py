"""``graph.matmul``: batched matrix product with optional transposes, scale and bias."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.graph.shapes import broadcast_shapes, tensor_shape

__all__ = [
    "MatmulOp",
]


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """``alpha * op(lhs) @ op(rhs) + beta * bias`` with numpy-style batch broadcasting.

    ``op`` transposes the last two dimensions when ``transpose_lhs``/``transpose_rhs`` is
    set. Operands have rank >= 2; the optional ``bias`` broadcasts to the result (ONNX
    ``Gemm``'s C). ``alpha`` and ``beta`` default to 1.
    """

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    transpose_lhs = opt_prop_def(UnitAttr)
    transpose_rhs = opt_prop_def(UnitAttr)
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$lhs `,` $rhs (`,` $bias^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        lhs,
        rhs,
        result_type: TensorType,
        bias=None,
        *,
        transpose_lhs: bool = False,
        transpose_rhs: bool = False,
        alpha: float = 1.0,
        beta: float = 1.0,
    ) -> None:
        props: dict[str, Attribute] = {}
        if transpose_lhs:
            props["transpose_lhs"] = UnitAttr()
        if transpose_rhs:
            props["transpose_rhs"] = UnitAttr()
        if alpha != 1.0:
            props["alpha"] = FloatAttr(alpha, Float32Type())
        if beta != 1.0:
            props["beta"] = FloatAttr(beta, Float32Type())
        super().__init__(
            operands=[lhs, rhs, [bias] if bias is not None else []],
            result_types=[result_type],
            properties=props,
        )

    @property
    def alpha_value(self) -> float:
        return 1.0 if self.alpha is None else self.alpha.value.data

    @property
    def beta_value(self) -> float:
        return 1.0 if self.beta is None else self.beta.value.data

    def problem(self) -> tuple[tuple[int, ...], int, int, int]:
        """(batch shape, M, N, K) of the product, after transposes and broadcasting."""
        lhs = tensor_shape(self.lhs.type, "lhs")
        rhs = tensor_shape(self.rhs.type, "rhs")
        if len(lhs) < 2 or len(rhs) < 2:
            raise VerifyException(
                f"operands must have rank >= 2, got ranks {len(lhs)} and {len(rhs)}"
            )
        m, k = (lhs[-1], lhs[-2]) if self.transpose_lhs else (lhs[-2], lhs[-1])
        k2, n = (rhs[-1], rhs[-2]) if self.transpose_rhs else (rhs[-2], rhs[-1])
        if k != k2:
            raise VerifyException(f"contraction sizes differ: lhs has {k}, rhs has {k2}")
        try:
            batch = broadcast_shapes(lhs[:-2], rhs[:-2])
        except VerifyException:
            raise VerifyException(
                f"batch dimensions {list(lhs[:-2])} and {list(rhs[:-2])} do not broadcast"
            ) from None
        return batch, m, n, k

    def verify_(self) -> None:
        batch, m, n, _ = self.problem()
        out = tensor_shape(self.result.type, "result")
        if out != (*batch, m, n):
            raise VerifyException(
                f"result shape {list(out)} does not match expected {[*batch, m, n]}"
            )
        if self.bias is not None:
            bias = tensor_shape(self.bias.type, "bias")
            try:
                fits = len(bias) <= len(out) and broadcast_shapes(bias, out) == out
            except VerifyException:
                fits = False
            if not fits:
                raise VerifyException(
                    f"bias shape {list(bias)} does not broadcast to result shape {list(out)}"
                )
