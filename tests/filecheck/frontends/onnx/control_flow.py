# If, Loop and Scan decided when the model is compiled: an If imports its taken branch
# only, a Loop is unrolled (one copy of the body per iteration, the iteration number a
# constant, the scan output stacked with graph.concat), a Scan reads its steps with
# graph.gather; a condition computed from tensor data is a one-line error.
# RUN: python %s %t
# RUN: tm-opt %t.if.onnx | filecheck %s --check-prefix=IF
# RUN: tm-opt %t.loop.onnx | filecheck %s --check-prefix=LOOP
# RUN: tm-opt %t.scan.onnx | filecheck %s --check-prefix=SCAN
# RUN: not tm-opt %t.data.onnx 2>&1 | filecheck %s --check-prefix=DATA
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs"))
from onnx_models import save  # noqa: E402


def graph(nodes, inputs, outputs):
    """A subgraph: inputs and outputs are (name, elem_type, shape) triples."""
    return helper.make_graph(nodes, "sub", [helper.make_tensor_value_info(*i) for i in inputs],
                             [helper.make_tensor_value_info(*o) for o in outputs])


F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
relu = graph([helper.make_node("Relu", ["x"], ["r"])], [], [("r", F, None)])
neg = graph([helper.make_node("Neg", ["x"], ["n"])], [], [("n", F, None)])

# IF-LABEL: func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32>
# IF-NEXT:    %n = graph.neg %x : tensor<2x3xf32>
# IF-NEXT:    func.return %n : tensor<2x3xf32>
save(f"{sys.argv[1]}.if.onnx", [
    helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(False))),
    helper.make_node("If", ["c"], ["y"], then_branch=relu, else_branch=neg),
], [("x", [2, 3])], [("y", None)])

# h = h * x + i, three times; hs stacks every h.
# LOOP-LABEL: func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2x3xf32>)
# LOOP-NEXT:    %p_it0 = graph.mul %x, %x
# LOOP-NEXT:    %fi_it0 = graph.weight "fi.it0" : tensor<f32>
# LOOP-NEXT:    %h_out_it0 = graph.add %p_it0, %fi_it0
# LOOP-NEXT:    %p_it1 = graph.mul %h_out_it0, %x
# LOOP-NEXT:    %fi_it1 = graph.weight "fi.it1" : tensor<f32>
# LOOP-NEXT:    %h_out_it1 = graph.add %p_it1, %fi_it1
# LOOP-NEXT:    %p_it2 = graph.mul %h_out_it1, %x
# LOOP-NEXT:    %fi_it2 = graph.weight "fi.it2" : tensor<f32>
# LOOP-NEXT:    %h_out_it2 = graph.add %p_it2, %fi_it2
# LOOP-NEXT:    %h_out_it0_hs = graph.reshape %h_out_it0 : tensor<2x3xf32> -> tensor<1x2x3xf32>
# LOOP-NEXT:    %h_out_it1_hs = graph.reshape %h_out_it1 : tensor<2x3xf32> -> tensor<1x2x3xf32>
# LOOP-NEXT:    %h_out_it2_hs = graph.reshape %h_out_it2 : tensor<2x3xf32> -> tensor<1x2x3xf32>
# LOOP-NEXT:    %hs = graph.concat %h_out_it0_hs, %h_out_it1_hs, %h_out_it2_hs {axis = 0 : i64}
# LOOP-NEXT:    func.return %h_out_it2, %hs : tensor<2x3xf32>, tensor<3x2x3xf32>
body = graph([helper.make_node("Mul", ["h_in", "x"], ["p"]),
              helper.make_node("Cast", ["i"], ["fi"], to=F),
              helper.make_node("Add", ["p", "fi"], ["h_out"])],
             [("i", I64, []), ("c_in", B, []), ("h_in", F, [2, 3])],
             [("c_in", B, []), ("h_out", F, [2, 3]), ("h_out", F, [2, 3])])
save(f"{sys.argv[1]}.loop.onnx", [helper.make_node("Loop", ["m", "", "x"], ["h", "hs"], body=body)],
     [("x", [2, 3])], [("h", None), ("hs", None)], [("m", np.array(3))])

# A running sum over the rows of x, read backwards.
# SCAN-LABEL: func.func @main(%s0: tensor<3xf32>, %x: tensor<2x3xf32>) -> tensor<3xf32>
# SCAN-NEXT:    %row_it0 = graph.gather %x {axis = 0 : i64, indices = array<i64: 1>}
# SCAN-NEXT:    %s_out_it0 = graph.add %s0, %row_it0
# SCAN-NEXT:    %row_it1 = graph.gather %x {axis = 0 : i64, indices = array<i64: 0>}
# SCAN-NEXT:    %s_out_it1 = graph.add %s_out_it0, %row_it1
# SCAN-NEXT:    func.return %s_out_it1 : tensor<3xf32>
scan_body = graph([helper.make_node("Add", ["s_in", "row"], ["s_out"])],
                  [("s_in", F, [3]), ("row", F, [3])], [("s_out", F, [3])])
save(f"{sys.argv[1]}.scan.onnx", [
    helper.make_node("Scan", ["s0", "x"], ["s"], body=scan_body, num_scan_inputs=1,
                     scan_input_directions=[1]),
], [("s0", [3]), ("x", [2, 3])], [("s", None)])

# DATA: tm-opt: error: node 'branch' (If): input 'cond' ('c') is computed from the model input 'x'
save(f"{sys.argv[1]}.data.onnx", [
    helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
    helper.make_node("Greater", ["s", "zero"], ["c"]),
    helper.make_node("If", ["c"], ["y"], then_branch=relu, else_branch=neg, name="branch"),
], [("x", [2, 3])], [("y", None)], [("zero", np.array(0, np.float32))])
