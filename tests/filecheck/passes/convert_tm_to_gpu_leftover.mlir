// RUN: not tm-opt %s -p convert-tm-to-gpu 2>&1 | filecheck %s
//
// convert-tm-to-gpu needs the task mappings lowered first: a remaining tm.for_task is
// one error line, not a traceback.

// CHECK:     tm-opt: error: convert-tm-to-gpu: tm.for_task remains; run tm-lower-mappings first
// CHECK-NOT: Traceback
tm.kernel @not_lowered(%x: memref<4xf32>) grid(1) block(4) {
  %tid = tm.thread_id
  tm.for_task (%i) in spatial(4) on %tid {
    %v = tm.load %x[%i] : memref<4xf32>
  }
}
