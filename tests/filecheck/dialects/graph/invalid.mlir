// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// Each case marks the op that must fail with an expected-error comment (`@+1`: on the next
// line; its text in double braces, a substring of the message): tm-opt --verify-diagnostics
// checks that every error is expected on its line and every expectation met (docs/testing.md).

func.func @broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{shapes 2x3, 4 do not broadcast}}
  %x = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @result_not_broadcast_shape(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{result shape [2, 4] does not match broadcast shape [2, 3]}}
  %x = graph.mul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @mixed_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  // expected-error@+1 {{operands and result must have the same element type}}
  %x = graph.sub %a, %b : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @dynamic_shape(%a: tensor<?x3xf32>) {
  // expected-error@+1 {{input must have a static shape, got tensor<?x3xf32>}}
  %x = graph.relu %a : tensor<?x3xf32>
  func.return
}

// -----

func.func @unary_on_memref(%a: memref<3xf32>) {
  // expected-error@+1 {{input must be a tensor, got memref<3xf32>}}
  %x = graph.tanh %a : memref<3xf32>
  func.return
}

// -----

func.func @gelu_approximation(%a: tensor<3xf32>) {
  // expected-error@+1 {{approximate must be "none" or "tanh", got "erf"}}
  %x = graph.gelu %a {approximate = "erf"} : tensor<3xf32>
  func.return
}

// -----

func.func @parameter_not_f32(%a: tensor<3xf32>) {
  // expected-error@+1 {{alpha must be an f32 float, got f64}}
  %x = graph.leaky_relu %a {alpha = 0.1 : f64} : tensor<3xf32>
  func.return
}

// -----

func.func @parameter_missing(%a: tensor<3xf32>) {
  // expected-error@+1 {{property 'beta' expected in operation 'graph.hard_sigmoid'}}
  %x = graph.hard_sigmoid %a {alpha = 0.2 : f32} : tensor<3xf32>
  func.return
}

// -----

func.func @variadic_without_inputs() {
  // expected-error@+1 {{expected at least one input}}
  %x = graph.max : () -> tensor<3xf32>
  func.return
}

// -----

func.func @variadic_broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2xf32>) {
  // expected-error@+1 {{shapes 2x3, 3, 2 do not broadcast}}
  %x = graph.sum %a, %b, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @variadic_result_shape(%a: tensor<2x1xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{result shape [2, 1] does not match broadcast shape [2, 3]}}
  %x = graph.min %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

func.func @pow_element_types(%a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error@+1 {{operands and result must have the same element type}}
  %x = graph.pow %a, %b : (tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @weight_dynamic_shape() {
  // expected-error@+1 {{weight 'w' must have a static shape, got tensor<?xf32>}}
  %w = graph.weight "w" : tensor<?xf32>
  func.return
}

// -----

func.func @matmul_rank1(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error@+1 {{operands must have rank >= 2, got ranks 1 and 2}}
  %x = graph.matmul %a, %b : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error@+1 {{contraction sizes differ: lhs has 3, rhs has 4}}
  %x = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// transpose_rhs makes the rhs 5x3: its contraction size is 5.
func.func @matmul_contraction_transposed(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error@+1 {{contraction sizes differ: lhs has 3, rhs has 5}}
  %x = graph.matmul %a, %b {transpose_rhs} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @matmul_result_shape(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error@+1 {{result shape [2, 4] does not match expected [2, 5]}}
  %x = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @matmul_batch_mismatch(%a: tensor<3x2x3xf32>, %b: tensor<2x3x5xf32>) {
  // expected-error@+1 {{batch dimensions [3] and [2] do not broadcast}}
  %x = graph.matmul %a, %b : (tensor<3x2x3xf32>, tensor<2x3x5xf32>) -> tensor<3x2x5xf32>
  func.return
}

// -----

func.func @matmul_bias_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %c: tensor<3xf32>) {
  // expected-error@+1 {{bias shape [3] does not broadcast to result shape [2, 5]}}
  %x = graph.matmul %a, %b, %c : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<3xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

func.func @matmul_bias_higher_rank(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %c: tensor<1x2x5xf32>) {
  // expected-error@+1 {{bias shape [1, 2, 5] does not broadcast to result shape [2, 5]}}
  %x = graph.matmul %a, %b, %c : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<1x2x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// The bias broadcasts with the result, but would grow it from 1x5 to 2x5.
func.func @matmul_bias_grows_result(%a: tensor<1x3xf32>, %b: tensor<3x5xf32>, %c: tensor<2x5xf32>) {
  // expected-error@+1 {{bias shape [2, 5] does not broadcast to result shape [1, 5]}}
  %x = graph.matmul %a, %b, %c : (tensor<1x3xf32>, tensor<3x5xf32>, tensor<2x5xf32>) -> tensor<1x5xf32>
  func.return
}
