// RUN: tm-opt %s --split-input-file | filecheck %s
// RUN: tm-opt %s --split-input-file | tm-opt --split-input-file | filecheck %s
// RUN: tm-opt %s --split-input-file --print-op-generic | tm-opt --split-input-file | filecheck %s
//
// Hopper's ops print as they are written (round trip, also from the generic form): a
// descriptor of a swizzled K-major and an N-major tile, wgmma with and without
// accumulate_if, its fence, commit and wait, the mbarrier ops and a bulk copy.

// CHECK-LABEL: tm.kernel @hopper
// CHECK:      %da = tm.wgmma_desc kmajor %sa[%c0, %k] tile(64, 16) : memref<64x64xf16>
// CHECK-NEXT: %db = tm.wgmma_desc mnmajor %sb[%c0, %k] tile(128, 16) : memref<128x64xf16>
// CHECK-NEXT: %dta = tm.wgmma_desc kmajor %st[%c0, %c0] tile(64, 8) : memref<64x8xf32>
// CHECK-NEXT: %dtb = tm.wgmma_desc kmajor %st[%c0, %c0] tile(8, 8) : memref<64x8xf32>
// CHECK-NEXT: tm.wgmma_fence
// CHECK-NEXT: tm.wgmma m64n128k16 f16 %acc[%c0], %da kmajor, %db mnmajor : memref<2x64xf32>
// CHECK-NEXT: tm.wgmma m64n128k16 f16 %acc[%c1], %da kmajor, %db mnmajor accumulate_if %first {note = "x"} : memref<2x64xf32>
// CHECK-NEXT: tm.wgmma m64n8k8 tf32 %small, %dta kmajor, %dtb kmajor : memref<4xf32>
// CHECK-NEXT: tm.wgmma_commit
// CHECK-NEXT: tm.wgmma_wait pending(1) %acc, %small : memref<2x64xf32>, memref<4xf32>
// CHECK-NEXT: tm.wgmma_wait pending(0)
// CHECK-NEXT: tm.mbarrier_init %bar[%c0] count(1) : memref<2xi64>
// CHECK-NEXT: tm.mbarrier_arrive %bar[%c0] expect_tx(2048) : memref<2xi64>
// CHECK-NEXT: tm.mbarrier_arrive %bar[%c0] : memref<2xi64>
// CHECK-NEXT: tm.cp_async_bulk bytes(128) %sa[%c0, %c0], %x[%k, %c0], %bar[%c0] : memref<64x64xf16>, memref<256x64xf16>, memref<2xi64>
// CHECK-NEXT: tm.mbarrier_wait %bar[%c0] parity(%k) : memref<2xi64>
// CHECK-NEXT: tm.fence_proxy_async
tm.kernel @hopper(%x: memref<256x64xf16>) grid(1) block(128) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %k = arith.constant 16 : index
  %first = arith.constant false
  %sa = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %sb = tm.alloc shared layout(row_major(2, 8) * column_major(64, 8) ^ swizzle(3, 3, 3)) : memref<128x64xf16>
  %st = tm.alloc shared layout(row_major(8, 2) * row_major(8, 4)) : memref<64x8xf32>
  %acc = tm.alloc register : memref<2x64xf32>
  %small = tm.alloc register : memref<4xf32>
  %bar = tm.alloc shared : memref<2xi64>
  %da = tm.wgmma_desc kmajor %sa[%c0, %k] tile(64, 16) : memref<64x64xf16>
  %db = tm.wgmma_desc mnmajor %sb[%c0, %k] tile(128, 16) : memref<128x64xf16>
  %dta = tm.wgmma_desc kmajor %st[%c0, %c0] tile(64, 8) : memref<64x8xf32>
  %dtb = tm.wgmma_desc kmajor %st[%c0, %c0] tile(8, 8) : memref<64x8xf32>
  tm.wgmma_fence
  tm.wgmma m64n128k16 f16 %acc[%c0], %da kmajor, %db mnmajor : memref<2x64xf32>
  tm.wgmma m64n128k16 f16 %acc[%c1], %da kmajor, %db mnmajor accumulate_if %first {note = "x"} : memref<2x64xf32>
  tm.wgmma m64n8k8 tf32 %small, %dta kmajor, %dtb kmajor : memref<4xf32>
  tm.wgmma_commit
  tm.wgmma_wait pending(1) %acc, %small : memref<2x64xf32>, memref<4xf32>
  tm.wgmma_wait pending(0)
  tm.mbarrier_init %bar[%c0] count(1) : memref<2xi64>
  tm.mbarrier_arrive %bar[%c0] expect_tx(2048) : memref<2xi64>
  tm.mbarrier_arrive %bar[%c0] : memref<2xi64>
  tm.cp_async_bulk bytes(128) %sa[%c0, %c0], %x[%k, %c0], %bar[%c0] : memref<64x64xf16>, memref<256x64xf16>, memref<2xi64>
  tm.mbarrier_wait %bar[%c0] parity(%k) : memref<2xi64>
  tm.fence_proxy_async
}

// -----

// CHECK-LABEL: tmgpu.kernel @gpu_level
// CHECK:      %d = tmgpu.wgmma_desc %s[%c0] lbo(16) sbo(1024) swizzle(128) : memref<4096xf16>
// CHECK-NEXT: tmgpu.wgmma_fence
// CHECK-NEXT: tmgpu.wgmma m64n64k16 f16 %acc, %d kmajor, %d kmajor : memref<32xf32>
// CHECK-NEXT: tmgpu.wgmma_commit
// CHECK-NEXT: tmgpu.wgmma_wait pending(0) %acc : memref<32xf32>
// CHECK-NEXT: tmgpu.mbarrier_init %bar[%c0] count(128) : memref<1xi64>
// CHECK-NEXT: tmgpu.mbarrier_arrive %bar[%c0] expect_tx(16) : memref<1xi64>
// CHECK-NEXT: tmgpu.cp_async_bulk bytes(16) %s[%c0], %x[%c0], %bar[%c0] : memref<4096xf16>, memref<4096xf16>, memref<1xi64>
// CHECK-NEXT: tmgpu.mbarrier_wait %bar[%c0] parity(%c0) : memref<1xi64>
// CHECK-NEXT: tmgpu.fence_proxy_async
tmgpu.kernel @gpu_level(%x: memref<4096xf16>) block(128) {
  %c0 = arith.constant 0 : index
  %s = tmgpu.shared_alloc : memref<4096xf16>
  %acc = tmgpu.local_alloc : memref<32xf32>
  %bar = tmgpu.shared_alloc : memref<1xi64>
  %d = tmgpu.wgmma_desc %s[%c0] lbo(16) sbo(1024) swizzle(128) : memref<4096xf16>
  tmgpu.wgmma_fence
  tmgpu.wgmma m64n64k16 f16 %acc, %d kmajor, %d kmajor : memref<32xf32>
  tmgpu.wgmma_commit
  tmgpu.wgmma_wait pending(0) %acc : memref<32xf32>
  tmgpu.mbarrier_init %bar[%c0] count(128) : memref<1xi64>
  tmgpu.mbarrier_arrive %bar[%c0] expect_tx(16) : memref<1xi64>
  tmgpu.cp_async_bulk bytes(16) %s[%c0], %x[%c0], %bar[%c0] : memref<4096xf16>, memref<4096xf16>, memref<1xi64>
  tmgpu.mbarrier_wait %bar[%c0] parity(%c0) : memref<1xi64>
  tmgpu.fence_proxy_async
}
