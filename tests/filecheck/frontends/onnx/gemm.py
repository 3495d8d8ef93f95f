# Gemm: an MLP (transB with bias), and transA/alpha/beta without C (beta is then dropped).
# RUN: python %s %t
# RUN: tm-opt %t.mlp.onnx | filecheck %s --check-prefix=MLP
# RUN: tm-opt %t.trans_a.onnx | filecheck %s --check-prefix=TRANSA
# RUN: tm-opt %t.bias.onnx | filecheck %s --check-prefix=BIAS
import os
import sys

from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402

# MLP:       builtin.module attributes {graph.source = "{{.*}}.mlp.onnx"} {
# MLP-LABEL: func.func @main(%x: tensor<8x784xf32>) -> tensor<8x10xf32>
# MLP-SAME:    attributes {tm.inputs = ["x"], tm.outputs = ["y"]}
# MLP-NEXT:    %fc1_weight = graph.weight "fc1.weight" : tensor<128x784xf32>
# MLP-NEXT:    %fc1_bias = graph.weight "fc1.bias" : tensor<128xf32>
# MLP-NEXT:    %h = graph.matmul %x, %fc1_weight, %fc1_bias {transpose_rhs} : (tensor<8x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<8x128xf32>
# MLP-NEXT:    %a = graph.relu %h : tensor<8x128xf32>
# MLP-NEXT:    %fc2_weight = graph.weight "fc2.weight" : tensor<10x128xf32>
# MLP-NEXT:    %fc2_bias = graph.weight "fc2.bias" : tensor<10xf32>
# MLP-NEXT:    %y = graph.matmul %a, %fc2_weight, %fc2_bias {transpose_rhs} : (tensor<8x128xf32>, tensor<10x128xf32>, tensor<10xf32>) -> tensor<8x10xf32>
# MLP-NEXT:    func.return %y : tensor<8x10xf32>
save(f"{sys.argv[1]}.mlp.onnx", [
    helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], name="fc1", transB=1),
    helper.make_node("Relu", ["h"], ["a"], name="relu"),
    helper.make_node("Gemm", ["a", "fc2.weight", "fc2.bias"], ["y"], name="fc2", transB=1),
], [("x", [8, 784])], [("y", [8, 10])],
    [("fc1.weight", [128, 784]), ("fc1.bias", [128]), ("fc2.weight", [10, 128]),
     ("fc2.bias", [10])])

# TRANSA-LABEL: func.func @main(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32>
# TRANSA-NEXT:    %y = graph.matmul %a, %b {transpose_lhs, alpha = 2.000000e+00 : f32} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
# TRANSA-NEXT:    func.return %y : tensor<3x5xf32>
save(f"{sys.argv[1]}.trans_a.onnx", [
    helper.make_node("Gemm", ["a", "b"], ["y"], name="g", transA=1, alpha=2.0, beta=3.0),
], [("a", [4, 3]), ("b", [4, 5])], [("y", None)])

# BIAS-LABEL: func.func @main(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32>
# BIAS-NEXT:    %c = graph.weight "c" : tensor<3x1xf32>
# BIAS-NEXT:    %y = graph.matmul %a, %b, %c {alpha = 5.000000e-01 : f32, beta = 2.500000e-01 : f32} : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
# BIAS-NEXT:    func.return %y : tensor<3x5xf32>
save(f"{sys.argv[1]}.bias.onnx", [
    helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="g", alpha=0.5, beta=0.25),
], [("a", [3, 4]), ("b", [4, 5])], [("y", None)], [("c", [3, 1])])
