# graph-merge-matmuls: matmuls of one value by constant weights of one K become one wider
# matmul (the weights side by side, new entries <weight>.merged of the weight table) and a
# graph.slice per old result; a .mlir file has no weights and stays as it is.
# RUN: python %s %t
# RUN: tm-opt %t.qkv.onnx -p graph-canonicalize,graph-merge-matmuls | filecheck %s --check-prefix=QKV
# RUN: tm-opt %t.kept.onnx -p graph-canonicalize,graph-merge-matmuls | filecheck %s --check-prefix=KEPT
# RUN: tm-opt %t.mlir -p graph-merge-matmuls | filecheck %s --check-prefix=MLIR
# RUN: tm-opt %t.qkv.onnx -p lower-to-cuda | filecheck %s --check-prefix=PIPELINE
# RUN: tm-opt %t.qkv.onnx -p 'lower-to-cuda{fusion=false}' | filecheck %s --check-prefix=UNFUSED
import os
import sys

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "inputs"))
from onnx_models import save  # noqa: E402

# A transformer's projections: three Gemms of x (weights N x K, transB, with biases) and a
# MatMul of x by a K x N weight. The Gemms merge into one 96-column matmul with the biases
# side by side; the MatMul (no bias, B not transposed) is another kind and stays.
# QKV-LABEL: func.func @main(%x: tensor<8x16xf32>)
# QKV:         %wq_merged = graph.weight "wq.merged" : tensor<96x16xf32>
# QKV-NEXT:    %bq_merged = graph.weight "bq.merged" : tensor<96xf32>
# QKV-NEXT:    %q_merged = graph.matmul %x, %wq_merged, %bq_merged {transpose_rhs} : (tensor<8x16xf32>, tensor<96x16xf32>, tensor<96xf32>) -> tensor<8x96xf32>
# QKV-NEXT:    %q = graph.slice %q_merged {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<8x96xf32> -> tensor<8x32xf32>
# QKV-NEXT:    %k = graph.slice %q_merged {starts = array<i64: 0, 32>, steps = array<i64: 1, 1>} : tensor<8x96xf32> -> tensor<8x32xf32>
# QKV-NEXT:    %v = graph.slice %q_merged {starts = array<i64: 0, 64>, steps = array<i64: 1, 1>} : tensor<8x96xf32> -> tensor<8x32xf32>
# QKV-NOT:     graph.weight "wk"
# QKV:         graph.matmul %x, %wo :
# QKV:         func.return
# With fusion each slice goes into the prologue of what reads it: one kernel computes the
# three projections, and no kernel is a copy.
# PIPELINE-COUNT-1: tm.template = "matmul_gemv", tm.params = {M = 8 : i64, N = 96 : i64, K = 16 : i64
# PIPELINE-NOT:     tm.template = "data_movement"
# PIPELINE:         func.func @main
# Without fusion nothing merges (each slice would be a copy kernel of its own): four matmul
# launches (of two kernels: the three Gemms share one).
# UNFUSED-LABEL:    func.func @main
# UNFUSED-COUNT-4:  tmgpu.launch @matmul_
# UNFUSED-NOT:      tmgpu.launch @matmul_
rng = np.random.default_rng(0)


def w(*shape):
    return rng.standard_normal(shape).astype(np.float32)


save(f"{sys.argv[1]}.qkv.onnx", [
    helper.make_node("Gemm", ["x", "wq", "bq"], ["q"], transB=1),
    helper.make_node("Gemm", ["x", "wk", "bk"], ["k"], transB=1),
    helper.make_node("Gemm", ["x", "wv", "bv"], ["v"], transB=1),
    helper.make_node("MatMul", ["x", "wo"], ["o"]),
    helper.make_node("Mul", ["q", "k"], ["qk"]),
    helper.make_node("Add", ["qk", "v"], ["s"]),
    helper.make_node("Add", ["s", "o"], ["y"]),
], [("x", [8, 16])], [("y", None)],
    [("wq", w(32, 16)), ("bq", w(32)), ("wk", w(32, 16)), ("bk", w(32)), ("wv", w(32, 16)),
     ("bv", w(32)), ("wo", w(16, 32))])

# Not merged: a matmul whose result is an output (its slice would be a copy), a matmul by
# a value that is not a weight, and a matmul of another value: each is alone of its kind.
# KEPT-LABEL: func.func @main
# KEPT-NOT:     graph.slice
# KEPT-NOT:     merged
# KEPT:         func.return
save(f"{sys.argv[1]}.kept.onnx", [
    helper.make_node("MatMul", ["x", "w1"], ["y1"]),
    helper.make_node("MatMul", ["x", "w2"], ["m2"]),
    helper.make_node("Relu", ["m2"], ["y2"]),
    helper.make_node("MatMul", ["z", "w3"], ["m3"]),
    helper.make_node("MatMul", ["x", "b"], ["m4"]),
    helper.make_node("Add", ["m3", "m4"], ["y3"]),
], [("x", [8, 16]), ("z", [8, 12]), ("b", [16, 8])], [("y1", None), ("y2", None), ("y3", None)],
    [("w1", w(16, 8)), ("w2", w(16, 8)), ("w3", w(12, 8))])

# MLIR-LABEL: func.func @main
# MLIR-NEXT:    %w1 = graph.weight "w1"
# MLIR-NEXT:    %w2 = graph.weight "w2"
# MLIR-NEXT:    %a = graph.matmul %x, %w1
# MLIR-NEXT:    %b = graph.matmul %x, %w2
with open(f"{sys.argv[1]}.mlir", "w") as f:
    f.write("""
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %w1 = graph.weight "w1" : tensor<16x4xf32>
  %w2 = graph.weight "w2" : tensor<16x4xf32>
  %a = graph.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %b = graph.matmul %x, %w2 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %y = graph.add %a, %b : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %y : tensor<8x4xf32>
}
""")
