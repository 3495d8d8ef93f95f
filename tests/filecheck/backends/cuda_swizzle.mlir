// RUN: tm-opt %s -p convert-tm-to-gpu -t cuda | filecheck %s
// RUN: tm-opt %s -p convert-tm-to-gpu -t cuda | nvcc -ptx -arch=sm_80 -x cu - -o %t.ptx
// RUN: filecheck %s --input-file %t.ptx --check-prefix=PTX
//
// Swizzled shared tiles instead of padded ones: the one-warp mma kernel of
// cuda_tensor_core.mlir with both tiles `row_major(rows, 16) ^ swizzle(1, 3, 3)`
// (chunk_swizzle(16, 2): rows of two 16-byte chunks, the chunk column XOR-ed with bit 2 of
// the row, so the 8 rows an ldmatrix matrix reads hit 8 distinct 16-byte bank groups
// without padding). Each cp.async and ldmatrix address is the swizzled offset of its
// chunk's first element: `o ^ ((o >> 3) & 8)`. tests/test_layout.py runs this kernel on
// emu against numpy.

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(32) swizzled_mma_tile(
// CHECK:         __shared__ tm_half sa[256] __align__(16);
// CHECK-NEXT:    __shared__ tm_half sb[128] __align__(16);
// CHECK:         const int unswizzled = (ra * 16) + ca;
// CHECK-NEXT:    tmlir_cp_async<16>(&sa[unswizzled ^ ((unswizzled >> 3) & 8)], &a[ra * 16 + ca]);
// CHECK:         const int unswizzled_1 = (rb * 16) + cb;
// CHECK-NEXT:    tmlir_cp_async<8>(&sb[unswizzled_1 ^ ((unswizzled_1 >> 3) & 8)], &b[rb * 16 + cb]);
// CHECK:         tmlir_ldmatrix_x4((unsigned*)fa, &sa[{{.*}} ^ (({{.*}} >> 3) & 8)]);
// CHECK:         tmlir_ldmatrix_x2(fb, &sb[{{.*}} ^ (({{.*}} >> 3) & 8)]);
// CHECK-NEXT:    tmlir_mma_m16n8k16_f16(acc, (const unsigned*)fa, fb, acc);

// PTX-LABEL: .entry swizzled_mma_tile(
// PTX:       xor.b32
// PTX:       cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16;
// PTX:       cp.async.ca.shared.global [{{.*}}], [{{.*}}], 8;
// PTX:       ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX:       ldmatrix.sync.aligned.m8n8.x2.shared.b16
// PTX:       mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

tm.kernel @swizzled_mma_tile(%a: memref<16x16xf16>, %b: memref<8x16xf16>, %c: memref<16x8xf32>) grid(1) block(32) {
  %lane = tm.thread_id
  %sa = tm.alloc shared layout(row_major(16, 16) ^ swizzle(1, 3, 3)) : memref<16x16xf16>
  %sb = tm.alloc shared layout(row_major(8, 16) ^ swizzle(1, 3, 3)) : memref<8x16xf16>
  %fa = tm.alloc register : memref<4xi32>
  %fb = tm.alloc register : memref<2xui32>
  %acc = tm.alloc register : memref<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %ra = arith.divui %lane, %c2 : index
  %odd = arith.remui %lane, %c2 : index
  %ca = arith.muli %odd, %c8 : index
  tm.cp_async bytes(16) %sa[%ra, %ca], %a[%ra, %ca] : memref<16x16xf16>, memref<16x16xf16>
  %rb = arith.divui %lane, %c4 : index
  %q = arith.remui %lane, %c4 : index
  %cb = arith.muli %q, %c4 : index
  tm.cp_async bytes(8) %sb[%rb, %cb], %b[%rb, %cb] : memref<8x16xf16>, memref<8x16xf16>
  tm.cp_async_commit
  %zero = arith.constant 0.0 : f32
  tm.store %zero, %acc[%c0] : memref<4xf32>
  tm.store %zero, %acc[%c1] : memref<4xf32>
  tm.store %zero, %acc[%c2] : memref<4xf32>
  tm.store %zero, %acc[%c3] : memref<4xf32>
  tm.cp_async_wait pending(0)
  tm.barrier
  %row = arith.remui %lane, %c16 : index
  %half = arith.divui %lane, %c16 : index
  %col = arith.muli %half, %c8 : index
  tm.ldmatrix x4 %fa, %sa[%row, %col] : memref<4xi32>, memref<16x16xf16>
  %n = arith.remui %lane, %c8 : index
  %j8 = arith.divui %lane, %c8 : index
  %j = arith.remui %j8, %c2 : index
  %k = arith.muli %j, %c8 : index
  tm.ldmatrix x2 %fb, %sb[%n, %k] : memref<2xui32>, memref<8x16xf16>
  tm.mma m16n8k16 f16 %acc, %fa, %fb, %acc : memref<4xf32>, memref<4xi32>, memref<2xui32>, memref<4xf32>
  %g = arith.divui %lane, %c4 : index
  %t2 = arith.muli %q, %c2 : index
  %t21 = arith.addi %t2, %c1 : index
  %g8 = arith.addi %g, %c8 : index
  %d0 = tm.load %acc[%c0] : memref<4xf32>
  tm.store %d0, %c[%g, %t2] : memref<16x8xf32>
  %d1 = tm.load %acc[%c1] : memref<4xf32>
  tm.store %d1, %c[%g, %t21] : memref<16x8xf32>
  %d2 = tm.load %acc[%c2] : memref<4xf32>
  tm.store %d2, %c[%g8, %t2] : memref<16x8xf32>
  %d3 = tm.load %acc[%c3] : memref<4xf32>
  tm.store %d3, %c[%g8, %t21] : memref<16x8xf32>
}
