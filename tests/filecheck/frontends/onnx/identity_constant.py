# Identity forwards its operand (no op); Constant becomes a graph.weight whose data stays
# out of the IR; a graph output may be a graph input or an initializer directly.
# RUN: python %s %t.onnx && tm-opt %t.onnx | filecheck %s
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


# CHECK-LABEL: func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>)
# CHECK-SAME:    attributes {tm.inputs = ["x"], tm.outputs = ["z", "x", "w"]}
# CHECK-NEXT:    %k = graph.weight "k" : tensor<3xf32>
# CHECK-NEXT:    %y = graph.add %x, %k : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
# CHECK-NEXT:    %w = graph.weight "w" : tensor<4xf32>
# CHECK-NEXT:    func.return %y, %x, %w : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>
# CHECK-NOT:     7.5
nodes = [
    helper.make_node("Identity", ["x"], ["t"], name="id"),
    helper.make_node("Constant", [], ["k"], name="const",
                     value=numpy_helper.from_array(np.full([3], 7.5, np.float32))),
    helper.make_node("Add", ["t", "k"], ["y"], name="add"),
    helper.make_node("Identity", ["y"], ["z"], name="id2"),
]
save(sys.argv[1], nodes, [("x", [2, 3])], [("z", None), ("x", [2, 3]), ("w", None)],
     [("w", [4])])
