// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The verifiers of the reductions, normalizations and pooling ops (see invalid.mlir for
// the format).

func.func @reduce_result_shape(%x: tensor<2x3x4xf32>) {
  // expected-error@+1 {{result shape [2, 1, 4] does not match expected [2, 4]}}
  %y = graph.reduce_sum %x {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  func.return
}

// -----

func.func @reduce_axes_order(%x: tensor<2x3x4xf32>) {
  // expected-error@+1 {{axes [2, 1] must be increasing, without repeats}}
  %y = graph.reduce_mean %x {axes = array<i64: 2, 1>} : tensor<2x3x4xf32> -> tensor<2xf32>
  func.return
}

// -----

func.func @reduce_axis_out_of_range(%x: tensor<2x3x4xf32>) {
  // expected-error@+1 {{axes [3] are out of range for rank 3}}
  %y = graph.reduce_max %x {axes = array<i64: 3>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @reduce_no_axes(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{axes must not be empty}}
  %y = graph.reduce_min %x {axes = array<i64>} : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @softmax_negative_axis(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{axes [-1] are out of range for rank 2}}
  %y = graph.softmax %x {axes = array<i64: -1>} : tensor<2x3xf32>
  func.return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{scale shape [3] does not broadcast to the normalized shape [4]}}
  %y = graph.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @layer_norm_statistics(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>) {
  // expected-error@+1 {{mean shape must be [2, 3, 1]}}
  %y, %m, %r = graph.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3x1xf32>)
  func.return
}

// -----

func.func @layer_norm_f64_epsilon(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>) {
  // expected-error@+1 {{epsilon must be an f32 float, got f64}}
  %y = graph.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @pool_result_shape(%x: tensor<1x2x7x7xf32>) {
  // expected-error@+1 {{result shape [1, 2, 3, 3] does not match expected [1, 2, 4, 4]}}
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x2x7x7xf32> -> tensor<1x2x3x3xf32>
  func.return
}

// -----

// ceil_mode rounds (3 + 1 + 1 - 2) / 2 up to 2 steps, 3 windows, but the last would start
// on the end padding (at 4 >= 3 + 1): there are 2.
func.func @pool_ceil_mode_last_window(%x: tensor<1x1x3x3xf32>) {
  // expected-error@+1 {{result shape [1, 1, 3, 3] does not match expected [1, 1, 2, 2]}}
  %y = graph.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode} : tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  func.return
}

// -----

func.func @pool_window_too_large(%x: tensor<1x1x2x2xf32>) {
  // expected-error@+1 {{the window does not fit spatial dim 0 (2 with pads 0, 0)}}
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x2x2xf32> -> tensor<1x1x1x2xf32>
  func.return
}

// -----

func.func @pool_pads_count(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{pads must have 4 values for 2 spatial dims, got 2}}
  %y = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x3x3xf32>
  func.return
}

// -----

func.func @pool_rank(%x: tensor<4x4xf32>) {
  // expected-error@+1 {{input must be (N, C, D1, ...), got rank 2}}
  %y = graph.max_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : tensor<4x4xf32> -> tensor<4x3xf32>
  func.return
}
