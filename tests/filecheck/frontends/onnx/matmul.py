# MatMul: 2-D, and batched with numpy broadcasting of the batch dimensions.
# RUN: python %s %t
# RUN: tm-opt %t.2d.onnx | filecheck %s --check-prefix=MM2D
# RUN: tm-opt %t.batched.onnx | filecheck %s --check-prefix=BATCHED
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


# MM2D-LABEL:  func.func @main(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32>
# MM2D-SAME:     attributes {tm.inputs = ["a", "b"], tm.outputs = ["c"]}
# MM2D-NEXT:     %c = graph.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
# MM2D-NEXT:     func.return %c : tensor<3x5xf32>
save(f"{sys.argv[1]}.2d.onnx", [helper.make_node("MatMul", ["a", "b"], ["c"], name="mm")],
     [("a", [3, 4]), ("b", [4, 5])], [("c", None)])

# BATCHED-LABEL: func.func @main(%x: tensor<3x1x4x5xf32>) -> tensor<3x2x4x6xf32>
# BATCHED-NEXT:    %w = graph.weight "w" : tensor<2x5x6xf32>
# BATCHED-NEXT:    %y = graph.matmul %x, %w : (tensor<3x1x4x5xf32>, tensor<2x5x6xf32>) -> tensor<3x2x4x6xf32>
# BATCHED-NEXT:    func.return %y : tensor<3x2x4x6xf32>
save(f"{sys.argv[1]}.batched.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
     [("x", [3, 1, 4, 5])], [("y", None)], [("w", [2, 5, 6])])
