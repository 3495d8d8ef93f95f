"""The ONNX frontend's reductions, normalizations and pooling: the graph ops they import
to (axes normalized, ONNX defaults and opset rules applied, auto_pad resolved), one-line
errors for what is not supported, and their meaning: the imported IR evaluated with the
numpy interpreter of the graph dialect (graph_reference.py) against onnxruntime, float32
both (rtol 1e-5, atol 1e-6)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_reference import evaluate
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

from tmlir.dialects import graph
from tmlir.frontends.onnx import FrontendError, import_onnx

RNG = np.random.default_rng(0)


def make_model(nodes, inputs, outputs=(("y", None),), initializers=(), opset: int = 18,
               ) -> onnx.ModelProto:
    """inputs: (name, shape[, dtype]) (float32 by default), outputs: (name, shape), shape
    None for 'unknown'; initializers keep their numpy dtype (int64 axes)."""
    graph_proto = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, dtype[0] if dtype else TensorProto.FLOAT, s)
         for n, s, *dtype in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(np.asarray(a), name) for name, a in dict(initializers).items()],
    )
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def rand(*shape: int) -> np.ndarray:
    return (3 * RNG.standard_normal(shape)).astype(np.float32)


def body_ops(model: onnx.ModelProto) -> list:
    (function,) = import_onnx(model).module.ops
    return [op for op in function.body.block.ops if not isinstance(op, func.ReturnOp)]


def check_against_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    actual = evaluate(import_onnx(model), feeds)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


def import_error(model: onnx.ModelProto) -> str:
    with pytest.raises(FrontendError) as info:
        import_onnx(model)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- Softmax, LogSoftmax ------------------------------------------------------------------


@pytest.mark.parametrize("op_type, opset, attributes, axes", [
    ("Softmax", 13, {}, (2,)),  # since 13: the single axis, default -1
    ("Softmax", 13, {"axis": 1}, (1,)),  # a strided row
    ("Softmax", 18, {"axis": -3}, (0,)),
    ("Softmax", 11, {}, (1, 2)),  # before 13: flattened at axis (default 1) to 2-D
    ("Softmax", 11, {"axis": 2}, (2,)),
    ("LogSoftmax", 13, {"axis": 0}, (0,)),
    ("LogSoftmax", 11, {"axis": 0}, (0, 1, 2)),
])
def test_softmax_axes(op_type, opset, attributes, axes):
    model = make_model([helper.make_node(op_type, ["x"], ["y"], **attributes)],
                       [("x", [3, 4, 5])], opset=opset)
    (op,) = body_ops(model)
    assert isinstance(op, graph.LogSoftmaxOp if op_type == "LogSoftmax" else graph.SoftmaxOp)
    assert op.reduced_axes == axes and op.result.type == op.input.type
    check_against_onnxruntime(model, {"x": rand(3, 4, 5)})


def test_softmax_prints_its_axes():
    model = make_model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [("x", [2, 3, 4])])
    assert ("%y = graph.softmax %x {axes = array<i64: 1>} : tensor<2x3x4xf32>"
            in str(import_onnx(model).module))


# -- ReduceSum, ReduceMean, ReduceMax, ReduceMin ---------------------------------------------


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("opset", [11, 18])
@pytest.mark.parametrize("axes, keepdims, expected_axes, shape", [
    ([1], 1, (1,), (2, 1, 4, 5)),
    ([-1, 2], 0, (2, 3), (2, 3)),
    ([0, -1], 1, (0, 3), (1, 3, 4, 1)),
    (None, 1, (0, 1, 2, 3), (1, 1, 1, 1)),  # no axes: every dim
    (None, 0, (0, 1, 2, 3), ()),
])
def test_reduce(op_type, opset, axes, keepdims, expected_axes, shape):
    """Axes as an attribute (opset 11) or a constant input (opset 18), any order and
    negative; keepdims."""
    inputs, initializers, attributes = ["x"], {}, {"keepdims": keepdims}
    if axes is not None and opset >= 18:
        inputs.append("axes")
        initializers["axes"] = np.array(axes, np.int64)
    elif axes is not None:
        attributes["axes"] = axes
    model = make_model([helper.make_node(op_type, inputs, ["y"], **attributes)],
                       [("x", [2, 3, 4, 5])], initializers=initializers, opset=opset)
    (op,) = body_ops(model)
    assert op.name == "graph.reduce_" + op_type[len("Reduce"):].lower()
    assert op.reduced_axes == expected_axes and (op.keepdims is not None) == bool(keepdims)
    assert op.result.type.get_shape() == shape
    check_against_onnxruntime(model, {"x": rand(2, 3, 4, 5)})


def test_reduce_sum_takes_axes_as_an_input_since_opset_13():
    model = make_model([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
                       [("x", [2, 3, 4])], initializers={"axes": np.array([1], np.int64)},
                       opset=13)
    (op,) = body_ops(model)
    assert isinstance(op, graph.ReduceSumOp) and op.reduced_axes == (1,)
    check_against_onnxruntime(model, {"x": rand(2, 3, 4)})


def test_reduce_axes_from_a_constant_node():
    """Constant folding made the Constant an initializer; its int64 data is read as axes
    and no weight is made of it."""
    axes = helper.make_node("Constant", [], ["axes"], value_ints=[0, 2])
    model = make_model([axes, helper.make_node("ReduceMax", ["x", "axes"], ["y"])],
                       [("x", [2, 3, 4])])
    (op,) = body_ops(model)
    assert isinstance(op, graph.ReduceMaxOp) and op.reduced_axes == (0, 2)
    check_against_onnxruntime(model, {"x": rand(2, 3, 4)})


def test_reduce_noop_with_empty_axes_is_the_input():
    model = make_model([helper.make_node("ReduceMean", ["x"], ["t"], noop_with_empty_axes=1),
                        helper.make_node("Exp", ["t"], ["y"])], [("x", [2, 3])])
    (exp,) = body_ops(model)
    assert isinstance(exp, graph.ExpOp)


@pytest.mark.parametrize("op_type, value", [("ReduceSum", 0.0), ("ReduceMean", 0.0),  # onnxruntime's
                                            ("ReduceMax", -np.inf), ("ReduceMin", np.inf)])
def test_reduce_over_an_empty_set_is_a_constant(op_type, value):
    model = make_model([helper.make_node(op_type, ["x", "axes"], ["y"])], [("x", [2, 0, 4])],
                       initializers={"axes": np.array([1], np.int64)})
    imported = import_onnx(model)
    (function,) = imported.module.ops
    (weight, _) = function.body.block.ops
    assert isinstance(weight, graph.WeightOp) and weight.result.type.get_shape() == (2, 1, 4)
    np.testing.assert_array_equal(imported.weights["y"], np.full((2, 1, 4), value, np.float32))


def test_reduce_to_an_empty_tensor_is_an_empty_constant():
    model = make_model([helper.make_node("ReduceSum", ["x", "axes"], ["y"])], [("x", [2, 0, 4])],
                       initializers={"axes": np.array([2], np.int64)})
    imported = import_onnx(model)
    assert imported.weights["y"].shape == (2, 0, 1)


@pytest.mark.parametrize("op_type, expected", [("GlobalAveragePool", graph.ReduceMeanOp),
                                               ("GlobalMaxPool", graph.ReduceMaxOp)])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 4, 5)])
def test_global_pool_is_a_reduction_over_the_spatial_dims(op_type, expected, shape):
    model = make_model([helper.make_node(op_type, ["x"], ["y"])], [("x", list(shape))])
    (op,) = body_ops(model)
    assert isinstance(op, expected) and op.keepdims is not None
    assert op.reduced_axes == tuple(range(2, len(shape)))
    check_against_onnxruntime(model, {"x": rand(*shape)})


# -- LayerNormalization -------------------------------------------------------------------


@pytest.mark.parametrize("axis, outputs", [(-1, 1), (1, 1), (0, 3), (-2, 3)])
def test_layer_norm(axis, outputs):
    """Mean and InvStdDev are results of the op when they are used (here: graph outputs)."""
    shape = [2, 3, 4]
    normalized = shape[axis:]
    names = ["y", "mean", "inv_std_dev"][:outputs]
    stats = [*shape[:axis % 3], *([1] * len(normalized))]
    model = make_model(
        [helper.make_node("LayerNormalization", ["x", "scale", "bias"], names, axis=axis,
                          epsilon=1e-3)],
        [("x", shape)], [("y", shape), *((n, stats) for n in names[1:])],
        {"scale": rand(*normalized), "bias": rand(*normalized)}, opset=17)
    ops = body_ops(model)
    op = ops[-1]
    assert isinstance(op, graph.LayerNormOp) and op.axis_value == axis % 3
    assert op.epsilon_value == pytest.approx(1e-3) and len(op.results) == outputs
    check_against_onnxruntime(model, {"x": rand(*shape)})


def test_layer_norm_unused_statistics_are_not_computed():
    model = make_model(
        [helper.make_node("LayerNormalization", ["x", "scale"], ["y", "mean", ""])],
        [("x", [2, 6])], initializers={"scale": rand(6)}, opset=17)
    (_, op) = body_ops(model)
    assert isinstance(op, graph.LayerNormOp) and len(op.results) == 1 and op.bias is None
    check_against_onnxruntime(model, {"x": rand(2, 6)})


# -- MaxPool, AveragePool ------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("shape, attributes, pads", [
    ((1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
     (1, 1, 1, 1)),
    ((1, 2, 7, 8), {"kernel_shape": [3, 2], "strides": [2, 3], "auto_pad": "SAME_UPPER"},
     (1, 0, 1, 0)),
    ((1, 2, 7, 8), {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
     (1, 0, 0, 0)),
    ((1, 2, 7, 8), {"kernel_shape": [2, 3], "auto_pad": "VALID"}, (0, 0, 0, 0)),
    ((2, 3, 9, 9), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1,
                    "pads": [0, 1, 1, 0]}, (0, 1, 1, 0)),
    ((2, 3, 10), {"kernel_shape": [3], "strides": [2], "dilations": [2], "ceil_mode": 1},
     (0, 0)),
    ((1, 2, 5, 6, 7), {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2],
                       "pads": [0, 1, 1, 1, 1, 0]}, (0, 1, 1, 1, 1, 0)),
])
def test_pool(op_type, shape, attributes, pads):
    model = make_model([helper.make_node(op_type, ["x"], ["y"], **attributes)],
                       [("x", list(shape))], opset=19)
    (op,) = body_ops(model)
    assert op.name == ("graph.max_pool" if op_type == "MaxPool" else "graph.average_pool")
    assert op.window()[2] == pads
    assert (op.ceil_mode is not None) == bool(attributes.get("ceil_mode"))
    check_against_onnxruntime(model, {"x": rand(*shape)})


@pytest.mark.parametrize("ceil_mode", [0, 1])
def test_average_pool_count_include_pad(ceil_mode):
    model = make_model([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3],
                                         strides=[2, 2], pads=[1, 1, 1, 1],
                                         count_include_pad=1, ceil_mode=ceil_mode)],
                       [("x", [1, 2, 8, 8])])
    (op,) = body_ops(model)
    assert op.count_include_pad is not None
    check_against_onnxruntime(model, {"x": rand(1, 2, 8, 8)})


def test_max_pool_unused_indices_are_accepted():
    model = make_model([helper.make_node("MaxPool", ["x"], ["y", "indices"],
                                         kernel_shape=[2, 2])], [("x", [1, 1, 4, 4])])
    (op,) = body_ops(model)
    assert isinstance(op, graph.MaxPoolOp)


def test_pool_prints_its_window():
    model = make_model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3],
                                         strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)],
                       [("x", [1, 8, 14, 14])])
    assert ("%y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, "
            "pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode} : "
            "tensor<1x8x14x14xf32> -> tensor<1x8x8x8xf32>") in str(import_onnx(model).module)


# -- one-line errors ----------------------------------------------------------------------


X = [("x", [2, 3, 4])]
ERRORS = {
    "axes_attribute_at_opset_18": (
        make_model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[1])], X),
        ("node #0 (ReduceMean): attribute 'axes' is not allowed since opset 18, where the axes "
         "are an input")),
    "float_axes": (  # shape inference reads constant axes and says so first
        make_model([helper.make_node("ReduceSum", ["x", "a"], ["y"])], X,
                   initializers={"a": np.array([0.5], np.float32)}),
        ("shape inference failed: a ReduceSum node: ParseData type "
         "mismatch for tensor: a. Expected:int64 Actual:float")),
    "axes_as_a_graph_input": (
        make_model([helper.make_node("ReduceMean", ["x", "axes"], ["y"])],
                   [("x", [2, 3, 4]), ("axes", [1], TensorProto.INT64)]),
        "node #0 (ReduceMean): input 'axes' ('axes') is a model input, whose value must be "
        "known when the model is compiled (InferenceSession compiles the model for each value "
        "it is fed)"),
    "keepdims": (
        make_model([helper.make_node("ReduceMax", ["x"], ["y"], keepdims=2)], X),
        "node #0 (ReduceMax): unsupported value 2 of attribute 'keepdims' (expected 0 or 1)"),
    "axis_out_of_range": (
        make_model([helper.make_node("Softmax", ["x"], ["y"], axis=3, name="sm")], X, opset=11),
        ("shape inference failed: node 'sm' (Softmax): 'axis' must be in [-3 , 2]. Its actual "
         "value is: 3")),
    "stash_type": (
        make_model([helper.make_node("LayerNormalization", ["x", "s"], ["y"], stash_type=0)],
                   X, initializers={"s": rand(4)}, opset=17),
        ("node #0 (LayerNormalization): unsupported value 0 of attribute 'stash_type' "
         "(expected 1)")),
    "storage_order": (
        make_model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2],
                                     storage_order=2)], X),
        "node #0 (MaxPool): unsupported value 2 of attribute 'storage_order' (expected 0 or 1)"),
    "auto_pad": (
        make_model([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2],
                                     auto_pad="SAME")], X),
        ("node #0 (AveragePool): unsupported value 'SAME' of attribute 'auto_pad' (expected "
         "'NOTSET' or 'SAME_UPPER' or 'SAME_LOWER' or 'VALID')")),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors(case):
    model, message = ERRORS[case]
    assert import_error(model) == message


def test_pool_attribute_of_the_wrong_length():
    """Shape inference reports it first, in one line."""
    model = make_model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2],
                                         pads=[1, 1])], [("x", [1, 1, 4, 4])])
    assert import_error(model) == ("shape inference failed: a MaxPool node: "
                                   "Attribute pads has incorrect size")


# -- more reductions: prod, norms, logarithms; max / min of bools ---------------------------


def typed_model(node, inputs, outputs, initializers=(), opset: int = 18) -> onnx.ModelProto:
    """One node; inputs and outputs: (name, shape, ONNX dtype); initializers: (name, array)."""
    graph_proto = helper.make_graph(
        [node], "test", [helper.make_tensor_value_info(n, t, s) for n, s, t in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, s, t in outputs],
        [numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


F32 = TensorProto.FLOAT
MORE_REDUCTIONS = ["ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
                   "ReduceLogSumExp"]


@pytest.mark.parametrize("op_type", MORE_REDUCTIONS)
@pytest.mark.parametrize("opset", [13, 18])
def test_more_reductions(op_type, opset):
    """Axes as an attribute before opset 18, as a constant input since."""
    inputs, initializers, attributes = ["x"], {}, {"keepdims": 0}
    if opset >= 18:
        inputs.append("axes")
        initializers["axes"] = np.array([-1, 1], np.int64)
    else:
        attributes["axes"] = [-1, 1]
    model = make_model([helper.make_node(op_type, inputs, ["y"], **attributes)],
                       [("x", [2, 3, 4, 5])], initializers=initializers, opset=opset)
    (op,) = body_ops(model)
    name = {"ReduceSumSquare": "sum_square", "ReduceLogSum": "log_sum",
            "ReduceLogSumExp": "log_sum_exp"}.get(op_type, op_type[len("Reduce"):].lower())
    assert op.name == f"graph.reduce_{name}" and op.reduced_axes == (1, 3)
    x = rand(2, 3, 4, 5)
    check_against_onnxruntime(model, {"x": np.abs(x) + 0.5 if op_type == "ReduceLogSum" else x})


@pytest.mark.parametrize("op_type, value", [
    ("ReduceProd", 1.0), ("ReduceL1", 0.0), ("ReduceL2", 0.0), ("ReduceSumSquare", 0.0),
    ("ReduceLogSum", -np.inf), ("ReduceLogSumExp", -np.inf)])
def test_more_reductions_over_an_empty_set_are_constants(op_type, value):
    model = make_model([helper.make_node(op_type, ["x", "axes"], ["y"])], [("x", [2, 0, 4])],
                       initializers={"axes": np.array([1], np.int64)})
    imported = import_onnx(model)
    np.testing.assert_array_equal(imported.weights["y"], np.full((2, 1, 4), value, np.float32))


@pytest.mark.parametrize("op_type, empty", [("ReduceMax", False), ("ReduceMin", True)])
def test_reduce_max_and_min_of_bools(op_type, empty):
    """Any and all; over an empty set, false and true."""
    B = TensorProto.BOOL
    model = typed_model(helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=0),
                        [("x", [3, 4], B)], [("y", [3], B)], [("axes", np.array([1], np.int64))],
                        opset=20)
    (op,) = body_ops(model)
    assert op.input.type.get_element_type() == op.result.type.get_element_type()
    x = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 0]], bool)
    check_against_onnxruntime(model, {"x": x})
    model = typed_model(helper.make_node(op_type, ["x", "axes"], ["y"]), [("x", [2, 0], B)],
                        [("y", [2, 1], B)], [("axes", np.array([1], np.int64))], opset=20)
    np.testing.assert_array_equal(import_onnx(model).weights["y"], np.full((2, 1), empty))


# -- ArgMax, ArgMin, Hardmax, CumSum, TopK --------------------------------------------------


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("attributes, axis, keepdims, last, shape", [
    ({}, 0, True, False, [1, 4, 5]),  # ONNX defaults: axis 0, keepdims
    ({"axis": -1, "keepdims": 0}, 2, False, False, [3, 4]),
    ({"axis": 1, "select_last_index": 1}, 1, True, True, [3, 1, 5]),
])
def test_arg_reduce(op_type, attributes, axis, keepdims, last, shape):
    model = typed_model(helper.make_node(op_type, ["x"], ["y"], **attributes),
                        [("x", [3, 4, 5], F32)], [("y", shape, TensorProto.INT64)], opset=13)
    (op,) = body_ops(model)
    assert op.name == ("graph.arg_max" if op_type == "ArgMax" else "graph.arg_min")
    assert (op.axis_value, op.keepdims is not None, op.select_last_index is not None) == (
        axis, keepdims, last)
    assert list(op.result.type.get_shape()) == shape
    check_against_onnxruntime(model, {"x": np.round(rand(3, 4, 5))})  # with ties


@pytest.mark.parametrize("opset, attributes, ops", [
    (13, {}, ["graph.hardmax"]),  # since 13: axis -1
    (13, {"axis": 1}, ["graph.hardmax"]),
    (11, {}, ["graph.reshape", "graph.hardmax", "graph.reshape"]),  # before: 2-D at axis 1
    (11, {"axis": 2}, ["graph.hardmax"]),  # the last axis: the same either way
])
def test_hardmax(opset, attributes, ops):
    model = make_model([helper.make_node("Hardmax", ["x"], ["y"], **attributes)],
                       [("x", [2, 3, 4])], opset=opset)
    assert [op.name for op in body_ops(model)] == ops
    check_against_onnxruntime(model, {"x": np.round(rand(2, 3, 4))})


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64])
@pytest.mark.parametrize("axis, exclusive, reverse", [(0, 0, 0), (-1, 1, 0), (1, 0, 1), (1, 1, 1)])
def test_cumsum(dtype, axis, exclusive, reverse):
    model = typed_model(helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive,
                                         reverse=reverse),
                        [("x", [3, 4], dtype)], [("y", [3, 4], dtype)],
                        [("axis", np.array(axis, np.int32))], opset=14)
    (op,) = body_ops(model)
    assert isinstance(op, graph.CumSumOp) and op.axis_value == axis % 2
    assert (op.exclusive is not None, op.reverse is not None) == (bool(exclusive), bool(reverse))
    x = np.arange(12).reshape(3, 4) * 3 - 7
    check_against_onnxruntime(model, {"x": x.astype(helper.tensor_dtype_to_np_dtype(dtype))})


@pytest.mark.parametrize("opset, attributes, smallest", [
    (1, {"k": 2}, False),  # k an attribute before opset 10
    (10, {"axis": 0}, False),
    (11, {"largest": 0}, True),
])
def test_top_k(opset, attributes, smallest):
    axis = attributes.get("axis", -1) % 2
    shape = [2, 4] if axis == 0 else [3, 2]
    inputs = ["x"] if opset < 10 else ["x", "k"]
    initializers = [] if opset < 10 else [("k", np.array([2], np.int64))]
    model = typed_model(helper.make_node("TopK", inputs, ["v", "i"], **attributes),
                        [("x", [3, 4], F32)], [("v", shape, F32), ("i", shape, TensorProto.INT64)],
                        initializers, opset=opset)
    (op,) = body_ops(model)
    assert isinstance(op, graph.TopKOp) and (op.axis_value, op.k_value) == (axis, 2)
    assert (op.smallest is not None) == smallest
    x = np.array([[1, 3, 3, 2], [5, 5, 5, 5], [0, -1, 7, 7]], np.float32)  # ties: lower index
    check_against_onnxruntime(model, {"x": x})


def test_top_k_unsorted_is_sorted():
    """``sorted = 0`` allows any order of the k elements: the sorted one."""
    texts = [str(import_onnx(_top_k_k([2], sorted=flag)).module) for flag in (0, 1)]
    assert texts[0] == texts[1] and "graph.top_k" in texts[0]


def _top_k_k(k, opset: int = 11, **attributes) -> onnx.ModelProto:
    return typed_model(helper.make_node("TopK", ["x", "k"], ["v", "i"], **attributes),
                       [("x", [3, 4], F32)], [("v", None, F32), ("i", None, TensorProto.INT64)],
                       [("k", np.array(k, np.int64))], opset=opset)


MORE_ERRORS = {
    "cumsum_axis_at_run_time": (
        typed_model(helper.make_node("CumSum", ["x", "axis"], ["y"]),
                    [("x", [3, 4], F32), ("axis", [], TensorProto.INT64)], [("y", [3, 4], F32)],
                    opset=14),
        "node #0 (CumSum): input 'axis' ('axis') is a model input, whose value must be known "
        "when the model is compiled (InferenceSession compiles the model for each value it is "
        "fed)"),
    "cumsum_of_bools": (
        typed_model(helper.make_node("CumSum", ["x", "axis"], ["y"]),
                    [("x", [3], TensorProto.BOOL)], [("y", [3], TensorProto.BOOL)],
                    [("axis", np.array(0, np.int64))], opset=14),
        "node #0 (CumSum): input 'x' is BOOL, but CumSum takes float32, float64, int32, int64 "
        "there"),
    "cumsum_two_axes": (
        typed_model(helper.make_node("CumSum", ["x", "axis"], ["y"]), [("x", [3, 4], F32)],
                    [("y", [3, 4], F32)], [("axis", np.array([0, 1], np.int64))], opset=14),
        "node #0 (CumSum): input 'axis' must be one integer, got [0, 1]"),
    "arg_max_keepdims": (
        make_model([helper.make_node("ArgMax", ["x"], ["y"], keepdims=3)], X, opset=13),
        "node #0 (ArgMax): unsupported value 3 of attribute 'keepdims' (expected 0 or 1)"),
    "reduce_l2_noop_flag": (
        make_model([helper.make_node("ReduceL2", ["x"], ["y"], noop_with_empty_axes=2)], X),
        "node #0 (ReduceL2): unsupported value 2 of attribute 'noop_with_empty_axes' (expected "
        "0 or 1)"),
}


@pytest.mark.parametrize("case", MORE_ERRORS)
def test_more_errors(case):
    model, message = MORE_ERRORS[case]
    assert import_error(model) == message
