// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// float64 tensors in the float ops (computed in double by their templates), and max
// pooling of integer tensors, print in their custom syntax and parse back to the same text.

// CHECK-LABEL: func.func @float64
// CHECK-NEXT:    %e = graph.exp %x : tensor<2x3xf64>
// CHECK-NEXT:    %l = graph.leaky_relu %e {alpha = 1.000000e-01 : f32} : tensor<2x3xf64>
// CHECK-NEXT:    %s = graph.softmax %l {axes = array<i64: 1>} : tensor<2x3xf64>
// CHECK-NEXT:    %m = graph.reduce_max %s {axes = array<i64: 1>} : tensor<2x3xf64> -> tensor<2xf64>
// CHECK-NEXT:    %p = graph.matmul %x, %w : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
func.func @float64(%x: tensor<2x3xf64>, %w: tensor<3x4xf64>) -> (tensor<2xf64>, tensor<2x4xf64>) {
  %e = graph.exp %x : tensor<2x3xf64>
  %l = graph.leaky_relu %e {alpha = 1.000000e-01 : f32} : tensor<2x3xf64>
  %s = graph.softmax %l {axes = array<i64: 1>} : tensor<2x3xf64>
  %m = graph.reduce_max %s {axes = array<i64: 1>} : tensor<2x3xf64> -> tensor<2xf64>
  %p = graph.matmul %x, %w : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
  func.return %m, %p : tensor<2xf64>, tensor<2x4xf64>
}

// CHECK-LABEL: func.func @integer_max_pool
// CHECK-NEXT:    %a = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x2x4x4xi8> -> tensor<1x2x3x3xi8>
// CHECK-NEXT:    %b = graph.max_pool %y {kernel_shape = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : tensor<1x1x5xui8> -> tensor<1x1x3xui8>
func.func @integer_max_pool(%x: tensor<1x2x4x4xi8>, %y: tensor<1x1x5xui8>) -> (tensor<1x2x3x3xi8>, tensor<1x1x3xui8>) {
  %a = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x2x4x4xi8> -> tensor<1x2x3x3xi8>
  %b = graph.max_pool %y {kernel_shape = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : tensor<1x1x5xui8> -> tensor<1x1x3xui8>
  func.return %a, %b : tensor<1x2x3x3xi8>, tensor<1x1x3xui8>
}
