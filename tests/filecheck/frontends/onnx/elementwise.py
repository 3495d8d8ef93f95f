# Add/Sub/Mul/Div with numpy broadcasting; Relu/Sigmoid/Tanh keep their operand's type.
# RUN: python %s %t
# RUN: tm-opt %t.binary.onnx | filecheck %s --check-prefix=BINARY
# RUN: tm-opt %t.unary.onnx | filecheck %s --check-prefix=UNARY
import os
import sys

from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402

# BINARY-LABEL: func.func @main(%x: tensor<4x1x3xf32>, %row: tensor<5x1xf32>) -> tensor<4x5x3xf32>
# BINARY-NEXT:    %b = graph.weight "b" : tensor<3xf32>
# BINARY-NEXT:    %s = graph.add %x, %b : (tensor<4x1x3xf32>, tensor<3xf32>) -> tensor<4x1x3xf32>
# BINARY-NEXT:    %d = graph.sub %s, %x : (tensor<4x1x3xf32>, tensor<4x1x3xf32>) -> tensor<4x1x3xf32>
# BINARY-NEXT:    %k = graph.weight "k" : tensor<f32>
# BINARY-NEXT:    %p = graph.mul %d, %k : (tensor<4x1x3xf32>, tensor<f32>) -> tensor<4x1x3xf32>
# BINARY-NEXT:    %q = graph.div %p, %row : (tensor<4x1x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
# BINARY-NEXT:    func.return %q : tensor<4x5x3xf32>
save(f"{sys.argv[1]}.binary.onnx", [
    helper.make_node("Add", ["x", "b"], ["s"], name="add"),
    helper.make_node("Sub", ["s", "x"], ["d"], name="sub"),
    helper.make_node("Mul", ["d", "k"], ["p"], name="mul"),
    helper.make_node("Div", ["p", "row"], ["q"], name="div"),
], [("x", [4, 1, 3]), ("row", [5, 1])], [("q", None)], [("b", [3]), ("k", [])])

# UNARY-LABEL: func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32>
# UNARY-NEXT:    %r = graph.relu %x : tensor<2x3xf32>
# UNARY-NEXT:    %s = graph.sigmoid %r : tensor<2x3xf32>
# UNARY-NEXT:    %t = graph.tanh %s : tensor<2x3xf32>
# UNARY-NEXT:    func.return %t : tensor<2x3xf32>
save(f"{sys.argv[1]}.unary.onnx", [
    helper.make_node("Relu", ["x"], ["r"], name="relu"),
    helper.make_node("Sigmoid", ["r"], ["s"], name="sigmoid"),
    helper.make_node("Tanh", ["s"], ["t"], name="tanh"),
], [("x", [2, 3])], [("t", None)])
