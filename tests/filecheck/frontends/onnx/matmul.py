# MatMul: 2-D, and batched with numpy broadcasting of the batch dimensions.
# RUN: python %s %t
# RUN: tm-opt %t.2d.onnx | filecheck %s --check-prefix=MM2D
# RUN: tm-opt %t.batched.onnx | filecheck %s --check-prefix=BATCHED
import os
import sys

from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402

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
