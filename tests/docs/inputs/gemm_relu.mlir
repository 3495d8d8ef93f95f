builtin.module attributes {graph.source = "gemm_relu.onnx"} {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<4x16xf32> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
    %fc_weight = graph.weight "fc.weight" : tensor<16x8xf32>
    %fc_bias = graph.weight "fc.bias" : tensor<16xf32>
    %h = graph.matmul %x, %fc_weight, %fc_bias {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %y = graph.relu %h : tensor<4x16xf32>
    func.return %y : tensor<4x16xf32>
  }
}
