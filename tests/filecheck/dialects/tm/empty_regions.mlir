// RUN: tm-opt %s | tm-opt | filecheck %s
//
// Empty kernel and for_task bodies, and discardable attributes on the custom-syntax ops,
// survive a print/parse round trip.

// CHECK-LABEL: tm.kernel @empty(%x: memref<4xf32>) grid(1) block(4) {
// CHECK-NEXT:  }
tm.kernel @empty(%x: memref<4xf32>) grid(1) block(4) {
}

// CHECK-LABEL: tm.kernel @attrs(%x: memref<4xf32>) grid(1) block(4) {
// CHECK-NEXT:    %t = tm.thread_id
// CHECK-NEXT:    tm.for_task (%i) in spatial(4) on %t attributes {note = "empty"} {
// CHECK-NEXT:    }
// CHECK-NEXT:    %v = tm.load %x[%t] {note = 1 : i64} : memref<4xf32>
// CHECK-NEXT:    tm.store %v, %x[%t] guard [0] {note = 2 : i64} : memref<4xf32>
// CHECK-NEXT:  }
tm.kernel @attrs(%x: memref<4xf32>) grid(1) block(4) {
  %t = tm.thread_id
  tm.for_task (%i) in spatial(4) on %t attributes {note = "empty"} {
  }
  %v = tm.load %x[%t] {note = 1} : memref<4xf32>
  tm.store %v, %x[%t] guard [0] {note = 2} : memref<4xf32>
}
