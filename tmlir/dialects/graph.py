"""The ``graph`` dialect: tensor operators with value semantics, as the frontend imports them.

A model is a ``func.func`` whose arguments are the model inputs and whose results are its
outputs (names in the ``tm.inputs`` / ``tm.outputs`` function attributes). Weights are not
printed inline: ``graph.weight "fc1.weight"`` names an entry of a side table (the ONNX file
they came from, or the dictionary the Python API keeps), so a 100 MB model stays a small
text.

    func.func @main(%x: tensor<8x784xf32>) -> tensor<8x10xf32> {
      %w = graph.weight "fc.weight" : tensor<10x784xf32>
      %b = graph.weight "fc.bias" : tensor<10xf32>
      %y = graph.matmul %x, %w, %b {transpose_b} : (...) -> tensor<8x10xf32>
      %z = graph.relu %y : tensor<8x10xf32>
      func.return %z : tensor<8x10xf32>
    }
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


def tensor_shape(attr: Attribute, what: str) -> tuple[int, ...]:
    """The static shape of a tensor type, or a VerifyException naming `what`."""
    if not isinstance(attr, TensorType):
        raise VerifyException(f"{what} must be a tensor, got {attr}")
    shape = tuple(attr.get_shape())
    if any(d < 0 for d in shape):
        raise VerifyException(f"{what} must have a static shape, got {attr}")
    return shape


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """numpy broadcasting of `shapes`; raises VerifyException when they do not broadcast."""
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            pretty = ", ".join("x".join(map(str, s)) or "scalar" for s in shapes)
            raise VerifyException(f"shapes {pretty} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


@irdl_op_definition
class WeightOp(IRDLOperation):
    """A named constant tensor kept in the side table, not in the IR text."""

    name = "graph.weight"
    weight_name = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, name: str, type: TensorType) -> None:
        super().__init__(properties={"name": StringAttr(name)}, result_types=[type])

    def verify_(self) -> None:
        tensor_shape(self.result.type, f"weight '{self.weight_name.data}'")


class BinaryElementwiseOp(IRDLOperation):
    """``lhs <op> rhs`` with numpy broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs, rhs, result_type: TensorType) -> None:
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        lhs = tensor_shape(self.lhs.type, "lhs")
        rhs = tensor_shape(self.rhs.type, "rhs")
        out = tensor_shape(self.result.type, "result")
        expected = broadcast_shapes(lhs, rhs)
        if out != expected:
            raise VerifyException(
                f"result shape {list(out)} does not match broadcast shape {list(expected)}"
            )
        types = {t.get_element_type() for t in (self.lhs.type, self.rhs.type, self.result.type)}
        if len(types) != 1:
            raise VerifyException("operands and result must have the same element type")


@irdl_op_definition
class AddOp(BinaryElementwiseOp):
    name = "graph.add"


@irdl_op_definition
class SubOp(BinaryElementwiseOp):
    name = "graph.sub"


@irdl_op_definition
class MulOp(BinaryElementwiseOp):
    name = "graph.mul"


@irdl_op_definition
class DivOp(BinaryElementwiseOp):
    name = "graph.div"


class UnaryElementwiseOp(IRDLOperation):
    """An elementwise function of one tensor; the result has the operand's type."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input) -> None:
        super().__init__(operands=[input], result_types=[input.type])

    def verify_(self) -> None:
        tensor_shape(self.input.type, "input")


@irdl_op_definition
class ReluOp(UnaryElementwiseOp):
    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(UnaryElementwiseOp):
    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(UnaryElementwiseOp):
    name = "graph.tanh"


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


Graph = Dialect(
    "graph",
    [WeightOp, AddOp, SubOp, MulOp, DivOp, ReluOp, SigmoidOp, TanhOp, MatmulOp],
    [],
)

BINARY_OPS: dict[str, type[BinaryElementwiseOp]] = {
    "add": AddOp, "sub": SubOp, "mul": MulOp, "div": DivOp,
}
UNARY_OPS: dict[str, type[UnaryElementwiseOp]] = {
    "relu": ReluOp, "sigmoid": SigmoidOp, "tanh": TanhOp,
}
