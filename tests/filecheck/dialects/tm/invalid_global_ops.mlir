// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The verifiers of tm.atomic_add, tm.load_cg and tm.fence (and their tmgpu twins): one
// case per error (see invalid.mlir for the format).

tm.kernel @shared_counter(%c: memref<4xi32>) grid(1) block(32) {
  %i = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %s = tm.alloc shared : memref<4xi32>
  // expected-error@+1 {{'tm.atomic_add': the buffer must be a global buffer (an argument of the tm.kernel)}}
  %old = tm.atomic_add %s[%i], %one : memref<4xi32>
}

// -----

tm.kernel @float_counter(%c: memref<4xf32>) grid(1) block(32) {
  %i = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  // expected-error@+1 {{'tm.atomic_add': adds to i32 elements, got memref<4xf32>}}
  %old = tm.atomic_add %c[%i], %one : memref<4xf32>
}

// -----

tm.kernel @i64_counter(%c: memref<4xi64>) grid(1) block(32) {
  %i = arith.constant 0 : index
  %one = arith.constant 1 : i64
  // expected-error@+1 {{'tm.atomic_add': adds to i32 elements, got memref<4xi64>}}
  %old = tm.atomic_add %c[%i], %one : memref<4xi64>
}

// -----

tm.kernel @index_count(%c: memref<4x4xi32>) grid(1) block(32) {
  %i = arith.constant 0 : index
  %one = arith.constant 1 : i32
  // expected-error@+1 {{'tm.atomic_add': expected 2 indices for memref<4x4xi32>, got 1}}
  %old = tm.atomic_add %c[%i], %one : memref<4x4xi32>
}

// -----

tm.kernel @register_load(%ws: memref<4xf32>) grid(1) block(32) {
  %i = arith.constant 0 : index
  %r = tm.alloc register : memref<4xf32>
  // expected-error@+1 {{'tm.load_cg': the buffer must be a global buffer (an argument of the tm.kernel)}}
  %v = tm.load_cg %r[%i] : memref<4xf32>
}

// -----

tm.kernel @half_load(%ws: memref<4xf16>) grid(1) block(32) {
  %i = arith.constant 0 : index
  // expected-error@+1 {{'tm.load_cg': loads f32, f64, i32 or i64 elements, got memref<4xf16>}}
  %v = tm.load_cg %ws[%i] : memref<4xf16>
}

// -----

func.func @host(%ws: memref<4xf32>) {
  // expected-error@+1 {{'tm.fence' must be inside a tm.kernel}}
  tm.fence
  func.return
}

// -----

tmgpu.kernel @gpu_shared(%ws: memref<4xf32>) block(32) {
  %i = arith.constant 0 : index
  %s = tmgpu.shared_alloc : memref<4xf32>
  // expected-error@+1 {{'tmgpu.load_cg': the buffer must be a global buffer (an argument of the tmgpu.kernel)}}
  %v = tmgpu.load_cg %s[%i] : memref<4xf32>
}

// -----

tmgpu.kernel @gpu_counter(%c: memref<4xi64>) block(32) {
  %i = arith.constant 0 : index
  %one = arith.constant 1 : i64
  // expected-error@+1 {{'tmgpu.atomic_add': adds to i32 elements, got memref<4xi64>}}
  %old = tmgpu.atomic_add %c[%i], %one : memref<4xi64>
}
