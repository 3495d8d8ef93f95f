// RUN: tm-opt %s --split-input-file -p convert-tm-to-gpu --verify-diagnostics | filecheck %s
//
// Hopper's ops become their tmgpu twins; a descriptor becomes one by its fields: the start is
// the tile's storage offset without the swizzle, LBO, SBO and the swizzle mode come from the
// buffer's layout (K-major 128B: SBO = 8 rows of 128 bytes; N-major 128B: LBO = the next 64
// columns, 8 atoms of 1 KiB away, SBO = the next 8 k's; K-major core matrices: LBO = the
// next 8 k's, SBO = the next 8 rows). A bulk copy into a swizzled buffer indexes its storage
// like any access, and may not be split by the swizzle.

// CHECK-LABEL: tmgpu.kernel @descriptors
// CHECK:         %sa = tmgpu.shared_alloc : memref<4096xf16>
// CHECK:         [[ROW:%.*]] = arith.muli %c0, {{%.*}} : index
// CHECK-NEXT:    [[A:%.*]] = arith.addi [[ROW]], %k : index
// CHECK-NEXT:    %da = tmgpu.wgmma_desc %sa[[[A]]] lbo(16) sbo(1024) swizzle(128) : memref<4096xf16>
// CHECK:         %db = tmgpu.wgmma_desc %sb[{{%.*}}] lbo(8192) sbo(1024) swizzle(128) : memref<8192xf16>
// CHECK:         %dc = tmgpu.wgmma_desc %sc[{{%.*}}] lbo(128) sbo(1024) swizzle(0) : memref<4096xf16>
// CHECK-NEXT:    tmgpu.wgmma m64n128k16 f16 %acc, %da kmajor, %db mnmajor : memref<64xf32>
// CHECK-NEXT:    tmgpu.wgmma m64n128k16 f16 %acc, %dc kmajor, %db mnmajor : memref<64xf32>
// CHECK-NEXT:    tmgpu.wgmma_wait pending(0) %acc : memref<64xf32>
// CHECK:         [[OFF:%.*]] = arith.xori %unswizzled, {{%.*}} : index
// CHECK-NEXT:    tmgpu.cp_async_bulk bytes(16) %sa[[[OFF]]], %x[%k, %k], %bar[%c0] : memref<4096xf16>, memref<64x64xf16>, memref<1xi64>
tm.kernel @descriptors(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %k = arith.constant 16 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %sb = tm.alloc shared layout(row_major(2, 8) * column_major(64, 8) ^ swizzle(3, 3, 3)) : memref<128x64xf16>
  %sc = tm.alloc shared layout(row_major(8, 8) * row_major(8, 8)) : memref<64x64xf16>
  %bar = tm.alloc shared : memref<1xi64>
  %acc = tm.alloc register : memref<64xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %k] tile(64, 16) : memref<64x64xf16>
  %db = tm.wgmma_desc mnmajor %sb[%c0, %k] tile(128, 16) : memref<128x64xf16>
  %dc = tm.wgmma_desc kmajor %sc[%c0, %k] tile(64, 16) : memref<64x64xf16>
  tm.wgmma m64n128k16 f16 %acc, %da kmajor, %db mnmajor : memref<64xf32>
  tm.wgmma m64n128k16 f16 %acc, %dc kmajor, %db mnmajor : memref<64xf32>
  tm.wgmma_wait pending(0) %acc : memref<64xf32>
  tm.cp_async_bulk bytes(16) %sa[%k, %k], %x[%k, %k], %bar[%c0] : memref<64x64xf16>, memref<64x64xf16>, memref<1xi64>
}

// -----

tm.kernel @split_by_the_swizzle(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %bar = tm.alloc shared : memref<1xi64>
  // expected-error@+1 {{convert-tm-to-gpu: 'tm.cp_async_bulk' moves 32 contiguous bytes, but the layout 'row_major(64, 64) ^ swizzle(3, 3, 3)' keeps only 16-byte pieces together}}
  tm.cp_async_bulk bytes(32) %sa[%c0, %c0], %x[%c0, %c0], %bar[%c0] : memref<64x64xf16>, memref<64x64xf16>, memref<1xi64>
}

// -----

tm.kernel @laid_out_accumulator(%x: memref<64x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %acc = tm.alloc register layout(column_major(8, 4)) : memref<8x4xf32>
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x64xf16>
  %dd = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(8, 16) : memref<64x64xf16>
  // expected-error@+1 {{convert-tm-to-gpu: an accumulator of 'tm.wgmma' cannot have a data layout}}
  tm.wgmma m64n8k16 f16 %acc[%c0], %da kmajor, %dd kmajor : memref<8x4xf32>
}
