// RUN: tm-opt %s --split-input-file --verify-diagnostics

func.func @reduction(%x: tensor<1x5xf32>, %i: tensor<1x2xi64>, %u: tensor<1x2xf32>) {
  // expected-error@+1 {{reduction must be one of none, add, mul, max, min, got 'mean'}}
  %s = graph.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "mean"} : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<1x5xf32>
  func.return
}

// -----

func.func @bool_add(%x: tensor<1x5xi1>, %i: tensor<1x2xi64>, %u: tensor<1x2xi1>) {
  // expected-error@+1 {{reduction 'add' is supported for f32, f16, f64, i64, i32 data, got i1}}
  %s = graph.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<1x5xi1>, tensor<1x2xi64>, tensor<1x2xi1>) -> tensor<1x5xi1>
  func.return
}

// -----

func.func @float_indices(%x: tensor<1x5xf32>, %i: tensor<1x2xf32>, %u: tensor<1x2xf32>) {
  // expected-error@+1 {{indices must be i64 or i32, got f32}}
  %s = graph.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "none"} : (tensor<1x5xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x5xf32>
  func.return
}

// -----

func.func @updates_shape(%x: tensor<3x5xf32>, %i: tensor<2x2xi64>, %u: tensor<1x2xf32>) {
  // expected-error@+1 {{updates shape [1, 2] must be the indices shape [2, 2]}}
  %s = graph.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "none"} : (tensor<3x5xf32>, tensor<2x2xi64>, tensor<1x2xf32>) -> tensor<3x5xf32>
  func.return
}

// -----

func.func @indices_too_long(%x: tensor<3x5xf32>, %i: tensor<4x2xi64>, %u: tensor<4x2xf32>) {
  // expected-error@+1 {{indices shape [4, 2] exceeds input shape [3, 5] outside axis 1}}
  %s = graph.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "none"} : (tensor<3x5xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<3x5xf32>
  func.return
}

// -----

func.func @index_depth(%d: tensor<4x4xf32>, %j: tensor<2x3xi64>, %v: tensor<2xf32>) {
  // expected-error@+1 {{indices must have rank >= 1 and a last dim in [1, 2], got [2, 3]}}
  %n = graph.scatter_nd %d, %j, %v {reduction = "none"} : (tensor<4x4xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

func.func @nd_updates(%d: tensor<4x4xf32>, %j: tensor<2x1xi64>, %v: tensor<2x3xf32>) {
  // expected-error@+1 {{updates shape [2, 3] does not match expected [2, 4]}}
  %n = graph.scatter_nd %d, %j, %v {reduction = "none"} : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

func.func @one_hot_values(%ids: tensor<3xi64>, %vals: tensor<3xf32>) {
  // expected-error@+1 {{values must have shape [2], got [3]}}
  %h = graph.one_hot %ids, %vals {axis = 1 : i64} : (tensor<3xi64>, tensor<3xf32>) -> tensor<3x10xf32>
  func.return
}

// -----

func.func @one_hot_shape(%ids: tensor<3x2xi64>, %vals: tensor<2xf32>) {
  // expected-error@+1 {{result shape [3, 10, 3] does not match expected [3, 10, 2]}}
  %h = graph.one_hot %ids, %vals {axis = 1 : i64} : (tensor<3x2xi64>, tensor<2xf32>) -> tensor<3x10x3xf32>
  func.return
}

// -----

func.func @eye_rank() {
  // expected-error@+1 {{result must have rank 2, got tensor<4xf32>}}
  %e = graph.eye {k = 0 : i64} : tensor<4xf32>
  func.return
}

// -----

func.func @trilu_rank(%m: tensor<4xf32>) {
  // expected-error@+1 {{input must have rank >= 2 and the result its shape, got [4] -> [4]}}
  %t = graph.trilu %m {k = 0 : i64, upper = true} : tensor<4xf32> -> tensor<4xf32>
  func.return
}
