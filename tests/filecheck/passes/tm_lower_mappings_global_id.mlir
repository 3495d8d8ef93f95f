// RUN: tm-opt %s --split-input-file -p tm-lower-mappings | filecheck %s
//
// A mapping on the global thread id `bid * block + tid` (the data-movement template's):
// its range is grid * block, so the worker guard appears only when the mapping has fewer
// workers than that.

// 2 blocks of 32 threads, 64 workers: no guard.
// CHECK-LABEL: tm.kernel @exact
// CHECK:         %gid = arith.addi %{{[0-9]+}}, %tid : index
// CHECK-NOT:     scf.if
// CHECK:         tm.store
tm.kernel @exact(%x: memref<8x8xf32>) grid(2) block(32) {
  %bid = tm.block_id
  %tid = tm.thread_id
  %c32 = arith.constant 32 : index
  %0 = arith.muli %bid, %c32 : index
  %gid = arith.addi %0, %tid : index
  tm.for_task (%i, %j) in spatial(8, 8) on %gid {
    %v = tm.load %x[%i, %j] : memref<8x8xf32>
    tm.store %v, %x[%j, %i] : memref<8x8xf32>
  }
}

// -----

// 2 blocks of 32 threads, 60 workers: the last 4 threads get no task.
// CHECK-LABEL: tm.kernel @overhang
// CHECK:         %gid = arith.addi %tid, %{{[0-9]+}} : index
// CHECK-NEXT:    %[[N:[0-9]+]] = arith.constant 60 : index
// CHECK-NEXT:    %[[IN:[0-9]+]] = arith.cmpi ult, %gid, %[[N]] : index
// CHECK-NEXT:    scf.if %[[IN]] {
tm.kernel @overhang(%x: memref<6x10xf32>) grid(2) block(32) {
  %bid = tm.block_id
  %tid = tm.thread_id
  %c32 = arith.constant 32 : index
  %0 = arith.muli %c32, %bid : index
  %gid = arith.addi %tid, %0 : index
  tm.for_task (%i, %j) in spatial(6, 10) on %gid {
    %v = tm.load %x[%i, %j] : memref<6x10xf32>
    tm.store %v, %x[%i, %j] : memref<6x10xf32>
  }
}
