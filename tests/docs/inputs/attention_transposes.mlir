func.func @scores(%q: tensor<1x2x16x8xf32>, %k: tensor<1x16x2x8xf32>) -> tensor<1x2x16x16xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %k3 = graph.reshape %kt : tensor<1x2x16x8xf32> -> tensor<2x16x8xf32>
  %kt3 = graph.transpose %k3 {perm = array<i64: 0, 2, 1>} : tensor<2x16x8xf32> -> tensor<2x8x16xf32>
  %kt4 = graph.reshape %kt3 : tensor<2x8x16xf32> -> tensor<1x2x8x16xf32>
  %s = graph.matmul %q, %kt4 : (tensor<1x2x16x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x16x16xf32>
  func.return %s : tensor<1x2x16x16xf32>
}
