"""The tuning tests' models: a small conv net with repeated kernels, and a half-precision
MLP whose matmuls run on tensor cores."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
from models import make_model
from onnx import TensorProto, helper, numpy_helper


def conv_net() -> onnx.ModelProto:
    """Three 3x3 convolutions (two with the same shapes and weights) and a Gemm head:
    three tunable kernels for four ops."""
    rng = np.random.default_rng(0)

    def w(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape) * 0.1

    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w1", "b1"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r0"], ["s"]),
        helper.make_node("GlobalAveragePool", ["s"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], transB=1),
    ]
    return make_model(nodes, {"x": (1, 8, 8, 8)}, {"y": (1, 10)},
                      {"w0": w(16, 8, 3, 3), "b0": w(16), "w1": w(16, 16, 3, 3), "b1": w(16),
                       "fc": w(10, 16), "fb": w(10)})


def half_mlp(dtype: int = TensorProto.FLOAT16, side: int = 64) -> onnx.ModelProto:
    """``relu(x @ w0) @ w1`` on float16 (or bfloat16) `side` x `side` tensors: two matmuls
    of one tensor-core kernel signature."""
    rng = np.random.default_rng(0)
    half = {TensorProto.FLOAT16: np.float16, TensorProto.BFLOAT16: ml_dtypes.bfloat16}[dtype]
    weights = [numpy_helper.from_array((rng.standard_normal((side, side)) * 0.1).astype(half), name)
               for name in ("w0", "w1")]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w1"], ["y"])]
    graph = helper.make_graph(nodes, "half_mlp", [helper.make_tensor_value_info("x", dtype, [side, side])],
                              [helper.make_tensor_value_info("y", dtype, [side, side])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model
