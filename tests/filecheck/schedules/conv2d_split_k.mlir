// RUN: tm-opt %s -p 'convert-graph-to-tm{target-arch=sm_75}' | filecheck %s
//
// Split-K on the SIMT GEMM engine's register path (sm_75: no cp.async), pinned on an
// implicit-GEMM convolution (schedules/conv2d.py; the pipeline: matmul_simt_split_k.mlir).
//
// A 3x3 convolution as the GEMM 32 x 64 x 144 in 16 x 64 tiles (2 of them) on the register
// path, block_k 16, 2 splits of the 9 k-tiles: 4 + 5.
func.func @conv(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32> {
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>,
         group = 1 : i64, schedule = {block_warps = array<i64: 1, 2>, warp_outer = array<i64: 1, 1>,
         lanes = array<i64: 4, 8>, block_k = 16, stages = 1, split_k = 2}}
       : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
  func.return %y : tensor<1x32x8x8xf32>
}

// CHECK-LABEL: tm.kernel @conv_0(%x: memref<1x16x8x8xf32>, %w: memref<32x16x3x3xf32>, %y: memref<1x32x8x8xf32>,
// CHECK-SAME:    %workspace: memref<2x2x16x64xf32>, %counters: memref<2xi32>) grid(4) block(64)
// CHECK-SAME:    stages = 1 : i64, split_k = 2 : i64, copy_a = "ldg", copy_b = "ldg"
// CHECK:         tm.for_task (%group, %tile_m, %tile_n, %split) in spatial(1, 2, 1, 2) on %bid {
// The prologue loads the split's first k-tile into registers; each step prefetches the next
// of its own k-tiles.
// CHECK:           %k_count = arith.subi %k_end, %k_first : index
// CHECK-NEXT:      %{{.*}} = arith.constant 16 : index
// CHECK-NEXT:      %k0 = arith.muli %k_first
// CHECK:           scf.for %kt =
// CHECK-NEXT:        %in_split = arith.cmpi ult, %kt, %k_count : index
// CHECK-NEXT:        scf.if %in_split {
// CHECK:               %has_next = arith.cmpi ult, %next_kt, %k_count : index
// CHECK-NEXT:          scf.if %has_next {
// CHECK-NEXT:            arith.addi %k_first, %next_kt : index
// CHECK:             }{tm.branch_weights = array<i64: 9, 1>}
// CHECK:           %last_block = arith.cmpi eq, %arrived_before
// CHECK:               %part_1 = tm.load_cg %workspace[%s, %tile
// CHECK:             tm.store %{{.*}}, %counters[%tile] : memref<2xi32>
// CHECK:             tm.store %{{.*}}, %y[
// CHECK-LABEL: func.func @conv(
// CHECK-NEXT:    %workspace = tm.alloc global : memref<2x2x16x64xf32>
// CHECK-NEXT:    %counters = tm.alloc global zeroed : memref<2xi32>
