// RUN: tm-opt %s -p convert-graph-to-tm | filecheck %s
//
// Kernel names are unique across the functions of a module, each kernel is placed before
// the function that first launches it, a group of the same structure in another function
// launches that kernel again (no copy of it), and a function without graph ops (an
// identity model) still gets its output written, by a copy kernel.

// CHECK-LABEL: tm.kernel @copy_0(%x0: memref<5xf32>, %out: memref<5xf32>)
// CHECK-SAME:    tm.template = "elementwise"{{.*}}expr = "x0"
// CHECK-LABEL: func.func @identity(%x: memref<5xf32>, %x_out: memref<5xf32>)
// CHECK-NEXT:    tm.launch @copy_0(%x, %x_out)
func.func @identity(%x: tensor<5xf32>) -> tensor<5xf32> {
  func.return %x : tensor<5xf32>
}

// CHECK-LABEL: tm.kernel @relu_1(
// CHECK-LABEL: func.func @first(
// CHECK-NEXT:    tm.launch @relu_1(
func.func @first(%x: tensor<5xf32>) -> tensor<5xf32> {
  %r = graph.relu %x : tensor<5xf32>
  func.return %r : tensor<5xf32>
}

// CHECK-NOT:   tm.kernel
// CHECK-LABEL: func.func @second(
// CHECK-NEXT:    tm.launch @relu_1(
func.func @second(%x: tensor<5xf32>) -> tensor<5xf32> {
  %r = graph.relu %x : tensor<5xf32>
  func.return %r : tensor<5xf32>
}
