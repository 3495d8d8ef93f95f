"""Constant folding of ONNX graphs before import (tmlir.frontends.onnx_fold)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from tmlir.frontends.onnx_fold import MAX_FOLDED_ELEMENTS, fold_constants


def model(nodes, inputs, outputs, initializers=(), opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 10  # what onnxruntime reads
    return onnx.shape_inference.infer_shapes(proto, strict_mode=True)


def tensor(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(array, name):
    return numpy_helper.from_array(np.asarray(array), name)


def run(proto: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def initializers(proto: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}


def test_shape_chain_collapses_to_a_constant_shape() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape keeps only the Reshape."""
    proto = model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "zero"], ["d0"], axis=0),
         helper.make_node("Unsqueeze", ["d0", "axes"], ["d0u"]),
         helper.make_node("Concat", ["d0u", "minus1"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["r"]),
         helper.make_node("Relu", ["r"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [2, 3, 4])], [tensor("y", TensorProto.FLOAT, [2, 12])],
        [const(np.int64(0), "zero"), const([0], "axes"), const([-1], "minus1")])
    folded = fold_constants(proto)
    assert [n.op_type for n in folded.graph.node] == ["Reshape", "Relu"]
    assert {k: v.tolist() for k, v in initializers(folded).items()} == {"shape": [2, -1]}
    onnx.checker.check_model(folded, full_check=True)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(folded, {"x": x})[0], run(proto, {"x": x})[0])


def test_constant_of_shape_range_cast_and_shape_slices() -> None:
    proto = model(
        [helper.make_node("Shape", ["x"], ["tail"], start=-1),
         helper.make_node("ConstantOfShape", ["tail"], ["ones"],
                          value=numpy_helper.from_array(np.array([1.0], np.float32))),
         helper.make_node("Size", ["x"], ["n"]),
         helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
         helper.make_node("Div", ["ones", "nf"], ["scale"]),
         helper.make_node("Mul", ["x", "scale"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [3, 5])], [tensor("y", TensorProto.FLOAT, [3, 5])])
    folded = fold_constants(proto)
    assert [n.op_type for n in folded.graph.node] == ["Mul"]
    np.testing.assert_allclose(initializers(folded)["scale"], np.full(5, 1 / 15, np.float32))
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    np.testing.assert_allclose(run(folded, {"x": x})[0], run(proto, {"x": x})[0])


def test_what_is_not_folded() -> None:
    """Data-dependent nodes, dynamic shapes, random ops and huge results."""
    proto = model(
        [helper.make_node("Shape", ["x"], ["s"]),  # dim 0 is symbolic: not static
         helper.make_node("RandomNormal", [], ["noise"], shape=[2]),
         helper.make_node("Expand", ["one", "big"], ["huge"]),
         helper.make_node("Relu", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, ["batch", 4])],
        [tensor("y", TensorProto.FLOAT, ["batch", 4]), tensor("s", TensorProto.INT64, [2]),
         tensor("noise", TensorProto.FLOAT, [2]), tensor("huge", TensorProto.FLOAT, None)],
        [const(np.float32(1.0), "one"), const([MAX_FOLDED_ELEMENTS + 1], "big")])
    folded = fold_constants(proto)
    assert [n.op_type for n in folded.graph.node] == [n.op_type for n in proto.graph.node]


def test_graph_outputs_fold_into_initializers() -> None:
    """A graph output computed from constants (the shape of a static input, say) becomes an
    initializer of that name, which the importer returns as a weight."""
    proto = model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Add", ["one", "one"], ["two"]),
         helper.make_node("Relu", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [3, 4])],
        [tensor("y", TensorProto.FLOAT, [3, 4]), tensor("s", TensorProto.INT64, [2]),
         tensor("two", TensorProto.FLOAT, [])],
        [const(np.float32(1.0), "one")])
    folded = fold_constants(proto)
    assert [n.op_type for n in folded.graph.node] == ["Relu"]
    assert {k: v.tolist() for k, v in initializers(folded).items()} == {"s": [3, 4], "two": 2.0}
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for got, expected in zip(run(folded, {"x": x}), run(proto, {"x": x})):
        np.testing.assert_array_equal(got, expected)


def test_gather_elements_folds_with_long_axes() -> None:
    """onnx 1.23's reference GatherElements fails on an axis of more than 32 (BERT's token
    type ids are such a gather of constants); the fold uses numpy's take_along_axis."""
    data, indices = np.arange(64, dtype=np.int64).reshape(1, 64), np.array([[3, -1, 40]])
    proto = model(
        [helper.make_node("GatherElements", ["d", "i"], ["g"], axis=1),
         helper.make_node("Cast", ["g"], ["gf"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["x", "gf"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [1, 3])], [tensor("y", TensorProto.FLOAT, [1, 3])],
        [const(data, "d"), const(indices, "i")])
    folded = fold_constants(proto)
    assert [n.op_type for n in folded.graph.node] == ["Add"]
    assert initializers(folded)["gf"].tolist() == [[3.0, 63.0, 40.0]]


def test_unused_initializers_are_dropped_and_model_without_constants_is_unchanged() -> None:
    proto = model(
        [helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
         helper.make_node("MatMul", ["x", "wt"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [2, 3])], [tensor("y", TensorProto.FLOAT, [2, 4])],
        [const(np.arange(12, dtype=np.float32).reshape(4, 3), "w")])
    folded = fold_constants(proto)
    assert [n.op_type for n in folded.graph.node] == ["MatMul"]
    assert list(initializers(folded)) == ["wt"]
    np.testing.assert_array_equal(initializers(folded)["wt"], np.arange(12).reshape(4, 3).T)
    plain = model([helper.make_node("Relu", ["x"], ["y"])],
                  [tensor("x", TensorProto.FLOAT, [2])], [tensor("y", TensorProto.FLOAT, [2])])
    assert fold_constants(plain) == plain


@pytest.mark.parametrize("opset", [11, 13, 17])
def test_squeeze_axes_as_attribute_or_input(opset: int) -> None:
    """Opset-dependent signatures are evaluated with the model's own opset."""
    axes = [helper.make_node("Squeeze", ["c"], ["sq"], axes=[0])] if opset < 13 else [
        helper.make_node("Squeeze", ["c", "axes"], ["sq"])]
    proto = model(axes + [helper.make_node("Add", ["x", "sq"], ["y"])],
                  [tensor("x", TensorProto.FLOAT, [3])], [tensor("y", TensorProto.FLOAT, [3])],
                  [const(np.ones((1, 3), np.float32), "c"), const([0], "axes")], opset)
    folded = fold_constants(proto)
    assert [n.op_type for n in folded.graph.node] == ["Add"]
    assert initializers(folded)["sq"].shape == (3,)


def test_import_folds_ops_the_importer_does_not_support() -> None:
    """A Transpose of a weight and a Cast of a constant are gone before the importer looks:
    only MatMul and Add are left, and the compiled model matches onnxruntime."""
    from tmlir import InferenceSession
    from tmlir.frontends.onnx import import_onnx

    w = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    proto = model(
        [helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
         helper.make_node("Cast", ["half"], ["halff"], to=TensorProto.FLOAT),
         helper.make_node("MatMul", ["x", "wt"], ["xw"]),
         helper.make_node("Add", ["xw", "halff"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [2, 3])], [tensor("y", TensorProto.FLOAT, [2, 4])],
        [const(w, "w"), const(np.float64(0.5), "half")])
    imported = import_onnx(proto)
    assert [op.name for op in imported.module.ops.first.body.block.ops] == [
        "graph.weight", "graph.matmul", "graph.weight", "graph.add", "func.return"]
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    (got,) = InferenceSession(proto, device="emu").run(None, {"x": x})
    np.testing.assert_allclose(got, run(proto, {"x": x})[0], rtol=1e-5, atol=1e-6)
