// RUN: tm-opt %s --split-input-file | filecheck %s
// RUN: tm-opt %s --split-input-file | tm-opt --split-input-file | filecheck %s
//
// The tensor-core ops print as they are written (round trip): fragments are register
// buffers whose last dimension is the fragment, indexed by their leading dimensions.

// CHECK-LABEL: tm.kernel @tensor_core
// CHECK:      tm.cp_async bytes(16) %smem[%r, %c], %x[%r, %c] : memref<16x16xf16>, memref<64x64xf16>
// CHECK-NEXT: tm.cp_async bytes(4) %smem[%r, %c], %x[%c, %r] : memref<16x16xf16>, memref<64x64xf16>
// CHECK-NEXT: tm.cp_async_commit
// CHECK-NEXT: tm.cp_async_wait pending(0)
// CHECK-NEXT: tm.barrier
// CHECK-NEXT: tm.ldmatrix x4 %a, %smem[%r, %c] : memref<4xi32>, memref<16x16xf16>
// CHECK-NEXT: tm.ldmatrix x2 trans %b[%i], %smem[%r, %c] : memref<2x2xi32>, memref<16x16xf16>
// CHECK-NEXT: tm.ldmatrix x1 %w, %smem[%r, %c] {note = "x1"} : memref<1xi32>, memref<16x16xf16>
// CHECK-NEXT: tm.mma m16n8k16 f16 %acc[%i, %i], %a, %b[%i], %acc[%i, %i] : memref<2x2x4xf32>, memref<4xi32>, memref<2x2xi32>, memref<2x2x4xf32>
// CHECK-NEXT: tm.mma m16n8k16 bf16 %acc[%i, %i], %a, %b[%i], %acc[%i, %i] : memref<2x2x4xf32>, memref<4xi32>, memref<2x2xi32>, memref<2x2x4xf32>
// CHECK-NEXT: tm.mma m16n8k8 tf32 %d, %af, %bf, %d : memref<4xf32>, memref<4xf32>, memref<2xf32>, memref<4xf32>
tm.kernel @tensor_core(%x: memref<64x64xf16>) grid(1) block(32) {
  %t = tm.thread_id
  %smem = tm.alloc shared : memref<16x16xf16>
  %a = tm.alloc register : memref<4xi32>
  %b = tm.alloc register : memref<2x2xi32>
  %w = tm.alloc register : memref<1xi32>
  %acc = tm.alloc register : memref<2x2x4xf32>
  %d = tm.alloc register : memref<4xf32>
  %af = tm.alloc register : memref<4xf32>
  %bf = tm.alloc register : memref<2xf32>
  %i = arith.constant 1 : index
  %r = arith.divui %t, %i : index
  %c = arith.remui %t, %i : index
  tm.cp_async bytes(16) %smem[%r, %c], %x[%r, %c] : memref<16x16xf16>, memref<64x64xf16>
  tm.cp_async bytes(4) %smem[%r, %c], %x[%c, %r] : memref<16x16xf16>, memref<64x64xf16>
  tm.cp_async_commit
  tm.cp_async_wait pending(0)
  tm.barrier
  tm.ldmatrix x4 %a, %smem[%r, %c] : memref<4xi32>, memref<16x16xf16>
  tm.ldmatrix x2 trans %b[%i], %smem[%r, %c] : memref<2x2xi32>, memref<16x16xf16>
  tm.ldmatrix x1 %w, %smem[%r, %c] {note = "x1"} : memref<1xi32>, memref<16x16xf16>
  tm.mma m16n8k16 f16 %acc[%i, %i], %a, %b[%i], %acc[%i, %i] : memref<2x2x4xf32>, memref<4xi32>, memref<2x2xi32>, memref<2x2x4xf32>
  tm.mma m16n8k16 bf16 %acc[%i, %i], %a, %b[%i], %acc[%i, %i] : memref<2x2x4xf32>, memref<4xi32>, memref<2x2xi32>, memref<2x2x4xf32>
  tm.mma m16n8k8 tf32 %d, %af, %bf, %d : memref<4xf32>, memref<4xf32>, memref<2xf32>, memref<4xf32>
}

// -----

// CHECK-LABEL: tmgpu.kernel @gpu_level
// CHECK:      tmgpu.cp_async bytes(8) %smem[%t], %x[%t] : memref<128xbf16>, memref<128xbf16>
// CHECK-NEXT: tmgpu.cp_async_commit
// CHECK-NEXT: tmgpu.cp_async_wait pending(1)
// CHECK-NEXT: tmgpu.ldmatrix x4 trans %a, %smem[%t] : memref<4xui32>, memref<128xbf16>
// CHECK-NEXT: tmgpu.mma m16n8k16 bf16 %acc, %a, %b, %acc : memref<4xf32>, memref<4xui32>, memref<2xi32>, memref<4xf32>
tmgpu.kernel @gpu_level(%x: memref<128xbf16>) block(32) {
  %t = tmgpu.thread_id x
  %smem = tmgpu.shared_alloc : memref<128xbf16>
  %a = tmgpu.local_alloc : memref<4xui32>
  %b = tmgpu.local_alloc : memref<2xi32>
  %acc = tmgpu.local_alloc : memref<4xf32>
  tmgpu.cp_async bytes(8) %smem[%t], %x[%t] : memref<128xbf16>, memref<128xbf16>
  tmgpu.cp_async_commit
  tmgpu.cp_async_wait pending(1)
  tmgpu.ldmatrix x4 trans %a, %smem[%t] : memref<4xui32>, memref<128xbf16>
  tmgpu.mma m16n8k16 bf16 %acc, %a, %b, %acc : memref<4xf32>, memref<4xui32>, memref<2xi32>, memref<4xf32>
}

// -----

// A zero-filling copy: where %inside is false it reads nothing and lands 16 zero bytes.
// CHECK-LABEL: tm.kernel @zfill
// CHECK:      tm.cp_async bytes(16) %smem[%r, %c0], %x[%rc, %c0] zfill_unless %inside : memref<16x8xf16>, memref<12x8xf16>
// CHECK-NEXT: tm.cp_async bytes(8) %smem[%r, %c0], %x[%rc, %c0] zfill_unless %inside {note = "z"} : memref<16x8xf16>, memref<12x8xf16>
// CHECK:      tmgpu.cp_async bytes(4) %smem[%t], %x[%t] zfill_unless %in : memref<128xf32>, memref<128xf32>
tm.kernel @zfill(%x: memref<12x8xf16>) grid(1) block(16) {
  %r = tm.thread_id
  %c0 = arith.constant 0 : index
  %c12 = arith.constant 12 : index
  %smem = tm.alloc shared : memref<16x8xf16>
  %inside = arith.cmpi ult, %r, %c12 : index
  %rc = arith.select %inside, %r, %c0 : index
  tm.cp_async bytes(16) %smem[%r, %c0], %x[%rc, %c0] zfill_unless %inside : memref<16x8xf16>, memref<12x8xf16>
  tm.cp_async bytes(8) %smem[%r, %c0], %x[%rc, %c0] zfill_unless %inside {note = "z"} : memref<16x8xf16>, memref<12x8xf16>
}
tmgpu.kernel @zfill_gpu(%x: memref<128xf32>) block(32) {
  %t = tmgpu.thread_id x
  %c100 = arith.constant 100 : index
  %in = arith.cmpi ult, %t, %c100 : index
  %smem = tmgpu.shared_alloc : memref<128xf32>
  tmgpu.cp_async bytes(4) %smem[%t], %x[%t] zfill_unless %in : memref<128xf32>, memref<128xf32>
}
