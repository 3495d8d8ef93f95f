// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// graph.conv, graph.conv_transpose and graph.batch_norm print in their custom syntax and parse back to the
// same text.

// CHECK-LABEL: func.func @conv2d
// CHECK-NEXT:    %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x7x5xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x4x2xf32>
func.func @conv2d(%x: tensor<1x3x7x5xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>) -> tensor<1x16x4x2xf32> {
  %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x7x5xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x4x2xf32>
  func.return %y : tensor<1x16x4x2xf32>
}

// graph-mixed-precision's tensor-core convolution: f16 input and weight, f32 bias and result.
// CHECK-LABEL: func.func @half_operands
// CHECK-NEXT:    %y = graph.conv %x, %w, %b {{.*}} : (tensor<1x8x4x4xf16>, tensor<16x8x1x1xf16>, tensor<16xf32>) -> tensor<1x16x4x4xf32>
func.func @half_operands(%x: tensor<1x8x4x4xf16>, %w: tensor<16x8x1x1xf16>, %b: tensor<16xf32>) -> tensor<1x16x4x4xf32> {
  %y = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf16>, tensor<16x8x1x1xf16>, tensor<16xf32>) -> tensor<1x16x4x4xf32>
  func.return %y : tensor<1x16x4x4xf32>
}

// A depthwise convolution without bias, and a dilated 1-D convolution.
// CHECK-LABEL: func.func @depthwise_and_1d
// CHECK-NEXT:    %d = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<2x8x9x9xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x9x9xf32>
// CHECK-NEXT:    %e = graph.conv %s, %v {strides = array<i64: 1>, pads = array<i64: 0, 2>, dilations = array<i64: 2>, group = 1 : i64} : (tensor<1x4x10xf32>, tensor<6x4x3xf32>) -> tensor<1x6x8xf32>
func.func @depthwise_and_1d(%x: tensor<2x8x9x9xf32>, %w: tensor<8x1x3x3xf32>, %s: tensor<1x4x10xf32>, %v: tensor<6x4x3xf32>) -> (tensor<2x8x9x9xf32>, tensor<1x6x8xf32>) {
  %d = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<2x8x9x9xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x9x9xf32>
  %e = graph.conv %s, %v {strides = array<i64: 1>, pads = array<i64: 0, 2>, dilations = array<i64: 2>, group = 1 : i64} : (tensor<1x4x10xf32>, tensor<6x4x3xf32>) -> tensor<1x6x8xf32>
  func.return %d, %e : tensor<2x8x9x9xf32>, tensor<1x6x8xf32>
}

// CHECK-LABEL: func.func @conv_transpose
// CHECK-NEXT:    %y = graph.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x10x9xf32>
func.func @conv_transpose(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x10x9xf32> {
  %y = graph.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x10x9xf32>
  func.return %y : tensor<1x6x10x9xf32>
}

// CHECK-LABEL: func.func @batch_norm
// CHECK-NEXT:    %y = graph.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.000000e-05 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
func.func @batch_norm(%x: tensor<2x3x4x5xf32>, %scale: tensor<3xf32>, %bias: tensor<3xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>) -> tensor<2x3x4x5xf32> {
  %y = graph.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  func.return %y : tensor<2x3x4x5xf32>
}
