// RUN: tm-opt %s -p graph-fold-empty --verify-diagnostics
// RUN: tm-opt %s -p lower-to-cuda -t cuda --verify-diagnostics
//
// graph-fold-empty: an op reading an empty tensor into a non-empty result is one line.

func.func @reduce_empty_axis(%x: tensor<0x3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{graph-fold-empty: 'graph.reduce_sum' (%y): reads the empty tensor<0x3xf32> (%x) into a non-empty result; such values are computed by the ONNX frontend, not by kernels}}
  %y = graph.reduce_sum %x {axes = array<i64: 0>} : tensor<0x3xf32> -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
