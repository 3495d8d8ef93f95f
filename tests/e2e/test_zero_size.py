"""Zero-size tensors (a dimension of 0) on emu, against onnxruntime: empty outputs of the
right shape and dtype with no kernel launched for them, and the non-empty results that
empty inputs give (reductions over an empty axis, MatMul/Gemm with K = 0, Concat with an
empty piece, Pad of an empty tensor), per op family; a batch of 0 through a small CNN and
an MLP, static and fed at run time to a dynamic model."""

from __future__ import annotations

import numpy as np
import pytest
from models import dynamic_mlp, mlp, run_onnxruntime, typed_model
from onnx import TensorProto, helper, numpy_helper

import tmlir
from tmlir.frontends.onnx import FrontendError, import_onnx

F32, I64 = np.float32, np.int64


def const(name: str, value) -> helper.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value)))


def empty(*shape: int, dtype=F32) -> np.ndarray:
    return np.zeros(shape, dtype)


def check(model, feed: dict[str, np.ndarray]) -> tmlir.InferenceSession:
    """Run `model` on emu and onnxruntime: same shapes, dtypes and values (NaN = NaN)."""
    session = tmlir.InferenceSession(model, device="emu")
    got = session.run(None, feed)
    expected = run_onnxruntime(model, feed)
    assert len(got) == len(expected)
    for out, ref in zip(got, expected):
        assert out.shape == ref.shape and out.dtype == ref.dtype, (out.shape, ref.shape)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    return session


X43 = np.arange(12, dtype=F32).reshape(4, 3)

CASES = {
    # elementwise and broadcasting with a 0 dim: empty
    "relu": (typed_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (F32, (0, 3))},
                         {"y": F32}), {"x": empty(0, 3)}),
    "add_broadcast": (typed_model([helper.make_node("Add", ["x", "b"], ["y"])],
                                  {"x": (F32, (0, 3)), "b": (F32, (1, 3))}, {"y": F32}),
                      {"x": empty(0, 3), "b": np.ones((1, 3), F32)}),
    "where_cast": (typed_model([helper.make_node("Where", ["m", "x", "z"], ["y"]),
                                helper.make_node("Cast", ["y"], ["yi"], to=TensorProto.INT64)],
                               {"m": (np.bool_, (0, 3)), "x": (F32, (1, 3)), "z": (F32, (0, 1))},
                               {"yi": I64}),
                   {"m": empty(0, 3, dtype=np.bool_), "x": np.ones((1, 3), F32), "z": empty(0, 1)}),
    # data movement: a Slice producing nothing, Split with an empty piece, Expand to a 0
    # dim, Reshape with allowzero, Concat dropping empty operands, Shape and Size
    "slice_reduce": (typed_model([const("s", [2]), const("e", [2]), const("a", [0]),
                                  helper.make_node("Slice", ["x", "s", "e", "a"], ["y"]),
                                  helper.make_node("ReduceSum", ["y", "a"], ["z"], keepdims=0),
                                  helper.make_node("Add", ["z", "x"], ["w"])],
                                 {"x": (F32, (4, 3))}, {"y": F32, "w": F32}), {"x": X43}),
    "split": (typed_model([const("sp", [2, 0, 2]),
                           helper.make_node("Split", ["x", "sp"], ["a", "b", "c"], axis=0)],
                          {"x": (F32, (4, 3))}, {"a": F32, "b": F32, "c": F32}), {"x": X43}),
    "top_k_zero": (typed_model([const("k", [0]), helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)],
                               {"x": (F32, (4, 3))}, {"v": F32, "i": I64}), {"x": X43}),
    "expand_reshape": (typed_model([const("sh", [0, 3]), const("r", [3, 0]),
                                    helper.make_node("Expand", ["x", "sh"], ["y"]),
                                    helper.make_node("Reshape", ["y", "r"], ["z"], allowzero=1)],
                                   {"x": (F32, (1, 3))}, {"z": F32}), {"x": np.ones((1, 3), F32)}),
    "concat": (typed_model([helper.make_node("Concat", ["x", "z", "x", "z"], ["y"], axis=0)],
                           {"x": (F32, (0, 3)), "z": (F32, (2, 3))}, {"y": F32}),
               {"x": empty(0, 3), "z": X43[:2]}),
    "shape_size": (typed_model([helper.make_node("Shape", ["x"], ["s"]),
                                helper.make_node("Size", ["x"], ["n"])],
                               {"x": (F32, (0, 3))}, {"s": I64, "n": I64}), {"x": empty(0, 3)}),
    # empty inputs, non-empty results
    "matmul_k0": (typed_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                              {"a": (F32, (2, 0)), "b": (F32, (0, 3))}, {"y": F32}),
                  {"a": empty(2, 0), "b": empty(0, 3)}),
    "gemm_k0_bias": (typed_model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], beta=2.0)],
                                 {"a": (F32, (2, 0)), "b": (F32, (0, 3)), "c": (F32, (3,))},
                                 {"y": F32}),
                     {"a": empty(2, 0), "b": empty(0, 3), "c": np.array([1, 2, 3], F32)}),
    "pad": (typed_model([const("p", [1, 0, 1, 0]), helper.make_node("Pad", ["x", "p", "v"], ["y"])],
                        {"x": (F32, (0, 3)), "v": (F32, ())}, {"y": F32}),
            {"x": empty(0, 3), "v": np.array(2.5, F32)}),
    "conv_no_channels": (typed_model([helper.make_node("Conv", ["x", "w", "b"], ["y"])],
                                     {"x": (F32, (1, 0, 4, 4))}, {"y": F32},
                                     {"w": empty(2, 0, 3, 3), "b": np.array([1, 2], F32)}),
                         {"x": empty(1, 0, 4, 4)}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_families(case: str) -> None:
    model, feed = CASES[case]
    session = check(model, feed)
    assert session.program is not None
    assert all(0 not in session.program.buffers[i].shape
               for launch in session.program.launches for i in launch.args), "a kernel saw an empty buffer"


REDUCTIONS = [(op, F32) for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                   "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
                                   "ReduceLogSumExp")] + [
    (op, I64) for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd")]


@pytest.mark.parametrize(("op", "dtype"), REDUCTIONS, ids=[f"{op}-{d.__name__}" for op, d in REDUCTIONS])
def test_reductions_over_an_empty_axis(op: str, dtype: type) -> None:
    """Their identity element, as onnxruntime gives it (ReduceMean: 0, not NaN): a
    constant, copied into the output."""
    nodes = [const("axes", [0]), helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)]
    model = typed_model(nodes, {"x": (dtype, (0, 3))}, {"y": dtype})
    session = check(model, {"x": empty(0, 3, dtype=dtype)})
    assert [launch.kernel for launch in session.program.launches] == ["copy_0"]


def small_cnn(batch: int | str) -> object:
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], transB=1),
             helper.make_node("Softmax", ["y"], ["s"])]
    weights = {"w": rng.standard_normal((4, 3, 3, 3)).astype(F32), "b": rng.standard_normal(4).astype(F32),
               "fc": rng.standard_normal((5, 16)).astype(F32), "fb": rng.standard_normal(5).astype(F32)}
    model = typed_model(nodes, {"x": (F32, (1, 3, 4, 4))}, {"s": F32}, weights)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = str(batch)
    if isinstance(batch, int):
        model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = batch
    return model


def test_batch_of_zero_through_a_cnn() -> None:
    session = check(small_cnn(0), {"x": empty(0, 3, 4, 4)})
    assert session.program.launches == ()  # nothing to compute: no kernel at all


def test_batch_of_zero_through_an_mlp() -> None:
    session = check(mlp(0, [8, 16, 4]), {"x": empty(0, 8)})
    assert session.program.launches == ()


def test_dynamic_batch_of_zero_at_run_time() -> None:
    """A session compiled per input shape: batch 0, then 3, then 0 again."""
    for model, shape in ((dynamic_mlp(), (8,)), (small_cnn("N"), (3, 4, 4))):
        session = tmlir.InferenceSession(model, device="emu")
        for batch in (0, 3, 0):
            x = np.random.default_rng(batch).standard_normal((batch, *shape)).astype(F32)
            (y,) = session.run(None, {"x": x})
            (ref,) = run_onnxruntime(model, {"x": x})
            assert y.shape == ref.shape and y.dtype == ref.dtype
            np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def test_what_cannot_be_known_is_one_line_naming_the_node() -> None:
    # ArgMax over an empty axis, and Pad of an empty tensor in edge mode (no edge to
    # repeat): onnxruntime fails on both too.
    argmax = typed_model([helper.make_node("ArgMax", ["x"], ["y"], axis=0, name="am")],
                         {"x": (F32, (0, 3))}, {"y": I64})
    pad = typed_model([const("p", [1, 0, 1, 0]),
                       helper.make_node("Pad", ["x", "p"], ["y"], mode="edge", name="pad")],
                      {"x": (F32, (0, 3))}, {"y": F32})
    for model, node in ((argmax, r"node 'am' \(ArgMax\)"), (pad, r"node 'pad' \(Pad\)")):
        with pytest.raises(FrontendError, match=rf"^{node}: cannot compute it on an empty input: [^\n]*$"):
            import_onnx(model)
