// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
// RUN: tm-opt %s -p graph-canonicalize | filecheck %s --check-prefix=CANON
//
// The scatters and the generated tensors (one_hot, eye, trilu) print in their custom
// syntax and parse back to the same text; graph-canonicalize removes a trilu that keeps
// every element.

// CHECK-LABEL: func.func @scatters
// CHECK-NEXT:    %s = graph.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<1x5xf32>
// CHECK-NEXT:    %n = graph.scatter_nd %d, %j, %v {reduction = "none"} : (tensor<4x4xf32>, tensor<2x1xi32>, tensor<2x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %e = graph.scatter_nd %d, %k, %w {reduction = "max"} : (tensor<4x4xf32>, tensor<3x2xi64>, tensor<3xf32>) -> tensor<4x4xf32>
func.func @scatters(%x: tensor<1x5xf32>, %i: tensor<1x2xi64>, %u: tensor<1x2xf32>, %d: tensor<4x4xf32>,
                    %j: tensor<2x1xi32>, %v: tensor<2x4xf32>, %k: tensor<3x2xi64>, %w: tensor<3xf32>) {
  %s = graph.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<1x5xf32>
  %n = graph.scatter_nd %d, %j, %v {reduction = "none"} : (tensor<4x4xf32>, tensor<2x1xi32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %e = graph.scatter_nd %d, %k, %w {reduction = "max"} : (tensor<4x4xf32>, tensor<3x2xi64>, tensor<3xf32>) -> tensor<4x4xf32>
  func.return
}

// CHECK-LABEL: func.func @generated
// CHECK-NEXT:    %h = graph.one_hot %ids, %vals {axis = 1 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x10xf32>
// CHECK-NEXT:    %e = graph.eye {k = -1 : i64} : tensor<4x5xi64>
// CHECK-NEXT:    %t = graph.trilu %m {k = 1 : i64, upper = false} : tensor<2x3x4xi32> -> tensor<2x3x4xi32>
func.func @generated(%ids: tensor<3xi64>, %vals: tensor<2xf32>, %m: tensor<2x3x4xi32>) {
  %h = graph.one_hot %ids, %vals {axis = 1 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x10xf32>
  %e = graph.eye {k = -1 : i64} : tensor<4x5xi64>
  %t = graph.trilu %m {k = 1 : i64, upper = false} : tensor<2x3x4xi32> -> tensor<2x3x4xi32>
  func.return
}

// CHECK-LABEL: func.func @trilu_keeps_all
// CANON-LABEL: func.func @trilu_keeps_all
// CANON-NEXT:    %t = graph.trilu %m {k = 2 : i64, upper = false} : tensor<3x4xf32> -> tensor<3x4xf32>
// CANON-NEXT:    func.return %m, %t : tensor<3x4xf32>, tensor<3x4xf32>
func.func @trilu_keeps_all(%m: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %all = graph.trilu %m {k = -2 : i64, upper = true} : tensor<3x4xf32> -> tensor<3x4xf32>
  %t = graph.trilu %m {k = 2 : i64, upper = false} : tensor<3x4xf32> -> tensor<3x4xf32>
  func.return %all, %t : tensor<3x4xf32>, tensor<3x4xf32>
}
