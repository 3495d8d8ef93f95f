"""The ONNX frontend's elementwise operators: the graph ops and properties they import to,
their ONNX attribute defaults, Clip's two forms, and one-line errors for what is not
supported. Numerical checks evaluate the imported IR with the numpy interpreter of the
graph dialect (graph_reference.py) against onnxruntime, float32 both (rtol 1e-5,
atol 1e-6 on values of size 1 to 10).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_reference import evaluate
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

from tmlir.dialects import graph
from tmlir.dtypes import SUPPORTED_NAMES
from tmlir.frontends.onnx import FrontendError, ImportedModel, import_onnx

F32 = TensorProto.FLOAT
RNG = np.random.default_rng(0)


def make_model(nodes, inputs, outputs=(("y", None),), initializers=(), opset: int = 20,
               dtype: int = F32) -> onnx.ModelProto:
    """inputs/outputs: (name, shape) pairs, shape None for 'unknown'."""
    graph_proto = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, dtype, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, dtype, s) for n, s in outputs],
        [numpy_helper.from_array(np.asarray(a), name) for name, a in dict(initializers).items()],
    )
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def rand(*shape: int) -> np.ndarray:
    return (3 * RNG.standard_normal(shape)).astype(np.float32)


def body_ops(imported: ImportedModel) -> list:
    (function,) = imported.module.ops
    return [op for op in function.body.block.ops if not isinstance(op, func.ReturnOp)]


def check_against_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    actual = evaluate(import_onnx(model), feeds)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


def import_error(model) -> str:
    with pytest.raises(FrontendError) as info:
        import_onnx(model)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- unary operators: one graph op each, ONNX defaults made explicit ------------------------


@pytest.mark.parametrize("op_type, attributes, name, properties", [
    ("Exp", {}, "exp", {}),
    ("Log", {}, "log", {}),
    ("Sqrt", {}, "sqrt", {}),
    ("Reciprocal", {}, "reciprocal", {}),
    ("Neg", {}, "neg", {}),
    ("Abs", {}, "abs", {}),
    ("Erf", {}, "erf", {}),
    ("Softplus", {}, "softplus", {}),
    ("Softsign", {}, "softsign", {}),
    ("HardSwish", {}, "hard_swish", {}),
    ("LeakyRelu", {}, "leaky_relu", {"alpha": 0.01}),
    ("LeakyRelu", {"alpha": 0.3}, "leaky_relu", {"alpha": 0.3}),
    ("HardSigmoid", {}, "hard_sigmoid", {"alpha": 0.2, "beta": 0.5}),
    ("HardSigmoid", {"beta": 0.25}, "hard_sigmoid", {"alpha": 0.2, "beta": 0.25}),
    ("Elu", {}, "elu", {"alpha": 1.0}),
    ("Elu", {"alpha": 0.5}, "elu", {"alpha": 0.5}),
    ("Selu", {}, "selu", {"alpha": 1.6732632, "gamma": 1.050701}),
    ("Selu", {"gamma": 2.0}, "selu", {"alpha": 1.6732632, "gamma": 2.0}),
    ("Gelu", {}, "gelu", {}),
    ("Gelu", {"approximate": "none"}, "gelu", {}),
    ("Gelu", {"approximate": "tanh"}, "gelu", {"approximate": "tanh"}),
])
def test_unary(op_type, attributes, name, properties):
    model = make_model([helper.make_node(op_type, ["x"], ["y"], name="op", **attributes)],
                       [("x", [2, 3])])
    (op,) = body_ops(import_onnx(model))
    assert isinstance(op, graph.UnaryElementwiseOp) and op.name == f"graph.{name}"
    assert op.result.type == op.input.type
    assert op.parameters() == {k: pytest.approx(v, rel=1e-7) if isinstance(v, float) else v
                               for k, v in properties.items()}
    x = rand(2, 3)
    if op_type in ("Log", "Sqrt"):
        x = np.abs(x) + 0.1
    check_against_onnxruntime(model, {"x": x})


def test_parameters_print_as_f32_properties():
    model = make_model([helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1),
                        helper.make_node("Gelu", ["y"], ["z"], approximate="tanh")],
                       [("x", [4])], [("z", None)])
    text = str(import_onnx(model).module)
    assert "%y = graph.leaky_relu %x {alpha = 1.000000e-01 : f32} : tensor<4xf32>" in text
    assert '%z = graph.gelu %y {approximate = "tanh"} : tensor<4xf32>' in text


# -- Pow and the variadic operators ------------------------------------------------------


def test_pow_broadcasts():
    model = make_model([helper.make_node("Pow", ["a", "b"], ["y"])],
                       [("a", [4, 1, 3]), ("b", [5, 1])])
    (op,) = body_ops(import_onnx(model))
    assert isinstance(op, graph.PowOp) and op.result.type.get_shape() == (4, 5, 3)
    check_against_onnxruntime(model, {"a": np.abs(rand(4, 1, 3)) + 0.5, "b": rand(5, 1) / 3})


@pytest.mark.parametrize("op_type", ["Max", "Min", "Sum", "Mean"])
def test_variadic_is_one_op_over_all_inputs(op_type):
    model = make_model([helper.make_node(op_type, ["a", "b", "c"], ["y"])],
                       [("a", [4, 1, 3]), ("b", [5, 1]), ("c", [3])])
    (op,) = body_ops(import_onnx(model))
    assert op.name == f"graph.{op_type.lower()}" and len(op.operands) == 3
    assert op.result.type.get_shape() == (4, 5, 3)
    check_against_onnxruntime(model, {"a": rand(4, 1, 3), "b": rand(5, 1), "c": rand(3)})


@pytest.mark.parametrize("op_type", ["Max", "Min", "Sum", "Mean"])
def test_variadic_of_one_input_is_that_input(op_type):
    model = make_model([helper.make_node(op_type, ["x"], ["t"]),
                        helper.make_node("Exp", ["t"], ["y"])], [("x", [3])])
    imported = import_onnx(model)
    (exp,) = body_ops(imported)
    assert exp.input is imported.module.ops.first.args[0]


# -- Clip --------------------------------------------------------------------------------


def clip_ops(inputs, initializers=(), opset=13, **attributes):
    shapes = [("x", [2, 3])] + [(n, []) for n in inputs[1:] if n and n not in dict(initializers)]
    model = make_model([helper.make_node("Clip", inputs, ["y"], name="clip", **attributes)],
                       shapes, initializers=initializers, opset=opset)
    return model, body_ops(import_onnx(model))


def scalar(value: float) -> np.ndarray:
    return np.array(value, np.float32)


def test_clip_before_opset_11_takes_attributes():
    model, (op,) = clip_ops(["x"], opset=6, min=-1.0, max=2.0)
    assert isinstance(op, graph.ClipOp) and op.parameters() == {"min": -1.0, "max": 2.0}
    check_against_onnxruntime(model, {"x": rand(2, 3)})
    _, (op,) = clip_ops(["x"], opset=6, max=2.0)
    assert op.parameters() == {"max": 2.0}


def test_clip_constant_bounds_become_properties_not_weights():
    model, ops = clip_ops(["x", "lo", "hi"], {"lo": scalar(-1), "hi": scalar(0.5)})
    assert [op.name for op in ops] == ["graph.clip"]
    assert ops[0].parameters() == {"min": -1.0, "max": 0.5}
    assert import_onnx(model).weights == {}
    check_against_onnxruntime(model, {"x": rand(2, 3)})


def test_clip_absent_bounds():
    _, (op,) = clip_ops(["x", "", "hi"], {"hi": scalar(0.5)})
    assert op.parameters() == {"max": 0.5}
    _, (op,) = clip_ops(["x", "lo"], {"lo": scalar(0)})
    assert op.parameters() == {"min": 0.0}
    model, ops = clip_ops(["x"])
    assert ops == []
    check_against_onnxruntime(model, {"x": rand(2, 3)})


def test_clip_bound_from_a_constant_node_is_folded_into_a_property():
    nodes = [helper.make_node("Constant", [], ["six"], value_float=6.0),
             helper.make_node("Clip", ["x", "", "six"], ["y"])]
    model = make_model(nodes, [("x", [2, 3])])
    (op,) = body_ops(import_onnx(model))
    assert isinstance(op, graph.ClipOp) and op.parameters() == {"max": 6.0}


@pytest.mark.parametrize("inputs, initializers, names", [
    (["x", "lo", "hi"], {}, ["graph.max", "graph.min"]),
    (["x", "lo", "hi"], {"lo": scalar(-1)}, ["graph.clip", "graph.min"]),
    (["x", "lo", "hi"], {"hi": scalar(1)}, ["graph.max", "graph.clip"]),
    (["x", "", "hi"], {}, ["graph.min"]),
])
def test_clip_bounds_known_only_at_run_time_become_max_and_min(inputs, initializers, names):
    model, ops = clip_ops(inputs, initializers)
    assert [op.name for op in ops] == names
    assert ops[-1].results[0].name_hint == "y"
    feeds = {"x": rand(2, 3), **{n: scalar(v) for n, v in (("lo", -0.5), ("hi", 1.0))
                                  if n in inputs and n not in initializers}}
    check_against_onnxruntime(model, feeds)


def test_clip_min_above_max_gives_max():
    model, _ = clip_ops(["x", "lo", "hi"], {"lo": scalar(1), "hi": scalar(-1)})
    (y,) = evaluate(import_onnx(model), {"x": rand(2, 3)})
    np.testing.assert_array_equal(y, -np.ones((2, 3)))


# -- errors: one line naming node, op and what is not supported ----------------------------


def test_unsupported_gelu_approximation():
    model = make_model([helper.make_node("Gelu", ["x"], ["y"], name="g", approximate="erf")],
                       [("x", [2])])
    assert import_error(model) == ("node 'g' (Gelu): unsupported value 'erf' of attribute "
                                   "'approximate' (expected 'none' or 'tanh')")


def test_attribute_of_the_wrong_type():
    model = make_model([helper.make_node("LeakyRelu", ["x"], ["y"], name="l", alpha=1)],
                       [("x", [2])])
    assert import_error(model) == "node 'l' (LeakyRelu): attribute 'alpha' must be FLOAT"


def test_unknown_attribute():
    model = make_model([helper.make_node("Elu", ["x"], ["y"], name="e", consumed_inputs=[0])],
                       [("x", [2])], opset=1)
    assert import_error(model) == "node 'e' (Elu): unsupported attribute 'consumed_inputs'"


def test_clip_attributes_since_opset_11():
    model = make_model([helper.make_node("Clip", ["x"], ["y"], name="c", min=0.0)],
                       [("x", [2])], opset=13)
    assert import_error(model) == ("node 'c' (Clip): attribute 'min' is not allowed since "
                                   "opset 11, where the bounds are inputs")


def test_clip_bound_that_is_not_a_scalar():
    model = make_model([helper.make_node("Clip", ["x", "lo"], ["y"], name="c")],
                       [("x", [2, 3]), ("lo", [3])])
    assert import_error(model) == "node 'c' (Clip): bound 'min' must be a scalar, got shape [3]"
    model = make_model([helper.make_node("Clip", ["x", "", "hi"], ["y"], name="c")],
                       [("x", [2, 3])], initializers={"hi": np.ones(2, np.float32)})
    assert import_error(model) == "node 'c' (Clip): bound 'max' must be a scalar, got shape [2]"


SUPPORTED = f"(supported: {SUPPORTED_NAMES})"
FLOATS = "float32, float16, bfloat16, float64"
INTS = "int64, int32, int16, int8, uint64, uint32, uint16, uint8"


@pytest.mark.parametrize("node, dtype, expected", [
    (helper.make_node("Clip", ["x"], ["y"]), TensorProto.INT4,
     f"input 'x': unsupported dtype INT4 {SUPPORTED}"),
    (helper.make_node("Neg", ["x"], ["y"]), TensorProto.FLOAT8E4M3FN,  # storage only
     f"node #0 (Neg): input 'x' is FLOAT8E4M3FN, but Neg takes {FLOATS}, {INTS} there"),
    (helper.make_node("Clip", ["x"], ["y"]), TensorProto.BOOL,
     f"node #0 (Clip): input 'x' is BOOL, but Clip takes {FLOATS}, {INTS} there"),
    (helper.make_node("Exp", ["x"], ["y"]), TensorProto.INT64,
     f"node #0 (Exp): input 'x' is INT64, but Exp takes {FLOATS} there"),
    (helper.make_node("Mean", ["x", "x"], ["y"]), TensorProto.INT64,
     f"node #0 (Mean): input 'x' is INT64, but Mean takes {FLOATS} there"),
    (helper.make_node("Add", ["x", "x"], ["y"]), TensorProto.BOOL,
     f"node #0 (Add): input 'x' is BOOL, but Add takes {FLOATS}, {INTS} there"),
])
def test_other_dtypes_are_one_line_errors(node, dtype, expected):
    assert import_error(make_model([node], [("x", [2])], dtype=dtype)) == expected


@pytest.mark.parametrize("exponent", [np.array(2, np.int64), np.array([3, -1], np.int32)])
def test_pow_with_an_integer_exponent(exponent):
    """ONNX's Pow takes an integer exponent with float data: it is converted to float."""
    model = make_model([helper.make_node("Pow", ["x", "e"], ["y"])], [("x", [2])],
                       initializers={"e": exponent})
    ops = body_ops(import_onnx(model))
    assert [op.name for op in ops] == ["graph.weight", "graph.cast", "graph.pow"]
    check_against_onnxruntime(model, {"x": rand(2)})


# -- more operators: rounding, trigonometry, activations, Mod, bitwise, PRelu, IsInf -------

I32, I64 = TensorProto.INT32, TensorProto.INT64


@pytest.mark.parametrize("op_type, attributes, name, properties, domain", [
    ("Sign", {}, "sign", {}, None),
    ("Floor", {}, "floor", {}, None),
    ("Ceil", {}, "ceil", {}, None),
    ("Round", {}, "round", {}, None),
    ("Sin", {}, "sin", {}, None),
    ("Cos", {}, "cos", {}, None),
    ("Tan", {}, "tan", {}, None),
    ("Asin", {}, "asin", {}, np.tanh),
    ("Acos", {}, "acos", {}, np.tanh),
    ("Atan", {}, "atan", {}, None),
    ("Sinh", {}, "sinh", {}, None),
    ("Cosh", {}, "cosh", {}, None),
    ("Asinh", {}, "asinh", {}, None),
    ("Acosh", {}, "acosh", {}, lambda x: np.abs(x) + 1),
    ("Atanh", {}, "atanh", {}, lambda x: np.tanh(x) * np.float32(0.99)),
    ("Mish", {}, "mish", {}, None),
    ("ThresholdedRelu", {}, "thresholded_relu", {"alpha": 1.0}, None),
    ("ThresholdedRelu", {"alpha": 0.5}, "thresholded_relu", {"alpha": 0.5}, None),
    ("Shrink", {}, "shrink", {"lambd": 0.5, "bias": 0.0}, None),
    ("Shrink", {"lambd": 1.5, "bias": 0.25}, "shrink", {"lambd": 1.5, "bias": 0.25}, None),
    ("Celu", {}, "celu", {"alpha": 1.0}, None),
    ("Celu", {"alpha": 2.0}, "celu", {"alpha": 2.0}, None),
])
def test_more_unary(op_type, attributes, name, properties, domain):
    model = make_model([helper.make_node(op_type, ["x"], ["y"], name="op", **attributes)],
                       [("x", [2, 3])])
    (op,) = body_ops(import_onnx(model))
    assert isinstance(op, graph.UnaryElementwiseOp) and op.name == f"graph.{name}"
    assert op.parameters() == pytest.approx(properties, rel=1e-7)
    x = rand(2, 3)
    check_against_onnxruntime(model, {"x": (domain or (lambda v: v))(x).astype(np.float32)})


@pytest.mark.parametrize("dtype, numpy_type", [(I32, np.int32), (I64, np.int64)])
@pytest.mark.parametrize("op_type, name", [("BitwiseAnd", "bitwise_and"), ("BitwiseOr", "bitwise_or"),
                                           ("BitwiseXor", "bitwise_xor")])
def test_bitwise_binary(op_type, name, dtype, numpy_type):
    model = make_model([helper.make_node(op_type, ["a", "b"], ["y"])],
                       [("a", [4, 3]), ("b", [3])], opset=18, dtype=dtype)
    (op,) = body_ops(import_onnx(model))
    assert op.name == f"graph.{name}" and op.result.type.get_shape() == (4, 3)
    a, b = RNG.integers(-1000, 1000, (4, 3)), RNG.integers(-1000, 1000, (3,))
    check_against_onnxruntime(model, {"a": a.astype(numpy_type), "b": b.astype(numpy_type)})


def test_bitwise_not():
    model = make_model([helper.make_node("BitwiseNot", ["x"], ["y"])], [("x", [5])], opset=18,
                       dtype=I64)
    (op,) = body_ops(import_onnx(model))
    assert isinstance(op, graph.BitwiseNotOp)
    check_against_onnxruntime(model, {"x": np.array([0, -1, 5, -7, 2**40], np.int64)})


@pytest.mark.parametrize("dtype, numpy_type", [(I32, np.int32), (I64, np.int64), (F32, np.float32)])
@pytest.mark.parametrize("fmod", [0, 1])
def test_mod(fmod, dtype, numpy_type):
    model = make_model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)],
                       [("a", [2, 6]), ("b", [6])], opset=13, dtype=dtype)
    (op,) = body_ops(import_onnx(model))
    assert isinstance(op, graph.ModOp) and (op.fmod is not None) == bool(fmod)
    a = np.array([[5, -5, 5, -5, 0, 7], [13, -13, 1, -1, 9, -9]]).astype(numpy_type)
    b = np.array([3, 3, -3, -3, 4, 2]).astype(numpy_type)
    if dtype == F32:
        a = a + numpy_type(0.25)
    if dtype == F32 and not fmod:  # onnxruntime takes fmod = 0 for integers only
        (got,) = evaluate(import_onnx(model), {"a": a, "b": b})
        np.testing.assert_array_equal(got, np.mod(a, b))
    else:
        check_against_onnxruntime(model, {"a": a, "b": b})


@pytest.mark.parametrize("direction, graph_op", [("LEFT", graph.ShiftLeftOp),
                                                 ("RIGHT", graph.ShiftRightOp)])
def test_bit_shift(direction, graph_op):
    """onnxruntime has BitShift for unsigned types only: against numpy, on opset 28's
    definition for signed ones (a shift out of [0, 32) gives 0, or -1 right of a negative)."""
    model = make_model([helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)],
                       [("x", [6]), ("y", [6])], [("z", None)], opset=18, dtype=I32)
    (op,) = body_ops(import_onnx(model))
    assert isinstance(op, graph_op)
    x = np.array([16, -8, 1 << 30, -1, 5, -5], np.int32)
    y = np.array([2, 1, 1, 40, -1, 31], np.int32)
    (got,) = evaluate(import_onnx(model), {"x": x, "y": y})
    want = ([64, -16, -2**31, 0, 0, -2**31] if direction == "LEFT" else [4, -4, 1 << 29, -1, 0, -1])
    np.testing.assert_array_equal(got, np.array(want, np.int32))


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_unsigned_bit_shift_against_onnxruntime(direction):
    model = make_model([helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)],
                       [("x", [5]), ("y", [5])], [("z", None)], opset=11, dtype=TensorProto.UINT32)
    x = np.array([16, 4, 1, 2**32 - 1, 7], np.uint32)
    check_against_onnxruntime(model, {"x": x, "y": np.array([1, 2, 3, 31, 0], np.uint32)})


@pytest.mark.parametrize("slope_shape", [[3, 4], [4], [1], [3, 1]])
def test_prelu(slope_shape):
    model = make_model([helper.make_node("PRelu", ["x", "slope"], ["y"])],
                       [("x", [2, 3, 4]), ("slope", slope_shape)])
    (op,) = body_ops(import_onnx(model))
    assert isinstance(op, graph.PReluOp) and op.result.type == op.lhs.type
    check_against_onnxruntime(model, {"x": rand(2, 3, 4), "slope": rand(*slope_shape)})


@pytest.mark.parametrize("attributes", [{}, {"detect_negative": 0}, {"detect_positive": 0},
                                        {"detect_negative": 0, "detect_positive": 0}])
def test_is_inf(attributes):
    node = helper.make_node("IsInf", ["x"], ["y"], **attributes)
    graph_proto = helper.make_graph([node], "test", [helper.make_tensor_value_info("x", F32, [6])],
                                    [helper.make_tensor_value_info("y", TensorProto.BOOL, [6])])
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    (op,) = body_ops(import_onnx(model))
    assert isinstance(op, graph.IsInfOp)
    assert op.detects() == (attributes.get("detect_negative", 1) == 1,
                            attributes.get("detect_positive", 1) == 1)
    x = np.array([np.inf, -np.inf, np.nan, 0.0, 3e38, -1.0], np.float32)
    check_against_onnxruntime(model, {"x": x})


@pytest.mark.parametrize("node, inputs, dtype, expected", [
    (helper.make_node("Mod", ["a", "b"], ["y"], name="n", fmod=2), [("a", [2]), ("b", [2])], F32,
     "'n' (Mod): unsupported value 2 of attribute 'fmod' (expected 0 or 1)"),
    (helper.make_node("BitShift", ["a", "b"], ["y"], name="n", direction="UP"),
     [("a", [2]), ("b", [2])], I32, "unsupported value 'UP' of attribute 'direction'"),
    (helper.make_node("BitShift", ["a", "b"], ["y"], name="n"), [("a", [2]), ("b", [2])], I32,
     "attribute 'direction' is required"),
    (helper.make_node("BitwiseAnd", ["a", "b"], ["y"], name="n"), [("a", [2]), ("b", [2])], F32,
     "input 'a' is FLOAT, but BitwiseAnd takes"),
    (helper.make_node("PRelu", ["a", "b"], ["y"], name="n"), [("a", [2, 3]), ("b", [2])], F32,
     "'n' (PRelu): slope of shape [2] does not broadcast to the shape [2, 3] of X"),
    (helper.make_node("Celu", ["a"], ["y"], name="n", alpha=0.0), [("a", [2])], F32,
     "'n' (Celu): attribute 'alpha' must not be 0"),
])
def test_more_errors(node, inputs, dtype, expected):
    model = make_model([node], inputs, opset=18, dtype=dtype)
    assert expected in import_error(model)
