// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// Comparisons, logic, is_nan, where, cast and the run-time gathers print in their custom
// syntax and parse back to the same text; masks are i1 tensors.

// CHECK-LABEL: func.func @compare_and_logic
// CHECK-NEXT:    %lt = graph.less %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:    %eq = graph.equal %m, %m : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
// CHECK-NEXT:    %ge = graph.greater_equal %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
// CHECK-NEXT:    %and = graph.and %lt, %eq : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %or = graph.or %and, %ge : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %xor = graph.xor %or, %m : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %not = graph.not %xor : tensor<2x3xi1>
func.func @compare_and_logic(%a: tensor<2x3xi64>, %b: tensor<3xi64>, %m: tensor<3xi1>, %x: tensor<3xf32>) {
  %lt = graph.less %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %eq = graph.equal %m, %m : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %ge = graph.greater_equal %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %and = graph.and %lt, %eq : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %or = graph.or %and, %ge : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %xor = graph.xor %or, %m : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %not = graph.not %xor : tensor<2x3xi1>
  func.return
}

// CHECK-LABEL: func.func @nan_where_cast
// CHECK-NEXT:    %nan = graph.is_nan %x : tensor<2x4xf32> -> tensor<2x4xi1>
// CHECK-NEXT:    %y = graph.where %nan, %zero, %x : (tensor<2x4xi1>, tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %i = graph.cast %y : tensor<2x4xf32> -> tensor<2x4xi32>
// CHECK-NEXT:    %b = graph.cast %i : tensor<2x4xi32> -> tensor<2x4xi1>
func.func @nan_where_cast(%x: tensor<2x4xf32>, %zero: tensor<f32>) {
  %nan = graph.is_nan %x : tensor<2x4xf32> -> tensor<2x4xi1>
  %y = graph.where %nan, %zero, %x : (tensor<2x4xi1>, tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %i = graph.cast %y : tensor<2x4xf32> -> tensor<2x4xi32>
  %b = graph.cast %i : tensor<2x4xi32> -> tensor<2x4xi1>
  func.return
}

// CHECK-LABEL: func.func @gathers
// CHECK-NEXT:    %e = graph.take %table, %ids {axis = 0 : i64} : (tensor<128x32xf32>, tensor<1x16xi64>) -> tensor<1x16x32xf32>
// CHECK-NEXT:    %t = graph.take_along_axis %x, %idx {axis = 1 : i64} : (tensor<2x64xf32>, tensor<2x16xi32>) -> tensor<2x16xf32>
// CHECK-NEXT:    %m = graph.gather_nd %mask, %nd {batch_dims = 0 : i64} : (tensor<1x16xi1>, tensor<1x1x1x16x2xi64>) -> tensor<1x1x1x16xi1>
func.func @gathers(%table: tensor<128x32xf32>, %ids: tensor<1x16xi64>, %x: tensor<2x64xf32>, %idx: tensor<2x16xi32>, %mask: tensor<1x16xi1>, %nd: tensor<1x1x1x16x2xi64>) {
  %e = graph.take %table, %ids {axis = 0 : i64} : (tensor<128x32xf32>, tensor<1x16xi64>) -> tensor<1x16x32xf32>
  %t = graph.take_along_axis %x, %idx {axis = 1 : i64} : (tensor<2x64xf32>, tensor<2x16xi32>) -> tensor<2x16xf32>
  %m = graph.gather_nd %mask, %nd {batch_dims = 0 : i64} : (tensor<1x16xi1>, tensor<1x1x1x16x2xi64>) -> tensor<1x1x1x16xi1>
  func.return
}
