// RUN: tm-opt %s -p tm-lower-mappings | filecheck %s
//
// A leading extent of 1 in a spatial atom is the constant 0, not `worker / 8`.

// CHECK-LABEL: tm.kernel @leading_one(
// CHECK:         %t = tm.thread_id
// CHECK-NOT:     arith.divui
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    tm.store %{{.*}}, %x[%[[ZERO]], %{{.*}}]
tm.kernel @leading_one(%x: memref<1x8xf32>) grid(1) block(8) {
  %t = tm.thread_id
  %c = arith.constant 1.0 : f32
  tm.for_task (%i, %j) in spatial(1, 8) on %t {
    tm.store %c, %x[%i, %j] : memref<1x8xf32>
  }
}
