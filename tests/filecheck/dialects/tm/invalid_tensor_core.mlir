// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The tensor-core ops' verifiers: one case per error (see invalid.mlir for the format).

tm.kernel @k0(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.mma': unsupported shape and dtype m16n8k8 f16, expected one of m16n8k16 bf16, m16n8k16 f16, m16n8k8 tf32}}
  tm.mma m16n8k8 f16 %acc, %a, %b, %acc : memref<4xf32>, memref<4xi32>, memref<2xi32>, memref<4xf32>
}

// -----

tm.kernel @k1(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.mma' m16n8k16 f16: fragment a must end in a dimension of 4 32-bit words (i32 or ui32), got memref<2xi32>}}
  tm.mma m16n8k16 f16 %acc, %b, %b, %acc : memref<4xf32>, memref<2xi32>, memref<2xi32>, memref<4xf32>
}

// -----

tm.kernel @k2(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.mma' m16n8k16 bf16: fragment a must end in a dimension of 4 32-bit words (i32 or ui32), got memref<4xf32>}}
  tm.mma m16n8k16 bf16 %acc, %acc, %b, %acc : memref<4xf32>, memref<4xf32>, memref<2xi32>, memref<4xf32>
}

// -----

tm.kernel @k3(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.mma' m16n8k16 f16: fragment d must end in a dimension of 4 f32, got memref<4xi32>}}
  tm.mma m16n8k16 f16 %a, %a, %b, %acc : memref<4xi32>, memref<4xi32>, memref<2xi32>, memref<4xf32>
}

// -----

tm.kernel @k4(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.mma' m16n8k16 f16: fragment c must be a register buffer, got a shared buffer}}
  tm.mma m16n8k16 f16 %acc, %a, %b, %sacc : memref<4xf32>, memref<4xi32>, memref<2xi32>, memref<4xf32>
}

// -----

tm.kernel @k5(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.mma' m16n8k16 f16: fragment b takes 0 indices for memref<2xi32>, got 1}}
  tm.mma m16n8k16 f16 %acc, %a, %b[%i], %acc : memref<4xf32>, memref<4xi32>, memref<2xi32>, memref<4xf32>
}

// -----

tm.kernel @k6(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.ldmatrix': loads 1, 2 or 4 matrices (x1, x2, x4), got x3}}
  tm.ldmatrix x3 %a, %smem[%i, %i] : memref<4xi32>, memref<16x16xf16>
}

// -----

tm.kernel @k7(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.ldmatrix': fragment destination must end in a dimension of 2 32-bit words (i32 or ui32), got memref<4xi32>}}
  tm.ldmatrix x2 %a, %smem[%i, %i] : memref<4xi32>, memref<16x16xf16>
}

// -----

tm.kernel @k8(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.ldmatrix': source must be a shared buffer, got a global buffer}}
  tm.ldmatrix x4 %a, %x[%i, %i] : memref<4xi32>, memref<16x16xf16>
}

// -----

tm.kernel @k9(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.ldmatrix': source elements must be 16-bit (f16, bf16, i16), got f32}}
  tm.ldmatrix x4 trans %a, %sf[%i, %i] : memref<4xi32>, memref<16x16xf32>
}

// -----

tm.kernel @k10(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.ldmatrix': source takes 2 indices for memref<16x16xf16>, got 1}}
  tm.ldmatrix x4 %a, %smem[%i] : memref<4xi32>, memref<16x16xf16>
}

// -----

tm.kernel @k11(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.cp_async': copies 4, 8 or 16 bytes, got 12}}
  tm.cp_async bytes(12) %smem[%i, %i], %x[%i, %i] : memref<16x16xf16>, memref<16x16xf16>
}

// -----

tm.kernel @k12(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.cp_async': destination must be a shared buffer, got a register buffer}}
  tm.cp_async bytes(8) %acc[%i], %y[%i, %i] : memref<4xf32>, memref<16x16xf32>
}

// -----

tm.kernel @k13(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.cp_async': source must be a global buffer, got a shared buffer}}
  tm.cp_async bytes(16) %smem[%i, %i], %smem[%i, %i] : memref<16x16xf16>, memref<16x16xf16>
}

// -----

tm.kernel @k14(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.cp_async': source elements (f32) differ from the destination's (f16)}}
  tm.cp_async bytes(16) %smem[%i, %i], %y[%i, %i] : memref<16x16xf16>, memref<16x16xf32>
}

// -----

tm.kernel @k15(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.cp_async': 4 bytes is not a whole number of f64 elements}}
  tm.cp_async bytes(4) %sd[%i], %z[%i] : memref<8xf64>, memref<8xf64>
}

// -----

tm.kernel @k16(%x: memref<16x16xf16>, %y: memref<16x16xf32>, %z: memref<8xf64>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %sf = tm.alloc shared : memref<16x16xf32>
  %sd = tm.alloc shared : memref<8xf64>
  %sacc = tm.alloc shared : memref<4xf32>
  %acc = tm.alloc register : memref<4xf32>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2xi32>
  // expected-error@+1 {{'tm.cp_async_wait': pending must be >= 0, got -1}}
  tm.cp_async_wait pending(-1)
}

// -----

tmgpu.kernel @gpu_level(%x: memref<16x16xf16>) block(32) {
  %i = tmgpu.thread_id x
  %frag = tmgpu.local_alloc : memref<16x16xf16>
  // expected-error@+1 {{'tmgpu.cp_async': destination must be a shared buffer, got a register buffer}}
  tmgpu.cp_async bytes(16) %frag[%i, %i], %x[%i, %i] : memref<16x16xf16>, memref<16x16xf16>
}

// -----

func.func @outside(%acc: memref<4xf32>, %a: memref<4xi32>, %b: memref<2xi32>) {
  // expected-error@+1 {{'tm.mma' must be inside a tm.kernel}}
  tm.mma m16n8k16 f16 %acc, %a, %b, %acc : memref<4xf32>, memref<4xi32>, memref<2xi32>, memref<4xf32>
  func.return
}

// -----

tm.kernel @zfill_condition(%x: memref<16x8xf16>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x8xf16>
  %n = arith.constant 1 : i32
  // expected-error@+1 {{'tm.cp_async': the zfill_unless condition must be i1, got i32}}
  "tm.cp_async"(%smem, %i, %i, %x, %i, %i, %n) <{bytes = #builtin.int<16>, operandSegmentSizes = array<i32: 1, 2, 1, 2, 1>}> : (memref<16x8xf16>, index, index, memref<16x8xf16>, index, index, i32) -> ()
}

// -----

tm.kernel @zfill_condition_syntax(%x: memref<16x8xf16>) grid(1) block(32) {
  %i = tm.thread_id
  %smem = tm.alloc shared : memref<16x8xf16>
  %n = arith.constant 1 : i32
  // expected-error@+1 {{operand is used with type i1, but has been previously used or defined with type i32}}
  tm.cp_async bytes(16) %smem[%i, %i], %x[%i, %i] zfill_unless %n : memref<16x8xf16>, memref<16x8xf16>
}
