"""The ONNX frontend's scatters, generated tensors and Einsum: the graph ops they import
to, how Einsum is lowered (which ops, for which equation), one-line errors for what is
not supported, and their meaning: the imported IR evaluated with the numpy interpreter
of the graph dialect (graph_reference.py) against onnxruntime (exact for data movement,
rtol 1e-5 for Einsum's products)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_reference import evaluate
from onnx import helper, numpy_helper
from xdsl.dialects import func

from tmlir.dialects import graph
from tmlir.frontends.onnx import FrontendError, import_onnx
from tmlir.frontends.onnx_einsum import parse_equation

RNG = np.random.default_rng(3)


def make_model(node: onnx.NodeProto, feeds: dict[str, np.ndarray],
               constants: dict[str, np.ndarray] | None = None, opset: int = 18):
    graph_proto = helper.make_graph(
        [node], "test",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in feeds.items()],
        [helper.make_value_info(node.output[0], onnx.TypeProto())],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (constants or {}).items()])
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return onnx.shape_inference.infer_shapes(model)


def body_ops(model: onnx.ModelProto) -> list:
    (function,) = import_onnx(model).module.ops
    return [op for op in function.body.block.ops if not isinstance(op, func.ReturnOp)]


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol: float = 0.0) -> None:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for got, want in zip(evaluate(import_onnx(model), feeds), session.run(None, feeds),
                         strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def test_scatter_elements_imports_with_its_axis_and_reduction():
    feeds = {"d": floats(4, 6), "i": RNG.integers(-6, 6, (4, 3)), "u": floats(4, 3)}
    model = make_model(helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=-1,
                                        reduction="max"), feeds)
    (op,) = body_ops(model)
    assert isinstance(op, graph.ScatterElementsOp)
    assert (op.axis_value, op.reduction_value) == (1, "max")
    check(model, feeds)


def test_scatter_nd_imports():
    feeds = {"d": floats(5, 4), "i": np.array([[3], [-1]], np.int64), "u": floats(2, 4)}
    model = make_model(helper.make_node("ScatterND", ["d", "i", "u"], ["y"],
                                        reduction="mul"), feeds)
    (op,) = body_ops(model)
    assert isinstance(op, graph.ScatterNdOp) and op.reduction_value == "mul"
    check(model, feeds)


def test_trilu_reads_k_as_a_constant():
    feeds = {"x": floats(2, 5, 6)}
    model = make_model(helper.make_node("Trilu", ["x", "k"], ["y"], upper=0), feeds,
                       {"k": np.array(-1, np.int64)}, opset=14)
    (op,) = body_ops(model)
    assert isinstance(op, graph.TriluOp) and (op.k_value, op.upper_value) == (-1, False)
    check(model, feeds)


def test_eye_like_takes_the_dtype_attribute():
    feeds = {"x": np.zeros((3, 5), np.int32)}
    model = make_model(helper.make_node("EyeLike", ["x"], ["y"], k=2,
                                        dtype=onnx.TensorProto.FLOAT), feeds, opset=22)
    (op,) = body_ops(model)
    assert isinstance(op, graph.EyeOp) and op.k_value == 2
    assert str(op.result.type) == "tensor<3x5xf32>"
    check(model, feeds)


def test_one_hot_casts_float_indices():
    feeds = {"i": np.array([[1.7, -2.2], [9.0, 0.0]], np.float32),
             "v": np.array([3, 8], np.float32)}
    model = make_model(helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=1), feeds,
                       {"depth": np.array(4.0, np.float32)})
    cast, one_hot = body_ops(model)
    assert isinstance(cast, graph.CastOp) and isinstance(one_hot, graph.OneHotOp)
    assert (one_hot.axis_value, one_hot.depth) == (1, 4)
    check(model, feeds)


def test_one_hot_depth_must_be_a_constant():
    feeds = {"i": np.zeros(3, np.int64), "depth": np.array(4, np.int64),
             "v": np.zeros(2, np.float32)}
    model = make_model(helper.make_node("OneHot", ["i", "depth", "v"], ["y"]), feeds)
    with pytest.raises(FrontendError, match="input 'depth'"):
        import_onnx(model)


@pytest.mark.parametrize(("equation", "shapes", "ops"), [
    ("ij->ji", [(3, 4)], ["transpose"]),
    ("ij->ij", [(3, 4)], []),
    ("ij->i", [(3, 4)], ["reduce_sum"]),
    ("ii->i", [(4, 4)], ["reshape", "slice"]),
    ("...ii->...i", [(2, 3, 3)], ["reshape", "slice"]),
    ("i,i", [(5,), (5,)], ["reshape", "reshape", "matmul", "reshape"]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], ["matmul"]),
    ("ij,kj->ik", [(3, 4), (5, 4)], ["transpose", "matmul"]),
    ("ab,bc,cd", [(2, 3), (3, 4), (4, 5)], ["matmul", "matmul"]),
    ("...j,j", [(2, 3, 4), (4,)], ["reshape", "reshape", "matmul", "reshape"]),
])
def test_einsum_lowers_to_graph_ops(equation, shapes, ops):
    feeds = {f"x{k}": floats(*shape) for k, shape in enumerate(shapes)}
    model = make_model(helper.make_node("Einsum", list(feeds), ["y"], equation=equation),
                       feeds, opset=12)
    assert [op.name.split(".")[1] for op in body_ops(model)] == ops
    check(model, feeds, rtol=1e-5)


@pytest.mark.parametrize(("equation", "ranks", "message"), [
    ("ij,jk", [2], "has 2 operand terms for 1 inputs"),
    ("i$->i", [2], "must be letters and at most one '...'"),
    ("ij->jj", [2], "must be distinct letters"),
    ("...ij->ij", [3], "the output must keep the '...' dims"),
    ("ijk", [2], "does not fit an input of rank 2"),
    ("ij->k", [2], "output label 'k' is in no input"),
])
def test_malformed_equations_are_one_line_errors(equation, ranks, message):
    with pytest.raises(ValueError, match=message):
        parse_equation(equation, ranks)


def test_equation_labels():
    assert parse_equation("b i j, b j k", [3, 3]) == ([list("bij"), list("bjk")], list("ik"))
    assert parse_equation("...ij,j...->...i", [3, 2]) == (
        [["...0", "i", "j"], ["j", "...0"]], ["...0", "i"])
    assert parse_equation("ba", [2]) == ([["b", "a"]], ["a", "b"])  # implicit: sorted
