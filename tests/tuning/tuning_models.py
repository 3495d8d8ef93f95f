"""The tuning tests' model: a small conv net with repeated kernels."""

from __future__ import annotations

import numpy as np
import onnx
from models import make_model
from onnx import helper


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
