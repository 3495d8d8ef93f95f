# Conv, ConvTranspose and BatchNormalization: graph.conv with explicit pads (auto_pad
# resolved), 1-D convolutions, graph.conv_transpose with output_shape resolved,
# graph.batch_norm with its statistics as operands; one-line errors.
# RUN: python %s %t
# RUN: tm-opt %t.conv.onnx | filecheck %s --check-prefix=CONV
# RUN: tm-opt %t.same.onnx | filecheck %s --check-prefix=SAME
# RUN: tm-opt %t.conv1d.onnx | filecheck %s --check-prefix=CONV1D
# RUN: tm-opt %t.bn.onnx | filecheck %s --check-prefix=BN
# RUN: tm-opt %t.convt.onnx | filecheck %s --check-prefix=CONVT
# RUN: not tm-opt %t.conv3d.onnx 2>&1 | filecheck %s --check-prefix=CONV3D
# RUN: not tm-opt %t.kernel_shape.onnx 2>&1 | filecheck %s --check-prefix=KERNEL
# RUN: not tm-opt %t.both_pads.onnx 2>&1 | filecheck %s --check-prefix=BOTHPADS
# RUN: tm-opt %t.training.onnx | filecheck %s --check-prefix=TRAINING
# RUN: not tm-opt %t.bn_outputs.onnx 2>&1 | filecheck %s --check-prefix=OUTPUTS
import os
import sys

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402

# CONV-LABEL: func.func @main(%x: tensor<1x3x7x5xf32>) -> tensor<1x8x4x2xf32>
# CONV-NEXT:    %conv1_weight = graph.weight "conv1.weight" : tensor<8x3x3x3xf32>
# CONV-NEXT:    %conv1_bias = graph.weight "conv1.bias" : tensor<8xf32>
# CONV-NEXT:    %y = graph.conv %x, %conv1_weight, %conv1_bias {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x7x5xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x2xf32>
# CONV-NEXT:    func.return %y : tensor<1x8x4x2xf32>
save(f"{sys.argv[1]}.conv.onnx", [
    helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["y"], name="conv1",
                     kernel_shape=[3, 3], pads=[1, 0, 1, 0], strides=[2, 2]),
], [("x", [1, 3, 7, 5])], [("y", None)], [("conv1.weight", [8, 3, 3, 3]), ("conv1.bias", [8])])

# SAME_UPPER, stride 2 on 5x5 with a 3x3 kernel: out 3x3 needs 2 pad rows, 1 on each side;
# on 6x6 it needs 1, which goes at the end (bottom, right). A depthwise convolution.
# SAME:         %y = graph.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x5x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32>
save(f"{sys.argv[1]}.same.onnx", [
    helper.make_node("Conv", ["x", "w"], ["y"], name="dw", auto_pad="SAME_UPPER",
                     strides=[2, 2], group=4),
], [("x", [1, 4, 5, 6])], [("y", None)], [("w", [4, 1, 3, 3])])

# CONV1D:       %y = graph.conv %x, %w {strides = array<i64: 1>, pads = array<i64: 2, 2>, dilations = array<i64: 2>, group = 1 : i64} : (tensor<2x4x10xf32>, tensor<6x4x3xf32>) -> tensor<2x6x10xf32>
save(f"{sys.argv[1]}.conv1d.onnx", [
    helper.make_node("Conv", ["x", "w"], ["y"], name="c", pads=[2, 2], dilations=[2]),
], [("x", [2, 4, 10])], [("y", None)], [("w", [6, 4, 3])])

# ConvTranspose: output_shape 10x8 where the natural output is 9x7 (strides 3, 2): the
# spec's pads are (0, 0) at the beginning and (-1, -1) at the end, i.e. output_padding 1.
# CONVT:        %y = graph.conv_transpose %x, %w {strides = array<i64: 3, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x10x8xf32>
save(f"{sys.argv[1]}.convt.onnx", [
    helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct", strides=[3, 2],
                     output_shape=[10, 8]),
], [("x", [1, 1, 3, 3])], [("y", None)], [("w", [1, 2, 3, 3])])

# The statistics of a BatchNormalization are operands, here weights; folding them into a
# convolution is graph-fold-batchnorm's job (tests/filecheck/passes/graph_fold_batchnorm.py).
# BN-LABEL: func.func @main(%x: tensor<2x3x4x5xf32>, %scale: tensor<3xf32>) -> tensor<2x3x4x5xf32>
# BN-NEXT:    %bn_bias = graph.weight "bn.bias" : tensor<3xf32>
# BN-NEXT:    %bn_mean = graph.weight "bn.mean" : tensor<3xf32>
# BN-NEXT:    %bn_var = graph.weight "bn.var" : tensor<3xf32>
# BN-NEXT:    %y = graph.batch_norm %x, %scale, %bn_bias, %bn_mean, %bn_var {epsilon = 1.000000e-03 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
save(f"{sys.argv[1]}.bn.onnx", [
    helper.make_node("BatchNormalization", ["x", "scale", "bn.bias", "bn.mean", "bn.var"], ["y"],
                     name="bn", epsilon=1e-3, momentum=0.9),
], [("x", [2, 3, 4, 5]), ("scale", [3])], [("y", None)],
    [("bn.bias", [3]), ("bn.mean", [3]), ("bn.var", np.ones(3, np.float32))])

# CONV3D: tm-opt: error: node 'c3' (Conv): 3-D convolution (input shape [1, 2, 4, 4, 4]) is not supported; only 1-D and 2-D
save(f"{sys.argv[1]}.conv3d.onnx", [helper.make_node("Conv", ["x", "w"], ["y"], name="c3")],
     [("x", [1, 2, 4, 4, 4])], [("y", None)], [("w", [2, 2, 3, 3, 3])])

# KERNEL: tm-opt: error: node 'c' (Conv): kernel_shape [3, 3] does not match the weight's spatial shape [2, 2]
save(f"{sys.argv[1]}.kernel_shape.onnx",
     [helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3])],
     [("x", [1, 2, 4, 4])], [("y", None)], [("w", [2, 2, 2, 2])])

# BOTHPADS: tm-opt: error: node 'c' (Conv): attributes 'pads' and 'auto_pad' (VALID) cannot both be given
save(f"{sys.argv[1]}.both_pads.onnx",
     [helper.make_node("Conv", ["x", "w"], ["y"], name="c", pads=[1, 1, 1, 1], auto_pad="VALID")],
     [("x", [1, 2, 4, 4])], [("y", None)], [("w", [2, 2, 2, 2])])

# Training mode: the batch's mean and variance normalize y; the running statistics mix
# them with the inputs' by the momentum (default 0.9).
# TRAINING:      %y_mean_nc = graph.reduce_mean %x {axes = array<i64: 0, 2>, keepdims} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
# TRAINING:      %y_batch_var = graph.reduce_mean %y_squared {axes = array<i64: 0, 2>} : tensor<2x3x4xf32> -> tensor<3xf32>
# TRAINING:      %y = graph.batch_norm %x, %s, %b, %y_batch_mean, %y_batch_var
# TRAINING:      %rm_kept = graph.mul %m, %rm_momentum
# TRAINING:      %rm = graph.add %rm_kept, %rm_new
# TRAINING:      %rv = graph.add %rv_kept, %rv_new
# TRAINING:      func.return %y, %rm, %rv
save(f"{sys.argv[1]}.training.onnx", [
    helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                     name="bn", training_mode=1),
], [("x", [2, 3, 4])], [("y", None), ("rm", None), ("rv", None)],
    [("s", [3]), ("b", [3]), ("m", [3]), ("v", [3])], opset=15)

# An inference BatchNormalization of opset 7 may name running-statistics outputs; unused
# ones are accepted, a used one (here a model output) is not.
# OUTPUTS: tm-opt: error: node 'bn' (BatchNormalization): output 'saved_mean' is used, but the running and saved statistics are only computed with training_mode = 1
save(f"{sys.argv[1]}.bn_outputs.onnx", [
    helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                     ["y", "mean", "var", "saved_mean"], name="bn"),
], [("x", [2, 3, 4])], [("y", None), ("saved_mean", [3])],
    [("s", [3]), ("b", [3]), ("m", [3]), ("v", [3])], opset=7)
