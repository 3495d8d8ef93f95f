// RUN: tm-opt %s --split-input-file -p convert-graph-to-tm | filecheck %s
//
// A `schedule` attribute pins the template parameters of a tunable op: the kernel is built
// with them (parameters left out keep the template's rule default for the op's problem, not
// the latency model's choice: a pin means the same whatever the model's constants).

// The rule default for 32 x 32 x 8 (sm_90) is block_warps 1x1, lanes 4x8, block_k 16 in 3
// stages (16 x 32 tiles); the pin asks for lanes 8x4 and block_k 32: 32 x 16 tiles, a grid
// of 1 x 2 blocks, still 3 stages.
// CHECK-LABEL: tm.kernel @matmul_0(%A: memref<32x8xf32>, %B: memref<8x32xf32>, %C: memref<32x32xf32>) grid(2) block(32)
// CHECK-SAME:    tm.params = {M = 32 : i64, N = 32 : i64, K = 8 : i64, block_m = 32 : i64, block_n = 16 : i64, block_k = 32 : i64, threads = 32 : i64, thread_m = 4 : i64, thread_n = 4 : i64, stages = 3 : i64, split_k = 1 : i64, copy_a = "cp4", copy_b = "cp16", block_warps = "1x1", warp_outer = "1x1", lanes = "8x4", thread_inner = "4x4"}
// CHECK:         %a_smem = tm.alloc shared layout(row_major(3, 32, 32, pad=4)) : memref<3x32x32xf32>
func.func @pinned(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>) -> tensor<32x32xf32> {
  %c = graph.matmul %a, %b {schedule = {lanes = array<i64: 8, 4>, block_k = 32}} : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  func.return %c : tensor<32x32xf32>
}

// -----

// Two matmuls of one shape, one pinned: two kernels (a pin is part of the op's structure).
// CHECK-LABEL: tm.kernel @matmul_0(
// CHECK-NOT:     lanes = "8x4"
// CHECK-LABEL: tm.kernel @matmul_1(
// CHECK-SAME:    block_warps = "1x2", warp_outer = "1x1", lanes = "8x4"
// CHECK-LABEL: func.func @two
// CHECK:         tm.launch @matmul_0
// CHECK:         tm.launch @matmul_1
func.func @two(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xf32>) {
  %c = graph.matmul %a, %b : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  %d = graph.matmul %a, %b {schedule = {block_warps = array<i64: 1, 2>, lanes = array<i64: 8, 4>}} : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  func.return %c, %d : tensor<32x32xf32>, tensor<32x32xf32>
}

// -----

// In a fusion group the anchor carries the schedule.
// CHECK-LABEL: tm.kernel @matmul_0(
// CHECK-SAME:    block_k = 32 : i64
// CHECK-SAME:    tm.fused = "epilogue: relu"
func.func @fused(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>) -> tensor<32x32xf32> {
  %r = graph.fused -> tensor<32x32xf32> {
    %c = graph.matmul %a, %b {schedule = {block_k = 32}} : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
    %r_1 = graph.relu %c : tensor<32x32xf32>
    graph.yield %r_1 : tensor<32x32xf32>
  }
  func.return %r : tensor<32x32xf32>
}

// -----

// An implicit-GEMM convolution takes the matmul template's parameters (on its GEMM:
// M = 8 channels, N = 100 pixels, K = 72 taps).
// CHECK-LABEL: tm.kernel @conv_0(
// CHECK-SAME:    tm.template = "conv2d_implicit_gemm"
// CHECK-SAME:    block_k = 32 : i64
// CHECK-SAME:    stages = 2 : i64
// CHECK-SAME:    block_warps = "1x2", warp_outer = "1x1", lanes = "8x4"
func.func @conv(%x: tensor<1x8x10x10xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<1x8x10x10xf32> {
  %c = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, schedule = {block_warps = array<i64: 1, 2>, lanes = array<i64: 8, 4>, warp_outer = array<i64: 1, 1>, block_k = 32, stages = 2}} : (tensor<1x8x10x10xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x10x10xf32>
  func.return %c : tensor<1x8x10x10xf32>
}

// -----

// On f16/bf16 operands (sm_80+) a pin names the tensor-core template's parameters.
// CHECK-LABEL: tm.kernel @matmul_0(%A: memref<2x64x32xbf16>, %B: memref<48x32xbf16>, %C: memref<2x64x48xf32>)
// CHECK-SAME:    tm.template = "matmul_tc"
// CHECK-SAME:    block_m = 64 : i64, block_n = 64 : i64, block_k = 16 : i64, warps = "2x2", stages = 4 : i64, {{.*}}dtype = "bf16"
func.func @pinned(%x: tensor<2x64x32xbf16>, %w: tensor<48x32xbf16>) -> tensor<2x64x48xf32> {
  %y = graph.matmul %x, %w {transpose_rhs, schedule = {block_k = 16, stages = 4}} : (tensor<2x64x32xbf16>, tensor<48x32xbf16>) -> tensor<2x64x48xf32>
  func.return %y : tensor<2x64x48xf32>
}

// -----

// A matmul of at most 16 rows (a batch of 2 x 1 rows folds into 2) takes the small-M
// template: a pin names its parameters (B stored N x K: nk, a warp per column here).
// CHECK-LABEL: tm.kernel @matmul_0(%A: memref<2x1x256xf32>, %B: memref<64x256xf32>, %C: memref<2x1x64xf32>) grid(16) block(128)
// CHECK-SAME:    tm.template = "matmul_gemv"
// CHECK-SAME:    M = 2 : i64, N = 64 : i64, K = 256 : i64, layout = "nk", block_m = 2 : i64, block_n = 4 : i64, block_k = 256 : i64, threads = 128 : i64, warps = 4 : i64, vector = 4 : i64, unroll = 2 : i64, k_slices = 1 : i64, k_steps = 1 : i64
func.func @pinned_small_m(%x: tensor<2x1x256xf32>, %w: tensor<64x256xf32>) -> tensor<2x1x64xf32> {
  %y = graph.matmul %x, %w {transpose_rhs, schedule = {warps = 4, block_n = 4, unroll = 2}} : (tensor<2x1x256xf32>, tensor<64x256xf32>) -> tensor<2x1x64xf32>
  func.return %y : tensor<2x1x64xf32>
}
