# Add/Sub/Mul/Div/Pow and the variadic Max/Min/Sum/Mean with numpy broadcasting; unary
# ops keep their operand's type and show their ONNX attributes, defaults included, as f32
# properties; Clip's constant bounds become properties, bounds known only at run time a
# graph.max / graph.min.
# RUN: python %s %t
# RUN: tm-opt %t.binary.onnx | filecheck %s --check-prefix=BINARY
# RUN: tm-opt %t.unary.onnx | filecheck %s --check-prefix=UNARY
# RUN: tm-opt %t.activations.onnx | filecheck %s --check-prefix=ACTIVATIONS
# RUN: tm-opt %t.clip.onnx | filecheck %s --check-prefix=CLIP
# RUN: tm-opt %t.variadic.onnx | filecheck %s --check-prefix=VARIADIC
import os
import sys

import numpy as np
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

# ACTIVATIONS-LABEL: func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32>
# ACTIVATIONS-NEXT:    %l = graph.leaky_relu %x {alpha = 1.000000e-02 : f32} : tensor<2x3xf32>
# ACTIVATIONS-NEXT:    %h = graph.hard_sigmoid %l {alpha = 2.000000e-01 : f32, beta = 2.500000e-01 : f32} : tensor<2x3xf32>
# ACTIVATIONS-NEXT:    %g = graph.gelu %h {approximate = "tanh"} : tensor<2x3xf32>
# ACTIVATIONS-NEXT:    %e = graph.gelu %g : tensor<2x3xf32>
# ACTIVATIONS-NEXT:    %s = graph.softplus %e : tensor<2x3xf32>
# ACTIVATIONS-NEXT:    func.return %s : tensor<2x3xf32>
save(f"{sys.argv[1]}.activations.onnx", [
    helper.make_node("LeakyRelu", ["x"], ["l"], name="leaky"),
    helper.make_node("HardSigmoid", ["l"], ["h"], name="hard_sigmoid", beta=0.25),
    helper.make_node("Gelu", ["h"], ["g"], name="gelu_tanh", approximate="tanh"),
    helper.make_node("Gelu", ["g"], ["e"], name="gelu"),
    helper.make_node("Softplus", ["e"], ["s"], name="softplus"),
], [("x", [2, 3])], [("s", None)], opset=20)

# The constant bounds (initializers) are properties, not weights; the run-time upper bound
# %hi is a graph.min after a clip with the constant lower bound.
# CLIP-LABEL: func.func @main(%x: tensor<2x3xf32>, %hi: tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
# CLIP-NEXT:    %relu6 = graph.clip %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<2x3xf32>
# CLIP-NEXT:    %y_lower = graph.clip %x {min = 0.000000e+00 : f32} : tensor<2x3xf32>
# CLIP-NEXT:    %y = graph.min %y_lower, %hi : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
# CLIP-NEXT:    func.return %relu6, %y
save(f"{sys.argv[1]}.clip.onnx", [
    helper.make_node("Clip", ["x", "zero", "six"], ["relu6"], name="relu6"),
    helper.make_node("Clip", ["x", "zero", "hi"], ["y"], name="clip"),
], [("x", [2, 3]), ("hi", [])], [("relu6", None), ("y", None)],
    [("zero", []), ("six", np.array(6.0))])

# VARIADIC-LABEL: func.func @main(%a: tensor<4x1x3xf32>, %b: tensor<5x1xf32>, %c: tensor<3xf32>) -> tensor<4x5x3xf32>
# VARIADIC-NEXT:    %m = graph.max %a, %b, %c : (tensor<4x1x3xf32>, tensor<5x1xf32>, tensor<3xf32>) -> tensor<4x5x3xf32>
# VARIADIC-NEXT:    %p = graph.pow %m, %c : (tensor<4x5x3xf32>, tensor<3xf32>) -> tensor<4x5x3xf32>
# VARIADIC-NEXT:    %s = graph.mean %p, %a : (tensor<4x5x3xf32>, tensor<4x1x3xf32>) -> tensor<4x5x3xf32>
# VARIADIC-NEXT:    func.return %s : tensor<4x5x3xf32>
save(f"{sys.argv[1]}.variadic.onnx", [
    helper.make_node("Max", ["a", "b", "c"], ["m"], name="max"),
    helper.make_node("Pow", ["m", "c"], ["p"], name="pow"),
    helper.make_node("Min", ["p"], ["one"], name="min_of_one"),
    helper.make_node("Mean", ["one", "a"], ["s"], name="mean"),
], [("a", [4, 1, 3]), ("b", [5, 1]), ("c", [3])], [("s", None)])
