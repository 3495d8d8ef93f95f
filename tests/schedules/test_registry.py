"""The graph ops' traits and the schedule registry (tmlir/schedules/registry.py): which ops
have a kernel builder, which traits each op declares, and that an op added to a family
(here a unary op defined in this file) is scheduled, fused and type-checked with no list
to edit beyond its element function."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.ir import Block
from xdsl.irdl import irdl_op_definition

from tmlir.dialects import graph, tm
from tmlir.dialects.graph import Graph
from tmlir.schedules import elementwise_functions
from tmlir.schedules.injective import element_of, is_injective
from tmlir.schedules.registry import kernel_builder, schedules
from tmlir.schedules.templates import NoTemplate, kernel_for


@irdl_op_definition
class CubeOp(graph.UnaryElementwiseOp):
    """``x * x * x``: a unary op declared after the dialect, as a new op would be."""

    name = "test.cube"


def _cube(b, x, _params):
    return b.fop(arith.MulfOp, b.fop(arith.MulfOp, x, x), x)


def _names(predicate) -> set[str]:
    return {op.name.removeprefix("graph.") for op in Graph.operations if predicate(op)}


def test_every_op_with_a_kernel_has_a_builder():
    # matmul is built by the tunable path of kernel_for; reshape is a view; weight, fused
    # and yield are no kernels of their own
    assert _names(lambda op: kernel_builder(op) is None) == {
        "weight", "constant", "matmul", "reshape", "fused", "yield"}


def test_injective_ops():
    elementwise = {
        "abs", "add", "clip", "div", "elu", "erf", "exp", "gelu", "hard_sigmoid", "hard_swish",
        "leaky_relu", "log", "max", "mean", "min", "mul", "neg", "pow", "reciprocal", "relu",
        "selu", "sigmoid", "softplus", "softsign", "sqrt", "sub", "sum", "tanh",
        "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "celu", "cos", "cosh", "floor",
        "mish", "mod", "prelu", "round", "shrink", "sign", "sin", "sinh", "tan", "thresholded_relu",
        "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"}
    logic = {"equal", "less", "less_equal", "greater", "greater_equal", "and", "or", "xor",
             "not", "is_nan", "is_inf", "cast", "where"}
    data_movement = {"reshape", "transpose", "slice", "gather", "expand", "tile", "pad",
                     "concat", "resize", "depth_to_space", "space_to_depth", "trilu"}
    assert _names(lambda op: op.has_trait(graph.Injective)) == (
        elementwise | logic | data_movement | {"batch_norm"})


def test_any_element_type_ops():
    assert _names(lambda op: op.has_trait(graph.AnyElementType)) == {
        "add", "sub", "mul", "div", "max", "min", "sum", "neg", "abs",
        "equal", "less", "less_equal", "greater", "greater_equal", "and", "or", "xor", "not",
        "is_nan", "cast", "where", "take", "take_along_axis", "gather_nd",
        "transpose", "slice", "gather", "expand", "tile", "pad", "concat", "split",
        "depth_to_space", "space_to_depth", "trilu", "eye", "one_hot", "scatter_elements",
        "scatter_nd", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "shift_left",
        "shift_right", "mod", "sign", "prelu", "is_inf", "arg_max", "arg_min", "cumsum", "top_k",
        "reduce_max", "reduce_min", "recurrence", "max_pool", "max_pool_with_indices"}


def test_no_op_traits():
    assert _names(lambda op: op.has_trait(graph.NoOpWhen)) == {
        "reshape", "expand", "tile", "slice", "pad", "resize", "concat", "split",
        "depth_to_space", "space_to_depth", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "max", "min", "sum", "mean",
        "cast", "reduce_prod", "reduce_log_sum_exp", "trilu"}
    assert _names(lambda op: (t := op.get_trait(graph.NoOpWhen)) is not None and t.reshape) == {
        "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_log_sum_exp"}


def test_an_op_type_has_one_builder():
    with pytest.raises(AssertionError, match="ConvOp already has a kernel builder"):
        schedules(graph.ConvOp)(lambda name, op: None)


def _value(element=Float32Type(), shape=(4, 5)):
    return Block(arg_types=[TensorType(element, list(shape))]).args[0]


def test_op_without_template():
    with pytest.raises(NoTemplate, match=r"^no schedule template for 'graph.reshape'$"):
        kernel_for("reshape_0", graph.ReshapeOp(_value(), TensorType(Float32Type(), [20])))


def test_new_unary_op_without_element_function():
    op = CubeOp(_value())
    assert kernel_builder(CubeOp) is elementwise_functions.elementwise_op_kernel
    with pytest.raises(NoTemplate, match=r"^no schedule template for 'test.cube'$"):
        kernel_for("cube_0", op)


def test_new_unary_op_needs_only_its_element_function(monkeypatch):
    monkeypatch.setitem(elementwise_functions.UNARY, CubeOp, _cube)
    op = CubeOp(_value())
    kernel = kernel_for("cube_0", op)
    assert isinstance(kernel, tm.KernelOp)
    assert kernel.attributes["tm.params"].data["expr"].data == "cube(x0)"
    kernel.verify()
    assert is_injective(op) and callable(element_of(op))
    with pytest.raises(NoTemplate, match=r"^'test.cube' is scheduled for f32, f16, bf16 and f64 tensors only, "
                                         r"got tensor<4x5xi32>$"):
        kernel_for("cube_1", CubeOp(_value(IntegerType(32))))
