// RUN: tm-opt %s --split-input-file --verify-diagnostics | filecheck %s
//
// The verifier's side of 64-bit indexing and grid limits: a launch within CUDA's grid
// limit (2^31 - 1 blocks; convert-tm-to-gpu makes bigger kernels grid-stride), and
// index_bits 32 or 64. (--verify-diagnostics checks the expected errors and prints the
// modules that have none.)

tmgpu.kernel @k(%x: memref<4xf32>) block(4) {
  tmgpu.barrier
}
func.func @launch_grid_too_large(%x: memref<4xf32>) {
  // expected-error@+1 {{grid(2147483648) exceeds CUDA's limit of 2147483647 blocks}}
  tmgpu.launch @k(%x) grid(2147483648) block(4) : memref<4xf32>
  func.return
}

// -----

// expected-error@+1 {{kernel @odd_width: index_bits must be 32 or 64, got 16}}
tmgpu.kernel @odd_width(%x: memref<4xf32>) block(4) index_bits(16) {
  tmgpu.barrier
}

// -----

// The largest grid is fine, and index_bits(64) with tmgpu.grid_dim round-trip.
// CHECK-NOT:  tmgpu.kernel @k
// CHECK-NOT:  tmgpu.kernel @odd_width
// CHECK:      tmgpu.kernel @wide(%x: memref<4xf32>) block(4) index_bits(64) {
// CHECK-NEXT:   %n = tmgpu.grid_dim x
// CHECK:      tmgpu.launch @wide(%x) grid(2147483647) block(4)
tmgpu.kernel @wide(%x: memref<4xf32>) block(4) index_bits(64) {
  %n = tmgpu.grid_dim x
}
func.func @largest_grid(%x: memref<4xf32>) {
  tmgpu.launch @wide(%x) grid(2147483647) block(4) : memref<4xf32>
  func.return
}
