func.func @ffn(%x: tensor<32x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<32x64xf32> {
  %m = graph.matmul %x, %w : (tensor<32x32xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  %h = graph.add %m, %b : (tensor<32x64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
  %y = graph.gelu %h : tensor<32x64xf32>
  func.return %y : tensor<32x64xf32>
}
