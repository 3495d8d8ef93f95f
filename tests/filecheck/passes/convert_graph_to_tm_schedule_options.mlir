// RUN: tm-opt %s -p 'convert-graph-to-tm{matmul="lanes=8x4 block_k=16" conv="block_warps=1x2" gemv="warps=1 unroll=4"}' | filecheck %s
// RUN: tm-opt %s -p 'lower-to-cuda{matmul="lanes=8x4,block_k=16" conv="block_warps=1x2"}' -t cuda | filecheck %s --check-prefix=CUDA
// RUN: not tm-opt %s -p 'convert-graph-to-tm{matmul="block_k=12"}' 2>&1 | filecheck %s --check-prefix=CHOICE
// RUN: not tm-opt %s -p 'lower-to-cuda{matmul="blok_k=16"}' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not tm-opt %s -p 'convert-graph-to-tm{conv="block_k:16"}' 2>&1 | filecheck %s --check-prefix=WORD
// RUN: not tm-opt %s -p 'convert-graph-to-tm{matmul="block_warps=4x2 warp_outer=2x2"}' 2>&1 | filecheck %s --check-prefix=CONSTRAINT
// RUN: not tm-opt %s -p 'convert-graph-to-tm{gemv="lanes=4x8"}' 2>&1 | filecheck %s --check-prefix=GEMV
//
// The `matmul`, `conv` and `gemv` options change the templates' default parameters; a
// parameter left out keeps its default for each op's problem, and a pinned schedule wins.

// CHECK-LABEL: tm.kernel @matmul_0(
// CHECK-SAME:    block_k = 16 : i64
// CHECK-SAME:    block_warps = "1x1", warp_outer = "1x1", lanes = "8x4"
// CHECK-LABEL: tm.kernel @matmul_1(
// CHECK-SAME:    block_k = 32 : i64
// CHECK-SAME:    block_warps = "1x2", warp_outer = "1x1", lanes = "4x8"
// CHECK-LABEL: tm.kernel @conv_2(
// CHECK-SAME:    block_warps = "1x2"
// One row: the small-M template, with the gemv option's warps and unroll.
// CHECK-LABEL: tm.kernel @matmul_3(
// CHECK-SAME:    tm.template = "matmul_gemv"
// CHECK-SAME:    threads = 32 : i64, warps = 1 : i64, vector = 4 : i64, unroll = 4 : i64
//
// CUDA: // Kernel matmul_0: schedule template 'matmul_simt' (M=32, N=32, K=8, block_m=32, block_n=16, block_k=16, threads=32, thread_m=4, thread_n=4, stages=3, split_k=1, copy_a=cp4, copy_b=cp16, block_warps=1x1, warp_outer=1x1, lanes=8x4, thread_inner=4x4)
// CUDA: // Kernel matmul_1: schedule template 'matmul_simt' (M=32, N=32, K=8, block_m=16, block_n=64, block_k=32, threads=64,
// CUDA: // Kernel conv_2: schedule template 'conv2d_implicit_gemm' ({{.*}}block_warps=1x2,
//
// CHOICE: tm-opt: error: {{.*}}convert-graph-to-tm: option 'matmul': parameter 'block_k' = 12 is outside the matmul_simt space (choices: 8, 16, 32, 64)
// NAME: tm-opt: error: {{.*}}convert-graph-to-tm: option 'matmul': unknown parameter 'blok_k' (did you mean 'block_k'?
// WORD: tm-opt: error: {{.*}}convert-graph-to-tm: option 'conv': 'block_k:16' is not name=value (e.g. block_k=16 or block_warps=2x2)
// GEMV: tm-opt: error: {{.*}}convert-graph-to-tm: option 'gemv': unknown parameter 'lanes' (parameters of matmul_gemv: warps, vector, unroll, block_n)
//
// Constraints depend on the problem: checked per op, the error names the op.
// CONSTRAINT: tm-opt: error: {{.*}}convert_graph_to_tm_schedule_options.mlir:[[# @LINE + 3]]:3: convert-graph-to-tm: 'graph.matmul': option 'matmul': block_warps=4x2 warp_outer=2x2 breaks the constraint 'tile fits the problem' of matmul_simt for this problem

func.func @options(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>, %x: tensor<1x8x10x10xf32>, %w: tensor<8x8x3x3xf32>, %v: tensor<1x64xf32>, %u: tensor<64x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xf32>, tensor<1x8x10x10xf32>, tensor<1x32xf32>) {
  %c = graph.matmul %a, %b : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  %d = graph.matmul %a, %b {schedule = {block_warps = array<i64: 1, 2>, lanes = array<i64: 4, 8>, block_k = 32}} : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x10x10xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x10x10xf32>
  %e = graph.matmul %v, %u : (tensor<1x64xf32>, tensor<64x32xf32>) -> tensor<1x32xf32>
  func.return %c, %d, %y, %e : tensor<32x32xf32>, tensor<32x32xf32>, tensor<1x8x10x10xf32>, tensor<1x32xf32>
}
