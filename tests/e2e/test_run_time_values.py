"""Values the importer must know, end to end: shapes computed through shape arithmetic on
intermediate values (folded to a fixed point, or by the importer from our own graph's
shapes), and shape-like inputs fed at run time (a ``Reshape``'s shape, a ``Resize``'s
scales, ``Range``'s bounds), which the session compiles once per distinct value. Each model
runs on emu against onnxruntime."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from models import run_onnxruntime
from onnx import TensorProto, helper

import tmlir
from tmlir.frontends.onnx import import_onnx
from tmlir.frontends.onnx_common import RunTimeValueError
from tmlir.runtime import session as session_module
from tmlir.runtime.session import MAX_VALUE_ELEMENTS, SessionError

RNG = np.random.default_rng(3)
F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(nodes, inputs, output_type=F32, opset=18) -> onnx.ModelProto:
    """`inputs`: name -> (ONNX dtype, shape); the output 'y' (shape inferred)."""
    graph = helper.make_graph(
        nodes, "values", [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info("y", output_type, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 10
    return proto


def ints(name: str, *values: int) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name],
                            value=helper.make_tensor(name, I64, [len(values)], values))


def check(session: tmlir.InferenceSession, proto: onnx.ModelProto, feed) -> np.ndarray:
    (got,) = session.run(None, feed)
    (want,) = run_onnxruntime(proto, feed)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    return got


@pytest.fixture
def compiles(monkeypatch) -> list[dict]:
    """The `input_values` of every compile the session makes."""
    calls: list[dict] = []
    compile_model = session_module.compile_model

    def counted(*args, **kwargs):
        calls.append({k: v.tolist() for k, v in (kwargs.get("input_values") or {}).items()})
        return compile_model(*args, **kwargs)

    monkeypatch.setattr(session_module, "compile_model", counted)
    return calls


def shape_chain(steps: int) -> onnx.ModelProto:
    """`steps` times: Relu, then a Reshape to a shape computed from the Relu's result's
    Shape (``Shape → Gather → Concat``): each step's shape is known only once the previous
    step's Reshape target is."""
    nodes = [ints("m1", -1), ints("i0", 0)]
    prev = "x"
    for k in range(steps):
        parts = ["m1", f"g{k}"] if k % 2 else [f"g{k}", "m1"]
        nodes += [helper.make_node("Relu", [prev], [f"r{k}"]),
                  helper.make_node("Shape", [f"r{k}"], [f"s{k}"]),
                  helper.make_node("Gather", [f"s{k}", "i0"], [f"g{k}"]),
                  helper.make_node("Concat", parts, [f"c{k}"], axis=0),
                  helper.make_node("Reshape", [f"r{k}", f"c{k}"], [f"y{k}" if k < steps - 1 else "y"])]
        prev = f"y{k}"
    return model(nodes, {"x": (F32, [2, 3, 4])})


@pytest.mark.parametrize("steps", [2, 40])
def test_shape_arithmetic_on_intermediate_values_folds(steps):
    # 2 steps fold before import (fold, infer, fold); 40 outlast the fold rounds, and the
    # importer computes the rest from the shapes of its own graph.
    proto = shape_chain(steps)
    session = tmlir.InferenceSession(proto, device="emu")
    assert [i.name for i in session.get_inputs()] == ["x"]
    got = check(session, proto, {"x": RNG.standard_normal((2, 3, 4)).astype(np.float32)})
    assert got.shape == {2: (12, 2), 40: (2, 12)}[steps]


def test_reshape_shape_fed_at_run_time_compiles_per_value(compiles):
    proto = model([helper.make_node("Reshape", ["x", "shape"], ["y"])],
                  {"x": (F32, [2, 3, 4]), "shape": (I64, [2])})
    session = tmlir.InferenceSession(proto, device="emu")
    assert compiles == [{}]  # tried at construction: the shape is needed
    assert [(i.name, i.shape, i.type) for i in session.get_inputs()] == [
        ("x", (2, 3, 4), "tensor(float)"), ("shape", (2,), "tensor(int64)")]
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    assert check(session, proto, {"x": x, "shape": np.array([6, -1])}).shape == (6, 4)
    assert check(session, proto, {"x": x, "shape": np.array([-1, 12])}).shape == (2, 12)
    assert check(session, proto, {"x": x, "shape": np.array([6, -1])}).shape == (6, 4)
    assert compiles == [{}, {"shape": [6, -1]}, {"shape": [-1, 12]}]  # the third run reuses


def test_value_computed_from_an_input_through_arithmetic(compiles):
    # The target is Concat(rows + 1, -1): the input 'rows' is read through an Add.
    proto = model([ints("one", 1), ints("m1", -1),
                   helper.make_node("Add", ["rows", "one"], ["r1"]),
                   helper.make_node("Concat", ["r1", "m1"], ["shape"], axis=0),
                   helper.make_node("Reshape", ["x", "shape"], ["y"])],
                  {"x": (F32, [4, 6]), "rows": (I64, [1])})
    session = tmlir.InferenceSession(proto, device="emu")
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    assert check(session, proto, {"x": x, "rows": np.array([2])}).shape == (3, 8)
    assert compiles[-1] == {"rows": [2]}


def test_resize_scales_fed_at_run_time():
    proto = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")],
                  {"x": (F32, [1, 1, 2, 3]), "scales": (F32, [4])})
    session = tmlir.InferenceSession(proto, device="emu")
    x = RNG.standard_normal((1, 1, 2, 3)).astype(np.float32)
    for scales in ([1, 1, 2, 2], [1, 1, 3, 1]):
        check(session, proto, {"x": x, "scales": np.array(scales, np.float32)})


def test_range_bounds_fed_at_run_time():
    proto = model([helper.make_node("Range", ["start", "limit", "delta"], ["y"])],
                  {n: (I64, []) for n in ("start", "limit", "delta")}, I64)
    session = tmlir.InferenceSession(proto, device="emu")
    got = check(session, proto, {"start": np.array(2), "limit": np.array(11), "delta": np.array(3)})
    assert got.tolist() == [2, 5, 8]


def reshape_model(shape_dims=(None,)) -> onnx.ModelProto:
    return model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")],
                 {"x": (F32, [2, 3, 4]), "shape": (I64, list(shape_dims))})


@pytest.mark.parametrize("feed, message", [
    ({"x": np.zeros((2, 3, 4), np.float32)}, "missing input 'shape'"),
    ({"x": np.zeros((2, 3, 4), np.float32), "shape": np.array([6, -1], np.int32)},
     "input 'shape': expected tensor(int64), got tensor(int32)"),
    ({"x": np.zeros((2, 3, 4), np.float32), "shape": np.ones(MAX_VALUE_ELEMENTS + 1, np.int64)},
     f"input 'shape': node 'r' (Reshape) needs its value when the model is compiled, and the "
     f"session compiles per value fed, but it has {MAX_VALUE_ELEMENTS + 1} elements (at most "
     f"{MAX_VALUE_ELEMENTS}); make it a constant of the model instead"),
])
def test_bad_feeds_of_inputs_read_per_value(feed, message):
    session = tmlir.InferenceSession(reshape_model(), device="emu")
    with pytest.raises(SessionError) as info:
        session.run(None, feed)
    assert str(info.value) == message


def test_importer_names_the_inputs_it_needs_the_values_of():
    with pytest.raises(RunTimeValueError) as info:
        import_onnx(reshape_model([2]))
    assert info.value.inputs == ("shape",)
    assert str(info.value) == (
        "node 'r' (Reshape): input 'shape' ('shape') is a model input, whose value must be known "
        "when the model is compiled (InferenceSession compiles the model for each value it is fed)")
    # Given the value, it imports: the input is a constant, no longer an argument of @main.
    imported = import_onnx(reshape_model([2]), input_values={"shape": np.array([4, 6])})
    assert imported.input_names == ["x"]


def test_shape_of_a_value_shaped_by_an_input_value():
    # z's shape is the value of the input 'n': once 'n' is known, Shape(z) folds.
    proto = model([helper.make_node("ConstantOfShape", ["n"], ["z"]),
                   helper.make_node("Shape", ["z"], ["s"]),
                   helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
                  {"x": (F32, [2, 3]), "n": (I64, [2])})
    session = tmlir.InferenceSession(proto, device="emu")  # 'n' is read per value
    (got,) = session.run(None, {"x": np.ones((2, 3), np.float32), "n": np.array([3, 2])})
    assert got.shape == (3, 2)


def test_stale_value_info_of_a_dynamic_model_against_onnxruntime():
    # Exported with batch 1 written into the stored shapes of intermediate values; run with
    # batch 3, those shapes are stale: dropped with a warning, the model still runs right.
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    fc = RNG.standard_normal((10, 4 * 6 * 6)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "stale", [helper.make_tensor_value_info("x", F32, ["N", 3, 6, 6])],
        [helper.make_tensor_value_info("y", F32, ["N", 10])],
        [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(fc, "fc")],
        value_info=[helper.make_tensor_value_info("c", F32, [1, 4, 6, 6]),
                    helper.make_tensor_value_info("r", F32, [1, 4, 6, 6]),
                    helper.make_tensor_value_info("f", F32, [1, 144])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 10
    x = RNG.standard_normal((3, 3, 6, 6)).astype(np.float32)
    with pytest.warns(UserWarning, match="ignored the shapes the model stores"):
        import_onnx(proto, input_shapes={"x": (3, 3, 6, 6)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same warning, unless the compile cache hits
        (got,) = tmlir.InferenceSession(proto, device="emu").run(None, {"x": x})
    (want,) = run_onnxruntime(proto, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
