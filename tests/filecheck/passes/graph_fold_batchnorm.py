# graph-fold-batchnorm: batch normalizations and per-channel mul/add after a convolution
# fold into new convolution weights (named <weight>.folded) when the weight table is known,
# i.e. when tm-opt imports an .onnx file; a .mlir file has no weights and stays as it is.
# RUN: python %s %t
# RUN: tm-opt %t.bn.onnx -p graph-fold-batchnorm | filecheck %s --check-prefix=BN
# RUN: tm-opt %t.affine.onnx -p graph-fold-batchnorm | filecheck %s --check-prefix=AFFINE
# RUN: tm-opt %t.kept.onnx -p graph-fold-batchnorm | filecheck %s --check-prefix=KEPT
# RUN: tm-opt %t.mlir -p graph-fold-batchnorm | filecheck %s --check-prefix=MLIR
# RUN: tm-opt %t.bn.onnx -p lower-to-cuda | filecheck %s --check-prefix=PIPELINE
import os
import sys

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "inputs"))
from onnx_models import save  # noqa: E402

ones = np.ones(8, np.float32)

# Conv + BatchNormalization + Relu: one convolution with new weights, then the Relu.
# BN-LABEL: func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x8x8x8xf32>
# BN-NEXT:    %conv_weight_folded = graph.weight "conv.weight.folded" : tensor<8x3x3x3xf32>
# BN-NEXT:    %conv_bias_folded = graph.weight "conv.bias.folded" : tensor<8xf32>
# BN-NEXT:    %bn = graph.conv %x, %conv_weight_folded, %conv_bias_folded {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}
# BN-NEXT:    %y = graph.relu %bn
# BN-NEXT:    func.return %y
# The pipeline (with fusion): one kernel, the convolution with the Relu in its epilogue.
# PIPELINE-COUNT-1: tmgpu.kernel
# PIPELINE-SAME:    tm.fused = "epilogue: relu"
# PIPELINE-NOT:     tmgpu.kernel
# PIPELINE:         tmgpu.weight "conv.weight.folded"
save(f"{sys.argv[1]}.bn.onnx", [
    helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                     ["bn"]),
    helper.make_node("Relu", ["bn"], ["y"]),
], [("x", [1, 3, 8, 8])], [("y", None)],
    [("conv.weight", [8, 3, 3, 3]), ("conv.bias", [8]), ("bn.scale", ones), ("bn.bias", [8]),
     ("bn.mean", [8]), ("bn.var", ones)])

# A BatchNormalization already decomposed: Mul by (1, C, 1, 1), Add of (C, 1, 1), on a
# convolution without bias: the chain folds at once, and the bias is new.
# AFFINE-LABEL: func.func @main
# AFFINE-NEXT:    %w_folded = graph.weight "w.folded" : tensor<8x3x1x1xf32>
# AFFINE-NEXT:    %w_folded_bias = graph.weight "w.folded_bias" : tensor<8xf32>
# AFFINE-NEXT:    %y = graph.conv %x, %w_folded, %w_folded_bias
# AFFINE-NEXT:    func.return %y
save(f"{sys.argv[1]}.affine.onnx", [
    helper.make_node("Conv", ["x", "w"], ["c"]),
    helper.make_node("Mul", ["c", "s"], ["m"]),
    helper.make_node("Add", ["t", "m"], ["y"]),
], [("x", [1, 3, 8, 8])], [("y", None)],
    [("w", [8, 3, 1, 1]), ("s", np.ones((1, 8, 1, 1), np.float32)),
     ("t", np.ones((8, 1, 1), np.float32))])

# Not folded: a convolution whose result has another use, a batch normalization whose
# scale is an input, and an Add that is not per channel. A weight shared by two
# convolutions gets a folded copy for the one that folds; the other keeps it.
# (The statistics give a zero shift: no bias is added.)
# KEPT-LABEL: func.func @main
# KEPT-NEXT:    %w = graph.weight "w" : tensor<8x3x1x1xf32>
# KEPT-NEXT:    %c1 = graph.conv %x, %w {
# KEPT:         %b1 = graph.batch_norm %c1,
# KEPT-NEXT:    %c2 = graph.conv %x, %w {
# KEPT-NEXT:    %b2 = graph.batch_norm %c2, %scale,
# KEPT-NEXT:    %c3 = graph.conv %x, %w {
# KEPT-NEXT:    %pixel = graph.weight "pixel"
# KEPT-NEXT:    %a3 = graph.add %c3, %pixel
# KEPT-NEXT:    %w_folded = graph.weight "w.folded" : tensor<8x3x1x1xf32>
# KEPT-NEXT:    %b4 = graph.conv %x, %w_folded {
# KEPT-NOT:     graph.batch_norm
# KEPT:         func.return %c1, %b1, %b2, %a3, %b4
bn = ["bn.scale", "bn.bias", "bn.mean", "bn.var"]
save(f"{sys.argv[1]}.kept.onnx", [
    helper.make_node("Conv", ["x", "w"], ["c1"]),
    helper.make_node("BatchNormalization", ["c1", *bn], ["b1"]),
    helper.make_node("Conv", ["x", "w"], ["c2"]),
    helper.make_node("BatchNormalization", ["c2", "scale", *bn[1:]], ["b2"]),
    helper.make_node("Conv", ["x", "w"], ["c3"]),
    helper.make_node("Add", ["c3", "pixel"], ["a3"]),
    helper.make_node("Conv", ["x", "w"], ["c4"]),
    helper.make_node("BatchNormalization", ["c4", *bn], ["b4"]),
], [("x", [1, 3, 8, 8]), ("scale", [8])],
    [("c1", None), ("b1", None), ("b2", None), ("a3", None), ("b4", None)],
    [("w", [8, 3, 1, 1]), ("pixel", [8, 8]), ("bn.scale", ones), ("bn.bias", [8]),
     ("bn.mean", [8]), ("bn.var", ones)])

# MLIR-LABEL: func.func @main
# MLIR-NEXT:    %w = graph.weight "w" : tensor<8x3x1x1xf32>
# MLIR-NEXT:    %s = graph.weight "s" : tensor<1x8x1x1xf32>
# MLIR-NEXT:    %c = graph.conv %x, %w
# MLIR-NEXT:    %y = graph.mul %c, %s
with open(f"{sys.argv[1]}.mlir", "w") as f:
    f.write("""
func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %w = graph.weight "w" : tensor<8x3x1x1xf32>
  %s = graph.weight "s" : tensor<1x8x1x1xf32>
  %c = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<8x3x1x1xf32>) -> tensor<1x8x8x8xf32>
  %y = graph.mul %c, %s : (tensor<1x8x8x8xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x8x8xf32>
  func.return %y : tensor<1x8x8x8xf32>
}
""")
