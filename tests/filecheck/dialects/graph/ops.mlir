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

// Parameters are f32 properties in the attribute dictionary; gelu's approximate and
// clip's bounds are optional.
// CHECK-LABEL: func.func @softsign
// CHECK-NEXT:    %0 = graph.softsign %x : tensor<4xf32>
// CHECK-NEXT:    func.return %0
func.func @softsign(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.softsign %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @unary_functions
// CHECK-NEXT:    %0 = graph.exp %x : tensor<4xf32>
// CHECK-NEXT:    %1 = graph.log %0 : tensor<4xf32>
// CHECK-NEXT:    %2 = graph.sqrt %1 : tensor<4xf32>
// CHECK-NEXT:    %3 = graph.reciprocal %2 : tensor<4xf32>
// CHECK-NEXT:    %4 = graph.neg %3 : tensor<4xf32>
// CHECK-NEXT:    %5 = graph.abs %4 : tensor<4xf32>
// CHECK-NEXT:    %6 = graph.erf %5 : tensor<4xf32>
// CHECK-NEXT:    %7 = graph.softplus %6 : tensor<4xf32>
// CHECK-NEXT:    %8 = graph.hard_swish %7 : tensor<4xf32>
// CHECK-NEXT:    %9 = graph.leaky_relu %8 {alpha = 1.000000e-01 : f32} : tensor<4xf32>
// CHECK-NEXT:    %10 = graph.hard_sigmoid %9 {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : tensor<4xf32>
// CHECK-NEXT:    %11 = graph.elu %10 {alpha = 1.000000e+00 : f32} : tensor<4xf32>
// CHECK-NEXT:    %12 = graph.selu %11 {alpha = 1.67326319 : f32, gamma = 1.05070102 : f32} : tensor<4xf32>
// CHECK-NEXT:    %13 = graph.gelu %12 : tensor<4xf32>
// CHECK-NEXT:    %14 = graph.gelu %13 {approximate = "tanh"} : tensor<4xf32>
// CHECK-NEXT:    %15 = graph.clip %14 {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<4xf32>
// CHECK-NEXT:    %16 = graph.clip %15 {max = 1.000000e+00 : f32} : tensor<4xf32>
// CHECK-NEXT:    func.return %16
func.func @unary_functions(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %x : tensor<4xf32>
  %1 = graph.log %0 : tensor<4xf32>
  %2 = graph.sqrt %1 : tensor<4xf32>
  %3 = graph.reciprocal %2 : tensor<4xf32>
  %4 = graph.neg %3 : tensor<4xf32>
  %5 = graph.abs %4 : tensor<4xf32>
  %6 = graph.erf %5 : tensor<4xf32>
  %7 = graph.softplus %6 : tensor<4xf32>
  %8 = graph.hard_swish %7 : tensor<4xf32>
  %9 = graph.leaky_relu %8 {alpha = 0.1 : f32} : tensor<4xf32>
  %10 = graph.hard_sigmoid %9 {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<4xf32>
  %11 = graph.elu %10 {alpha = 1.0 : f32} : tensor<4xf32>
  %12 = graph.selu %11 {alpha = 1.67326319 : f32, gamma = 1.05070102 : f32} : tensor<4xf32>
  %13 = graph.gelu %12 : tensor<4xf32>
  %14 = graph.gelu %13 {approximate = "tanh"} : tensor<4xf32>
  %15 = graph.clip %14 {min = 0.0 : f32, max = 6.0 : f32} : tensor<4xf32>
  %16 = graph.clip %15 {max = 1.0 : f32} : tensor<4xf32>
  func.return %16 : tensor<4xf32>
}

// CHECK-LABEL: func.func @pow_and_variadic
// CHECK-NEXT:    %0 = graph.pow %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.max %0, %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = graph.min %1, %c : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = graph.sum %2, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = graph.mean %3, %b, %c, %a : (tensor<2x3xf32>, tensor<3xf32>, tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %5 = graph.max %b : (tensor<3xf32>) -> tensor<3xf32>
func.func @pow_and_variadic(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<f32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %0 = graph.pow %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.max %0, %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = graph.min %1, %c : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = graph.sum %2, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = graph.mean %3, %b, %c, %a : (tensor<2x3xf32>, tensor<3xf32>, tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = graph.max %b : (tensor<3xf32>) -> tensor<3xf32>
  func.return %4, %5 : tensor<2x3xf32>, tensor<3xf32>
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
