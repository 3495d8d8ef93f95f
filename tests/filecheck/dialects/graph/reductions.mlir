// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// The reductions, normalizations and pooling ops print in their custom syntax and parse
// back to the same text.

// CHECK-LABEL: func.func @reduce
// CHECK-NEXT:    %s = graph.reduce_sum %x {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %m = graph.reduce_mean %x {axes = array<i64: 1, 2>, keepdims} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
// CHECK-NEXT:    %hi = graph.reduce_max %x {axes = array<i64: 0, 2>, keepdims} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
// CHECK-NEXT:    %lo = graph.reduce_min %x {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
func.func @reduce(%x: tensor<2x3x4xf32>) -> (tensor<2x4xf32>, tensor<2x1x1xf32>, tensor<1x3x1xf32>, tensor<f32>) {
  %s = graph.reduce_sum %x {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %m = graph.reduce_mean %x {axes = array<i64: 1, 2>, keepdims} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
  %hi = graph.reduce_max %x {axes = array<i64: 0, 2>, keepdims} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  %lo = graph.reduce_min %x {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
  func.return %s, %m, %hi, %lo : tensor<2x4xf32>, tensor<2x1x1xf32>, tensor<1x3x1xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %p = graph.softmax %x {axes = array<i64: 1>} : tensor<2x10x7x7xf32>
// CHECK-NEXT:    %l = graph.log_softmax %p {axes = array<i64: 1, 2, 3>} : tensor<2x10x7x7xf32>
func.func @softmax(%x: tensor<2x10x7x7xf32>) -> tensor<2x10x7x7xf32> {
  %p = graph.softmax %x {axes = array<i64: 1>} : tensor<2x10x7x7xf32>
  %l = graph.log_softmax %p {axes = array<i64: 1, 2, 3>} : tensor<2x10x7x7xf32>
  func.return %l : tensor<2x10x7x7xf32>
}

// Without and with the mean and inverse standard deviation results.
// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT:    %y = graph.layer_norm %x, %gamma, %beta {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
// CHECK-NEXT:    %z, %mean, %inv_std_dev = graph.layer_norm %y, %gamma {axis = 1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x8x64xf32>, tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
func.func @layer_norm(%x: tensor<2x8x64xf32>, %gamma: tensor<64xf32>, %beta: tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<2x1x1xf32>) {
  %y = graph.layer_norm %x, %gamma, %beta {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %z, %mean, %inv_std_dev = graph.layer_norm %y, %gamma {axis = 1 : i64, epsilon = 1.0e-03 : f32} : (tensor<2x8x64xf32>, tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  func.return %z, %inv_std_dev : tensor<2x8x64xf32>, tensor<2x1x1xf32>
}

// A 3x3 / 2 max pool with padding and ceil_mode; a 1-D average pool counting the padding.
// CHECK-LABEL: func.func @pool
// CHECK-NEXT:    %m = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode} : tensor<1x8x14x14xf32> -> tensor<1x8x8x8xf32>
// CHECK-NEXT:    %a = graph.average_pool %s {kernel_shape = array<i64: 4>, strides = array<i64: 3>, pads = array<i64: 2, 1>, dilations = array<i64: 1>, count_include_pad} : tensor<2x3x20xf32> -> tensor<2x3x7xf32>
func.func @pool(%x: tensor<1x8x14x14xf32>, %s: tensor<2x3x20xf32>) -> (tensor<1x8x8x8xf32>, tensor<2x3x7xf32>) {
  %m = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode} : tensor<1x8x14x14xf32> -> tensor<1x8x8x8xf32>
  %a = graph.average_pool %s {kernel_shape = array<i64: 4>, strides = array<i64: 3>, pads = array<i64: 2, 1>, dilations = array<i64: 1>, count_include_pad} : tensor<2x3x20xf32> -> tensor<2x3x7xf32>
  func.return %m, %a : tensor<1x8x8x8xf32>, tensor<2x3x7xf32>
}
