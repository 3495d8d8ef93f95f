// RUN: tm-opt %s --split-input-file -p tm-lower-mappings | filecheck %s
//
// tm-lower-mappings honours the `ranks` and `unroll` keywords: a spatial atom unravels the
// worker id over its dimensions in rank order (rank 0 the high digit), a repeat atom nests
// its loops in rank order (rank 0 outermost) and marks each `tm.unroll` per its flag.

// spatial(4, 8, ranks=[1, 0]) is column-major: worker w gets task (w % 4, w / 4).
// CHECK-LABEL: tm.kernel @column_major_spatial
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    %[[C4:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %j = arith.divui %tid, %[[C4]] : index
// CHECK-NEXT:    %[[C4B:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %i = arith.remui %tid, %[[C4B]] : index
// CHECK-NEXT:    %v = tm.load %x[%i, %j] : memref<4x8xf32>
// CHECK-NEXT:  }
tm.kernel @column_major_spatial(%x: memref<4x8xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i, %j) in spatial(4, 8, ranks=[1, 0]) on %tid {
    %v = tm.load %x[%i, %j] : memref<4x8xf32>
  }
}

// -----

// repeat(2, 3, ranks=[1, 0], unroll=[false, true]): the loop over dimension 1 (extent 3)
// is outermost and unrolled; the loop over dimension 0 (extent 2) is a plain loop.
// CHECK-LABEL: tm.kernel @repeat_ranks_unroll
// CHECK-NEXT:    %[[LB0:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[UB0:[0-9]+]] = arith.constant 3 : index
// CHECK-NEXT:    %[[ST0:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:    scf.for %j = %[[LB0]] to %[[UB0]] step %[[ST0]] {
// CHECK-NEXT:      %[[LB1:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:      %[[UB1:[0-9]+]] = arith.constant 2 : index
// CHECK-NEXT:      %[[ST1:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:      scf.for %i = %[[LB1]] to %[[UB1]] step %[[ST1]] {
// CHECK-NEXT:        %v = tm.load %x[%i, %j] : memref<2x3xf32>
// CHECK-NEXT:      }{{$}}
// CHECK-NEXT:    } {tm.unroll}
// CHECK-NEXT:  }
tm.kernel @repeat_ranks_unroll(%x: memref<2x3xf32>) grid(1) block(1) {
  tm.for_task (%i, %j) in repeat(2, 3, ranks=[1, 0], unroll=[false, true]) {
    %v = tm.load %x[%i, %j] : memref<2x3xf32>
  }
}

// -----

// Explicit flags override the default (extent <= 16): a loop of 32 unrolled, one of 4 not.
// CHECK-LABEL: tm.kernel @unroll_overrides_default
// CHECK:         %[[UB0:[0-9]+]] = arith.constant 32 : index
// CHECK-NEXT:    %{{[0-9]+}} = arith.constant 1 : index
// CHECK-NEXT:    scf.for %i = %{{[0-9]+}} to %[[UB0]] step %{{[0-9]+}} {
// CHECK:           %[[UB1:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:      %{{[0-9]+}} = arith.constant 1 : index
// CHECK-NEXT:      scf.for %j = %{{[0-9]+}} to %[[UB1]] step %{{[0-9]+}} {
// CHECK-NEXT:        %v = tm.load %x[%i, %j] : memref<32x4xf32>
// CHECK-NEXT:      }{{$}}
// CHECK-NEXT:    } {tm.unroll}
tm.kernel @unroll_overrides_default(%x: memref<32x4xf32>) grid(1) block(1) {
  tm.for_task (%i, %j) in repeat(32, 4, unroll=[true, false]) {
    %v = tm.load %x[%i, %j] : memref<32x4xf32>
  }
}

// -----

// spatial(2, 1) * spatial(4, 8, ranks=[1, 0]): the inner atom's worker id is the low part
// of the thread id (tid % 32), unravelled column-major: (wid % 4, wid / 4).
// CHECK-LABEL: tm.kernel @composed_column_major
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    %[[C32:[0-9]+]] = arith.constant 32 : index
// CHECK-NEXT:    %[[HI:[0-9]+]] = arith.divui %tid, %[[C32]] : index
// CHECK-NEXT:    %[[C32B:[0-9]+]] = arith.constant 32 : index
// CHECK-NEXT:    %[[LO:[0-9]+]] = arith.remui %tid, %[[C32B]] : index
// CHECK-NEXT:    %[[C4:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %j = arith.divui %[[LO]], %[[C4]] : index
// CHECK-NEXT:    %[[C4B:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[ROW:[0-9]+]] = arith.remui %[[LO]], %[[C4B]] : index
// CHECK-NEXT:    %[[C4C:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[HS:[0-9]+]] = arith.muli %[[HI]], %[[C4C]] : index
// CHECK-NEXT:    %i = arith.addi %[[HS]], %[[ROW]] : index
// CHECK-NEXT:    %v = tm.load %x[%i, %j] : memref<8x8xf32>
tm.kernel @composed_column_major(%x: memref<8x8xf32>) grid(1) block(64) {
  %tid = tm.thread_id
  tm.for_task (%i, %j) in spatial(2, 1) * spatial(4, 8, ranks=[1, 0]) on %tid {
    %v = tm.load %x[%i, %j] : memref<8x8xf32>
  }
}
