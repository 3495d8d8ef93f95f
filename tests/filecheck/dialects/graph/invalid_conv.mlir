// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The verifiers of graph.conv, graph.conv_transpose and graph.batch_norm (see invalid.mlir for the format).

func.func @wrong_result_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{result shape [1, 4, 8, 8] does not match expected [1, 4, 6, 6]}}
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

func.func @group_does_not_divide(%x: tensor<1x6x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error@+1 {{group 3 must divide the input channels (6) and the output channels (4)}}
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3 : i64} : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @weight_channels(%x: tensor<1x6x8x8xf32>, %w: tensor<4x6x3x3xf32>) {
  // expected-error@+1 {{weight [4, 6, 3, 3] has 6 input channels per group, expected 6 / 2 = 3}}
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x6x8x8xf32>, tensor<4x6x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @pads_count(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{pads must have 4 values for 2 spatial dims, got 2}}
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

func.func @kernel_too_large(%x: tensor<1x3x2x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{the kernel does not fit spatial dim 0 (2 with pads 0, 0; dilated kernel 3)}}
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x2x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  func.return
}

// -----

func.func @bias_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{bias shape [3] must be [4], one value per output channel}}
  %y = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @zero_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{strides [0, 1] must be >= 1}}
  %y = graph.conv %x, %w {strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_transpose_weight(%x: tensor<1x4x5x5xf32>, %w: tensor<3x4x3x3xf32>) {
  // expected-error@+1 {{weight [3, 4, 3, 3] must have the input's 4 channels first}}
  %y = graph.conv_transpose %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<3x4x3x3xf32>) -> tensor<1x4x7x7xf32>
  func.return
}

// -----

func.func @conv_transpose_result(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error@+1 {{result shape [1, 2, 7, 7] does not match expected [1, 2, 12, 11]}}
  %y = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  func.return
}

// -----

func.func @batch_norm_statistics(%x: tensor<2x3x4x5xf32>, %s: tensor<3xf32>, %m: tensor<4xf32>) {
  // expected-error@+1 {{mean shape [4] must be [3], one value per channel}}
  %y = graph.batch_norm %x, %s, %s, %m, %s {epsilon = 1.0e-05 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  func.return
}

// -----

func.func @mixed_operands(%x: tensor<1x8x4x4xf16>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{operands and result must have the same element type (or f16/bf16 input and weight with an f32 bias and result)}}
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf16>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return
}

// -----

func.func @f32_operands_half_result(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{operands and result must have the same element type (or f16/bf16 input and weight with an f32 bias and result)}}
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf16>
  func.return
}

// -----

func.func @batch_norm_rank(%x: tensor<3xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{input must be (N, C, ...), got rank 1}}
  %y = graph.batch_norm %x, %s, %s, %s, %s {epsilon = 1.0e-05 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}
