// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The verifiers of bool reductions and of the ops along one axis (arg max / min,
// hardmax, cumsum, top-k); see invalid.mlir for the format.

func.func @reduce_max_of_ints(%x: tensor<2x3xi32>) {
  // expected-error@+1 {{expected f32 or i1 elements, got i32}}
  %y = graph.reduce_max %x {axes = array<i64: 1>} : tensor<2x3xi32> -> tensor<2xi32>
  func.return
}

// -----

func.func @arg_max_axis(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %y = graph.arg_max %x {axis = 2 : i64} : tensor<2x3xf32> -> tensor<2xi64>
  func.return
}

// -----

func.func @arg_min_result_shape(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{result shape [2] does not match expected [2, 1]}}
  %y = graph.arg_min %x {axis = 1 : i64, keepdims} : tensor<2x3xf32> -> tensor<2xi64>
  func.return
}

// -----

func.func @arg_max_result_type(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{result must have i64 elements, got i32}}
  %y = graph.arg_max %x {axis = 1 : i64} : tensor<2x3xf32> -> tensor<2xi32>
  func.return
}

// -----

func.func @hardmax_axis(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{axis 3 is out of range for rank 2}}
  %y = graph.hardmax %x {axis = 3 : i64} : tensor<2x3xf32>
  func.return
}

// -----

func.func @cumsum_bools(%x: tensor<4xi1>) {
  // expected-error@+1 {{input must have f32, f64, i32 or i64 elements, got i1}}
  %y = graph.cumsum %x {axis = 0 : i64} : tensor<4xi1>
  func.return
}

// -----

func.func @top_k_too_many(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{k = 4 must be in [1, 3] (the axis' extent)}}
  %v, %i = graph.top_k %x {axis = 1 : i64, k = 4 : i64} : tensor<2x3xf32> -> tensor<2x4xf32>, tensor<2x4xi64>
  func.return
}

// -----

func.func @top_k_shape(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{indices shape [2, 3] does not match expected [2, 2]}}
  %v, %i = graph.top_k %x {axis = 1 : i64, k = 2 : i64} : tensor<2x3xf32> -> tensor<2x2xf32>, tensor<2x3xi64>
  func.return
}

// -----

func.func @top_k_values_type(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{values must have f32 elements, got i32}}
  %v, %i = graph.top_k %x {axis = 1 : i64, k = 2 : i64} : tensor<2x3xf32> -> tensor<2x2xi32>, tensor<2x2xi64>
  func.return
}
