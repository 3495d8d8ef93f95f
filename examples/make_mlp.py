"""Write the demo model: a 3-layer MLP (784 -> 256 -> 128 -> 10, batch 16) as ONNX.

    python examples/make_mlp.py examples/mlp.onnx

Layers are Gemm(transB=1) + Relu with random weights, the way PyTorch exports nn.Linear.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH = 16
DIMS = (784, 256, 128, 10)


def build(batch: int = BATCH, dims: tuple[int, ...] = DIMS, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, initializers, x = [], [], "input"
    for i, (fan_in, fan_out) in enumerate(zip(dims[:-1], dims[1:])):
        w = (rng.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in)).astype(np.float32)
        b = (0.1 * rng.standard_normal(fan_out)).astype(np.float32)
        initializers += [numpy_helper.from_array(w, f"fc{i}.weight"),
                         numpy_helper.from_array(b, f"fc{i}.bias")]
        last = i == len(dims) - 2
        out = "logits" if last else f"/fc{i}/Gemm_output_0"
        nodes.append(helper.make_node("Gemm", [x, f"fc{i}.weight", f"fc{i}.bias"], [out],
                                      name=f"/fc{i}/Gemm", transB=1))
        x = out
        if not last:
            nodes.append(helper.make_node("Relu", [x], [f"/relu{i}/Relu_output_0"],
                                          name=f"/relu{i}/Relu"))
            x = f"/relu{i}/Relu_output_0"
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, dims[0]])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, dims[-1]])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="tmlir-examples")
    model.ir_version = 10  # onnxruntime 1.31 reads IR version <= 13
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "examples/mlp.onnx"
    onnx.save(build(), path)
    print(f"wrote {path}")
