// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// Every graph op prints in its custom syntax and parses back to the same text.

// CHECK-LABEL: func.func @weight
// CHECK-NEXT:    %w = graph.weight "fc.weight" : tensor<10x784xf32>
func.func @weight() -> tensor<10x784xf32> {
  %w = graph.weight "fc.weight" : tensor<10x784xf32>
  func.return %w : tensor<10x784xf32>
}

// CHECK-LABEL: func.func @binary
// CHECK-NEXT:    %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.sub %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = graph.mul %c, %1 : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = graph.div %2, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %3
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.sub %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = graph.mul %c, %1 : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.div %2, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %3 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %r = graph.relu %x : tensor<4xf32>
// CHECK-NEXT:    %s = graph.sigmoid %r : tensor<4xf32>
// CHECK-NEXT:    %t = graph.tanh %s : tensor<4xf32>
func.func @unary(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  %s = graph.sigmoid %r : tensor<4xf32>
  %t = graph.tanh %s : tensor<4xf32>
  func.return %t : tensor<4xf32>
}

// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    %y = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %y = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @matmul_bias_transposes
// CHECK-NEXT:    %y = graph.matmul %a, %b, %c {transpose_lhs, transpose_rhs} : (tensor<3x2xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
func.func @matmul_bias_transposes(%a: tensor<3x2xf32>, %b: tensor<4x3xf32>, %c: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = graph.matmul %a, %b, %c {transpose_lhs, transpose_rhs} : (tensor<3x2xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @matmul_alpha_beta
// CHECK-NEXT:    %y = graph.matmul %a, %b, %c {alpha = 2.000000e+00 : f32, beta = 5.000000e-01 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
func.func @matmul_alpha_beta(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %y = graph.matmul %a, %b, %c {alpha = 2.0 : f32, beta = 0.5 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @matmul_batched
// CHECK-NEXT:    %y = graph.matmul %a, %b : (tensor<3x1x4x5xf32>, tensor<2x5x6xf32>) -> tensor<3x2x4x6xf32>
func.func @matmul_batched(%a: tensor<3x1x4x5xf32>, %b: tensor<2x5x6xf32>) -> tensor<3x2x4x6xf32> {
  %y = graph.matmul %a, %b : (tensor<3x1x4x5xf32>, tensor<2x5x6xf32>) -> tensor<3x2x4x6xf32>
  func.return %y : tensor<3x2x4x6xf32>
}
