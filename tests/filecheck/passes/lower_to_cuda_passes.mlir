// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' --print-between-passes 2>&1 | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda --time-passes -o %t.mlir 2>&1 | filecheck %s --check-prefix=TIME
// RUN: filecheck %s --input-file %t.mlir --check-prefix=OUT
//
// tm-opt runs lower-to-cuda's inner passes as passes of its own pipeline: the IR is
// printed after each of them, and each is timed. {fusion=false} leaves out graph-merge-matmuls,
// graph-fuse-attention and graph-partition.

// CHECK:      IR after graph-canonicalize:
// CHECK:      graph.matmul
// CHECK:      IR after graph-fold-batchnorm:
// CHECK-NOT:  IR after graph-fuse-attention:
// CHECK-NOT:  IR after graph-partition:
// CHECK:      IR after convert-graph-to-tm:
// CHECK:      tm.kernel @matmul_0
// CHECK:      tm.for_task
// CHECK:      IR after tm-lower-mappings:
// CHECK-NOT:  tm.for_task
// CHECK:      IR after convert-tm-to-gpu:
// CHECK:      tmgpu.kernel @matmul_0
// CHECK:      IR after arith-simplify:
// CHECK-NOT:  IR after
// CHECK:      tmgpu.launch @relu_1

// TIME:      Pass graph-canonicalize took
// TIME-NEXT: Pass graph-fold-batchnorm took
// TIME-NEXT: Pass graph-merge-matmuls took
// TIME-NEXT: Pass graph-fuse-attention took
// TIME-NEXT: Pass graph-partition took
// TIME-NEXT: Pass convert-graph-to-tm took
// TIME-NEXT: Pass tm-lower-mappings took
// TIME-NEXT: Pass convert-tm-to-gpu took
// TIME-NEXT: Pass arith-simplify took
// TIME-NEXT: Pass cse took
// The timings and the IR between passes go to stderr, never into the output:
// OUT: builtin.module
// OUT-NOT: took

func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>) -> tensor<4x6xf32> attributes {tm.inputs = ["x", "w"], tm.outputs = ["y"]} {
  %h = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %y = graph.relu %h : tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}
