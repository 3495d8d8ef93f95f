// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// Rounding, trigonometric and hyperbolic functions, the parameterized activations, mod,
// the bitwise ops, shifts, prelu and is_inf print in their custom syntax and parse back to
// the same text.

// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %0 = graph.sign %x : tensor<4xf32>
// CHECK-NEXT:    %1 = graph.floor %0 : tensor<4xf32>
// CHECK-NEXT:    %2 = graph.ceil %1 : tensor<4xf32>
// CHECK-NEXT:    %3 = graph.round %2 : tensor<4xf32>
// CHECK-NEXT:    %4 = graph.sin %3 : tensor<4xf32>
// CHECK-NEXT:    %5 = graph.cos %4 : tensor<4xf32>
// CHECK-NEXT:    %6 = graph.tan %5 : tensor<4xf32>
// CHECK-NEXT:    %7 = graph.asin %6 : tensor<4xf32>
// CHECK-NEXT:    %8 = graph.acos %7 : tensor<4xf32>
// CHECK-NEXT:    %9 = graph.atan %8 : tensor<4xf32>
// CHECK-NEXT:    %10 = graph.sinh %9 : tensor<4xf32>
// CHECK-NEXT:    %11 = graph.cosh %10 : tensor<4xf32>
// CHECK-NEXT:    %12 = graph.asinh %11 : tensor<4xf32>
// CHECK-NEXT:    %13 = graph.acosh %12 : tensor<4xf32>
// CHECK-NEXT:    %14 = graph.atanh %13 : tensor<4xf32>
// CHECK-NEXT:    %15 = graph.mish %14 : tensor<4xf32>
// CHECK-NEXT:    %16 = graph.thresholded_relu %15 {alpha = 1.000000e+00 : f32} : tensor<4xf32>
// CHECK-NEXT:    %17 = graph.shrink %16 {lambd = 5.000000e-01 : f32, bias = 2.500000e-01 : f32} : tensor<4xf32>
// CHECK-NEXT:    %18 = graph.celu %17 {alpha = 2.000000e+00 : f32} : tensor<4xf32>
// CHECK-NEXT:    %19 = graph.sign %i : tensor<4xi32>
// CHECK-NEXT:    %20 = graph.bitwise_not %19 : tensor<4xi32>
func.func @unary(%x: tensor<4xf32>, %i: tensor<4xi32>) {
  %0 = graph.sign %x : tensor<4xf32>
  %1 = graph.floor %0 : tensor<4xf32>
  %2 = graph.ceil %1 : tensor<4xf32>
  %3 = graph.round %2 : tensor<4xf32>
  %4 = graph.sin %3 : tensor<4xf32>
  %5 = graph.cos %4 : tensor<4xf32>
  %6 = graph.tan %5 : tensor<4xf32>
  %7 = graph.asin %6 : tensor<4xf32>
  %8 = graph.acos %7 : tensor<4xf32>
  %9 = graph.atan %8 : tensor<4xf32>
  %10 = graph.sinh %9 : tensor<4xf32>
  %11 = graph.cosh %10 : tensor<4xf32>
  %12 = graph.asinh %11 : tensor<4xf32>
  %13 = graph.acosh %12 : tensor<4xf32>
  %14 = graph.atanh %13 : tensor<4xf32>
  %15 = graph.mish %14 : tensor<4xf32>
  %16 = graph.thresholded_relu %15 {alpha = 1.0 : f32} : tensor<4xf32>
  %17 = graph.shrink %16 {lambd = 0.5 : f32, bias = 0.25 : f32} : tensor<4xf32>
  %18 = graph.celu %17 {alpha = 2.0 : f32} : tensor<4xf32>
  %19 = graph.sign %i : tensor<4xi32>
  %20 = graph.bitwise_not %19 : tensor<4xi32>
  func.return
}

// CHECK-LABEL: func.func @binary
// CHECK-NEXT:    %mod = graph.mod %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %fmod = graph.mod %x, %y {fmod} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %and = graph.bitwise_and %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %or = graph.bitwise_or %and, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %xor = graph.bitwise_xor %or, %a : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %shl = graph.shift_left %xor, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %shr = graph.shift_right %shl, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %prelu = graph.prelu %x, %s : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %inf = graph.is_inf %x : tensor<2x3xf32> -> tensor<2x3xi1>
// CHECK-NEXT:    %pos = graph.is_inf %x {detect_negative = false} : tensor<2x3xf32> -> tensor<2x3xi1>
func.func @binary(%a: tensor<2x3xi64>, %b: tensor<3xi64>, %x: tensor<2x3xf32>, %y: tensor<f32>, %s: tensor<2x1xf32>) {
  %mod = graph.mod %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %fmod = graph.mod %x, %y {fmod} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %and = graph.bitwise_and %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %or = graph.bitwise_or %and, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %xor = graph.bitwise_xor %or, %a : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %shl = graph.shift_left %xor, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %shr = graph.shift_right %shl, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %prelu = graph.prelu %x, %s : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %inf = graph.is_inf %x : tensor<2x3xf32> -> tensor<2x3xi1>
  %pos = graph.is_inf %x {detect_negative = false} : tensor<2x3xf32> -> tensor<2x3xi1>
  func.return
}
