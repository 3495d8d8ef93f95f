// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The verifiers of mod, the bitwise ops, shifts, prelu, celu and is_inf (see invalid.mlir
// for how the checks are written).

func.func @bitwise_of_floats(%x: tensor<3xf32>) {
  // expected-error@+1 {{lhs must have an integer element type, got f32}}
  %y = graph.bitwise_and %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @shift_of_bools(%m: tensor<3xi1>) {
  // expected-error@+1 {{lhs must have an integer element type, got i1}}
  %y = graph.shift_left %m, %m : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  func.return
}

// -----

func.func @not_of_floats(%x: tensor<3xf32>) {
  // expected-error@+1 {{input must have an integer element type, got f32}}
  %y = graph.bitwise_not %x : tensor<3xf32>
  func.return
}

// -----

func.func @mod_of_bools(%m: tensor<3xi1>) {
  // expected-error@+1 {{operands must be numbers, got i1}}
  %y = graph.mod %m, %m : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  func.return
}

// -----

func.func @prelu_slope_wider_than_x(%x: tensor<3xf32>, %s: tensor<2x3xf32>) {
  // expected-error@+1 {{the slope must broadcast to the shape of lhs}}
  %y = graph.prelu %x, %s : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @celu_alpha_zero(%x: tensor<3xf32>) {
  // expected-error@+1 {{alpha must not be 0}}
  %y = graph.celu %x {alpha = 0.0 : f32} : tensor<3xf32>
  func.return
}

// -----

func.func @is_inf_of_integers(%i: tensor<3xi32>) {
  // expected-error@+1 {{input must have element type}}
  %y = graph.is_inf %i : tensor<3xi32> -> tensor<3xi1>
  func.return
}
