// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// graph.max_pool_with_indices's verifier (see invalid.mlir for how the checks are written).

func.func @indices_type(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{indices must be i64, got tensor<1x1x2x2xi32>}}
  %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi32>)
  func.return
}

// -----

func.func @indices_shape(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{indices shape [1, 1, 4] must be the result's [1, 1, 2, 2]}}
  %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> (tensor<1x1x2x2xf32>, tensor<1x1x4xi64>)
  func.return
}

// -----

func.func @result_shape(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{result shape [1, 1, 3, 3] does not match expected [1, 1, 2, 2]}}
  %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xi64>)
  func.return
}

// -----

func.func @f16_input(%x: tensor<1x1x4x4xf16>) {
  // expected-error@+1 {{expected an f32 input, got tensor<1x1x4x4xf16>}}
  %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf16> -> (tensor<1x1x2x2xf16>, tensor<1x1x2x2xi64>)
  func.return
}
