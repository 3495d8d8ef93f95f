// RUN: tm-opt %s --split-input-file -p convert-tm-to-gpu | filecheck %s
//
// convert-tm-to-gpu with data layouts: a laid-out shared or register buffer becomes 1-D
// storage of layout.size elements, and each access indexes layout.offset(indices) in
// folded index arithmetic (a swizzle's XOR last). Guards check the logical indices against
// the logical shape.

// A row_major layout is the arithmetic a person writes: i * cols + j.
// CHECK-LABEL: tmgpu.kernel @row_major
// CHECK-NEXT:    %i = tmgpu.thread_id x
// CHECK-NEXT:    %j = tmgpu.block_id x
// CHECK-NEXT:    %s = tmgpu.shared_alloc : memref<512xf32>
// CHECK-NEXT:    %v = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[COLS:[0-9]+]] = arith.constant 64 : index
// CHECK-NEXT:    %[[ROW:[0-9]+]] = arith.muli %i, %[[COLS]] : index
// CHECK-NEXT:    %[[OFF:[0-9]+]] = arith.addi %[[ROW]], %j : index
// CHECK-NEXT:    memref.store %v, %s[%[[OFF]]] : memref<512xf32>
// CHECK-NEXT:  }
tm.kernel @row_major() grid(64) block(8) {
  %i = tm.thread_id
  %j = tm.block_id
  %s = tm.alloc shared layout(row_major(8, 64)) : memref<8x64xf32>
  %v = arith.constant 1.0 : f32
  tm.store %v, %s[%i, %j] : memref<8x64xf32>
}

// -----

// column_major with padding: the first dimension is contiguous and stored with 1 extra
// element, so offset = i + j * 65 and the storage has 65 * 8 elements.
// CHECK-LABEL: tmgpu.kernel @column_major_padded
// CHECK:         %s = tmgpu.shared_alloc : memref<520xf32>
// CHECK-NEXT:    %[[STRIDE:[0-9]+]] = arith.constant 65 : index
// CHECK-NEXT:    %[[COL:[0-9]+]] = arith.muli %j, %[[STRIDE]] : index
// CHECK-NEXT:    %[[OFF:[0-9]+]] = arith.addi %i, %[[COL]] : index
// CHECK-NEXT:    %v = memref.load %s[%[[OFF]]] : memref<520xf32>
// CHECK-NEXT:  }
tm.kernel @column_major_padded() grid(8) block(64) {
  %i = tm.thread_id
  %j = tm.block_id
  %s = tm.alloc shared layout(column_major(64, 8, pad=1)) : memref<64x8xf32>
  %v = tm.load %s[%i, %j] : memref<64x8xf32>
}

// -----

// A composition row_major(2, 2) * column_major(4, 8) of shape 8x16: tile (i / 4, j / 8)
// row-major with 32 elements per tile, inside it (i % 4, j % 8) column-major:
// offset = (i / 4) * 64 + (j / 8) * 32 + i % 4 + (j % 8) * 4.
// CHECK-LABEL: tmgpu.kernel @composed
// CHECK:         %s = tmgpu.shared_alloc : memref<128xf32>
// CHECK-NEXT:    %v = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[C4:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[TI:[0-9]+]] = arith.divui %i, %[[C4]] : index
// CHECK-NEXT:    %[[C64:[0-9]+]] = arith.constant 64 : index
// CHECK-NEXT:    %[[A:[0-9]+]] = arith.muli %[[TI]], %[[C64]] : index
// CHECK-NEXT:    %[[C8:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %[[TJ:[0-9]+]] = arith.divui %j, %[[C8]] : index
// CHECK-NEXT:    %[[C32:[0-9]+]] = arith.constant 32 : index
// CHECK-NEXT:    %[[B:[0-9]+]] = arith.muli %[[TJ]], %[[C32]] : index
// CHECK-NEXT:    %[[AB:[0-9]+]] = arith.addi %[[A]], %[[B]] : index
// CHECK-NEXT:    %[[C4B:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[II:[0-9]+]] = arith.remui %i, %[[C4B]] : index
// CHECK-NEXT:    %[[ABC:[0-9]+]] = arith.addi %[[AB]], %[[II]] : index
// CHECK-NEXT:    %[[C8B:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %[[IJ:[0-9]+]] = arith.remui %j, %[[C8B]] : index
// CHECK-NEXT:    %[[C4C:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[D:[0-9]+]] = arith.muli %[[IJ]], %[[C4C]] : index
// CHECK-NEXT:    %[[OFF:[0-9]+]] = arith.addi %[[ABC]], %[[D]] : index
// CHECK-NEXT:    memref.store %v, %s[%[[OFF]]] : memref<128xf32>
// CHECK-NEXT:  }
tm.kernel @composed() grid(16) block(8) {
  %i = tm.thread_id
  %j = tm.block_id
  %s = tm.alloc shared layout(row_major(2, 2) * column_major(4, 8)) : memref<8x16xf32>
  %v = arith.constant 1.0 : f32
  tm.store %v, %s[%i, %j] : memref<8x16xf32>
}

// -----

// Guards compare the logical indices with the logical shape (8x16, not the 136 elements of
// storage), and the offset is computed inside the guard. A register buffer becomes a
// local array.
// CHECK-LABEL: tmgpu.kernel @guarded
// CHECK:         %r = tmgpu.local_alloc : memref<136xf32>
// CHECK-NEXT:    %[[ROWS:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %[[IN0:[0-9]+]] = arith.cmpi ult, %i, %[[ROWS]] : index
// CHECK-NEXT:    %[[COLS:[0-9]+]] = arith.constant 16 : index
// CHECK-NEXT:    %[[IN1:[0-9]+]] = arith.cmpi ult, %j, %[[COLS]] : index
// CHECK-NEXT:    %[[IN:[0-9]+]] = arith.andi %[[IN0]], %[[IN1]] : i1
// CHECK-NEXT:    %v = scf.if %[[IN]] -> (f32) {
// CHECK-NEXT:      %[[STRIDE:[0-9]+]] = arith.constant 17 : index
// CHECK-NEXT:      %[[ROW:[0-9]+]] = arith.muli %i, %[[STRIDE]] : index
// CHECK-NEXT:      %[[OFF:[0-9]+]] = arith.addi %[[ROW]], %j : index
// CHECK-NEXT:      %[[L:[0-9]+]] = memref.load %r[%[[OFF]]] : memref<136xf32>
// CHECK-NEXT:      scf.yield %[[L]] : f32
// CHECK-NEXT:    } else {
// CHECK:         %[[ROWS2:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %[[IN2:[0-9]+]] = arith.cmpi ult, %i, %[[ROWS2]] : index
// CHECK-NEXT:    scf.if %[[IN2]] {
// CHECK-NEXT:      %[[STRIDE2:[0-9]+]] = arith.constant 17 : index
// CHECK-NEXT:      %[[ROW2:[0-9]+]] = arith.muli %i, %[[STRIDE2]] : index
// CHECK-NEXT:      %[[OFF2:[0-9]+]] = arith.addi %[[ROW2]], %j : index
// CHECK-NEXT:      memref.store %v, %r[%[[OFF2]]] : memref<136xf32>
// CHECK-NEXT:    }
tm.kernel @guarded() grid(16) block(16) {
  %i = tm.thread_id
  %j = tm.block_id
  %r = tm.alloc register layout(row_major(8, 16, pad=1)) : memref<8x16xf32>
  %v = tm.load %r[%i, %j] guard [0, 1] : memref<8x16xf32>
  tm.store %v, %r[%i, %j] guard [0] : memref<8x16xf32>
}

// -----

// Extent-1 dimensions add nothing; buffers without a layout keep their shape and indices.
// CHECK-LABEL: tmgpu.kernel @unit_dims_and_plain
// CHECK:         %s = tmgpu.shared_alloc : memref<8xf32>
// CHECK-NEXT:    %p = tmgpu.shared_alloc : memref<4x8xf32>
// CHECK-NEXT:    %v = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[C4:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[DIV:[0-9]+]] = arith.divui %j, %[[C4]] : index
// CHECK-NEXT:    %[[C4B:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[A:[0-9]+]] = arith.muli %[[DIV]], %[[C4B]] : index
// CHECK-NEXT:    %[[C4C:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[REM:[0-9]+]] = arith.remui %j, %[[C4C]] : index
// CHECK-NEXT:    %[[OFF:[0-9]+]] = arith.addi %[[A]], %[[REM]] : index
// CHECK-NEXT:    memref.store %v, %s[%[[OFF]]] : memref<8xf32>
// CHECK-NEXT:    memref.store %v, %p[%i, %j] : memref<4x8xf32>
// CHECK-NEXT:  }
tm.kernel @unit_dims_and_plain() grid(8) block(1) {
  %i = tm.thread_id
  %j = tm.block_id
  %s = tm.alloc shared layout(row_major(1, 2) * column_major(1, 4)) : memref<1x8xf32>
  %p = tm.alloc shared : memref<4x8xf32>
  %v = arith.constant 1.0 : f32
  tm.store %v, %s[%i, %j] : memref<1x8xf32>
  tm.store %v, %p[%i, %j] : memref<4x8xf32>
}

// -----

// A swizzle XORs bits of the offset into lower ones after the atoms' arithmetic:
// swizzle(3, 3, 3) is o ^ ((o >> 3) & 56), moving each 8-element (16-byte) chunk of a row
// to chunk column (j / 8) ^ (i % 8). The storage keeps the layout's size.
// CHECK-LABEL: tmgpu.kernel @swizzled
// CHECK:         %s = tmgpu.shared_alloc : memref<512xf16>
// CHECK-NEXT:    %v = arith.constant 1.000000e+00 : f16
// CHECK-NEXT:    %[[COLS:[0-9]+]] = arith.constant 64 : index
// CHECK-NEXT:    %[[ROW:[0-9]+]] = arith.muli %i, %[[COLS]] : index
// CHECK-NEXT:    %unswizzled = arith.addi %[[ROW]], %j : index
// CHECK-NEXT:    %[[SHIFT:[0-9]+]] = arith.constant 3 : index
// CHECK-NEXT:    %[[HIGH:[0-9]+]] = arith.shrui %unswizzled, %[[SHIFT]] : index
// CHECK-NEXT:    %[[MASK:[0-9]+]] = arith.constant 56 : index
// CHECK-NEXT:    %[[BITS:[0-9]+]] = arith.andi %[[HIGH]], %[[MASK]] : index
// CHECK-NEXT:    %[[OFF:[0-9]+]] = arith.xori %unswizzled, %[[BITS]] : index
// CHECK-NEXT:    memref.store %v, %s[%[[OFF]]] : memref<512xf16>
// CHECK-NEXT:  }
tm.kernel @swizzled() grid(64) block(8) {
  %i = tm.thread_id
  %j = tm.block_id
  %s = tm.alloc shared layout(row_major(8, 64) ^ swizzle(3, 3, 3)) : memref<8x64xf16>
  %v = arith.constant 1.0 : f16
  tm.store %v, %s[%i, %j] : memref<8x64xf16>
}

// -----

// A 1-D swizzled layout whose offset is the index itself: the index keeps its name.
// CHECK-LABEL: tmgpu.kernel @swizzled_1d
// CHECK:         %[[SHIFT:[0-9]+]] = arith.constant 2 : index
// CHECK-NEXT:    %[[HIGH:[0-9]+]] = arith.shrui %i, %[[SHIFT]] : index
// CHECK-NEXT:    %[[MASK:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:    %[[BITS:[0-9]+]] = arith.andi %[[HIGH]], %[[MASK]] : index
// CHECK-NEXT:    %[[OFF:[0-9]+]] = arith.xori %i, %[[BITS]] : index
// CHECK-NEXT:    %v = memref.load %r[%[[OFF]]] : memref<8xf32>
tm.kernel @swizzled_1d() grid(1) block(8) {
  %i = tm.thread_id
  %r = tm.alloc register layout(row_major(8) ^ swizzle(1, 0, 2)) : memref<8xf32>
  %v = tm.load %r[%i] : memref<8xf32>
}
