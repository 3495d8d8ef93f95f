"""Shared by the ONNX frontend lit tests (`.py` tests that build their own model)."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(path, nodes, inputs, outputs, initializers=(), opset=17):
    """Write a float32 model: inputs/outputs are (name, shape) pairs, initializers zeros
    (or `(name, array)` pairs for other values; integer arrays keep their dtype)."""
    def array(s):
        if isinstance(s, np.ndarray):
            return s if s.dtype.kind in "iu" else np.asarray(s, np.float32)
        return np.zeros(s, np.float32)

    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(array(s), n) for n, s in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    onnx.save(model, path)
