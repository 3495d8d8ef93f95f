# Identity forwards its operand (no op); Constant becomes a graph.weight whose data stays
# out of the IR; a graph output may be a graph input or an initializer directly.
# RUN: python %s %t.onnx && tm-opt %t.onnx | filecheck %s
import os
import sys

import numpy as np
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402

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
