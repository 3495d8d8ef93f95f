// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The verifiers of the windowed normalizations, graph.lp_pool and graph.lrn (see
// invalid.mlir for the format).

func.func @lp_pool_p(%x: tensor<1x3x8x8xf32>) {
  // expected-error@+1 {{p must be >= 1, got 0}}
  %y = graph.lp_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, p = 0 : i64} : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
  func.return
}

// -----

func.func @lp_pool_result_shape(%x: tensor<1x3x8x8xf32>) {
  // expected-error@+1 {{result shape [1, 3, 8, 8] does not match expected [1, 3, 4, 4]}}
  %y = graph.lp_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, p = 2 : i64} : tensor<1x3x8x8xf32> -> tensor<1x3x8x8xf32>
  func.return
}

// -----

func.func @lp_pool_element_type(%x: tensor<1x3x8x8xi32>) {
  // expected-error@+1 {{expected f32 or f16 tensors, got tensor<1x3x8x8xi32>}}
  %y = graph.lp_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, p = 2 : i64} : tensor<1x3x8x8xi32> -> tensor<1x3x4x4xi32>
  func.return
}

// -----

func.func @lrn_size(%x: tensor<1x8x4x4xf32>) {
  // expected-error@+1 {{size must be >= 1, got 0}}
  %y = graph.lrn %x {size = 0 : i64, alpha = 1.0e-4 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : tensor<1x8x4x4xf32>
  func.return
}

// -----

func.func @lrn_rank(%x: tensor<8xf32>) {
  // expected-error@+1 {{input must be (N, C, ...), got rank 1}}
  %y = graph.lrn %x {size = 3 : i64, alpha = 1.0e-4 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : tensor<8xf32>
  func.return
}

// -----

func.func @lrn_element_type(%x: tensor<1x8x4x4xi32>) {
  // expected-error@+1 {{expected f32 or f16 tensors, got tensor<1x8x4x4xi32>}}
  %y = graph.lrn %x {size = 3 : i64, alpha = 1.0e-4 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : tensor<1x8x4x4xi32>
  func.return
}

// -----

func.func @lrn_f64_parameter(%x: tensor<1x8x4x4xf32>) {
  // expected-error@+1 {{beta must be an f32 float, got f64}}
  %y = graph.lrn %x {size = 3 : i64, alpha = 1.0e-4 : f32, beta = 0.75 : f64, bias = 1.0 : f32} : tensor<1x8x4x4xf32>
  func.return
}
