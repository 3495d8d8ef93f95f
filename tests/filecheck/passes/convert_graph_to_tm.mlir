// RUN: tm-opt %s --split-input-file -p 'convert-graph-to-tm{target-arch=sm_75 matmul="block_k=8" conv="block_k=8"}' | filecheck %s
//
// convert-graph-to-tm: one tm.kernel per graph operator from its schedule template, and a
// host function on memrefs (outputs become trailing arguments) that launches them.

// Gemm with weights, bias and transpose_rhs; M = 100, N = 40, K = 20 are not multiples of
// the 16x32x8 tile the template picks, so the global loads and the store are guarded on
// all three. (sm_75: the register path; the template's own structure, and the cp.async
// pipeline of sm_80+, are pinned in schedules/matmul_simt*.mlir. The `matmul` and `conv`
// options keep the GEMMs on the template's rule default, block_k 8, where the latency
// model's choice would take whatever tile it estimates fastest.)

// CHECK-LABEL: tm.kernel @matmul_0(%A: memref<100x20xf32>, %B: memref<40x20xf32>, %bias: memref<40xf32>, %C: memref<100x40xf32>) grid(14) block(32)
// CHECK-SAME:    attributes {tm.template = "matmul_simt", tm.params = {M = 100 : i64, N = 40 : i64, K = 20 : i64, block_m = 16 : i64, block_n = 32 : i64, block_k = 8 : i64, threads = 32 : i64, thread_m = 4 : i64, thread_n = 4 : i64, stages = 1 : i64, split_k = 1 : i64, copy_a = "ldg", copy_b = "ldg", block_warps = "1x1", warp_outer = "1x1", lanes = "4x8", thread_inner = "4x4"}} {
//
// A is M x K and B is N x K (transpose_rhs): consecutive threads fill both shared tiles
// along k, so their rows are padded by 32 / block_k floats.
// CHECK:         %a_smem = tm.alloc shared layout(row_major(2, 8, 16, pad=4)) : memref<2x8x16xf32>
// CHECK-NEXT:    %b_smem = tm.alloc shared layout(row_major(2, 8, 32, pad=4)) : memref<2x8x32xf32>
// CHECK:         tm.for_task (%batch, %tile_m, %tile_n) in spatial(1, 7, 2) on %bid {
//
// A is guarded on M and K, B on N and K, in the prologue and in the prefetch.
// CHECK:         tm.load %A[%{{[0-9]+}}, %{{[0-9]+}}] guard [0, 1] : memref<100x20xf32>
// CHECK:         tm.load %B[%{{[0-9]+}}, %{{[0-9]+}}] guard [0, 1] : memref<40x20xf32>
// ceil(20 / 8) = 3 k-steps.
// CHECK:         %[[KT:[0-9]+]] = arith.constant 3 : index
// CHECK-NEXT:    %{{[0-9]+}} = arith.constant 1 : index
// CHECK-NEXT:    scf.for %kt = %{{[0-9]+}} to %[[KT]] step
// CHECK:           tm.load %A[%{{[0-9]+}}, %{{[0-9]+}}] guard [0, 1] : memref<100x20xf32>
// CHECK:           tm.load %B[%{{[0-9]+}}, %{{[0-9]+}}] guard [0, 1] : memref<40x20xf32>
//
// Epilogue: add the bias (guarded on N, the dimension it shares with C) and store.
// CHECK:         %sum = tm.load %acc[
// CHECK-NEXT:    %bias_1 = tm.load %bias[%col] guard [0] : memref<40xf32>
// CHECK-NEXT:    %[[OUT:[0-9]+]] = arith.addf %sum, %bias_1 : f32
// CHECK-NEXT:    tm.store %[[OUT]], %C[%row, %col] guard [0, 1] : memref<100x40xf32>
//
// The host names the weights and launches the kernel on the output argument.
// CHECK-LABEL: func.func @gemm(%x: memref<100x20xf32>, %y_out: memref<100x40xf32>) {
// CHECK-NEXT:    %w = tm.weight "fc.weight" : memref<40x20xf32>
// CHECK-NEXT:    %b = tm.weight "fc.bias" : memref<40xf32>
// CHECK-NEXT:    tm.launch @matmul_0(%x, %w, %b, %y_out) : memref<100x20xf32>, memref<40x20xf32>, memref<40xf32>, memref<100x40xf32>
// CHECK-NEXT:    func.return
func.func @gemm(%x: tensor<100x20xf32>) -> tensor<100x40xf32> {
  %w = graph.weight "fc.weight" : tensor<40x20xf32>
  %b = graph.weight "fc.bias" : tensor<40xf32>
  %y = graph.matmul %x, %w, %b {transpose_rhs} : (tensor<100x20xf32>, tensor<40x20xf32>, tensor<40xf32>) -> tensor<100x40xf32>
  func.return %y : tensor<100x40xf32>
}

// -----

// M = N = 64, K = 16 are multiples of the 16x32x8 tile: no guard anywhere. B is K x N,
// so its cooperative load has consecutive threads along N and its shared tile no padding.

// CHECK-LABEL: tm.kernel @matmul_0(%A: memref<64x16xf32>, %B: memref<16x64xf32>, %C: memref<64x64xf32>) grid(8) block(32)
// CHECK-SAME:    block_m = 16 : i64, block_n = 32 : i64
// CHECK-NOT:     guard
// CHECK:         %b_smem = tm.alloc shared : memref<2x8x32xf32>
// CHECK-NOT:     guard
// CHECK:         tm.for_task (%s0_1, %s1_1) in spatial(1, 32) on %tid {
// CHECK-NEXT:      tm.for_task (%r0_1, %r1_1) in repeat(8, 1) {
// CHECK-NOT:     guard
// CHECK:             tm.load %B[%{{[0-9]+}}, %{{[0-9]+}}] : memref<16x64xf32>
// CHECK-NOT:     guard
// CHECK:         tm.store %sum, %C[%row, %col] : memref<64x64xf32>
// CHECK-NOT:     guard
// CHECK-LABEL: func.func @matmul_tile_multiples(%a: memref<64x16xf32>, %b: memref<16x64xf32>, %c_out: memref<64x64xf32>) {
// CHECK-NEXT:    tm.launch @matmul_0(%a, %b, %c_out)
func.func @matmul_tile_multiples(%a: tensor<64x16xf32>, %b: tensor<16x64xf32>) -> tensor<64x64xf32> {
  %c = graph.matmul %a, %b : (tensor<64x16xf32>, tensor<16x64xf32>) -> tensor<64x64xf32>
  func.return %c : tensor<64x64xf32>
}

// -----

// Elementwise ops with broadcasting: one thread per output element. 300 elements do not
// fill 2 blocks of 256, so the output store and the loads indexed by row are guarded on
// dim 0; a broadcast operand reads index 0 of its size-1 dims and, when it does not
// have the row dim, needs no guard.

// CHECK-LABEL: tm.kernel @add_0(%x0: memref<3x100xf32>, %x1: memref<100xf32>, %out: memref<3x100xf32>) grid(2) block(256)
// CHECK-SAME:    attributes {tm.template = "elementwise", tm.params = {block = 256 : i64, expr = "x0 + x1"}} {
// CHECK-NEXT:    %bid = tm.block_id
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    tm.for_task (%blk) in spatial(2) on %bid {
// CHECK-NEXT:      tm.for_task (%lane) in spatial(256) on %tid {
// CHECK-NEXT:        %[[BLOCK:[0-9]+]] = arith.constant 256 : index
// CHECK-NEXT:        %[[BASE:[0-9]+]] = arith.muli %blk, %[[BLOCK]] : index
// CHECK-NEXT:        %idx = arith.addi %[[BASE]], %lane : index
// CHECK-NEXT:        %[[C100:[0-9]+]] = arith.constant 100 : index
// CHECK-NEXT:        %[[ROW:[0-9]+]] = arith.divui %idx, %[[C100]] : index
// CHECK-NEXT:        %[[C100B:[0-9]+]] = arith.constant 100 : index
// CHECK-NEXT:        %[[COL:[0-9]+]] = arith.remui %idx, %[[C100B]] : index
// CHECK-NEXT:        %x = tm.load %x0[%[[ROW]], %[[COL]]] guard [0] : memref<3x100xf32>
// CHECK-NEXT:        %x_1 = tm.load %x1[%[[COL]]] : memref<100xf32>
// CHECK-NEXT:        %[[SUM:[0-9]+]] = arith.addf %x, %x_1 : f32
// CHECK-NEXT:        tm.store %[[SUM]], %out[%[[ROW]], %[[COL]]] guard [0] : memref<3x100xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
//
// CHECK-LABEL: tm.kernel @mul_1(%x0: memref<3x100xf32>, %x1: memref<3x1xf32>, %out: memref<3x100xf32>) grid(2) block(256)
// CHECK-SAME:    expr = "x0 * x1"
// CHECK:         %[[ROW:[0-9]+]] = arith.divui %idx
// CHECK:         %x = tm.load %x0[%[[ROW]], %{{[0-9]+}}] guard [0] : memref<3x100xf32>
// CHECK-NEXT:    %[[C0:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:    %x_1 = tm.load %x1[%[[ROW]], %[[C0]]] guard [0] : memref<3x1xf32>
// CHECK-NEXT:    %{{[0-9]+}} = arith.mulf %x, %x_1 : f32
//
// Intermediates are global buffers; the last op writes the output argument directly.
// CHECK-LABEL: func.func @broadcast(%x: memref<3x100xf32>, %b: memref<100xf32>, %c: memref<3x1xf32>, %z_out: memref<3x100xf32>) {
// CHECK-NEXT:    %y = tm.alloc global : memref<3x100xf32>
// CHECK-NEXT:    tm.launch @add_0(%x, %b, %y) : memref<3x100xf32>, memref<100xf32>, memref<3x100xf32>
// CHECK-NEXT:    tm.launch @mul_1(%y, %c, %z_out) : memref<3x100xf32>, memref<3x1xf32>, memref<3x100xf32>
// CHECK-NEXT:    func.return
func.func @broadcast(%x: tensor<3x100xf32>, %b: tensor<100xf32>, %c: tensor<3x1xf32>) -> tensor<3x100xf32> {
  %y = graph.add %x, %b : (tensor<3x100xf32>, tensor<100xf32>) -> tensor<3x100xf32>
  %z = graph.mul %y, %c : (tensor<3x100xf32>, tensor<3x1xf32>) -> tensor<3x100xf32>
  func.return %z : tensor<3x100xf32>
}

// -----

// 4 x 64 = 256 elements fill exactly one block: no guards.

// CHECK-LABEL: tm.kernel @relu_0(%x0: memref<4x64xf32>, %out: memref<4x64xf32>) grid(1) block(256)
// CHECK-SAME:    expr = "relu(x0)"
// CHECK-NOT:     guard
// CHECK:         %x = tm.load %x0[%{{[0-9]+}}, %{{[0-9]+}}] : memref<4x64xf32>
// CHECK-NOT:     guard
// CHECK:         %[[NEG:[0-9]+]] = arith.cmpf olt, %x, %[[ZERO:[0-9]+]] : f32
// CHECK-NEXT:    %[[R:[0-9]+]] = arith.select %[[NEG]], %[[ZERO]], %x : f32
// CHECK-NEXT:    tm.store %[[R]], %out[%{{[0-9]+}}, %{{[0-9]+}}] : memref<4x64xf32>
// CHECK-NOT:     guard
// CHECK-LABEL: func.func @exact_blocks
func.func @exact_blocks(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %y = graph.relu %x : tensor<4x64xf32>
  func.return %y : tensor<4x64xf32>
}

// -----

// An output that is an input: no kernel writes it, so a copy kernel does, after the
// kernels of the graph ops.

// CHECK-LABEL: tm.kernel @relu_0(%x0: memref<5xf32>, %out: memref<5xf32>)
// CHECK-LABEL: tm.kernel @copy_1(%x0: memref<5xf32>, %out: memref<5xf32>) grid(1) block(32)
// CHECK-SAME:    attributes {tm.template = "elementwise", tm.params = {block = 32 : i64, expr = "x0"}} {
// CHECK:         %x = tm.load %x0[%idx] guard [0] : memref<5xf32>
// CHECK-NEXT:    tm.store %x, %out[%idx] guard [0] : memref<5xf32>
// CHECK-LABEL: func.func @passthrough(%x: memref<5xf32>, %y_out: memref<5xf32>, %x_out: memref<5xf32>) {
// CHECK-NEXT:    tm.launch @relu_0(%x, %y_out) : memref<5xf32>, memref<5xf32>
// CHECK-NEXT:    tm.launch @copy_1(%x, %x_out) : memref<5xf32>, memref<5xf32>
// CHECK-NEXT:    func.return
func.func @passthrough(%x: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>) {
  %y = graph.relu %x : tensor<5xf32>
  func.return %y, %x : tensor<5xf32>, tensor<5xf32>
}
