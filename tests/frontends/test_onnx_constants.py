"""Constants with bad data name their node; a ConstantOfShape too large to fold still runs."""

from __future__ import annotations

import numpy as np
import pytest
from models import make_model
from onnx import TensorProto, helper

import tmlir
from tmlir.frontends.onnx import FrontendError, import_onnx
from tmlir.frontends.onnx_fold import MAX_FOLDED_ELEMENTS


def _bad_constant_model():
    tensor = helper.make_tensor("c", TensorProto.FLOAT, [2, 3], vals=[0.0] * 6)
    tensor.ClearField("float_data")
    tensor.raw_data = b"\0" * 8  # 8 bytes for 6 floats
    nodes = [helper.make_node("Constant", [], ["c"], value=tensor, name="const"),
             helper.make_node("Add", ["x", "c"], ["y"])]
    return make_model(nodes, {"x": [2, 3]}, {"y": [2, 3]})


def test_constant_with_data_that_does_not_fit_is_one_line_naming_it() -> None:
    with pytest.raises(FrontendError) as info:
        import_onnx(_bad_constant_model())
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("Constant node 'const': attribute 'value': tensor 'c' (float, 2x3)")
    assert "does not fit" in message


def test_constant_of_shape_above_the_folding_limit_is_an_expanded_scalar() -> None:
    rows = MAX_FOLDED_ELEMENTS // 1000 + 1  # rows x 1000 is over the limit
    shape = helper.make_tensor("s", TensorProto.INT64, [2], [rows, 1000])
    nodes = [helper.make_node("Constant", [], ["s"], value=shape),
             helper.make_node("ConstantOfShape", ["s"], ["z"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
             helper.make_node("Add", ["z", "x"], ["w"]),
             helper.make_node("ReduceSum", ["w"], ["y"], keepdims=0)]
    model = make_model(nodes, {"x": [1000]}, {"y": []})
    imported = import_onnx(model)
    assert "graph.expand" in str(imported.module)
    assert all(w.size == 1 for w in imported.weights.values())  # nothing of rows x 1000 stored
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    (y,) = tmlir.InferenceSession(model).run(None, {"x": x})
    np.testing.assert_allclose(y, rows * (500 + x.sum(dtype=np.float64)), rtol=1e-4)
