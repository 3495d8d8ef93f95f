// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// graph.attention prints in its custom syntax and parses back to the same text: q, k, v
// and an optional bias, the scale (f64) and the unit flags causal, k_transposed and
// zero_masked_rows.

// BERT's attention: a padding mask broadcast over the heads, softmax's NaN rows to 0.
// CHECK-LABEL: func.func @masked
// CHECK-NEXT:    %o = graph.attention %q, %k, %v, %mask {scale = 2.500000e-01 : f64, zero_masked_rows} : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<1x2x16x16xf32>
func.func @masked(%q: tensor<1x2x16x16xf32>, %k: tensor<1x2x16x16xf32>, %v: tensor<1x2x16x16xf32>, %mask: tensor<1x1x16x16xf32>) -> tensor<1x2x16x16xf32> {
  %o = graph.attention %q, %k, %v, %mask {scale = 0.25 : f64, zero_masked_rows} : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<1x2x16x16xf32>
  func.return %o : tensor<1x2x16x16xf32>
}

// Causal, k given as kᵀ [.., D, Sk], Sq != Sk and D != Dv, k and v shared by the heads.
// CHECK-LABEL: func.func @causal_transposed
// CHECK-NEXT:    %o = graph.attention %q, %kt, %v {scale = 1.250000e-01 : f64, causal, k_transposed} : (tensor<2x4x7x8xf32>, tensor<2x1x8x9xf32>, tensor<2x1x9x5xf32>) -> tensor<2x4x7x5xf32>
func.func @causal_transposed(%q: tensor<2x4x7x8xf32>, %kt: tensor<2x1x8x9xf32>, %v: tensor<2x1x9x5xf32>) -> tensor<2x4x7x5xf32> {
  %o = graph.attention %q, %kt, %v {scale = 0.125 : f64, causal, k_transposed} : (tensor<2x4x7x8xf32>, tensor<2x1x8x9xf32>, tensor<2x1x9x5xf32>) -> tensor<2x4x7x5xf32>
  func.return %o : tensor<2x4x7x5xf32>
}

// Rank 2 (one head), f16 operands with an f32 bias.
// CHECK-LABEL: func.func @half
// CHECK-NEXT:    %o = graph.attention %q, %k, %v, %b {scale = 1.000000e+00 : f64} : (tensor<5x4xf16>, tensor<6x4xf16>, tensor<6x3xf16>, tensor<6xf32>) -> tensor<5x3xf16>
func.func @half(%q: tensor<5x4xf16>, %k: tensor<6x4xf16>, %v: tensor<6x3xf16>, %b: tensor<6xf32>) -> tensor<5x3xf16> {
  %o = graph.attention %q, %k, %v, %b {scale = 1.0 : f64} : (tensor<5x4xf16>, tensor<6x4xf16>, tensor<6x3xf16>, tensor<6xf32>) -> tensor<5x3xf16>
  func.return %o : tensor<5x3xf16>
}

// graph-mixed-precision's attention: bf16 q, k and v, f32 math and result.
// CHECK-LABEL: func.func @mixed
// CHECK-NEXT:    %o = graph.attention %q, %k, %v {scale = 1.250000e-01 : f64} : (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x8x16xbf16>) -> tensor<2x8x16xf32>
func.func @mixed(%q: tensor<2x8x16xbf16>, %k: tensor<2x8x16xbf16>, %v: tensor<2x8x16xbf16>) -> tensor<2x8x16xf32> {
  %o = graph.attention %q, %k, %v {scale = 0.125 : f64} : (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x8x16xbf16>) -> tensor<2x8x16xf32>
  func.return %o : tensor<2x8x16xf32>
}
