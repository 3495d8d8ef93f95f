"""Models with symbolic input dims are compiled per input-shape signature at run()."""

from __future__ import annotations

import numpy as np
import pytest
from models import dynamic_mlp, make_model, mlp, run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

import tmlir
from tmlir.frontends.onnx import FrontendError, import_onnx
from tmlir.runtime import session as session_module
from tmlir.runtime.session import SessionError


def rand(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def test_compiled_once_per_shape_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    compiles: list[object] = []
    real = session_module.compile_model
    monkeypatch.setattr(session_module, "compile_model",
                        lambda model, shapes=None, *rest, **options: compiles.append(shapes)
                        or real(model, shapes, *rest, **options))
    model = dynamic_mlp()
    session = tmlir.InferenceSession(model, device="emu")
    assert session.program is None and compiles == []
    assert [(i.name, i.shape) for i in session.get_inputs()] == [("x", ("N", 8))]
    assert [(o.name, o.shape) for o in session.get_outputs()] == [("y", ("N", 4))]
    for batch in (2, 5, 2):
        x = rand(batch, 8)
        (y,) = session.run(None, {"x": x})
        np.testing.assert_allclose(y, run_onnxruntime(model, {"x": x})[0], rtol=1e-4, atol=1e-5)
    assert compiles == [{"x": (2, 8)}, {"x": (5, 8)}]
    assert session.program is not None and "M=2" in session.program.source


def test_static_model_compiles_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    compiles: list[object] = []
    real = session_module.compile_model
    monkeypatch.setattr(session_module, "compile_model",
                        lambda model, shapes=None, *rest, **options: compiles.append(shapes)
                        or real(model, shapes, *rest, **options))
    session = tmlir.InferenceSession(mlp(3, [8, 4]), device="emu")
    assert compiles == [None] and session.program is not None
    session.run(None, {"x": rand(3, 8)})
    assert compiles == [None]


def test_shape_computations_fold_once_the_shape_is_known() -> None:
    """Shape(x) -> ConstantOfShape is data only after specialization: x + ones(shape(x))."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["ones"],
                              value=numpy_helper.from_array(np.array([1.5], np.float32))),
             helper.make_node("Add", ["x", "ones"], ["y"])]
    model = make_model(nodes, {"x": ("B", 3)}, {"y": ("B", 3)})
    session = tmlir.InferenceSession(model, device="emu")
    x = rand(4, 3)
    (y,) = session.run(None, {"x": x})
    np.testing.assert_allclose(y, x + 1.5, rtol=1e-6)


@pytest.mark.parametrize(("feed", "error"), [
    ({"x": np.zeros((2, 9), np.float32)}, r"input 'x': expected shape \['N', 8\], got \[2, 9\]"),
    ({"x": np.zeros((2, 8, 1), np.float32)}, r"input 'x': expected shape \['N', 8\], got \[2, 8, 1\]"),
    ({}, r"missing input 'x'"),
])
def test_bad_feeds_of_a_dynamic_model(feed, error) -> None:
    with pytest.raises(SessionError, match=error):
        tmlir.InferenceSession(dynamic_mlp(), device="emu").run(None, feed)


@pytest.mark.parametrize(("shapes", "error"), [
    ({"w": (2, 8)}, r"input shape given for 'w', which is not a model input \(inputs: x\)"),
    ({"x": (2, 7)}, r"input 'x': shape \[2, 7\] does not match the declared shape \['N', 8\]"),
    ({"x": (2,)}, r"input 'x': shape \[2\] does not match the declared shape \['N', 8\]"),
    ({"x": (-1, 8)}, r"input 'x': shape \[-1, 8\] has a negative dimension"),
])
def test_import_input_shape_errors(shapes, error) -> None:
    with pytest.raises(FrontendError, match=error):
        import_onnx(dynamic_mlp(), input_shapes=shapes)


def test_unspecialized_dynamic_model_names_the_dimension() -> None:
    with pytest.raises(FrontendError, match=r"input 'x': dynamic dimension 'N' is not supported"):
        import_onnx(dynamic_mlp())
    model = dynamic_mlp()
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT
    assert import_onnx(model, input_shapes={"x": (3, 8)}).module.ops.first.args[0].type.get_shape() == (3, 8)


def test_non_tensor_inputs_are_named_as_such() -> None:
    seq = helper.make_tensor_sequence_value_info("xs", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Identity", ["xs"], ["ys"])], "g", [seq],
                              [helper.make_tensor_sequence_value_info("ys", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    message = r"input 'xs': a sequence, not a tensor \(only tensors are supported\)"
    with pytest.raises(FrontendError, match=message):
        import_onnx(model)
    with pytest.raises(FrontendError, match=message):
        import_onnx(model, input_shapes={"xs": (2,)})
    with pytest.raises(FrontendError, match=message):
        tmlir.InferenceSession(model, device="emu").run(None, {"xs": np.zeros(2, np.float32)})
