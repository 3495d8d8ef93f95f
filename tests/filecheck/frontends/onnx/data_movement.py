# Data-movement ops: their constant int64 inputs (shape, axes, starts, pads, indices, sizes)
# become properties or the result type, normalized (non-negative axes and indices, one
# start and step per dim, full pads); Squeeze/Unsqueeze/Flatten/Reshape are all
# graph.reshape; Dropout and an identity Transpose import as no op; a Resize's sizes become
# scales, sizes / input sizes in f32 as onnxruntime computes them.
# RUN: python %s %t && tm-opt %t.ops.onnx | filecheck %s
# RUN: not tm-opt %t.shape.onnx 2>&1 | filecheck %s --check-prefix=SHAPE
# RUN: not tm-opt %t.indices.onnx 2>&1 | filecheck %s --check-prefix=INDICES
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402

# CHECK-LABEL: func.func @main(%x: tensor<2x3x4xf32>, %img: tensor<1x1x2x3xf32>)
# CHECK-NEXT:    %r = graph.reshape %x : tensor<2x3x4xf32> -> tensor<4x6xf32>
# CHECK-NEXT:    %u = graph.reshape %r : tensor<4x6xf32> -> tensor<1x4x6x1xf32>
# CHECK-NEXT:    %q = graph.reshape %u : tensor<1x4x6x1xf32> -> tensor<4x6xf32>
# CHECK-NEXT:    %f = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
# CHECK-NEXT:    %t = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
# CHECK-NEXT:    %c = graph.concat %x, %x {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
# CHECK-NEXT:    %a, %b = graph.split %c {axis = 2 : i64} : (tensor<2x3x8xf32>) -> (tensor<2x3x3xf32>, tensor<2x3x5xf32>)
# CHECK-NEXT:    %s = graph.slice %x {starts = array<i64: 0, 2, 0>, steps = array<i64: 1, -1, 3>} : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
# CHECK-NEXT:    %g = graph.gather %x {axis = 1 : i64, indices = array<i64: 2, 0>} : tensor<2x3x4xf32> -> tensor<2x2x4xf32>
# CHECK-NEXT:    %e = graph.expand %x : tensor<2x3x4xf32> -> tensor<5x2x3x4xf32>
# CHECK-NEXT:    %tl = graph.tile %x : tensor<2x3x4xf32> -> tensor<2x6x4xf32>
# CHECK-NEXT:    %p = graph.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 2>, value = 5.000000e-01 : f32} : tensor<2x3x4xf32> -> tensor<2x3x7xf32>
# CHECK-NEXT:    %z = graph.resize %img {mode = "linear", coordinate_transformation_mode = "half_pixel", scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 1.33333337>} : tensor<1x1x2x3xf32> -> tensor<1x1x4x4xf32>
# CHECK-NEXT:    func.return %q, %f, %x, %t, %a, %b, %s, %g, %e, %tl, %p, %z, %x :
# CHECK-NOT:     graph.weight
i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
constants = {
    "shape": i64(4, -1), "axes": i64(0, -1), "starts": i64(-1, 0), "ends": i64(-4, 100),
    "sl_axes": i64(1, 2), "steps": i64(-1, 3), "split": i64(3, 5), "idx": i64(-1, 0),
    "eshape": i64(5, 1, 1, 1), "reps": i64(1, 2, 1), "pads": i64(1, 2), "pad_axes": i64(-1),
    "value": np.array(0.5, np.float32), "sizes": i64(4, 4),
}
nodes = [
    helper.make_node("Reshape", ["x", "shape"], ["r"]),
    helper.make_node("Unsqueeze", ["r", "axes"], ["u"]),
    helper.make_node("Squeeze", ["u", "axes"], ["q"]),
    helper.make_node("Flatten", ["x"], ["f"], axis=-1),
    helper.make_node("Dropout", ["x"], ["d"]),
    helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
    helper.make_node("Transpose", ["x"], ["same"], perm=[0, 1, 2]),
    helper.make_node("Concat", ["x", "same"], ["c"], axis=-1),
    helper.make_node("Split", ["c", "split"], ["a", "b"], axis=2),
    helper.make_node("Slice", ["x", "starts", "ends", "sl_axes", "steps"], ["s"]),
    helper.make_node("Gather", ["x", "idx"], ["g"], axis=1),
    helper.make_node("Expand", ["x", "eshape"], ["e"]),
    helper.make_node("Tile", ["x", "reps"], ["tl"]),
    helper.make_node("Pad", ["x", "pads", "value", "pad_axes"], ["p"]),
    helper.make_node("Resize", ["img", "", "", "sizes"], ["z"], mode="linear", axes=[2, 3]),
]
outputs = ["q", "f", "d", "t", "a", "b", "s", "g", "e", "tl", "p", "z", "same"]
graph = helper.make_graph(
    nodes, "test",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
     helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 1, 2, 3])],
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
    [numpy_helper.from_array(v, n) for n, v in constants.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
model.ir_version = 10
onnx.save(model, f"{sys.argv[1]}.ops.onnx")

# A constant input that is a model input: here a Resize's scales (InferenceSession
# compiles such a model per value fed; tm-opt has no values).
# SHAPE: tm-opt: error: node 'up' (Resize): input 'scales' ('s') is a model input, whose value must be known when the model is compiled (InferenceSession compiles the model for each value it is fed)
save(f"{sys.argv[1]}.shape.onnx",
     [helper.make_node("Resize", ["x", "", "s"], ["y"], name="up")],
     [("x", [1, 1, 2, 2]), ("s", [4])], [("y", None)])

# Gather indices must be integers.
# INDICES: tm-opt: error: node 'gather' (Gather): input 'i' is FLOAT, but Gather takes int64, int32 there
model = helper.make_model(helper.make_graph(
    [helper.make_node("Gather", ["x", "i"], ["y"], name="gather")], "test",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 2]),
     helper.make_tensor_value_info("i", TensorProto.FLOAT, [3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
), opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 10
onnx.save(model, f"{sys.argv[1]}.indices.onnx")
