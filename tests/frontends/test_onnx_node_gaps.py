"""Import of the operator forms ONNX's node tests use beyond the common ones: MatMul with
1-D operands, BatchNormalization in training mode, MaxPool's Indices and Dropout training
with ratio 0. Each checks the graph ops the importer makes, then evaluates them with the
numpy interpreter of the graph dialect (graph_reference.py) against onnxruntime (float32,
rtol 1e-5, atol 1e-6; indices exactly). Numerical checks through the whole pipeline are in
tests/e2e/test_node_gaps.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_reference import evaluate
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

from tmlir.dialects import graph
from tmlir.frontends.onnx import import_onnx

RNG = np.random.default_rng(14)
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def make_model(nodes, inputs: dict[str, tuple], outputs: dict[str, tuple[int, tuple]],
               initializers: dict[str, np.ndarray] | None = None, opset: int = 18) -> onnx.ModelProto:
    graph_proto = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, F, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, t, list(s)) for n, (t, s) in outputs.items()],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()])
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
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lhs, rhs, out, reshapes", [
    ((5,), (5,), (), 3), ((5,), (2, 5, 3), (2, 3), 2), ((2, 4, 5), (5,), (2, 4), 2),
])
def test_matmul_1d_is_a_reshaped_matmul(lhs, rhs, out, reshapes):
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": lhs, "b": rhs},
                       {"y": (F, out)})
    ops = body_ops(model)
    assert [type(op) for op in ops].count(graph.MatmulOp) == 1
    assert [type(op) for op in ops].count(graph.ReshapeOp) == reshapes
    check_against_onnxruntime(model, {"a": rand(*lhs), "b": rand(*rhs)})


def test_batch_norm_training_imports_batch_statistics():
    c, shape = 3, (2, 3, 4, 5)
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                            training_mode=1, momentum=0.6)
    stats = {"s": rand(c), "b": rand(c), "m": rand(c), "v": np.abs(rand(c)) + 1}
    model = make_model([node], {"x": shape}, {"y": (F, shape), "rm": (F, (c,)), "rv": (F, (c,))},
                       stats, opset=15)
    ops = body_ops(model)
    means = [op for op in ops if isinstance(op, graph.ReduceMeanOp)]
    assert [op.reduced_axes for op in means] == [(0, 2, 3), (0, 2, 3)]
    assert [type(op) for op in ops].count(graph.BatchNormOp) == 1
    check_against_onnxruntime(model, {"x": rand(*shape) + 5})


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(storage_order):
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 2], strides=[2, 1],
                            pads=[1, 0, 1, 1], storage_order=storage_order)
    out = (2, 3, 3, 6)
    model = make_model([node], {"x": (2, 3, 6, 6)}, {"y": (F, out), "i": (I64, out)}, opset=12)
    (op,) = [op for op in body_ops(model) if isinstance(op, graph.MaxPoolWithIndicesOp)]
    assert (op.column_major is not None) == (storage_order == 1)
    check_against_onnxruntime(model, {"x": rand(2, 3, 6, 6)})


def test_max_pool_unused_indices_is_a_plain_max_pool():
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], storage_order=1)
    model = make_model([node], {"x": (1, 2, 4, 4)}, {"y": (F, (1, 2, 3, 3))}, opset=12)
    assert [type(op) for op in body_ops(model)] == [graph.MaxPoolOp]


def test_dropout_training_zero_ratio_is_the_input():
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"])
    model = make_model([node], {"x": (2, 3)},
                       {"y": (F, (2, 3)), "mask": (TensorProto.BOOL, (2, 3))},
                       {"r": np.array(0.0, np.float32), "t": np.array(True)}, opset=13)
    assert [type(op) for op in body_ops(model)] == [graph.WeightOp]  # the all-true mask
    check_against_onnxruntime(model, {"x": rand(2, 3)})
