// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The element types the max pool and the max / min reductions take (see invalid.mlir for
// the format).

func.func @max_pool_of_bools(%x: tensor<1x1x4xi1>) {
  // expected-error@+1 {{expected float or integer elements, got i1}}
  %y = graph.max_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : tensor<1x1x4xi1> -> tensor<1x1x2xi1>
  func.return
}

// -----

func.func @reduce_max_of_integers(%x: tensor<2x3xi32>) {
  // expected-error@+1 {{expected f32 or i1 elements, got i32}}
  %y = graph.reduce_max %x {axes = array<i64: 1>} : tensor<2x3xi32> -> tensor<2xi32>
  func.return
}
