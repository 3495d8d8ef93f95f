# An op the frontend does not support is one error line naming the node, the op and the
# supported ops; tm-opt exits with status 1.
# RUN: python %s %t.onnx && not tm-opt %t.onnx 2>&1 | filecheck %s
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(path, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(np.zeros(s, np.float32), n) for n, s in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.save(model, path)


# CHECK: tm-opt: error: node 'conv1' (Conv): unsupported op type; supported: Add, Constant, Div, Gemm, Identity, MatMul, Mul, Relu, Sigmoid, Sub, Tanh
# CHECK-NOT: Traceback
save(sys.argv[1], [
    helper.make_node("Relu", ["x"], ["r"], name="relu"),
    helper.make_node("Conv", ["r", "w"], ["y"], name="conv1"),
], [("x", [1, 1, 4, 4])], [("y", None)], [("w", [1, 1, 3, 3])])
