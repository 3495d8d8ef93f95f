// RUN: not tm-opt %s -p convert-tm-to-gpu 2>&1 | filecheck %s
//
// convert-tm-to-gpu needs the task mappings lowered first: a remaining tm.for_task is
// one error naming the op's line, not a traceback.

// CHECK:      tm-opt: error: {{.*}}convert_tm_to_gpu_leftover.mlir:12:3: convert-tm-to-gpu: tm.for_task remains; run tm-lower-mappings first
// CHECK-NEXT: {{^}}    tm.for_task (%i) in spatial(4) on %tid {
// CHECK-NEXT: {{^}}    ^
// CHECK-NOT:  Traceback
tm.kernel @not_lowered(%x: memref<4xf32>) grid(1) block(4) {
  %tid = tm.thread_id
  tm.for_task (%i) in spatial(4) on %tid {
    %v = tm.load %x[%i] : memref<4xf32>
  }
}
