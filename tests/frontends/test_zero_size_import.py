"""What the ONNX frontend makes of zero-size tensors (``tmlir.frontends.onnx_empty``): every
value with no element is a constant, so the graph IR has no op on a 0 extent."""

from __future__ import annotations

import numpy as np
import pytest
from models import mlp, typed_model
from onnx import helper, numpy_helper

from tmlir.frontends.onnx import FrontendError, import_onnx
from tmlir.frontends.onnx_common import RunTimeValueError
from tmlir.frontends.onnx_fold import MAX_FOLDED_ELEMENTS

F32 = np.float32


def ops(imported) -> list[str]:
    (function,) = imported.module.ops
    return [op.name for op in function.body.ops]


def test_batch_of_zero_leaves_no_computation() -> None:
    imported = import_onnx(mlp(0, [8, 16, 4]))
    assert ops(imported) == ["graph.weight", "func.return"]
    assert "%x: tensor<0x8xf32>" in str(imported.module)  # still an input: a run feeds it
    (weight,) = imported.weights.values()
    assert weight.shape == (0, 4) and weight.dtype == F32


def test_an_empty_slice_is_an_empty_constant() -> None:
    consts = [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array([v])))
              for name, v in (("b", 5), ("e", 2), ("a", 1))]
    model = typed_model([*consts, helper.make_node("Slice", ["x", "b", "e", "a"], ["y"])],
                        {"x": (F32, (2, 10))}, {"y": F32})
    imported = import_onnx(model)
    assert ops(imported) == ["graph.weight", "func.return"]
    assert [w.shape for w in imported.weights.values()] == [(2, 0)]


def test_concat_drops_its_empty_operands() -> None:
    model = typed_model([helper.make_node("Concat", ["a", "x", "b"], ["y"], axis=1)],
                        {"a": (F32, (2, 3)), "x": (F32, (2, 0)), "b": (F32, (2, 1))}, {"y": F32})
    text = str(import_onnx(model).module)
    assert "graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>)" in text


def test_a_large_uniform_result_is_an_expand_not_a_weight() -> None:
    n = int(np.sqrt(MAX_FOLDED_ELEMENTS)) + 1
    model = typed_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                        {"a": (F32, (n, 0)), "b": (F32, (0, n))}, {"y": F32})
    imported = import_onnx(model)
    assert "graph.expand" in ops(imported)
    assert max(w.size for w in imported.weights.values()) == 1  # the scalar 0


def test_gemm_with_no_inner_dimension_is_beta_times_c() -> None:
    model = typed_model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], beta=0.5)],
                        {"a": (F32, (4, 0)), "b": (F32, (0, 3)), "c": (F32, (1, 3))}, {"y": F32})
    assert ops(import_onnx(model)) == ["graph.weight", "graph.mul", "graph.expand", "func.return"]


def test_empty_axes_are_no_data() -> None:
    """An empty ``axes`` input is a parameter: ReduceSum with noop_with_empty_axes is x."""
    model = typed_model([helper.make_node("Constant", [], ["axes"],
                                          value=numpy_helper.from_array(np.zeros(0, np.int64))),
                         helper.make_node("ReduceSum", ["x", "axes"], ["y"], noop_with_empty_axes=1)],
                        {"x": (F32, (2, 3))}, {"y": F32})
    assert ops(import_onnx(model)) == ["func.return"]


def test_a_parameter_computed_at_run_time_is_asked_for() -> None:
    """Reducing an empty tensor over axes fed at run time: the usual RunTimeValueError,
    and with the value given, the reduction's identity."""
    model = typed_model([helper.make_node("ReduceProd", ["x", "axes"], ["y"], keepdims=0)],
                        {"x": (F32, (0, 3)), "axes": (np.int64, (1,))}, {"y": F32})
    with pytest.raises(RunTimeValueError, match="input 'axes'"):
        import_onnx(model)
    imported = import_onnx(model, input_values={"axes": np.array([0])})
    assert [w.tolist() for w in imported.weights.values()] == [[1.0, 1.0, 1.0]]


def test_a_result_depending_on_run_time_data_is_one_line() -> None:
    model = typed_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv")],
                        {"x": (F32, (1, 0, 4, 4)), "b": (F32, (2,))}, {"y": F32},
                        {"w": np.zeros((2, 0, 3, 3), F32)})
    with pytest.raises(FrontendError, match=r"^node 'conv' \(Conv\): reads the empty tensor 'x' "
                                            r"\(shape \[1, 0, 4, 4\]\), and its non-empty result "
                                            r"depends on 'b', computed at run time: not supported$"):
        import_onnx(model)
