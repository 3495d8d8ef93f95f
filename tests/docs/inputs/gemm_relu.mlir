builtin.module attributes {graph.source = "gemm_relu.onnx"} {
  func.func @main(%x: tensor<20x8xf32>) -> tensor<20x40xf32> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
    %fc_weight = graph.weight "fc.weight" : tensor<40x8xf32>
    %fc_bias = graph.weight "fc.bias" : tensor<40xf32>
    %h = graph.matmul %x, %fc_weight, %fc_bias {transpose_rhs} : (tensor<20x8xf32>, tensor<40x8xf32>, tensor<40xf32>) -> tensor<20x40xf32>
    %y = graph.relu %h : tensor<20x40xf32>
    func.return %y : tensor<20x40xf32>
  }
}
