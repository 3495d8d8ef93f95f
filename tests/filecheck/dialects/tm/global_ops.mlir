// RUN: tm-opt %s --split-input-file | filecheck %s
// RUN: tm-opt %s --split-input-file | tm-opt --split-input-file | filecheck %s
//
// The ops blocks of one launch use to hand each other results through global memory
// print as they are written (round trip), at the tm and the tmgpu level.

// CHECK-LABEL: tm.kernel @publish
// CHECK:      tm.store %p, %ws[%s, %t] : memref<2x128xf32>
// CHECK-NEXT: tm.fence
// CHECK-NEXT: tm.barrier
// CHECK-NEXT: %old = tm.atomic_add %counters[%c0], %one : memref<4xi32>
// CHECK-NEXT: %q = tm.load_cg %ws[%c0, %t] : memref<2x128xf32>
// CHECK-NEXT: %n = tm.load_cg %counters[%c0] {note = "i32"} : memref<4xi32>
tm.kernel @publish(%ws: memref<2x128xf32>, %counters: memref<4xi32>) grid(2) block(128) {
  %t = tm.thread_id
  %s = tm.block_id
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %p = arith.constant 1.5 : f32
  tm.store %p, %ws[%s, %t] : memref<2x128xf32>
  tm.fence
  tm.barrier
  %old = tm.atomic_add %counters[%c0], %one : memref<4xi32>
  %q = tm.load_cg %ws[%c0, %t] : memref<2x128xf32>
  %n = tm.load_cg %counters[%c0] {note = "i32"} : memref<4xi32>
}

// -----

// CHECK-LABEL: tmgpu.kernel @gpu_level
// CHECK:      tmgpu.fence
// CHECK-NEXT: %old = tmgpu.atomic_add %counters[%t], %one : memref<128xi32>
// CHECK-NEXT: %q = tmgpu.load_cg %ws[%t] : memref<128xf64>
tmgpu.kernel @gpu_level(%ws: memref<128xf64>, %counters: memref<128xi32>) block(128) {
  %t = tmgpu.thread_id x
  %one = arith.constant 1 : i32
  tmgpu.fence
  %old = tmgpu.atomic_add %counters[%t], %one : memref<128xi32>
  %q = tmgpu.load_cg %ws[%t] : memref<128xf64>
}
