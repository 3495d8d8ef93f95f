# Integer and bool tensors: int64 token ids and masks as graph inputs, a Gather of run-time
# indices (graph.take), comparisons and logic with i1 results, Where, IsNaN, Cast (a cast to
# the input's own type imports as no op), GatherElements and GatherND, and a Shape that
# constant folding turns into an int64 weight returned as an output.
# RUN: python %s %t && tm-opt %t.logic.onnx | filecheck %s
# RUN: not tm-opt %t.relu.onnx 2>&1 | filecheck %s --check-prefix=DTYPE
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# CHECK-LABEL: func.func @main(%ids: tensor<1x4xi64>, %mask: tensor<1x4xi64>, %x: tensor<1x4x8xf32>) -> (tensor<1x4x8xf32>, tensor<1x4xi1>, tensor<1x4xf32>, tensor<1x2xi1>, tensor<3xi64>)
# CHECK-NEXT:    %table = graph.weight "table" : tensor<16x8xf32>
# CHECK-NEXT:    %e = graph.take %table, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
# CHECK-NEXT:    %m = graph.cast %mask : tensor<1x4xi64> -> tensor<1x4xi1>
# CHECK-NEXT:    %pad = graph.weight "pad" : tensor<i64>
# CHECK-NEXT:    %p = graph.equal %ids, %pad : (tensor<1x4xi64>, tensor<i64>) -> tensor<1x4xi1>
# CHECK-NEXT:    %np = graph.not %p : tensor<1x4xi1>
# CHECK-NEXT:    %keep = graph.and %m, %np : (tensor<1x4xi1>, tensor<1x4xi1>) -> tensor<1x4xi1>
# CHECK-NEXT:    %s = graph.reduce_sum %x {axes = array<i64: 2>} : tensor<1x4x8xf32> -> tensor<1x4xf32>
# CHECK-NEXT:    %nan = graph.is_nan %s : tensor<1x4xf32> -> tensor<1x4xi1>
# CHECK-NEXT:    %zero = graph.weight "zero" : tensor<f32>
# CHECK-NEXT:    %w = graph.where %nan, %zero, %s : (tensor<1x4xi1>, tensor<f32>, tensor<1x4xf32>) -> tensor<1x4xf32>
# CHECK-NEXT:    %idx = graph.weight "idx" : tensor<1x2xi64>
# CHECK-NEXT:    %ge = graph.take_along_axis %keep, %idx {axis = 1 : i64} : (tensor<1x4xi1>, tensor<1x2xi64>) -> tensor<1x2xi1>
# CHECK-NEXT:    %nd_idx = graph.weight "nd_idx" : tensor<1x1x2xi64>
# CHECK-NEXT:    %nd = graph.gather_nd %x, %nd_idx {batch_dims = 0 : i64} : (tensor<1x4x8xf32>, tensor<1x1x2xi64>) -> tensor<1x1x8xf32>
# CHECK-NEXT:    %shape = graph.weight "shape" : tensor<3xi64>
# CHECK-NEXT:    func.return %e, %keep, %w, %ge, %shape :
ids, mask = ("ids", TensorProto.INT64, [1, 4]), ("mask", TensorProto.INT64, [1, 4])
nodes = [
    helper.make_node("Gather", ["table", "ids"], ["e"], axis=0),
    helper.make_node("Cast", ["mask"], ["m"], to=TensorProto.BOOL),
    helper.make_node("Cast", ["ids"], ["same"], to=TensorProto.INT64),
    helper.make_node("Equal", ["same", "pad"], ["p"]),
    helper.make_node("Not", ["p"], ["np"]),
    helper.make_node("And", ["m", "np"], ["keep"]),
    helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0),
    helper.make_node("IsNaN", ["s"], ["nan"]),
    helper.make_node("Where", ["nan", "zero", "s"], ["w"]),
    helper.make_node("GatherElements", ["keep", "idx"], ["ge"], axis=1),
    helper.make_node("GatherND", ["x", "nd_idx"], ["nd"]),
    helper.make_node("Shape", ["x"], ["shape"]),
]
constants = {"table": np.zeros((16, 8), np.float32), "pad": np.array(0), "axes": np.array([2]),
             "zero": np.array(0, np.float32), "idx": np.array([[3, -1]]),
             "nd_idx": np.array([[[0, 2]]])}
graph = helper.make_graph(
    nodes, "logic",
    [helper.make_tensor_value_info(*ids), helper.make_tensor_value_info(*mask),
     helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
    [helper.make_tensor_value_info(n, t, None) for n, t in (
        ("e", TensorProto.FLOAT), ("keep", TensorProto.BOOL), ("w", TensorProto.FLOAT),
        ("ge", TensorProto.BOOL), ("shape", TensorProto.INT64))],
    [numpy_helper.from_array(v, n) for n, v in constants.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
model.ir_version = 10
onnx.save(model, f"{sys.argv[1]}.logic.onnx")

# DTYPE: tm-opt: error: node 'r' (Relu): input 'ids' is INT64, but Relu takes float32, float16, bfloat16, float64 there
graph = helper.make_graph(
    [helper.make_node("Relu", ["ids"], ["y"], name="r")], "relu",
    [helper.make_tensor_value_info(*ids)], [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
model.ir_version = 10
onnx.save(model, f"{sys.argv[1]}.relu.onnx")
