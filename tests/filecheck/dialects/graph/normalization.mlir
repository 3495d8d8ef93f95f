// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// The windowed normalizations, graph.lp_pool and graph.lrn, print in their custom syntax
// and parse back to the same text.

// CHECK-LABEL: func.func @lp_pool
// CHECK-NEXT:    %p = graph.lp_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, p = 3 : i64} : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
func.func @lp_pool(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %p = graph.lp_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, p = 3 : i64} : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
  func.return %p : tensor<1x3x4x4xf32>
}

// 1-D, dilated, with ceil_mode.
// CHECK-LABEL: func.func @lp_pool_1d
// CHECK-NEXT:    %q = graph.lp_pool %x {kernel_shape = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 2>, ceil_mode, p = 1 : i64} : tensor<1x3x8xf32> -> tensor<1x3x3xf32>
func.func @lp_pool_1d(%x: tensor<1x3x8xf32>) -> tensor<1x3x3xf32> {
  %q = graph.lp_pool %x {kernel_shape = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 2>, ceil_mode, p = 1 : i64} : tensor<1x3x8xf32> -> tensor<1x3x3xf32>
  func.return %q : tensor<1x3x3xf32>
}

// CHECK-LABEL: func.func @lrn
// CHECK-NEXT:    %y = graph.lrn %x {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 2.000000e+00 : f32} : tensor<2x16x7x7xf32>
// CHECK-NEXT:    %z = graph.lrn %y {size = 1 : i64, alpha = 1.000000e+00 : f32, beta = 5.000000e-01 : f32, bias = 1.000000e+00 : f32} : tensor<2x16x7x7xf32>
func.func @lrn(%x: tensor<2x16x7x7xf32>) -> tensor<2x16x7x7xf32> {
  %y = graph.lrn %x {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 0.75 : f32, bias = 2.0 : f32} : tensor<2x16x7x7xf32>
  %z = graph.lrn %y {size = 1 : i64, alpha = 1.0 : f32, beta = 0.5 : f32, bias = 1.0 : f32} : tensor<2x16x7x7xf32>
  func.return %z : tensor<2x16x7x7xf32>
}
