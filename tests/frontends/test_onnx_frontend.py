"""The ONNX frontend: models built with onnx.helper become the expected graph IR.

Numerical checks evaluate the imported IR with the numpy interpreter of the graph dialect
(graph_reference.py) and compare against onnxruntime (float32 both; rtol 1e-4, atol 1e-4 on O(1) values).
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from graph_reference import evaluate
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.printer import Printer

import tmlir
from tmlir.dialects import graph
from tmlir.frontends.onnx import (
    SUPPORTED_OPS,
    FrontendError,
    ImportedModel,
    import_onnx,
    sanitize_name,
)

F32 = TensorProto.FLOAT
RNG = np.random.default_rng(0)


def make_model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    """inputs/outputs: (name, shape) with shape None for 'unknown', or ValueInfoProtos."""

    def info(v):
        return v if isinstance(v, onnx.ValueInfoProto) else helper.make_tensor_value_info(
            v[0], F32, v[1])

    graph_proto = helper.make_graph(
        nodes, "test", [info(v) for v in inputs], [info(v) for v in outputs],
        [numpy_helper.from_array(np.asarray(a), name) for name, a in dict(initializers).items()],
    )
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def body_ops(imported: ImportedModel) -> list:
    (function,) = imported.module.ops
    assert isinstance(function, func.FuncOp)
    return list(function.body.block.ops)


def op_names(imported: ImportedModel) -> list[str]:
    return [op.name for op in body_ops(imported)]


def shape(value) -> list[int]:
    return list(value.type.get_shape())


def print_ir(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def check_against_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    actual = evaluate(import_onnx(model), feeds)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


def mlp_model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["/fc1/Gemm_output_0"],
                         name="/fc1/Gemm", transB=1),
        helper.make_node("Relu", ["/fc1/Gemm_output_0"], ["/relu/Relu_output_0"],
                         name="/relu/Relu"),
        helper.make_node("Gemm", ["/relu/Relu_output_0", "fc2.weight", "fc2.bias"], ["y"],
                         name="/fc2/Gemm", transB=1),
    ]
    weights = {"fc1.weight": rand(32, 64) / 8, "fc1.bias": rand(32),
               "fc2.weight": rand(10, 32) / 6, "fc2.bias": rand(10)}
    return make_model(nodes, [("x", [8, 64])], [("y", [8, 10])], weights)


# -- models that import -------------------------------------------------------------------


def test_mlp_imports_with_expected_ops_shapes_and_weights():
    model = mlp_model()
    imported = import_onnx(model, source="mlp.onnx")
    assert op_names(imported) == [
        "graph.weight", "graph.weight", "graph.matmul", "graph.relu",
        "graph.weight", "graph.weight", "graph.matmul", "func.return",
    ]
    ops = body_ops(imported)
    fc1, fc2 = ops[2], ops[6]
    assert isinstance(fc1, graph.MatmulOp) and isinstance(fc2, graph.MatmulOp)
    assert fc1.transpose_rhs is not None and fc1.transpose_lhs is None
    assert fc1.alpha is None and fc1.beta is None and fc1.bias is not None
    assert shape(fc1.result) == [8, 32] and shape(fc2.result) == [8, 10]
    assert [op.weight_name.data for op in ops if isinstance(op, graph.WeightOp)] == [
        "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    expected = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert imported.weights.keys() == expected.keys()
    for name, array in imported.weights.items():
        assert array.dtype == np.float32 and array.flags.c_contiguous
        np.testing.assert_array_equal(array, expected[name])
    assert imported.input_names == ["x"] and imported.output_names == ["y"]
    (function,) = imported.module.ops
    assert function.attributes["tm.inputs"] == ArrayAttr([StringAttr("x")])
    assert function.attributes["tm.outputs"] == ArrayAttr([StringAttr("y")])
    assert imported.module.attributes["graph.source"] == StringAttr("mlp.onnx")
    assert [shape(a) for a in function.args] == [[8, 64]]
    assert [list(t.get_shape()) for t in function.function_type.outputs] == [[8, 10]]


def test_mlp_matches_onnxruntime():
    check_against_onnxruntime(mlp_model(), {"x": rand(8, 64)})


def test_source_attribute_only_when_known(tmp_path: Path):
    model = mlp_model()
    assert "graph.source" not in import_onnx(model).module.attributes
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert import_onnx(path).module.attributes["graph.source"] == StringAttr(str(path))


def test_path_bytes_and_proto_give_the_same_ir(tmp_path: Path):
    model = mlp_model()
    path = tmp_path / "mlp.onnx"
    onnx.save(model, path)
    texts = {print_ir(import_onnx(m, source="m").module)
             for m in (model, model.SerializeToString(), str(path), path)}
    assert len(texts) == 1


def test_matmul_2d():
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["c"], name="mm")],
                       [("a", [3, 4]), ("b", [4, 5])], [("c", None)])
    imported = import_onnx(model)
    (mm, _) = body_ops(imported)
    assert isinstance(mm, graph.MatmulOp) and mm.bias is None and mm.transpose_rhs is None
    assert shape(mm.result) == [3, 5]
    check_against_onnxruntime(model, {"a": rand(3, 4), "b": rand(4, 5)})


def test_matmul_batched_broadcast():
    model = make_model([helper.make_node("MatMul", ["a", "w"], ["c"], name="mm")],
                       [("a", [3, 1, 4, 5])], [("c", None)], {"w": rand(2, 5, 6)})
    imported = import_onnx(model)
    assert op_names(imported) == ["graph.weight", "graph.matmul", "func.return"]
    assert shape(body_ops(imported)[1].results[0]) == [3, 2, 4, 6]
    check_against_onnxruntime(model, {"a": rand(3, 1, 4, 5)})


def test_gemm_trans_a_alpha_beta_without_c():
    model = make_model(
        [helper.make_node("Gemm", ["a", "b"], ["y"], name="g", transA=1, alpha=2.0, beta=3.0)],
        [("a", [4, 3]), ("b", [4, 5])], [("y", None)])
    (gemm, _) = body_ops(import_onnx(model))
    assert gemm.transpose_lhs is not None and gemm.transpose_rhs is None
    assert gemm.alpha_value == 2.0 and gemm.bias is None and gemm.beta is None
    assert shape(gemm.result) == [3, 5]
    check_against_onnxruntime(model, {"a": rand(4, 3), "b": rand(4, 5)})


@pytest.mark.parametrize("c_shape", [[5], [1, 5], [3, 1], [3, 5], []])
def test_gemm_c_broadcast_and_beta(c_shape):
    model = make_model(
        [helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="g", transB=1, beta=0.5)],
        [("a", [3, 4]), ("b", [5, 4])], [("y", None)], {"c": rand(*c_shape)})
    imported = import_onnx(model)
    gemm = body_ops(imported)[-2]
    assert gemm.beta_value == 0.5 and gemm.alpha is None and shape(gemm.bias) == c_shape
    check_against_onnxruntime(model, {"a": rand(3, 4), "b": rand(5, 4)})


def test_gemm_beta_defaults_to_one():
    model = make_model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="g")],
                       [("a", [3, 4]), ("b", [4, 5])], [("y", None)], {"c": rand(5)})
    gemm = body_ops(import_onnx(model))[-2]
    assert gemm.beta is None and gemm.beta_value == 1.0
    check_against_onnxruntime(model, {"a": rand(3, 4), "b": rand(4, 5)})


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
def test_broadcasting_binary_ops(op_type):
    model = make_model([helper.make_node(op_type, ["a", "b"], ["y"], name="op")],
                       [("a", [4, 1, 3]), ("b", [5, 1])], [("y", None)])
    (op, _) = body_ops(import_onnx(model))
    assert op.name == f"graph.{op_type.lower()}" and shape(op.results[0]) == [4, 5, 3]
    check_against_onnxruntime(model, {"a": rand(4, 1, 3), "b": np.abs(rand(5, 1)) + 1})


@pytest.mark.parametrize("op_type", ["Relu", "Sigmoid", "Tanh"])
def test_unary_ops(op_type):
    model = make_model([helper.make_node(op_type, ["x"], ["y"], name="op")],
                       [("x", [2, 3])], [("y", None)])
    (op, _) = body_ops(import_onnx(model))
    assert op.name == f"graph.{op_type.lower()}" and shape(op.results[0]) == [2, 3]
    check_against_onnxruntime(model, {"x": rand(2, 3)})


def test_identity_forwards_values_and_outputs_may_be_inputs():
    nodes = [helper.make_node("Identity", ["x"], ["t"], name="id1"),
             helper.make_node("Relu", ["t"], ["y"], name="relu"),
             helper.make_node("Identity", ["x"], ["z"], name="id2")]
    model = make_model(nodes, [("x", [2, 3])], [("y", None), ("z", None), ("x", [2, 3])])
    imported = import_onnx(model)
    (function,) = imported.module.ops
    relu, ret = body_ops(imported)
    x = function.args[0]
    assert relu.input is x
    assert list(ret.operands) == [relu.result, x, x]
    assert imported.output_names == ["y", "z", "x"]
    check_against_onnxruntime(model, {"x": rand(2, 3)})


def test_constant_node_becomes_weight():
    value = rand(3)
    nodes = [helper.make_node("Constant", [], ["k"], name="c",
                              value=numpy_helper.from_array(value)),
             helper.make_node("Constant", [], ["s"], name="c2", value_float=2.0),
             helper.make_node("Add", ["x", "k"], ["t"], name="add"),
             helper.make_node("Mul", ["t", "s"], ["y"], name="mul")]
    model = make_model(nodes, [("x", [2, 3])], [("y", None)])
    imported = import_onnx(model)
    # Constant nodes fold into initializers, each a weight emitted at its first use.
    assert op_names(imported) == ["graph.weight", "graph.add", "graph.weight", "graph.mul",
                                  "func.return"]
    np.testing.assert_array_equal(imported.weights["k"], value)
    assert imported.weights["s"].shape == () and imported.weights["s"] == 2.0
    assert "2.0" not in print_ir(imported.module)
    check_against_onnxruntime(model, {"x": rand(2, 3)})


def test_initializer_listed_as_input_is_a_weight_and_unused_ones_are_dropped():
    model = make_model([helper.make_node("Add", ["x", "b"], ["y"], name="add")],
                       [("x", [2]), ("b", [2])], [("y", None)],
                       {"b": rand(2), "unused": rand(4)})
    imported = import_onnx(model)
    assert imported.input_names == ["x"]
    assert len(imported.module.ops.first.args) == 1
    assert list(imported.weights) == ["b"]


def test_name_sanitization():
    assert sanitize_name("onnx::MatMul_12") == "onnx__MatMul_12"
    assert sanitize_name("/layer1/Relu_output_0") == "layer1_Relu_output_0"
    assert sanitize_name("0") == "v0"
    assert sanitize_name("fc.weight") == "fc_weight"
    assert sanitize_name("") is None and sanitize_name("/") is None
    nodes = [helper.make_node("MatMul", ["0", "onnx::MatMul_12"], ["/layer1/MatMul_output"],
                              name="/layer1/MatMul"),
             helper.make_node("Relu", ["/layer1/MatMul_output"], ["1"], name="relu")]
    model = make_model(nodes, [("0", [2, 3])], [("1", None)], {"onnx::MatMul_12": rand(3, 3)})
    text = print_ir(import_onnx(model).module)
    assert "%v0: tensor<2x3xf32>" in text
    assert "%onnx__MatMul = graph.weight \"onnx::MatMul_12\"" in text  # xDSL drops _12
    assert "%layer1_MatMul_output = graph.matmul %v0, %onnx__MatMul" in text
    assert "%v1 = graph.relu %layer1_MatMul_output" in text
    assert 'tm.inputs = ["0"], tm.outputs = ["1"]' in text


def test_weights_never_in_printed_ir():
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                       [("x", [2, 1000])], [("y", None)],
                       {"w": np.full((1000, 1000), 0.123, np.float32)})
    imported = import_onnx(model)
    text = print_ir(imported.module)
    assert len(text) < 1000 and "0.123" not in text and "dense" not in text
    assert imported.weights["w"].shape == (1000, 1000)


def test_supported_ops_list():
    assert set(SUPPORTED_OPS) == {
        "Add", "Sub", "Mul", "Div", "MatMul", "Gemm", "Relu", "Sigmoid", "Tanh", "Identity",
        "Constant", "Abs", "Clip", "Elu", "Erf", "Exp", "Gelu", "HardSigmoid", "HardSwish",
        "LeakyRelu", "Log", "Max", "Mean", "Min", "Neg", "Pow", "Reciprocal", "Selu",
        "Softplus", "Softsign", "Sqrt", "Sum"} | {
        "BatchNormalization", "Conv", "ConvTranspose"} | {
        "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LayerNormalization", "LogSoftmax",
        "MaxPool", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceSum", "Softmax"} | {
        "Concat", "DepthToSpace", "Dropout", "Expand", "Flatten", "Gather", "Pad", "Reshape", "Resize", "Slice",
        "SpaceToDepth", "Split", "Squeeze", "Tile", "Transpose", "Unsqueeze"} | {
        "And", "Cast", "Equal", "GatherElements", "GatherND", "Greater", "GreaterOrEqual",
        "IsNaN", "Less", "LessOrEqual", "Not", "Or", "Where", "Xor"} | {
        "ConstantOfShape", "Range", "Shape", "Size"} | {
        "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "BitShift", "BitwiseAnd", "BitwiseNot",
        "BitwiseOr", "BitwiseXor", "Ceil", "Celu", "Cos", "Cosh", "Floor", "IsInf", "Mish", "Mod",
        "PRelu", "Round", "Shrink", "Sign", "Sin", "Sinh", "Tan", "ThresholdedRelu"} | {
        "ArgMax", "ArgMin", "CumSum", "Hardmax", "ReduceL1", "ReduceL2", "ReduceLogSum",
        "ReduceLogSumExp", "ReduceProd", "ReduceSumSquare", "TopK"} | {
        "GlobalLpPool", "GroupNormalization", "InstanceNormalization", "LpNormalization", "LpPool",
        "LRN", "MeanVarianceNormalization"} | {
        "CastLike", "Einsum", "EyeLike", "OneHot", "Scatter", "ScatterElements", "ScatterND",
        "Trilu"} | {"GRU", "LSTM", "RNN"} | {"If", "Loop", "Scan"}
    assert len(SUPPORTED_OPS) == 139
    assert list(SUPPORTED_OPS) == sorted(SUPPORTED_OPS)  # as the error message lists them


# -- errors: one clear line naming the culprit ---------------------------------------------


def import_error(model, **kwargs) -> str:
    with pytest.raises(FrontendError) as info:
        import_onnx(model, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unsupported_op():
    model = make_model([helper.make_node("Det", ["x"], ["y"], name="det1")],
                       [("x", [2, 3, 3])], [("y", None)])
    message = import_error(model)
    assert "'det1'" in message and "Det" in message and "supported:" in message
    assert "Gemm" in message and "MatMul" in message


def test_unsupported_op_in_other_domain():
    node = helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")
    model = make_model([node], [("x", [2])], [("y", None)])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    assert "com.example.Relu" in import_error(model)


def test_dynamic_dimension():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                       [("x", ["batch", 4])], [("y", None)])
    assert import_error(model) == "input 'x': dynamic dimension 'batch' is not supported (dim 0)"


def test_unknown_input_shape():
    x = onnx.ValueInfoProto(name="x")
    x.type.tensor_type.elem_type = F32
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [("y", None)])
    assert "input 'x': shape is unknown" in import_error(model)


def test_unsupported_input_dtype():
    x = helper.make_tensor_value_info("x", TensorProto.INT4, [2])
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x],
                       [helper.make_tensor_value_info("y", TensorProto.INT4, [2])])
    assert import_error(model) == ("input 'x': unsupported dtype INT4 "
                                   "(supported: float32, int64, int32, bool, float16, float64, int8, "
                                   "int16, uint8, uint16, uint32, uint64, bfloat16, float8_e4m3fn, "
                                   "float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz)")


def test_dtype_an_op_does_not_take_names_node_and_input():
    x = helper.make_tensor_value_info("x", TensorProto.INT64, [2])
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x],
                       [helper.make_tensor_value_info("y", TensorProto.INT64, [2])])
    assert import_error(model) == ("node 'r' (Relu): input 'x' is INT64, but Relu takes float32, float16, "
                                   "bfloat16, float64 there")


def test_unsupported_initializer_dtype():
    model = make_model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                       [("x", [2])], [("y", None)], {"w": np.ones(2, np.complex64)})
    assert import_error(model) == ("initializer 'w': unsupported dtype COMPLEX64 "
                                   "(supported: float32, int64, int32, bool, float16, float64, int8, "
                                   "int16, uint8, uint16, uint32, uint64, bfloat16, float8_e4m3fn, "
                                   "float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz)")


@pytest.mark.parametrize("data", [b"garbage bytes, not a model", b"\x00\x01\x02\x03", b""])
def test_garbage_bytes(data):
    assert import_error(data).startswith("cannot parse ONNX model from '<bytes>': ")
    assert import_error(data, source="m.onnx").startswith("cannot parse ONNX model from 'm.onnx'")


def test_garbage_or_missing_file(tmp_path: Path):
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"not an onnx file at all")
    assert import_error(path).startswith(f"cannot parse ONNX model from '{path}': ")
    assert import_error(str(tmp_path / "missing.onnx")).startswith("cannot parse ONNX model")


def test_one_dimensional_matmul():  # numpy's promotion: (2, 4) @ (4, 1), then (2,)
    model = make_model([helper.make_node("MatMul", ["x", "v"], ["y"], name="mm")],
                       [("x", [2, 4]), ("v", [4])], [("y", None)])
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4), "v": np.ones(4, np.float32)}
    np.testing.assert_array_equal(evaluate(import_onnx(model), feeds)[0], [6.0, 22.0])


def test_unsupported_attribute():
    model = make_model([helper.make_node("Gemm", ["a", "b"], ["y"], name="g", transA=2)],
                       [("a", [2, 2]), ("b", [2, 2])], [("y", None)])
    assert import_error(model) == (
        "node 'g' (Gemm): unsupported value 2 of attribute 'transA' (expected 0 or 1)")
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r", legacy=1)],
                       [("x", [2])], [("y", None)])
    assert import_error(model) == "node 'r' (Relu): unsupported attribute 'legacy'"


def test_unsupported_constant_attribute():
    model = make_model([helper.make_node("Constant", [], ["y"], name="c", value_string="s")],
                       [("x", [2])], [("y", None)])
    assert import_error(model) == "node 'c' (Constant): unsupported attribute 'value_string'"


def test_gemm_bias_that_does_not_broadcast_names_the_node():
    model = make_model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="g")],
                       [("a", [2, 4]), ("b", [4, 3])], [("y", None)], {"c": rand(5)})
    message = import_error(model)
    assert message.startswith("node 'g' (Gemm): ") and "[5]" in message


def test_shape_inference_error_is_one_line_naming_the_node():
    model = make_model([helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                       [("a", [2, 3]), ("b", [4])], [("y", None)])
    assert import_error(model).startswith("shape inference failed: node 'add' (Add): ")


def test_stale_value_info_is_dropped_with_a_warning():
    """Exporters leave stored shapes of intermediate values that no longer hold: inference
    from the inputs decides, with one warning; the model still computes right."""
    model = make_model([helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Neg", ["h"], ["y"])],
                       [("x", [2, 3])], [("y", None)])
    model.graph.value_info.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, [4, 7]))
    with pytest.warns(UserWarning, match=r"^ignored the shapes the model stores for its "
                                         r"intermediate values: a Relu node: .*\(2\) vs \(4\)"):
        import_onnx(model)
    x = rand(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same warning, unless the compile cache hits
        (y,) = tmlir.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_array_equal(y, -np.maximum(x, 0))


def test_shapes_that_conflict_without_value_info_are_still_an_error():
    model = make_model([helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                       [("a", [2, 3]), ("b", [4])], [("y", None)])
    model.graph.value_info.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the model's own error, no warning about value_info
        assert import_error(model).startswith("shape inference failed: node 'add' (Add): ")


def test_undefined_value():
    model = make_model([helper.make_node("Relu", ["nowhere"], ["y"])], [("x", [2])],
                       [("y", None)])
    assert import_error(model) == ("node #0 (Relu): input 'nowhere' is not produced by any "
                                   "earlier node, graph input or initializer")


def test_gemm_with_empty_optional_c():
    model = make_model([helper.make_node("Gemm", ["a", "b", ""], ["y"], name="g", beta=2.0)],
                       [("a", [2, 3]), ("b", [3, 4])], [("y", None)])
    (gemm, _) = body_ops(import_onnx(model))
    assert gemm.bias is None and gemm.beta is None and shape(gemm.result) == [2, 4]


def test_unsupported_constant_dtype():
    node = helper.make_node("Constant", [], ["k"], name="c",
                            value=numpy_helper.from_array(np.ones(2, np.complex128)))
    model = make_model([node], [("x", [2])], [onnx.ValueInfoProto(name="k")])
    assert import_error(model) == (
        "initializer 'k': unsupported dtype COMPLEX128 (supported: float32, int64, int32, bool, float16, "
        "float64, int8, int16, uint8, uint16, uint32, uint64, bfloat16, float8_e4m3fn, float8_e4m3fnuz, "
        "float8_e5m2, float8_e5m2fnuz)")


def test_integer_constant_output_keeps_its_dtype():
    node = helper.make_node("Constant", [], ["k"], name="c", value_ints=[3, -1])
    model = make_model([node, helper.make_node("Relu", ["x"], ["y"])], [("x", [2])],
                       [("y", None), helper.make_tensor_value_info("k", TensorProto.INT64, [2])])
    imported = import_onnx(model)
    assert imported.weights["k"].dtype == np.int64
    session = tmlir.InferenceSession(model)
    assert [o.type for o in session.get_outputs()] == ["tensor(float)", "tensor(int64)"]
    y, k = session.run(None, {"x": np.array([-1, 2], np.float32)})
    assert k.dtype == np.int64 and k.tolist() == [3, -1] and y.tolist() == [0, 2]


def test_value_defined_twice():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r1"),
             helper.make_node("Tanh", ["x"], ["y"], name="r2")]
    model = make_model(nodes, [("x", [2])], [("y", None)])
    assert import_error(model) == "node 'r2' (Tanh): value 'y' is defined twice"


def test_external_data_is_read_next_to_the_source(tmp_path: Path):
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                       [("x", [2, 8])], [("y", None)], {"w": np.eye(8, dtype=np.float32)})
    path = tmp_path / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, location="m.data", size_threshold=0)
    data = path.read_bytes()
    assert len(data) < 1000  # the weights really are outside the .onnx file
    for imported in (import_onnx(path), import_onnx(data, source=str(path))):
        np.testing.assert_array_equal(imported.weights["w"], np.eye(8))
