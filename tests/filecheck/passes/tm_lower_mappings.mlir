// RUN: tm-opt %s --split-input-file -p tm-lower-mappings | filecheck %s
//
// tm-lower-mappings: each tm.for_task becomes worker-id arithmetic (spatial), scf.for
// loops (repeat) and the composition `outer * inner_extent + inner`; the body is inlined
// with the task indices replaced.

// spatial(4, 8): worker w gets task (w / 8, w % 8).
// CHECK-LABEL: tm.kernel @spatial
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    %[[C8:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %i = arith.divui %tid, %[[C8]] : index
// CHECK-NEXT:    %[[C8B:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %j = arith.remui %tid, %[[C8B]] : index
// CHECK-NEXT:    %v = tm.load %x[%i, %j] : memref<4x8xf32>
// CHECK-NEXT:    tm.store %v, %x[%i, %j] : memref<4x8xf32>
// CHECK-NEXT:  }
tm.kernel @spatial(%x: memref<4x8xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i, %j) in spatial(4, 8) on %tid {
    %v = tm.load %x[%i, %j] : memref<4x8xf32>
    tm.store %v, %x[%i, %j] : memref<4x8xf32>
  }
}

// -----

// repeat(2, 3): one worker, a loop per dimension, short loops marked for unrolling.
// CHECK-LABEL: tm.kernel @repeat
// CHECK-NEXT:    %[[LB0:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[UB0:[0-9]+]] = arith.constant 2 : index
// CHECK-NEXT:    %[[ST0:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:    scf.for %i = %[[LB0]] to %[[UB0]] step %[[ST0]] {
// CHECK-NEXT:      %[[LB1:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:      %[[UB1:[0-9]+]] = arith.constant 3 : index
// CHECK-NEXT:      %[[ST1:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:      scf.for %j = %[[LB1]] to %[[UB1]] step %[[ST1]] {
// CHECK-NEXT:        %v = tm.load %x[%i, %j] : memref<2x3xf32>
// CHECK-NEXT:        tm.store %v, %x[%i, %j] : memref<2x3xf32>
// CHECK-NEXT:      } {tm.unroll}
// CHECK-NEXT:    } {tm.unroll}
// CHECK-NEXT:  }
tm.kernel @repeat(%x: memref<2x3xf32>) grid(1) block(1) {
  tm.for_task (%i, %j) in repeat(2, 3) {
    %v = tm.load %x[%i, %j] : memref<2x3xf32>
    tm.store %v, %x[%i, %j] : memref<2x3xf32>
  }
}

// -----

// Loops longer than 16 are not marked for unrolling.
// CHECK-LABEL: tm.kernel @long_repeat
// CHECK:         %[[UB:[0-9]+]] = arith.constant 32 : index
// CHECK:         scf.for %i = %{{[0-9]+}} to %[[UB]] step %{{[0-9]+}} {
// CHECK-NEXT:      %v = tm.load %x[%i] : memref<32xf32>
// CHECK-NEXT:    }{{$}}
tm.kernel @long_repeat(%x: memref<32xf32>) grid(1) block(1) {
  tm.for_task (%i) in repeat(32) {
    %v = tm.load %x[%i] : memref<32xf32>
  }
}

// -----

// spatial(4, 8) * repeat(2, 2): worker w owns the 2x2 tile at (w / 8, w % 8); the task
// indices are outer * 2 + inner in each dimension.
// CHECK-LABEL: tm.kernel @composed
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    %[[C8:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %[[ROW:[0-9]+]] = arith.divui %tid, %[[C8]] : index
// CHECK-NEXT:    %[[C8B:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %[[COL:[0-9]+]] = arith.remui %tid, %[[C8B]] : index
// CHECK-NEXT:    %[[LB0:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[UB0:[0-9]+]] = arith.constant 2 : index
// CHECK-NEXT:    %[[ST0:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:    scf.for %[[R:[0-9]+]] = %[[LB0]] to %[[UB0]] step %[[ST0]] {
// CHECK-NEXT:      %[[LB1:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:      %[[UB1:[0-9]+]] = arith.constant 2 : index
// CHECK-NEXT:      %[[ST1:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:      scf.for %[[S:[0-9]+]] = %[[LB1]] to %[[UB1]] step %[[ST1]] {
// CHECK-NEXT:        %[[C2:[0-9]+]] = arith.constant 2 : index
// CHECK-NEXT:        %[[RS:[0-9]+]] = arith.muli %[[ROW]], %[[C2]] : index
// CHECK-NEXT:        %i = arith.addi %[[RS]], %[[R]] : index
// CHECK-NEXT:        %[[C2B:[0-9]+]] = arith.constant 2 : index
// CHECK-NEXT:        %[[CS:[0-9]+]] = arith.muli %[[COL]], %[[C2B]] : index
// CHECK-NEXT:        %j = arith.addi %[[CS]], %[[S]] : index
// CHECK-NEXT:        %v = tm.load %x[%i, %j] : memref<8x16xf32>
// CHECK-NEXT:      } {tm.unroll}
// CHECK-NEXT:    } {tm.unroll}
tm.kernel @composed(%x: memref<8x16xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i, %j) in spatial(4, 8) * repeat(2, 2) on %tid {
    %v = tm.load %x[%i, %j] : memref<8x16xf32>
  }
}

// -----

// repeat(2, 2) * spatial(4, 8): the same tasks, but the worker grid is tiled twice in
// each dimension (outer = loop index, inner = worker coordinate).
// CHECK-LABEL: tm.kernel @composed_repeat_outer
// CHECK:         scf.for %[[R:[0-9]+]] =
// CHECK:           scf.for %[[S:[0-9]+]] =
// CHECK-NEXT:        %[[C8:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:        %[[ROW:[0-9]+]] = arith.divui %tid, %[[C8]] : index
// CHECK-NEXT:        %[[C8B:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:        %[[COL:[0-9]+]] = arith.remui %tid, %[[C8B]] : index
// CHECK-NEXT:        %[[C4:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:        %[[RS:[0-9]+]] = arith.muli %[[R]], %[[C4]] : index
// CHECK-NEXT:        %i = arith.addi %[[RS]], %[[ROW]] : index
// CHECK-NEXT:        %[[C8C:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:        %[[SS:[0-9]+]] = arith.muli %[[S]], %[[C8C]] : index
// CHECK-NEXT:        %j = arith.addi %[[SS]], %[[COL]] : index
tm.kernel @composed_repeat_outer(%x: memref<8x16xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i, %j) in repeat(2, 2) * spatial(4, 8) on %tid {
    %v = tm.load %x[%i, %j] : memref<8x16xf32>
  }
}

// -----

// spatial(4) * spatial(8): the outer atom takes the high part of the worker id
// (w / 8, no remainder needed), the inner one the low part (w % 8).
// CHECK-LABEL: tm.kernel @two_spatial
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    %[[C8:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %[[HI:[0-9]+]] = arith.divui %tid, %[[C8]] : index
// CHECK-NEXT:    %[[C8B:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %[[LO:[0-9]+]] = arith.remui %tid, %[[C8B]] : index
// CHECK-NEXT:    %[[C8C:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %[[HS:[0-9]+]] = arith.muli %[[HI]], %[[C8C]] : index
// CHECK-NEXT:    %i = arith.addi %[[HS]], %[[LO]] : index
// CHECK-NEXT:    %v = tm.load %x[%i] : memref<32xf32>
tm.kernel @two_spatial(%x: memref<32xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i) in spatial(4) * spatial(8) on %tid {
    %v = tm.load %x[%i] : memref<32xf32>
  }
}

// -----

// Extents of 1 cost nothing: spatial(8, 1) needs no arithmetic for its second dimension
// (the index is the constant 0) and repeat(1, 1) no loops; spatial(32) is the worker id.
// CHECK-LABEL: tm.kernel @unit_extents
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-NEXT:    %v = tm.load %x[%tid, %[[C0]]] : memref<8x1xf32>
// CHECK-NEXT:  }
tm.kernel @unit_extents(%x: memref<8x1xf32>) grid(1) block(8) {
  %tid = tm.thread_id
  tm.for_task (%i, %j) in spatial(8, 1) * repeat(1, 1) on %tid {
    %v = tm.load %x[%i, %j] : memref<8x1xf32>
  }
}

// -----

// CHECK-LABEL: tm.kernel @unit_repeat
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NOT:     scf.for
// CHECK-NOT:     arith
// CHECK-NEXT:    %v = tm.load %x[%tid] : memref<32xf32>
// CHECK-NEXT:  }
tm.kernel @unit_repeat(%x: memref<32xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i) in repeat(1) * spatial(32) * repeat(1) on %tid {
    %v = tm.load %x[%i] : memref<32xf32>
  }
}

// -----

// The block has more threads than the mapping has workers: the body is guarded.
// CHECK-LABEL: tm.kernel @more_threads_than_workers
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    %[[N:[0-9]+]] = arith.constant 32 : index
// CHECK-NEXT:    %[[IN:[0-9]+]] = arith.cmpi ult, %tid, %[[N]] : index
// CHECK-NEXT:    scf.if %[[IN]] {
// CHECK-NEXT:      %v = tm.load %x[%tid] : memref<32xf32>
// CHECK-NEXT:      tm.store %v, %x[%tid] : memref<32xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tm.kernel @more_threads_than_workers(%x: memref<32xf32>) grid(1) block(64) {
  %tid = tm.thread_id
  tm.for_task (%i) in spatial(32) on %tid {
    %v = tm.load %x[%i] : memref<32xf32>
    tm.store %v, %x[%i] : memref<32xf32>
  }
}

// -----

// The block has exactly as many threads as the mapping has workers: no guard.
// CHECK-LABEL: tm.kernel @threads_equal_workers
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NOT:     scf.if
// CHECK-NEXT:    %v = tm.load %x[%tid] : memref<32xf32>
// CHECK-NEXT:    tm.store %v, %x[%tid] : memref<32xf32>
// CHECK-NEXT:  }
tm.kernel @threads_equal_workers(%x: memref<32xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i) in spatial(32) on %tid {
    %v = tm.load %x[%i] : memref<32xf32>
    tm.store %v, %x[%i] : memref<32xf32>
  }
}

// -----

// Block ids are bounded by the grid: a grid larger than the mapping is guarded, and a
// nested thread mapping that matches the block is not.
// CHECK-LABEL: tm.kernel @more_blocks_than_workers
// CHECK-NEXT:    %bid = tm.block_id
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    %[[N:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[IN:[0-9]+]] = arith.cmpi ult, %bid, %[[N]] : index
// CHECK-NEXT:    scf.if %[[IN]] {
// CHECK-NEXT:      %c8 = arith.constant 8 : index
// CHECK-NEXT:      %base = arith.muli %bid, %c8 : index
// CHECK-NEXT:      %i = arith.addi %base, %tid : index
// CHECK-NEXT:      %v = tm.load %x[%i] : memref<32xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tm.kernel @more_blocks_than_workers(%x: memref<32xf32>) grid(5) block(8) {
  %bid = tm.block_id
  %tid = tm.thread_id
  tm.for_task (%b) in spatial(4) on %bid {
    tm.for_task (%t) in spatial(8) on %tid {
      %c8 = arith.constant 8 : index
      %base = arith.muli %b, %c8 : index
      %i = arith.addi %base, %t : index
      %v = tm.load %x[%i] : memref<32xf32>
    }
  }
}

// -----

// A computed worker id that may exceed the mapping's workers is guarded (2 * tid < 63).
// CHECK-LABEL: tm.kernel @unknown_worker_range
// CHECK:         %w = arith.addi %tid, %tid : index
// CHECK-NEXT:    %[[N:[0-9]+]] = arith.constant 32 : index
// CHECK-NEXT:    %[[IN:[0-9]+]] = arith.cmpi ult, %w, %[[N]] : index
// CHECK-NEXT:    scf.if %[[IN]] {
// CHECK-NEXT:      %v = tm.load %x[%w] : memref<32xf32>
tm.kernel @unknown_worker_range(%x: memref<32xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  %w = arith.addi %tid, %tid : index
  tm.for_task (%i) in spatial(32) on %w {
    %v = tm.load %x[%i] : memref<32xf32>
  }
}

// -----

// A vector load inside a mapping stays as it is, its indices the task's.
// CHECK-LABEL: tm.kernel @vector_load_in_mapping
// CHECK:         %r = arith.divui %tid, %{{[0-9]+}} : index
// CHECK:         scf.for
// CHECK:           %j = arith.addi
// CHECK:           %k = arith.muli %j, %c4 : index
// CHECK-NEXT:      %w, %w_1, %w_2, %w_3 = tm.load_vector x4 %x[%r, %k] : memref<8x64xf32>
// CHECK-NEXT:    } {tm.unroll}
tm.kernel @vector_load_in_mapping(%x: memref<8x64xf32>) grid(1) block(16) {
  %tid = tm.thread_id
  tm.for_task (%r, %j) in spatial(8, 2) * repeat(1, 8) on %tid {
    %c4 = arith.constant 4 : index
    %k = arith.muli %j, %c4 : index
    %w:4 = tm.load_vector x4 %x[%r, %k] : memref<8x64xf32>
  }
}
