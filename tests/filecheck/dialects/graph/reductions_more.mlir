// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// The reductions with other combines (prod, norms, logarithms), bool max / min, and the
// ops along one axis (arg max / min, hardmax, cumsum, top-k) print in their custom syntax
// and parse back to the same text.

// CHECK-LABEL: func.func @reduce
// CHECK-NEXT:    %p = graph.reduce_prod %x {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %l1 = graph.reduce_l1 %x {axes = array<i64: 0, 2>, keepdims} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
// CHECK-NEXT:    %l2 = graph.reduce_l2 %x {axes = array<i64: 2>} : tensor<2x3x4xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %sq = graph.reduce_sum_square %x {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
// CHECK-NEXT:    %ls = graph.reduce_log_sum %x {axes = array<i64: 1>, keepdims} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
// CHECK-NEXT:    %lse = graph.reduce_log_sum_exp %x {axes = array<i64: 2>} : tensor<2x3x4xf32> -> tensor<2x3xf32>
func.func @reduce(%x: tensor<2x3x4xf32>) {
  %p = graph.reduce_prod %x {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %l1 = graph.reduce_l1 %x {axes = array<i64: 0, 2>, keepdims} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  %l2 = graph.reduce_l2 %x {axes = array<i64: 2>} : tensor<2x3x4xf32> -> tensor<2x3xf32>
  %sq = graph.reduce_sum_square %x {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
  %ls = graph.reduce_log_sum %x {axes = array<i64: 1>, keepdims} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  %lse = graph.reduce_log_sum_exp %x {axes = array<i64: 2>} : tensor<2x3x4xf32> -> tensor<2x3xf32>
  func.return
}

// Max and min of bools: any and all.
// CHECK-LABEL: func.func @reduce_bools
// CHECK-NEXT:    %any = graph.reduce_max %b {axes = array<i64: 1>} : tensor<2x3xi1> -> tensor<2xi1>
// CHECK-NEXT:    %all = graph.reduce_min %b {axes = array<i64: 0>, keepdims} : tensor<2x3xi1> -> tensor<1x3xi1>
func.func @reduce_bools(%b: tensor<2x3xi1>) {
  %any = graph.reduce_max %b {axes = array<i64: 1>} : tensor<2x3xi1> -> tensor<2xi1>
  %all = graph.reduce_min %b {axes = array<i64: 0>, keepdims} : tensor<2x3xi1> -> tensor<1x3xi1>
  func.return
}

// CHECK-LABEL: func.func @axis_ops
// CHECK-NEXT:    %i = graph.arg_max %x {axis = 1 : i64, keepdims} : tensor<2x5x3xf32> -> tensor<2x1x3xi64>
// CHECK-NEXT:    %j = graph.arg_min %x {axis = 2 : i64, select_last_index} : tensor<2x5x3xf32> -> tensor<2x5xi64>
// CHECK-NEXT:    %h = graph.hardmax %x {axis = 0 : i64} : tensor<2x5x3xf32>
// CHECK-NEXT:    %c = graph.cumsum %n {axis = 0 : i64, exclusive, reverse} : tensor<6x4xi32>
// CHECK-NEXT:    %d = graph.cumsum %x {axis = 1 : i64} : tensor<2x5x3xf32>
// CHECK-NEXT:    %v, %vi = graph.top_k %x {axis = 1 : i64, k = 2 : i64} : tensor<2x5x3xf32> -> tensor<2x2x3xf32>, tensor<2x2x3xi64>
// CHECK-NEXT:    %s, %si = graph.top_k %n {axis = 1 : i64, k = 4 : i64, smallest} : tensor<6x4xi32> -> tensor<6x4xi32>, tensor<6x4xi64>
func.func @axis_ops(%x: tensor<2x5x3xf32>, %n: tensor<6x4xi32>) {
  %i = graph.arg_max %x {axis = 1 : i64, keepdims} : tensor<2x5x3xf32> -> tensor<2x1x3xi64>
  %j = graph.arg_min %x {axis = 2 : i64, select_last_index} : tensor<2x5x3xf32> -> tensor<2x5xi64>
  %h = graph.hardmax %x {axis = 0 : i64} : tensor<2x5x3xf32>
  %c = graph.cumsum %n {axis = 0 : i64, exclusive, reverse} : tensor<6x4xi32>
  %d = graph.cumsum %x {axis = 1 : i64} : tensor<2x5x3xf32>
  %v, %vi = graph.top_k %x {axis = 1 : i64, k = 2 : i64} : tensor<2x5x3xf32> -> tensor<2x2x3xf32>, tensor<2x2x3xi64>
  %s, %si = graph.top_k %n {axis = 1 : i64, k = 4 : i64, smallest} : tensor<6x4xi32> -> tensor<6x4xi32>, tensor<6x4xi64>
  func.return
}
