// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// Hopper's verifiers: one case per error (see invalid.mlir for the format), each one line:
// shapes, descriptors (not shared, not canonical, not the wgmma's tile, major or dtype),
// waits, mbarriers and bulk copies.

tm.kernel @shape(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  // expected-error@+1 {{'tm.wgmma': unsupported wgmma shape m64n100k16 for f16, expected m64nNk16 with N in 8, 16, 32, 64, 96, 128, 192, 256}}
  tm.wgmma m64n100k16 f16 %acc, %da kmajor, %da kmajor : memref<32xf32>
}

// -----

tm.kernel @shape_dtype(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  // expected-error@+1 {{'tm.wgmma': unsupported wgmma shape m64n64k16 for tf32, expected m64nNk8 with N in}}
  tm.wgmma m64n64k16 tf32 %acc, %da kmajor, %da kmajor : memref<32xf32>
}

// -----

tm.kernel @fragment(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  // expected-error@+1 {{'tm.wgmma' m64n32k16 f16: fragment d must end in a dimension of 16 f32, got memref<32xf32>}}
  tm.wgmma m64n32k16 f16 %acc, %da kmajor, %da kmajor : memref<32xf32>
}

// -----

tm.kernel @desc_global(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  // expected-error@+1 {{'tm.wgmma_desc': a descriptor addresses a shared buffer, got a global buffer}}
  %dx = tm.wgmma_desc kmajor %x[%c0, %c0] tile(64, 16) : memref<64x64xf16>
}

// -----

tm.kernel @desc_register(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %r = tm.alloc register : memref<64x16xf16>
  // expected-error@+1 {{'tm.wgmma_desc': a descriptor addresses a shared buffer, got a register buffer}}
  %dr = tm.wgmma_desc kmajor %r[%c0, %c0] tile(64, 16) : memref<64x16xf16>
}

// -----

tm.kernel @desc_layout(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %s = tm.alloc shared : memref<64x16xf16>
  // expected-error@+1 {{'tm.wgmma_desc': layout 'row_major(64, 16)' is not a canonical K-major wgmma layout for 64x16 tiles: element (1, 0) is at byte 32, a descriptor would read byte 16}}
  %ds = tm.wgmma_desc kmajor %s[%c0, %c0] tile(64, 16) : memref<64x16xf16>
}

// -----

tm.kernel @desc_major(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  // expected-error@+1 {{'tm.wgmma_desc': layout 'row_major(64, 64) ^ swizzle(3, 3, 3)' is not a canonical MN-major wgmma layout}}
  %dm = tm.wgmma_desc mnmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
}

// -----

tm.kernel @desc_tile(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  // expected-error@+1 {{'tm.wgmma_desc': a wgmma operand tile is MN x 16 with MN a multiple of 8 up to 256, got 64x32}}
  %dt = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 32) : memref<64x64xf16>
}

// -----

tm.kernel @desc_element(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %si = tm.alloc shared : memref<64x16xi16>
  // expected-error@+1 {{'tm.wgmma_desc': wgmma operands are f16, bf16 or f32 (tf32), got i16}}
  %di = tm.wgmma_desc kmajor %si[%c0, %c0] tile(64, 16) : memref<64x16xi16>
}

// -----

tm.kernel @tile_mismatch(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %acc2 = tm.alloc register : memref<64xf32>
  // expected-error@+1 {{'tm.wgmma' m64n128k16 f16: b needs a descriptor of a 128x16 tile, got one of 64x16}}
  tm.wgmma m64n128k16 f16 %acc2, %da kmajor, %da kmajor : memref<64xf32>
}

// -----

tm.kernel @major_mismatch(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  // expected-error@+1 {{'tm.wgmma' m64n64k16 f16: a is used mnmajor but its descriptor describes a kmajor tile}}
  tm.wgmma m64n64k16 f16 %acc, %da mnmajor, %da kmajor : memref<32xf32>
}

// -----

tm.kernel @dtype_mismatch(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  // expected-error@+1 {{'tm.wgmma' m64n64k16 bf16: a's tile holds f16, expected bf16}}
  tm.wgmma m64n64k16 bf16 %acc, %da kmajor, %da kmajor : memref<32xf32>
}

// -----

tm.kernel @tf32_major(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %d = arith.constant 0 : i64
  // expected-error@+1 {{'tm.wgmma' m64n64k8 tf32: tf32 operands are K-major only, a is mnmajor}}
  tm.wgmma m64n64k8 tf32 %acc, %d mnmajor, %d kmajor : memref<32xf32>
}

// -----

tm.kernel @wait_shared(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  // expected-error@+1 {{'tm.wgmma_wait': accumulators are f32 register buffers, got a shared buffer of memref<64x64xf16>}}
  tm.wgmma_wait pending(0) %sa : memref<64x64xf16>
}

// -----

tm.kernel @wait_pending(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  // expected-error@+1 {{'tm.wgmma_wait': pending must be >= 0, got -1}}
  tm.wgmma_wait pending(-1)
}

// -----

tm.kernel @mbarrier_register(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %b = tm.alloc register : memref<1xi64>
  // expected-error@+1 {{'tm.mbarrier_init': mbarrier must be a shared buffer, got a register buffer}}
  tm.mbarrier_init %b[%c0] count(1) : memref<1xi64>
}

// -----

tm.kernel @mbarrier_type(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %b = tm.alloc shared : memref<1xi32>
  // expected-error@+1 {{'tm.mbarrier_arrive': an mbarrier is an i64 element, got memref<1xi32>}}
  tm.mbarrier_arrive %b[%c0] : memref<1xi32>
}

// -----

tm.kernel @mbarrier_count(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %b = tm.alloc shared : memref<1xi64>
  // expected-error@+1 {{'tm.mbarrier_init': count must be in [1, 1048575], got 0}}
  tm.mbarrier_init %b[%c0] count(0) : memref<1xi64>
}

// -----

tm.kernel @bulk_bytes(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %b = tm.alloc shared : memref<1xi64>
  // expected-error@+1 {{'tm.cp_async_bulk': copies a positive multiple of 16 bytes below 2^20, got 24}}
  tm.cp_async_bulk bytes(24) %sa[%c0, %c0], %x[%c0, %c0], %b[%c0] : memref<64x64xf16>, memref<64x64xf16>, memref<1xi64>
}

// -----

tm.kernel @bulk_source(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register : memref<32xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %b = tm.alloc shared : memref<1xi64>
  // expected-error@+1 {{'tm.cp_async_bulk': source must be a global buffer, got a shared buffer}}
  tm.cp_async_bulk bytes(32) %sa[%c0, %c0], %sa[%c0, %c0], %b[%c0] : memref<64x64xf16>, memref<64x64xf16>, memref<1xi64>
}

// -----

tmgpu.kernel @gpu_lbo(%x: memref<64xf16>) block(128) {
  %c0 = arith.constant 0 : index
  %s = tmgpu.shared_alloc : memref<4096xf16>
  // expected-error@+1 {{'tmgpu.wgmma_desc': lbo must be a positive multiple of 16 below 2^18, got 8}}
  %d = tmgpu.wgmma_desc %s[%c0] lbo(8) sbo(1024) swizzle(128) : memref<4096xf16>
}

// -----

tmgpu.kernel @gpu_swizzle(%x: memref<64xf16>) block(128) {
  %c0 = arith.constant 0 : index
  %s = tmgpu.shared_alloc : memref<4096xf16>
  // expected-error@+1 {{'tmgpu.wgmma_desc': swizzle is 0, 32, 64 or 128 (bytes of a row), got 16}}
  %d = tmgpu.wgmma_desc %s[%c0] lbo(16) sbo(1024) swizzle(16) : memref<4096xf16>
}

// -----

func.func @outside(%acc: memref<32xf32>, %d: i64) {
  // expected-error@+1 {{'tm.wgmma' must be inside a tm.kernel}}
  tm.wgmma m64n64k16 f16 %acc, %d kmajor, %d kmajor : memref<32xf32>
  func.return
}

// -----

tm.kernel @accumulate_if(%x: memref<64x64xf16>) grid(1) block(128) {
  %acc = tm.alloc register : memref<32xf32>
  %d = arith.constant 0 : i64
  %n = arith.constant 1 : i32
  // expected-error@+1 {{'tm.wgmma' m64n64k16 f16: the accumulate_if condition must be i1, got i32}}
  "tm.wgmma"(%acc, %d, %d, %n) <{shape = "m64n64k16", dtype = "f16", a_major = "k", b_major = "k", operandSegmentSizes = array<i32: 1, 0, 1, 1, 1>}> : (memref<32xf32>, i64, i64, i32) -> ()
}
