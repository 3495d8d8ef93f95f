// RUN: tm-opt %s -p 'convert-graph-to-tm{target-arch=sm_75}' | filecheck %s
//
// The structure of the SIMT matmul template's register path, the only one before sm_80
// (2048 x 2048 x 64 picks the 128 x 128 tile: 4 x 2 warps, each spatial(4, 8) lanes *
// repeat(4, 4), warp_outer 2 x 2). The cp.async pipeline: matmul_simt_pipeline.mlir.

func.func @mm(%a: tensor<2048x64xf32>, %b: tensor<64x2048xf32>) -> tensor<2048x2048xf32> {
  %c = graph.matmul %a, %b : (tensor<2048x64xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  func.return %c : tensor<2048x2048xf32>
}

// CHECK-LABEL: tm.kernel @matmul_0
// CHECK-SAME:    grid(256) block(256)
// CHECK-SAME:    stages = 1 : i64, split_k = 1 : i64, copy_a = "ldg", copy_b = "ldg"
// CHECK-SAME:    block_warps = "4x2", warp_outer = "2x2", lanes = "4x8", thread_inner = "4x4"
// CHECK:         %warp = arith.divui %tid
// CHECK:         %lane = arith.remui %tid

// Two-stage shared tiles (A's rows padded by 32 / block_k floats through its layout),
// two-stage register fragments, prefetch registers and the accumulators.
// CHECK-NEXT:    %a_smem = tm.alloc shared layout(row_major(2, 8, 128, pad=4)) : memref<2x8x128xf32>
// CHECK-NEXT:    %b_smem = tm.alloc shared : memref<2x8x128xf32>
// CHECK-NEXT:    %a_frag = tm.alloc register : memref<2x8xf32>
// CHECK-NEXT:    %b_frag = tm.alloc register : memref<2x8xf32>
// CHECK-NEXT:    %a_ldg = tm.alloc register : memref<4xf32>
// CHECK-NEXT:    %b_ldg = tm.alloc register : memref<4xf32>
// CHECK-NEXT:    %acc = tm.alloc register : memref<8x8xf32>

// Blocks, warps and lanes are task mappings.
// CHECK-NEXT:    tm.for_task (%batch, %tile_m, %tile_n) in spatial(1, 16, 16) on %bid {
// CHECK-NEXT:      tm.for_task (%wi, %wj) in spatial(4, 2) on %warp {
// CHECK-NEXT:        tm.for_task (%li, %lj) in spatial(4, 8) on %lane {

// Prologue: k-tile 0 through registers into shared stage 0 with the mapped loads
// (consecutive threads on consecutive addresses), one barrier, fragments of slice 0.
// CHECK:           tm.for_task (%s0, %s1) in spatial(32, 8) on %tid {
// CHECK-NEXT:        tm.for_task (%r0, %r1) in repeat(4, 1) {
// CHECK:               tm.load %A[
// CHECK:           tm.for_task (%s0_1, %s1_1) in spatial(2, 128) on %tid {
// CHECK-NEXT:        tm.for_task (%r0_1, %r1_1) in repeat(4, 1) {
// CHECK:               tm.load %B[
// CHECK:             tm.store {{.*}}, %a_smem[%{{[0-9]+}},
// CHECK:             tm.store {{.*}}, %b_smem[%{{[0-9]+}},
// CHECK:           tm.barrier
// CHECK:           tm.store {{.*}}, %a_frag[
// CHECK:           tm.store {{.*}}, %b_frag[

// The k loop: the next tile's global loads are issued first ...
// CHECK:           scf.for %kt =
// CHECK:             %stage = arith.remui %kt
// CHECK:             %has_next = arith.cmpi ult, %next_kt
// CHECK-NEXT:        scf.if %has_next {
// CHECK:               tm.load %A[
// CHECK:               tm.store {{.*}}, %a_ldg[
// CHECK:               tm.load %B[
// CHECK:               tm.store {{.*}}, %b_ldg[
// CHECK-NOT:         tm.barrier
// ... then block_k - 1 unrolled slices, each reading the next slice's fragments into the
// other register stage while multiplying this one, with no barrier ...
// CHECK:             scf.for %kk =
// CHECK-NOT:         tm.barrier
// CHECK:               tm.load %a_smem[%stage, %next_kk,
// CHECK-NOT:         tm.barrier
// CHECK:               tm.store {{.*}}, %a_frag[%next_slot,
// CHECK-NOT:         tm.barrier
// CHECK:               tm.load %b_smem[%stage, %next_kk,
// CHECK-NOT:         tm.barrier
// CHECK:               tm.store {{.*}}, %b_frag[%next_slot,
// CHECK-NOT:         tm.barrier
// CHECK:               %slot = arith.remui %kk
// CHECK-NOT:         tm.barrier
// CHECK:               tm.for_task (%i_1, %j_1) in repeat(8, 8) {
// CHECK-NEXT:            %a = tm.load %a_frag[%slot, %i_1]
// CHECK-NEXT:            %b = tm.load %b_frag[%slot, %j_1]
// CHECK-NOT:         tm.barrier
// CHECK:             } {tm.unroll}
// ... then, unless this is the last k-step, the prefetched tile goes to the other shared
// stage, the one barrier, and the next tile's first slice into fragments.
// CHECK-NEXT:        scf.if %has_next {
// CHECK:                 %next_stage = arith.remui %next_kt
// CHECK-NOT:         tm.barrier
// CHECK:               tm.store {{.*}}, %a_smem[%next_stage,
// CHECK-NOT:         tm.barrier
// CHECK:               tm.store {{.*}}, %b_smem[%next_stage,
// CHECK:               tm.barrier
// CHECK-NOT:         tm.barrier
// CHECK:               tm.load %a_smem[%next_stage,
// CHECK-NOT:         tm.barrier
// CHECK:             {{^ {12}\}$}}
// The last slice is multiplied on every k-step; the last k-step skips the block above.
// CHECK-NEXT:        tm.for_task (%i_2, %j_2) in repeat(8, 8) {
// CHECK-NOT:         tm.barrier
// CHECK:           {{^ {10}\}$}}

// Epilogue: warp_outer * thread_inner elements per thread, no guards (2048 = 16 * 128).
// CHECK-NEXT:      tm.for_task (%oi_3, %oj_3) in repeat(2, 2) {
// CHECK-NEXT:        tm.for_task (%ii_3, %ij_3) in repeat(4, 4) {
// CHECK-NOT:         tm.barrier
// CHECK:               %sum = tm.load %acc[
// CHECK-NEXT:          tm.store %sum, %C[%row, %col] : memref<2048x2048xf32>
// CHECK-NOT:       tm.barrier
// CHECK-LABEL:  func.func @mm
