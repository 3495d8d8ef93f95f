// RUN: tm-opt %s -p 'convert-graph-to-tm{matmul="stages=3"}' | filecheck %s
// RUN: tm-opt %s -p 'graph-partition,convert-graph-to-tm{matmul="stages=3"}' | filecheck %s --check-prefix=GATHER
//
// The SIMT matmul template's cp.async pipeline (sm_80+; the default target is sm_90):
// 2048 x 2048 x 64 on the template's rule default (the `matmul` option keeps it where the
// latency model would choose): the 128 x 128 tile in 3 stages of block_k 16. A (2048 x 64, rows
// along k) is copied 4 bytes at a time into its k-major tile, transposing; B (64 x 2048,
// rows along n) 16 bytes at a time. The register path: matmul_simt.mlir.

func.func @mm(%a: tensor<2048x64xf32>, %b: tensor<64x2048xf32>) -> tensor<2048x2048xf32> {
  %c = graph.matmul %a, %b : (tensor<2048x64xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  func.return %c : tensor<2048x2048xf32>
}

// CHECK-LABEL: tm.kernel @matmul_0
// CHECK-SAME:    grid(256) block(256)
// CHECK-SAME:    block_k = 16 : i64
// CHECK-SAME:    stages = 3 : i64, split_k = 1 : i64, copy_a = "cp4", copy_b = "cp16"

// Three shared buffers; A's rows padded by 4 floats (the transposing stores of a warp,
// 8 k x 4 rows, hit 32 banks); no prefetch registers.
// CHECK:         %a_smem = tm.alloc shared layout(row_major(3, 16, 128, pad=4)) : memref<3x16x128xf32>
// CHECK-NEXT:    %b_smem = tm.alloc shared : memref<3x16x128xf32>
// CHECK-NEXT:    %a_frag = tm.alloc register : memref<2x8xf32>
// CHECK-NEXT:    %b_frag = tm.alloc register : memref<2x8xf32>
// CHECK-NEXT:    %acc = tm.alloc register : memref<8x8xf32>

// Prologue: k-tiles 0 and 1 in flight, one commit each (a warp copies 8 k of 4 rows of A,
// a row of 32 chunks of B) ...
// CHECK:           tm.for_task (%s0, %s1) in spatial(32, 8) on %tid {
// CHECK-NEXT:        tm.for_task (%r0, %r1) in repeat(4, 2) {
// CHECK:               tm.cp_async bytes(4) %a_smem[%{{[0-9]+}}, %t_k, %t_outer], %A[%g_outer, %t_k]
// CHECK:           tm.for_task (%s0_1, %s1_1) in spatial(8, 32) on %tid {
// CHECK:               tm.cp_async bytes(16) %b_smem[%{{[0-9]+}}, %t_k_1, %t_outer_1], %B[%t_k_1, %g_outer_1]
// CHECK:           tm.cp_async_commit
// CHECK:           tm.cp_async bytes(4) %a_smem
// CHECK:           tm.cp_async bytes(16) %b_smem
// CHECK:           tm.cp_async_commit
// ... then tile 0 has landed, the block meets, and slice 0 goes into fragments.
// CHECK-NEXT:      tm.cp_async_wait pending(1)
// CHECK-NEXT:      tm.barrier
// CHECK:           tm.store {{.*}}, %a_frag[
// CHECK:           tm.store {{.*}}, %b_frag[

// k-step kt: tile kt+2 is issued into the buffer tile kt-1 used, and committed (an empty
// group past the last tile) ...
// CHECK:           scf.for %kt =
// CHECK:             %stage = arith.remui %kt
// CHECK:             %issue_kt = arith.addi %kt
// CHECK:             %has_issue = arith.cmpi ult, %issue_kt
// CHECK-NEXT:        scf.if %has_issue {
// CHECK:               %issue_stage = arith.remui %issue_kt
// CHECK-NOT:         tm.barrier
// CHECK:                   tm.cp_async bytes(4) %a_smem[%issue_stage,
// CHECK-NOT:         tm.barrier
// CHECK:                   tm.cp_async bytes(16) %b_smem[%issue_stage,
// CHECK-NOT:         tm.barrier
// CHECK:             tm.cp_async_commit
// ... the unrolled slices read the next slice's fragments while multiplying this one,
// without a barrier ...
// CHECK:             scf.for %kk =
// CHECK-NOT:         tm.barrier
// CHECK:               tm.load %a_smem[%stage, %next_kk,
// CHECK-NOT:         tm.barrier
// CHECK:               tm.load %b_smem[%stage, %next_kk,
// CHECK-NOT:         tm.barrier
// CHECK:             } {tm.unroll}
// ... and unless this is the last step, tile kt+1 lands (this thread's copies), the one
// barrier of the step (everybody's copies; tile kt read), and its first slice is read.
// CHECK:             %has_next = arith.cmpi ult, %next_kt
// CHECK-NEXT:        scf.if %has_next {
// CHECK-NEXT:          tm.cp_async_wait pending(1)
// CHECK-NEXT:          tm.barrier
// CHECK:               %next_stage = arith.remui %next_kt
// CHECK-NOT:         tm.barrier
// CHECK:               tm.load %a_smem[%next_stage,
// CHECK-NOT:         tm.barrier
// CHECK:             {{^ {12}\}$}}
// CHECK-NEXT:        tm.for_task (%i_2, %j_2) in repeat(8, 8) {
// CHECK-NOT:         tm.barrier
// CHECK:           {{^ {10}\}$}}
// The epilogue stores the accumulators.
// CHECK-NEXT:      tm.for_task (%oi_3, %oj_3) in repeat(2, 2) {
// CHECK:               tm.store %sum, %C[%row, %col]

// With a prologue fused into A (a relu before the matmul: graph-partition), A is gathered:
// loaded with tm.load into registers where the copies are issued, stored into its buffer
// after the step's arithmetic.

func.func @relu_mm(%a: tensor<2048x64xf32>, %b: tensor<64x2048xf32>) -> tensor<2048x2048xf32> {
  %r = graph.relu %a : tensor<2048x64xf32>
  %c = graph.matmul %r, %b : (tensor<2048x64xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  func.return %c : tensor<2048x2048xf32>
}

// GATHER-LABEL: tm.kernel @matmul_1
// GATHER-SAME:    copy_a = "gather", copy_b = "cp16"
// GATHER-SAME:    tm.fused = "prologue: relu"
// GATHER:           %a_ldg = tm.alloc register : memref<8xf32>
// GATHER:           scf.for %kt =
// GATHER:             scf.if %has_issue {
// GATHER:                 tm.load %a[
// GATHER:                 tm.store {{.*}}, %a_ldg[
// GATHER:                 tm.cp_async bytes(16) %b_smem[%issue_stage,
// GATHER:             tm.cp_async_commit
// GATHER:             scf.for %kk =
// GATHER:             } {tm.unroll}
// GATHER-NEXT:        scf.if %has_issue {
// GATHER:                 tm.load %a_ldg[
// GATHER-NEXT:            tm.store {{.*}}, %a_smem[%issue_stage_1,
