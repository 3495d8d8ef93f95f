func.func @main(%q: tensor<1x2x128x32xf32>, %k: tensor<1x2x128x32xf32>, %v: tensor<1x2x128x32xf32>, %mask: tensor<1x1x1x128xf32>) -> tensor<1x2x128x32xf32> {
  %c = graph.constant dense<0.176776695> : tensor<f32>
  %s = graph.matmul %q, %k {transpose_rhs} : (tensor<1x2x128x32xf32>, tensor<1x2x128x32xf32>) -> tensor<1x2x128x128xf32>
  %ss = graph.mul %s, %c : (tensor<1x2x128x128xf32>, tensor<f32>) -> tensor<1x2x128x128xf32>
  %sm = graph.add %ss, %mask : (tensor<1x2x128x128xf32>, tensor<1x1x1x128xf32>) -> tensor<1x2x128x128xf32>
  %p = graph.softmax %sm {axes = array<i64: 3>} : tensor<1x2x128x128xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x128x128xf32>, tensor<1x2x128x32xf32>) -> tensor<1x2x128x32xf32>
  func.return %o : tensor<1x2x128x32xf32>
}
