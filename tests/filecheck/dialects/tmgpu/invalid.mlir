// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// Each case marks the op that must fail with an expected-error comment (`@+1`: on the next
// line; its text in double braces, a substring of the message): tm-opt --verify-diagnostics
// checks that every error is expected on its line and every expectation met (docs/testing.md).
// Errors the parser reports are in invalid_syntax.mlir.

// expected-error@+1 {{kernel @block_too_large: block must be in [1, 1024], got 2048}}
tmgpu.kernel @block_too_large(%x: memref<4xf32>) block(2048) {
  tmgpu.barrier
}

// -----

// expected-error@+1 {{kernel @block_zero: block must be in [1, 1024], got 0}}
tmgpu.kernel @block_zero(%x: memref<4xf32>) block(0) {
  tmgpu.barrier
}

// -----

// expected-error@+1 {{kernel @dynamic_arg argument must have a static shape, got memref<?xf32>}}
tmgpu.kernel @dynamic_arg(%x: memref<?xf32>) block(4) {
  tmgpu.barrier
}

// -----

// expected-error@+1 {{kernel @scalar_arg argument must be a memref, got f32}}
tmgpu.kernel @scalar_arg(%x: f32) block(4) {
  tmgpu.barrier
}

// -----

func.func @thread_id_outside_kernel() {
  // expected-error@+1 {{'tmgpu.thread_id' must be inside a tmgpu.kernel}}
  %t = tmgpu.thread_id x
  func.return
}

// -----

func.func @block_id_outside_kernel() {
  // expected-error@+1 {{'tmgpu.block_id' must be inside a tmgpu.kernel}}
  %b = tmgpu.block_id y
  func.return
}

// -----

func.func @shared_alloc_on_host() {
  // expected-error@+1 {{'tmgpu.shared_alloc' must be inside a tmgpu.kernel}}
  %s = tmgpu.shared_alloc : memref<4xf32>
  func.return
}

// -----

func.func @local_alloc_on_host() {
  // expected-error@+1 {{'tmgpu.local_alloc' must be inside a tmgpu.kernel}}
  %r = tmgpu.local_alloc : memref<4xf32>
  func.return
}

// -----

tmgpu.kernel @dynamic_shared_alloc() block(4) {
  // expected-error@+1 {{buffer must have a static shape, got memref<?xf32>}}
  %s = tmgpu.shared_alloc : memref<?xf32>
}

// -----

func.func @barrier_outside_kernel() {
  // expected-error@+1 {{'tmgpu.barrier' must be inside a tmgpu.kernel}}
  tmgpu.barrier
  func.return
}

// -----

tmgpu.kernel @device_alloc_in_kernel() block(4) {
  // expected-error@+1 {{'tmgpu.alloc' is a host operation, not allowed in a kernel}}
  %g = tmgpu.alloc : memref<4xf32>
}

// -----

func.func @dynamic_device_alloc() {
  // expected-error@+1 {{device buffer must have a static shape, got memref<?xf32>}}
  %g = tmgpu.alloc : memref<?xf32>
  func.return
}

// -----

func.func @launch_missing_kernel(%x: memref<4xf32>) {
  // expected-error@+1 {{'missing' is not a tmgpu.kernel in this module}}
  tmgpu.launch @missing(%x) grid(1) block(4) : memref<4xf32>
  func.return
}

// -----

tm.kernel @tm_kernel(%x: memref<4xf32>) grid(1) block(4) {
  tm.barrier
}
func.func @launch_of_tm_kernel(%x: memref<4xf32>) {
  // expected-error@+1 {{'tm_kernel' is not a tmgpu.kernel in this module}}
  tmgpu.launch @tm_kernel(%x) grid(1) block(4) : memref<4xf32>
  func.return
}

// -----

tmgpu.kernel @k(%x: memref<4xf32>) block(4) {
  tmgpu.barrier
}
func.func @launch_argument_types(%x: memref<8xf32>) {
  // expected-error@+1 {{launch of @k: argument types (memref<8xf32>) do not match the kernel's (memref<4xf32>)}}
  tmgpu.launch @k(%x) grid(1) block(4) : memref<8xf32>
  func.return
}

// -----

tmgpu.kernel @k(%x: memref<4xf32>) block(4) {
  tmgpu.barrier
}
func.func @launch_block_mismatch(%x: memref<4xf32>) {
  // expected-error@+1 {{launch block(8) differs from the kernel's block(4)}}
  tmgpu.launch @k(%x) grid(1) block(8) : memref<4xf32>
  func.return
}

// -----

tmgpu.kernel @k(%x: memref<4xf32>) block(4) {
  tmgpu.barrier
}
func.func @launch_grid_zero(%x: memref<4xf32>) {
  // expected-error@+1 {{grid must be >= 1}}
  tmgpu.launch @k(%x) grid(0) block(4) : memref<4xf32>
  func.return
}

// -----

func.func @shuffle_outside_kernel(%v: f32) {
  // expected-error@+1 {{'tmgpu.shuffle' must be inside a tmgpu.kernel}}
  %s = tmgpu.shuffle xor %v, 1 : f32
  func.return
}

// -----

tmgpu.kernel @shuffle_width(%x: memref<32xf32>) block(32) {
  %t = tmgpu.thread_id x
  %v = memref.load %x[%t] : memref<32xf32>
  // expected-error@+1 {{shuffle width must be a power of two in [1, 32], got 0}}
  %s = tmgpu.shuffle xor %v, 0 width(0) : f32
}

// -----

// 233472 bytes of shared memory: more than sm_90's 227 KiB, the most of any GPU.
// expected-error@+1 {{kernel @too_much_shared: its shared arrays take 233472 bytes, more than a block has on any GPU (232448; past 49152 they are dynamic shared memory)}}
tmgpu.kernel @too_much_shared(%x: memref<4xf32>) block(32) {
  %a = tmgpu.shared_alloc : memref<32768xf32>
  %b = tmgpu.shared_alloc : memref<25600xf32>
}

// -----

tmgpu.kernel @load_vector_guard(%x: memref<8x16xf32>) block(32) {
  %t = tmgpu.thread_id x
  // expected-error@+1 {{'tmgpu.load_vector' has no guard (convert-tm-to-gpu puts guards in scf.if)}}
  %v:4 = tmgpu.load_vector x4 %x[%t, %t] guard [0] : memref<8x16xf32>
}

// -----

tmgpu.kernel @load_vector_local(%x: memref<8x16xf32>) block(32) {
  %t = tmgpu.thread_id x
  %r = tmgpu.local_alloc : memref<8x16xf32>
  // expected-error@+1 {{'tmgpu.load_vector': the buffer must be global (an argument of the tmgpu.kernel)}}
  %v:4 = tmgpu.load_vector x4 %r[%t, %t] : memref<8x16xf32>
}
