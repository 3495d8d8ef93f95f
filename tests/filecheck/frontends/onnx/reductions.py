# Softmax before and since opset 13, reductions with axes as an attribute and as a constant
# input, global pooling as a reduction, LayerNormalization with its statistics, and pooling
# with auto_pad resolved into explicit pads; then the one-line errors.
# RUN: python %s %t
# RUN: tm-opt %t.softmax.onnx | filecheck %s --check-prefix=SOFTMAX
# RUN: tm-opt %t.softmax11.onnx | filecheck %s --check-prefix=SOFTMAX11
# RUN: tm-opt %t.reduce.onnx | filecheck %s --check-prefix=REDUCE
# RUN: tm-opt %t.layernorm.onnx | filecheck %s --check-prefix=LAYERNORM
# RUN: tm-opt %t.pool.onnx | filecheck %s --check-prefix=POOL
# RUN: not tm-opt %t.axes.onnx 2>&1 | filecheck %s --check-prefix=AXES
# RUN: tm-opt %t.indices.onnx | filecheck %s --check-prefix=INDICES
import os
import sys

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402

# SOFTMAX-LABEL: func.func @main(%x: tensor<2x10x7x7xf32>) -> tensor<2x10x7x7xf32>
# SOFTMAX-NEXT:    %p = graph.softmax %x {axes = array<i64: 1>} : tensor<2x10x7x7xf32>
# SOFTMAX-NEXT:    %l = graph.log_softmax %p {axes = array<i64: 3>} : tensor<2x10x7x7xf32>
# SOFTMAX-NEXT:    func.return %l
save(f"{sys.argv[1]}.softmax.onnx", [
    helper.make_node("Softmax", ["x"], ["p"], axis=1),
    helper.make_node("LogSoftmax", ["p"], ["l"]),
], [("x", [2, 10, 7, 7])], [("l", None)], opset=13)

# Before opset 13 the input is flattened to 2-D at the axis (default 1).
# SOFTMAX11-LABEL: func.func @main(%x: tensor<2x10x7x7xf32>) -> tensor<2x10x7x7xf32>
# SOFTMAX11-NEXT:    %p = graph.softmax %x {axes = array<i64: 1, 2, 3>} : tensor<2x10x7x7xf32>
# SOFTMAX11-NEXT:    %l = graph.log_softmax %p {axes = array<i64: 2, 3>} : tensor<2x10x7x7xf32>
save(f"{sys.argv[1]}.softmax11.onnx", [
    helper.make_node("Softmax", ["x"], ["p"]),
    helper.make_node("LogSoftmax", ["p"], ["l"], axis=-2),
], [("x", [2, 10, 7, 7])], [("l", None)], opset=11)

# The axes input (an int64 initializer) is read, not turned into a weight.
# REDUCE-LABEL: func.func @main(%x: tensor<2x3x4x5xf32>) -> (tensor<2x4x5xf32>, tensor<1x3x1x1xf32>, tensor<2x3x1x1xf32>, tensor<f32>)
# REDUCE-NEXT:    %s = graph.reduce_sum %x {axes = array<i64: 1>} : tensor<2x3x4x5xf32> -> tensor<2x4x5xf32>
# REDUCE-NEXT:    %m = graph.reduce_max %x {axes = array<i64: 0, 2, 3>, keepdims} : tensor<2x3x4x5xf32> -> tensor<1x3x1x1xf32>
# REDUCE-NEXT:    %g = graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims} : tensor<2x3x4x5xf32> -> tensor<2x3x1x1xf32>
# REDUCE-NEXT:    %n = graph.reduce_min %x {axes = array<i64: 0, 1, 2, 3>} : tensor<2x3x4x5xf32> -> tensor<f32>
# REDUCE-NOT:     graph.weight
save(f"{sys.argv[1]}.reduce.onnx", [
    helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0),
    helper.make_node("ReduceMax", ["x", "three_axes"], ["m"]),
    helper.make_node("GlobalAveragePool", ["x"], ["g"]),
    helper.make_node("ReduceMin", ["x"], ["n"], keepdims=0),
], [("x", [2, 3, 4, 5])], [("s", None), ("m", None), ("g", None), ("n", None)],
     [("axes", np.array([1], np.int64)), ("three_axes", np.array([-1, 0, 2], np.int64))],
     opset=18)

# The statistics are results when used; InvStdDev is a graph output here.
# LAYERNORM-LABEL: func.func @main(%x: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x1xf32>)
# LAYERNORM:         %y, %mean, %inv_std_dev = graph.layer_norm %x, %gamma, %beta {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
# LAYERNORM-NEXT:    func.return %y, %inv_std_dev
save(f"{sys.argv[1]}.layernorm.onnx", [
    helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["y", "mean", "inv_std_dev"]),
], [("x", [2, 8, 64])], [("y", None), ("inv_std_dev", None)], [("gamma", [64]), ("beta", [64])])

# POOL-LABEL: func.func @main(%x: tensor<1x8x15x15xf32>) -> tensor<1x8x4x4xf32>
# POOL-NEXT:    %m = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x8x15x15xf32> -> tensor<1x8x8x8xf32>
# POOL-NEXT:    %a = graph.average_pool %m {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode, count_include_pad} : tensor<1x8x8x8xf32> -> tensor<1x8x4x4xf32>
save(f"{sys.argv[1]}.pool.onnx", [
    helper.make_node("MaxPool", ["x"], ["m"], kernel_shape=[3, 3], strides=[2, 2],
                     auto_pad="SAME_UPPER"),
    helper.make_node("AveragePool", ["m"], ["a"], kernel_shape=[3, 3], strides=[2, 2],
                     ceil_mode=1, count_include_pad=1),
], [("x", [1, 8, 15, 15])], [("a", None)], opset=19)

# AXES: tm-opt: error: node 'mean' (ReduceMean): attribute 'axes' is not allowed since opset 18, where the axes are an input
save(f"{sys.argv[1]}.axes.onnx", [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], name="mean")],
     [("x", [2, 3])], [("y", None)], opset=18)

# MaxPool's Indices, used: graph.max_pool_with_indices (storage_order = 1: column_major).
# INDICES:      %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, column_major} : tensor<1x1x4x4xf32> -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xi64>)
# INDICES-NEXT: %f = graph.cast %i
save(f"{sys.argv[1]}.indices.onnx",
     [helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], storage_order=1, name="pool"),
      helper.make_node("Cast", ["i"], ["f"], to=1)],
     [("x", [1, 1, 4, 4])], [("y", None), ("f", None)])
