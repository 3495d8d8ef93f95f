// RUN: tm-opt %s --split-input-file -p convert-tm-to-gpu --verify-diagnostics | filecheck %s
//
// The tensor-core ops become their tmgpu twins one to one; an access to a laid-out shared
// buffer indexes its 1-D storage (rows padded to 24 here), a fragment keeps its indices.

// CHECK-LABEL: tmgpu.kernel @tensor_core
// CHECK:         %sb = tmgpu.shared_alloc : memref<192xf16>
// CHECK:         %acc = tmgpu.local_alloc : memref<2x4xf32>
// CHECK-NEXT:    [[PITCH:%.*]] = arith.constant 24 : index
// CHECK-NEXT:    [[ROW:%.*]] = arith.muli %t, [[PITCH]] : index
// CHECK-NEXT:    [[OFF:%.*]] = arith.addi [[ROW]], %c0 : index
// CHECK-NEXT:    tmgpu.cp_async bytes(16) %sb[[[OFF]]], %x[%t, %c0] : memref<192xf16>, memref<8x16xf16>
// CHECK-NEXT:    tmgpu.cp_async_commit
// CHECK-NEXT:    tmgpu.cp_async_wait pending(0)
// CHECK:         tmgpu.ldmatrix x2 trans %fb, %sb[{{%.*}}] : memref<2xi32>, memref<192xf16>
// CHECK-NEXT:    tmgpu.mma m16n8k16 f16 %acc[%c1], %fa, %fb, %acc[%c1] : memref<2x4xf32>, memref<4xi32>, memref<2xi32>, memref<2x4xf32>
tm.kernel @tensor_core(%x: memref<8x16xf16>) grid(1) block(32) {
  %t = tm.thread_id
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %sb = tm.alloc shared layout(row_major(8, 16, pad=8)) : memref<8x16xf16>
  %fa = tm.alloc register : memref<4xi32>
  %fb = tm.alloc register : memref<2xi32>
  %acc = tm.alloc register : memref<2x4xf32>
  tm.cp_async bytes(16) %sb[%t, %c0], %x[%t, %c0] : memref<8x16xf16>, memref<8x16xf16>
  tm.cp_async_commit
  tm.cp_async_wait pending(0)
  tm.ldmatrix x2 trans %fb, %sb[%t, %c0] : memref<2xi32>, memref<8x16xf16>
  tm.mma m16n8k16 f16 %acc[%c1], %fa, %fb, %acc[%c1] : memref<2x4xf32>, memref<4xi32>, memref<2xi32>, memref<2x4xf32>
}

// -----

tm.kernel @laid_out_fragment(%x: memref<8x16xf16>) grid(1) block(32) {
  %t = tm.thread_id
  %sb = tm.alloc shared : memref<8x16xf16>
  %fb = tm.alloc register layout(column_major(1, 2)) : memref<1x2xi32>
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{convert-tm-to-gpu: a fragment of 'tm.ldmatrix' cannot have a data layout}}
  tm.ldmatrix x2 %fb[%c0], %sb[%t, %c0] : memref<1x2xi32>, memref<8x16xf16>
}

// -----

// A zero-filling copy keeps its condition.
// CHECK-LABEL: tmgpu.kernel @zfill
// CHECK:         %inside = arith.cmpi ult, %t, %c6 : index
// CHECK:         tmgpu.cp_async bytes(16) %sb[{{%.*}}], %x[%row, %c0] zfill_unless %inside : memref<192xf16>, memref<6x16xf16>
tm.kernel @zfill(%x: memref<6x16xf16>) grid(1) block(8) {
  %t = tm.thread_id
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %sb = tm.alloc shared layout(row_major(8, 16, pad=8)) : memref<8x16xf16>
  %inside = arith.cmpi ult, %t, %c6 : index
  %row = arith.select %inside, %t, %c0 : index
  tm.cp_async bytes(16) %sb[%t, %c0], %x[%row, %c0] zfill_unless %inside : memref<8x16xf16>, memref<6x16xf16>
  tm.cp_async_commit
  tm.cp_async_wait pending(0)
}

// -----

// A swizzled tile (no padding): each 16-byte chunk moves whole, so cp.async and ldmatrix
// address its first element's swizzled offset.
// CHECK-LABEL: tmgpu.kernel @swizzled_tile
// CHECK:         %sb = tmgpu.shared_alloc : memref<512xf16>
// CHECK:         [[OFF:%.*]] = arith.xori %unswizzled, {{%.*}} : index
// CHECK-NEXT:    tmgpu.cp_async bytes(16) %sb[[[OFF]]], %x[%t, %col] : memref<512xf16>, memref<8x64xf16>
// CHECK:         [[OFF2:%.*]] = arith.xori %unswizzled_1, {{%.*}} : index
// CHECK-NEXT:    tmgpu.ldmatrix x1 %fb, %sb[[[OFF2]]] : memref<1xi32>, memref<512xf16>
tm.kernel @swizzled_tile(%x: memref<8x64xf16>) grid(1) block(8) {
  %t = tm.thread_id
  %col = arith.constant 16 : index
  %sb = tm.alloc shared layout(row_major(8, 64) ^ swizzle(3, 3, 3)) : memref<8x64xf16>
  %fb = tm.alloc register : memref<1xi32>
  tm.cp_async bytes(16) %sb[%t, %col], %x[%t, %col] : memref<8x64xf16>, memref<8x64xf16>
  tm.cp_async_commit
  tm.cp_async_wait pending(0)
  tm.ldmatrix x1 %fb, %sb[%t, %col] : memref<1xi32>, memref<8x64xf16>
}

// -----

// A swizzle that moves 8-byte pieces would split a 16-byte chunk.
tm.kernel @swizzle_splits_chunks(%x: memref<8x64xf16>) grid(1) block(8) {
  %t = tm.thread_id
  %c0 = arith.constant 0 : index
  %sb = tm.alloc shared layout(row_major(8, 64) ^ swizzle(3, 2, 4)) : memref<8x64xf16>
  // expected-error@+1 {{convert-tm-to-gpu: 'tm.cp_async' moves 16 contiguous bytes, but the layout 'row_major(8, 64) ^ swizzle(3, 2, 4)' keeps only 8-byte pieces together (the swizzle's base must be at least 3)}}
  tm.cp_async bytes(16) %sb[%t, %c0], %x[%t, %c0] : memref<8x64xf16>, memref<8x64xf16>
}

// -----

tm.kernel @swizzle_splits_ldmatrix_rows() grid(1) block(32) {
  %t = tm.thread_id
  %c0 = arith.constant 0 : index
  %sb = tm.alloc shared layout(row_major(32, 64) ^ swizzle(2, 1, 4)) : memref<32x64xf16>
  %fb = tm.alloc register : memref<1xi32>
  // expected-error@+1 {{convert-tm-to-gpu: 'tm.ldmatrix' moves 16 contiguous bytes, but the layout 'row_major(32, 64) ^ swizzle(2, 1, 4)' keeps only 4-byte pieces together (the swizzle's base must be at least 3)}}
  tm.ldmatrix x1 %fb, %sb[%t, %c0] : memref<1xi32>, memref<32x64xf16>
}
