// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// Each case marks the op that must fail with an expected-error comment (`@+1`: on the next
// line; its text in double braces, a substring of the message): tm-opt --verify-diagnostics
// checks that every error is expected on its line and every expectation met (docs/testing.md).
// Errors the parser reports are in invalid_syntax.mlir.

// expected-error@+1 {{kernel @grid_zero: grid must be >= 1}}
tm.kernel @grid_zero(%x: memref<4xf32>) grid(0) block(4) {
}

// -----

// expected-error@+1 {{kernel @block_too_large: block must be in [1, 1024], got 2048}}
tm.kernel @block_too_large(%x: memref<4xf32>) grid(1) block(2048) {
}

// -----

// expected-error@+1 {{kernel @block_zero: block must be in [1, 1024], got 0}}
tm.kernel @block_zero(%x: memref<4xf32>) grid(1) block(0) {
}

// -----

// expected-error@+1 {{kernel @dynamic_arg argument must have a static shape, got memref<?xf32>}}
tm.kernel @dynamic_arg(%x: memref<?xf32>) grid(1) block(4) {
}

// -----

// expected-error@+1 {{kernel @tensor_arg argument must be a memref, got tensor<4xf32>}}
tm.kernel @tensor_arg(%x: tensor<4xf32>) grid(1) block(4) {
}

// -----

func.func @thread_id_outside_kernel() {
  // expected-error@+1 {{'tm.thread_id' must be inside a tm.kernel}}
  %t = tm.thread_id
  func.return
}

// -----

func.func @block_id_outside_kernel() {
  // expected-error@+1 {{'tm.block_id' must be inside a tm.kernel}}
  %b = tm.block_id
  func.return
}

// -----

tm.kernel @for_task_rank_mismatch(%x: memref<4x4xf32>) grid(1) block(32) {
  %t = tm.thread_id
  // expected-error@+1 {{mapping 'spatial(4, 8)' has rank 2 but the body has 1 task indices}}
  tm.for_task (%i) in spatial(4, 8) on %t {
  }
}

// -----

tm.kernel @for_task_missing_worker(%x: memref<4x4xf32>) grid(1) block(32) {
  // expected-error@+1 {{mapping 'spatial(4, 8) * repeat(2, 2)' has 32 workers: give a worker id with 'on %w'}}
  tm.for_task (%i, %j) in spatial(4, 8) * repeat(2, 2) {
  }
}

// -----

func.func @shared_alloc_on_host() {
  // expected-error@+1 {{a shared buffer cannot be allocated outside a tm.kernel}}
  %s = tm.alloc shared : memref<4xf32>
  func.return
}

// -----

func.func @register_alloc_on_host() {
  // expected-error@+1 {{a register buffer cannot be allocated outside a tm.kernel}}
  %r = tm.alloc register : memref<4xf32>
  func.return
}

// -----

tm.kernel @global_alloc_in_kernel() grid(1) block(32) {
  // expected-error@+1 {{a global buffer cannot be allocated inside a tm.kernel}}
  %g = tm.alloc global : memref<4xf32>
}

// -----

tm.kernel @dynamic_alloc() grid(1) block(32) {
  // expected-error@+1 {{shared buffer must have a static shape, got memref<?xf32>}}
  %s = tm.alloc shared : memref<?xf32>
}

// -----

func.func @barrier_outside_kernel() {
  // expected-error@+1 {{'tm.barrier' must be inside a tm.kernel}}
  tm.barrier
  func.return
}

// -----

tm.kernel @load_too_few_indices(%x: memref<4x4xf32>) grid(1) block(4) {
  %t = tm.thread_id
  // expected-error@+1 {{expected 2 indices for memref<4x4xf32>, got 1}}
  %v = tm.load %x[%t] : memref<4x4xf32>
}

// -----

tm.kernel @store_too_many_indices(%x: memref<4x4xf32>) grid(1) block(4) {
  %t = tm.thread_id
  %c = arith.constant 1.0 : f32
  // expected-error@+1 {{expected 2 indices for memref<4x4xf32>, got 3}}
  tm.store %c, %x[%t, %t, %t] : memref<4x4xf32>
}

// -----

tm.kernel @guard_dim_out_of_range(%x: memref<4x4xf32>) grid(1) block(4) {
  %t = tm.thread_id
  // expected-error@+1 {{guard dimensions [2] must be distinct and in [0, 2)}}
  %v = tm.load %x[%t, %t] guard [2] : memref<4x4xf32>
}

// -----

tm.kernel @guard_dim_negative(%x: memref<4x4xf32>) grid(1) block(4) {
  %t = tm.thread_id
  // expected-error@+1 {{guard dimensions [-1] must be distinct and in [0, 2)}}
  %v = tm.load %x[%t, %t] guard [-1] : memref<4x4xf32>
}

// -----

tm.kernel @guard_dim_repeated(%x: memref<4x4xf32>) grid(1) block(4) {
  %t = tm.thread_id
  %c = arith.constant 1.0 : f32
  // expected-error@+1 {{guard dimensions [0, 0] must be distinct and in [0, 2)}}
  tm.store %c, %x[%t, %t] guard [0, 0] : memref<4x4xf32>
}

// -----

func.func @launch_missing_kernel(%x: memref<4xf32>) {
  // expected-error@+1 {{'missing' is not a tm.kernel in this module}}
  tm.launch @missing(%x) : memref<4xf32>
  func.return
}

// -----

func.func @not_a_kernel(%x: memref<4xf32>) {
  func.return
}
func.func @launch_of_function(%x: memref<4xf32>) {
  // expected-error@+1 {{'not_a_kernel' is not a tm.kernel in this module}}
  tm.launch @not_a_kernel(%x) : memref<4xf32>
  func.return
}

// -----

tm.kernel @k(%x: memref<4xf32>) grid(1) block(4) {
}
func.func @launch_argument_types(%x: memref<8xf32>) {
  // expected-error@+1 {{launch of @k: argument types (memref<8xf32>) do not match the kernel's (memref<4xf32>)}}
  tm.launch @k(%x) : memref<8xf32>
  func.return
}

// -----

tm.kernel @k(%x: memref<4xf32>, %y: memref<4xf32>) grid(1) block(4) {
}
func.func @launch_argument_count(%x: memref<4xf32>) {
  // expected-error@+1 {{launch of @k: argument types (memref<4xf32>) do not match the kernel's (memref<4xf32>, memref<4xf32>)}}
  tm.launch @k(%x) : memref<4xf32>
  func.return
}

// -----

tm.kernel @more_workers_than_threads(%x: memref<32xf32>) grid(1) block(16) {
  %t = tm.thread_id
  // expected-error@+1 {{mapping 'spatial(32)' needs 32 workers but the kernel has only 16 threads}}
  tm.for_task (%i) in spatial(32) on %t {
  }
}

// -----

tm.kernel @more_workers_than_blocks(%x: memref<32xf32>) grid(2) block(16) {
  %b = tm.block_id
  // expected-error@+1 {{mapping 'spatial(4)' needs 4 workers but the kernel has only 2 blocks}}
  tm.for_task (%i) in spatial(4) on %b {
  }
}

// -----

// The range of a computed worker id comes from tmlir.ir.ranges: tid / 8 is below 4.
tm.kernel @more_workers_than_warps(%x: memref<32xf32>) grid(1) block(32) {
  %t = tm.thread_id
  %c8 = arith.constant 8 : index
  %w = arith.divui %t, %c8 : index
  // expected-error@+1 {{mapping 'spatial(8)' needs 8 workers but the worker id is below 4}}
  tm.for_task (%i) in spatial(8) on %w {
  }
}

// -----

// A tm.for_task runs on the device.
func.func @for_task_outside_kernel() {
  // expected-error@+1 {{'tm.for_task' must be inside a tm.kernel}}
  tm.for_task (%i) in repeat(4) {
  }
  func.return
}

// -----

tm.kernel @layout_shape_mismatch() grid(1) block(32) {
  // expected-error@+1 {{layout 'column_major(64, 4)' has shape 64x4 but the buffer is memref<64x8xf32>}}
  %a = tm.alloc shared layout(column_major(64, 4)) : memref<64x8xf32>
}

// -----

tm.kernel @layout_rank_mismatch() grid(1) block(32) {
  // expected-error@+1 {{layout 'row_major(2, 2) * row_major(4, 8)' has shape 8x16 but the buffer is memref<128xf32>}}
  %r = tm.alloc register layout(row_major(2, 2) * row_major(4, 8)) : memref<128xf32>
}

// -----

func.func @layout_on_global() {
  // expected-error@+1 {{a global buffer cannot have a data layout (only shared and register)}}
  %g = tm.alloc global layout(row_major(4, 4)) : memref<4x4xf32>
  func.return
}

// -----

tm.kernel @shuffle_width_not_pow2(%x: memref<32xf32>) grid(1) block(32) {
  %t = tm.thread_id
  %v = tm.load %x[%t] : memref<32xf32>
  // expected-error@+1 {{shuffle width must be a power of two in [1, 32], got 12}}
  %s = tm.shuffle down %v, 1 width(12) : f32
}

// -----

tm.kernel @shuffle_width_too_large(%x: memref<32xf32>) grid(1) block(32) {
  %t = tm.thread_id
  %v = tm.load %x[%t] : memref<32xf32>
  // expected-error@+1 {{shuffle width must be a power of two in [1, 32], got 64}}
  %s = tm.shuffle xor %v, 1 width(64) : f32
}

// -----

tm.kernel @shuffle_offset_past_warp(%x: memref<32xf32>) grid(1) block(32) {
  %t = tm.thread_id
  %v = tm.load %x[%t] : memref<32xf32>
  // expected-error@+1 {{shuffle offset must be in [0, 32) (the lanes of a segment), got 32}}
  %s = tm.shuffle xor %v, 32 : f32
}

// -----

tm.kernel @shuffle_offset_past_segment(%x: memref<32xf32>) grid(1) block(32) {
  %t = tm.thread_id
  %v = tm.load %x[%t] : memref<32xf32>
  // expected-error@+1 {{shuffle offset must be in [0, 8) (the lanes of a segment), got 8}}
  %s = tm.shuffle down %v, 8 width(8) : f32
}

// -----

tm.kernel @shuffle_negative_offset(%x: memref<32xf32>) grid(1) block(32) {
  %t = tm.thread_id
  %v = tm.load %x[%t] : memref<32xf32>
  // expected-error@+1 {{shuffle offset must be in [0, 32) (the lanes of a segment), got -1}}
  %s = tm.shuffle up %v, -1 : f32
}

// -----

tm.kernel @shuffle_of_bool(%x: memref<32xi1>) grid(1) block(32) {
  %t = tm.thread_id
  %v = tm.load %x[%t] : memref<32xi1>
  // expected-error@+1 {{can only shuffle f32, i32, i64 or index values, got i1}}
  %s = tm.shuffle xor %v, 1 : i1
}

// -----

tm.kernel @shuffle_result_type(%x: memref<32xf32>) grid(1) block(32) {
  %t = tm.thread_id
  %v = tm.load %x[%t] : memref<32xf32>
  // expected-error@+1 {{result type must be the shuffled value's type}}
  %s = "tm.shuffle"(%v) <{mode = "xor", offset = #builtin.int<1>, width = #builtin.int<32>}> : (f32) -> i32
}

// -----

tm.kernel @shuffle_unknown_mode(%x: memref<32xf32>) grid(1) block(32) {
  %t = tm.thread_id
  %v = tm.load %x[%t] : memref<32xf32>
  // expected-error@+1 {{unknown shuffle mode 'bfly', expected one of xor, down, up, idx}}
  %s = "tm.shuffle"(%v) <{mode = "bfly", offset = #builtin.int<1>, width = #builtin.int<32>}> : (f32) -> f32
}

// -----

func.func @shuffle_outside_kernel(%v: f32) {
  // expected-error@+1 {{'tm.shuffle' must be inside a tm.kernel}}
  %s = tm.shuffle xor %v, 1 : f32
  func.return
}

// -----

tm.kernel @vector_width(%x: memref<8x16xf32>) grid(1) block(8) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{'tm.load_vector': a vector of f32 has 2 or 4 elements, got 8}}
  %v:8 = tm.load_vector x8 %x[%c0, %c0] : memref<8x16xf32>
}

// -----

tm.kernel @vector_element(%x: memref<8x16xi32>) grid(1) block(8) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{'tm.load_vector': vector loads read f32, f16 or bf16 elements, got i32}}
  %v:4 = tm.load_vector x4 %x[%c0, %c0] : memref<8x16xi32>
}

// -----

tm.kernel @vector_half_width(%x: memref<8x16xf16>) grid(1) block(8) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{'tm.load_vector': a vector of f16 has 4 or 8 elements, got 2}}
  %v:2 = tm.load_vector x2 %x[%c0, %c0] : memref<8x16xf16>
}

// -----

tm.kernel @vector_of_shared(%x: memref<8x16xf32>) grid(1) block(8) {
  %c0 = arith.constant 0 : index
  %s = tm.alloc shared : memref<8x16xf32>
  // expected-error@+1 {{'tm.load_vector': the buffer must be global (an argument of the tm.kernel)}}
  %v:4 = tm.load_vector x4 %s[%c0, %c0] : memref<8x16xf32>
}

// -----

tm.kernel @vector_guard_last(%x: memref<8x16xf32>) grid(1) block(8) {
  %tid = tm.thread_id
  // expected-error@+1 {{guard dimensions [1] must be distinct and in [0, 1) (the last dimension cannot be guarded}}
  %v:4 = tm.load_vector x4 %x[%tid, %tid] guard [1] : memref<8x16xf32>
}

// -----

tm.kernel @vector_rows(%x: memref<8x10xf32>) grid(1) block(8) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{rows of 10 elements are not whole vectors of 4: rows after the first would not be aligned}}
  %v:4 = tm.load_vector x4 %x[%c0, %c0] : memref<8x10xf32>
}

// -----

tm.kernel @vector_constant_index(%x: memref<1x10xf32>) grid(1) block(8) {
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  // expected-error@+1 {{the last index 6 must be a multiple of the width 4 with its vector inside the row of 10}}
  %v:4 = tm.load_vector x4 %x[%c0, %c6] : memref<1x10xf32>
}

// -----

tm.kernel @vector_indices(%x: memref<8x16xf32>) grid(1) block(8) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{'tm.load_vector': expected 2 indices for memref<8x16xf32>, got 1}}
  %v:4 = tm.load_vector x4 %x[%c0] : memref<8x16xf32>
}
