"""The ``graph`` dialect: tensor operators with value semantics, as the frontend imports them.

A model is a ``func.func`` whose arguments are the model inputs and whose results are its
outputs (names in the ``tm.inputs`` / ``tm.outputs`` function attributes). Weights are not
printed inline: ``graph.weight "fc1.weight"`` names an entry of a side table (the ONNX file
they came from, or the dictionary the Python API keeps), so a 100 MB model stays a small
text.

    func.func @main(%x: tensor<8x784xf32>) -> tensor<8x10xf32> {
      %w = graph.weight "fc.weight" : tensor<10x784xf32>
      %b = graph.weight "fc.bias" : tensor<10xf32>
      %y = graph.matmul %x, %w, %b {transpose_rhs} : (...) -> tensor<8x10xf32>
      %z = graph.leaky_relu %y {alpha = 1.000000e-01 : f32} : tensor<8x10xf32>
      func.return %z : tensor<8x10xf32>
    }

Elementwise ops are one op per function, as ONNX has them: unary ops keep their operand's
type and carry their parameters as f32 properties (``graph.clip %x {min = 0.0 : f32}``),
binary ops (``graph.add``, ``graph.pow``) and variadic ones (``graph.max %a, %b, %c``)
broadcast numpy-style.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Dialect, SSAValue
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
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects._graph_conv import (  # noqa: F401  (re-exported)
    CONV_OPS,
    BatchNormOp,
    ConvOp,
    ConvTransposeOp,
    conv_output_shape,
    conv_transpose_output_shape,
)
from tmlir.dialects._graph_data_movement import (  # noqa: F401  (re-exported)
    COORDINATE_TRANSFORMATION_MODES,
    DATA_MOVEMENT_OPS,
    NEAREST_MODES,
    PAD_MODES,
    RESIZE_MODES,
    ConcatOp,
    ExpandOp,
    GatherOp,
    PadOp,
    ReshapeOp,
    ResizeOp,
    SliceOp,
    SplitOp,
    TileOp,
    TransposeOp,
)
from tmlir.dialects._graph_fused import FUSION_OPS, FusedOp, YieldOp  # noqa: F401  (re-exported)
from tmlir.dialects._graph_indexing import (  # noqa: F401  (re-exported)
    INDEXING_OPS,
    GatherNdOp,
    TakeAlongAxisOp,
    TakeOp,
)
from tmlir.dialects._graph_logic import (  # noqa: F401  (re-exported)
    COMPARE_OPS,
    LOGIC_OPS,
    LOGICAL_OPS,
    AndOp,
    CastOp,
    CompareOp,
    EqualOp,
    GreaterEqualOp,
    GreaterOp,
    IsNanOp,
    LessEqualOp,
    LessOp,
    LogicalOp,
    NotOp,
    OrOp,
    WhereOp,
    XorOp,
)
from tmlir.dialects._graph_reductions import (  # noqa: F401  (re-exported)
    NORMALIZATION_OPS,
    POOL_OPS,
    REDUCE_OPS,
    AveragePoolOp,
    LayerNormOp,
    LogSoftmaxOp,
    MaxPoolOp,
    PoolOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceOp,
    ReduceSumOp,
    SoftmaxBaseOp,
    SoftmaxOp,
    pool_output_size,
    reduced_shape,
)
from tmlir.dialects._graph_shapes import broadcast_shapes, tensor_shape


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


def verify_broadcast(operands: Sequence[tuple[str, Attribute]], result: Attribute) -> None:
    """The result is the numpy broadcast of the (name, type) operands, all one element type."""
    shapes = [tensor_shape(type, what) for what, type in operands]
    out = tensor_shape(result, "result")
    expected = broadcast_shapes(*shapes)
    if out != expected:
        raise VerifyException(
            f"result shape {list(out)} does not match broadcast shape {list(expected)}"
        )
    types = {t.get_element_type() for t in (*(type for _, type in operands), result)}
    if len(types) != 1:
        raise VerifyException("operands and result must have the same element type")


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
        verify_broadcast([("lhs", self.lhs.type), ("rhs", self.rhs.type)], self.result.type)


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


@irdl_op_definition
class PowOp(BinaryElementwiseOp):
    """``lhs ** rhs`` (ONNX ``Pow``)."""

    name = "graph.pow"


class VariadicElementwiseOp(IRDLOperation):
    """A function of one or more tensors, all broadcast numpy-style to the result."""

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $result)"

    def __init__(self, inputs: Sequence[SSAValue], result_type: TensorType) -> None:
        super().__init__(operands=[list(inputs)], result_types=[result_type])

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("expected at least one input")
        verify_broadcast([(f"input #{i}", v.type) for i, v in enumerate(self.inputs)],
                         self.result.type)


@irdl_op_definition
class MaxOp(VariadicElementwiseOp):
    """The largest input element; NaN if any is NaN (ONNX ``Max``, numpy ``maximum``)."""

    name = "graph.max"


@irdl_op_definition
class MinOp(VariadicElementwiseOp):
    """The smallest input element; NaN if any is NaN (ONNX ``Min``, numpy ``minimum``)."""

    name = "graph.min"


@irdl_op_definition
class SumOp(VariadicElementwiseOp):
    """The sum of the input elements (ONNX ``Sum``)."""

    name = "graph.sum"


@irdl_op_definition
class MeanOp(VariadicElementwiseOp):
    """The mean of the input elements (ONNX ``Mean``)."""

    name = "graph.mean"


class UnaryElementwiseOp(IRDLOperation):
    """An elementwise function of one tensor; the result has the operand's type.

    Parameters are f32 (or string) properties, printed in the attribute dictionary:
    ``graph.leaky_relu %x {alpha = 1.000000e-01 : f32} : tensor<4xf32>``.
    """

    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input, **params: float | str | None) -> None:
        """`params`: property values; floats become f32 attributes, None leaves one out."""
        properties: dict[str, Attribute] = {
            name: StringAttr(value) if isinstance(value, str) else FloatAttr(value, Float32Type())
            for name, value in params.items() if value is not None
        }
        super().__init__(operands=[input], result_types=[input.type], properties=properties)

    def parameters(self) -> dict[str, float | str]:
        """The op's properties as Python values, e.g. ``{"alpha": 0.1}`` (f32-rounded)."""
        return {name: attr.value.data if isinstance(attr, FloatAttr) else attr.data
                for name, attr in self.properties.items()
                if isinstance(attr, FloatAttr | StringAttr)}

    def verify_(self) -> None:
        tensor_shape(self.input.type, "input")
        for name, attr in self.properties.items():
            if isinstance(attr, FloatAttr) and not isinstance(attr.type, Float32Type):
                raise VerifyException(f"{name} must be an f32 float, got {attr.type}")


@irdl_op_definition
class ReluOp(UnaryElementwiseOp):
    """``max(x, 0)``; NaN stays NaN."""

    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(UnaryElementwiseOp):
    """``1 / (1 + exp(-x))``."""

    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(UnaryElementwiseOp):
    name = "graph.tanh"


@irdl_op_definition
class ExpOp(UnaryElementwiseOp):
    name = "graph.exp"


@irdl_op_definition
class LogOp(UnaryElementwiseOp):
    """The natural logarithm."""

    name = "graph.log"


@irdl_op_definition
class SqrtOp(UnaryElementwiseOp):
    name = "graph.sqrt"


@irdl_op_definition
class ReciprocalOp(UnaryElementwiseOp):
    """``1 / x``."""

    name = "graph.reciprocal"


@irdl_op_definition
class NegOp(UnaryElementwiseOp):
    """``-x``."""

    name = "graph.neg"


@irdl_op_definition
class AbsOp(UnaryElementwiseOp):
    name = "graph.abs"


@irdl_op_definition
class ErfOp(UnaryElementwiseOp):
    """The error function."""

    name = "graph.erf"


@irdl_op_definition
class SoftplusOp(UnaryElementwiseOp):
    """``log(1 + exp(x))``."""

    name = "graph.softplus"


@irdl_op_definition
class HardSwishOp(UnaryElementwiseOp):
    """``x * max(0, min(1, x / 6 + 1 / 2))``."""

    name = "graph.hard_swish"


@irdl_op_definition
class LeakyReluOp(UnaryElementwiseOp):
    """``x < 0 ? alpha * x : x``."""

    name = "graph.leaky_relu"
    alpha = prop_def(FloatAttr)


@irdl_op_definition
class HardSigmoidOp(UnaryElementwiseOp):
    """``max(0, min(1, alpha * x + beta))``."""

    name = "graph.hard_sigmoid"
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)


@irdl_op_definition
class EluOp(UnaryElementwiseOp):
    """``x < 0 ? alpha * (exp(x) - 1) : x``."""

    name = "graph.elu"
    alpha = prop_def(FloatAttr)


@irdl_op_definition
class SeluOp(UnaryElementwiseOp):
    """``gamma * (x <= 0 ? alpha * (exp(x) - 1) : x)``."""

    name = "graph.selu"
    alpha = prop_def(FloatAttr)
    gamma = prop_def(FloatAttr)


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(UnaryElementwiseOp):
    """``x / 2 * (1 + erf(x / sqrt(2)))``; with ``approximate = "tanh"``,
    ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``."""

    name = "graph.gelu"
    approximate = opt_prop_def(StringAttr)

    def verify_(self) -> None:
        super().verify_()
        if self.approximate is not None and self.approximate.data not in GELU_APPROXIMATIONS:
            raise VerifyException(f"approximate must be \"none\" or \"tanh\", "
                                  f"got \"{self.approximate.data}\"")


@irdl_op_definition
class ClipOp(UnaryElementwiseOp):
    """``min(max(x, min), max)``: a missing bound is no bound, NaN stays NaN, and
    ``min > max`` gives ``max`` everywhere (ONNX ``Clip``, numpy ``clip``)."""

    name = "graph.clip"
    lower = opt_prop_def(FloatAttr, prop_name="min")
    upper = opt_prop_def(FloatAttr, prop_name="max")


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


UNARY_OPS: tuple[type[UnaryElementwiseOp], ...] = (
    ReluOp, SigmoidOp, TanhOp, ExpOp, LogOp, SqrtOp, ReciprocalOp, NegOp, AbsOp, ErfOp,
    SoftplusOp, HardSwishOp, LeakyReluOp, HardSigmoidOp, EluOp, SeluOp, GeluOp, ClipOp,
)
BINARY_OPS: tuple[type[BinaryElementwiseOp], ...] = (AddOp, SubOp, MulOp, DivOp, PowOp)
VARIADIC_OPS: tuple[type[VariadicElementwiseOp], ...] = (MaxOp, MinOp, SumOp, MeanOp)

Graph = Dialect(
    "graph",
    [WeightOp, *BINARY_OPS, *VARIADIC_OPS, *UNARY_OPS, MatmulOp,
     *REDUCE_OPS, *NORMALIZATION_OPS, *POOL_OPS, *CONV_OPS, *DATA_MOVEMENT_OPS,
     *INDEXING_OPS, *LOGIC_OPS, *FUSION_OPS],
    [],
)
