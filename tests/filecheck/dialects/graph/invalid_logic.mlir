// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The verifiers of comparisons, logic, where, cast and the run-time gathers (see
// invalid.mlir for how the checks are written).

func.func @compare_bools(%m: tensor<3xi1>) {
  // expected-error@+1 {{lhs must have element type f32, f16, bf16, f64, i64, i32, i16, i8, ui64, ui32, ui16, ui8, got i1}}
  %y = graph.less %m, %m : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  func.return
}

// -----

func.func @compare_mixed(%a: tensor<3xi64>, %b: tensor<3xi32>) {
  // expected-error@+1 {{lhs and rhs must have the same element type}}
  %y = graph.equal %a, %b : (tensor<3xi64>, tensor<3xi32>) -> tensor<3xi1>
  func.return
}

// -----

func.func @compare_result(%a: tensor<3xf32>) {
  // expected-error@+1 {{result must have element type i1, got f32}}
  %y = graph.greater %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @and_of_floats(%a: tensor<3xf32>, %m: tensor<3xi1>) {
  // expected-error@+1 {{lhs must have element type i1, got f32}}
  %y = graph.and %a, %m : (tensor<3xf32>, tensor<3xi1>) -> tensor<3xi1>
  func.return
}

// -----

func.func @logic_broadcast(%m: tensor<3xi1>, %n: tensor<4xi1>) {
  // expected-error@+1 {{shapes 3, 4 do not broadcast}}
  %y = graph.or %m, %n : (tensor<3xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @is_nan_of_ints(%a: tensor<3xi64>) {
  // expected-error@+1 {{input must have element type f32, f16, bf16, f64, got i64}}
  %y = graph.is_nan %a : tensor<3xi64> -> tensor<3xi1>
  func.return
}

// -----

func.func @where_condition(%c: tensor<3xf32>, %x: tensor<3xf32>) {
  // expected-error@+1 {{condition must have element type i1, got f32}}
  %y = graph.where %c, %x, %x : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @where_branches(%c: tensor<3xi1>, %x: tensor<3xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{lhs, rhs and result must have the same element type}}
  %y = graph.where %c, %x, %i : (tensor<3xi1>, tensor<3xf32>, tensor<3xi64>) -> tensor<3xf32>
  func.return
}

// -----

func.func @cast_shape(%x: tensor<3xf32>) {
  // expected-error@+1 {{input and result must have the same shape}}
  %y = graph.cast %x : tensor<3xf32> -> tensor<4xi64>
  func.return
}

// -----

func.func @cast_to_f80(%x: tensor<3xf32>) {
  // expected-error@+1 {{result must have element type f32, i64, i32, i1, f16, f64, i8, i16, ui8, ui16, ui32, ui64, bf16, f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, got f80}}
  %y = graph.cast %x : tensor<3xf32> -> tensor<3xf80>
  func.return
}

// -----

func.func @take_float_indices(%x: tensor<4x2xf32>, %i: tensor<3xf32>) {
  // expected-error@+1 {{indices must be i64 or i32, got f32}}
  %y = graph.take %x, %i {axis = 0 : i64} : (tensor<4x2xf32>, tensor<3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

func.func @take_result(%x: tensor<4x2xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{result shape [3, 4] does not match expected [4, 3]}}
  %y = graph.take %x, %i {axis = 1 : i64} : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return
}

// -----

func.func @take_along_axis_shape(%x: tensor<3x3xf32>, %i: tensor<2x3xi64>) {
  // expected-error@+1 {{indices shape [2, 3] must match input shape [3, 3] outside axis 1}}
  %y = graph.take_along_axis %x, %i {axis = 1 : i64} : (tensor<3x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @gather_nd_depth(%x: tensor<2x3xf32>, %i: tensor<4x3xi64>) {
  // expected-error@+1 {{index depth 3 must be in [1, 2] for input rank 2 and batch_dims 0}}
  %y = graph.gather_nd %x, %i {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<4x3xi64>) -> tensor<4xf32>
  func.return
}

// -----

func.func @gather_nd_batch(%x: tensor<2x3x4xf32>, %i: tensor<3x1xi64>) {
  // expected-error@+1 {{the first 1 dims of input [2, 3, 4] and indices [3, 1] must match}}
  %y = graph.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<3x1xi64>) -> tensor<3x4xf32>
  func.return
}
