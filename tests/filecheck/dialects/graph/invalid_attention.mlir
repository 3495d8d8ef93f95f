// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The verifier of graph.attention (see invalid.mlir for the format): one line per error.

func.func @head_size(%q: tensor<2x16x8xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error@+1 {{q has head size D = 8 but k has 4}}
  %o = graph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x16x8xf32>, tensor<2x16x4xf32>, tensor<2x16x8xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @head_size_transposed(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x8x8xf32>) {
  // expected-error@+1 {{q has head size D = 8 but kᵀ has 16}}
  %o = graph.attention %q, %k, %v {scale = 1.0 : f64, k_transposed} : (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8x8xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @keys(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x12x8xf32>) {
  // expected-error@+1 {{k has Sk = 16 keys but v has 12}}
  %o = graph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x12x8xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @batch(%q: tensor<2x16x8xf32>, %k: tensor<3x16x8xf32>, %v: tensor<3x16x8xf32>) {
  // expected-error@+1 {{batch dimensions [2], [3] and [3] of q, k and v do not broadcast}}
  %o = graph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x16x8xf32>, tensor<3x16x8xf32>, tensor<3x16x8xf32>) -> tensor<3x16x8xf32>
  func.return
}

// -----

func.func @rank(%q: tensor<8xf32>, %k: tensor<16x8xf32>, %v: tensor<16x8xf32>) {
  // expected-error@+1 {{q must have rank >= 2, got rank 1}}
  %o = graph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<8xf32>
  func.return
}

// -----

func.func @result_shape(%q: tensor<2x16x8xf32>, %k: tensor<2x12x8xf32>, %v: tensor<2x12x4xf32>) {
  // expected-error@+1 {{result shape [2, 16, 8] does not match expected [2, 16, 4]}}
  %o = graph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x16x8xf32>, tensor<2x12x8xf32>, tensor<2x12x4xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @bias_shape(%q: tensor<2x16x8xf32>, %k: tensor<2x12x8xf32>, %v: tensor<2x12x8xf32>, %b: tensor<16x16xf32>) {
  // expected-error@+1 {{bias shape [16, 16] does not broadcast to the scores' shape [2, 16, 12]}}
  %o = graph.attention %q, %k, %v, %b {scale = 1.0 : f64} : (tensor<2x16x8xf32>, tensor<2x12x8xf32>, tensor<2x12x8xf32>, tensor<16x16xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @bias_widens(%q: tensor<16x8xf32>, %k: tensor<12x8xf32>, %v: tensor<12x8xf32>, %b: tensor<2x16x12xf32>) {
  // expected-error@+1 {{bias shape [2, 16, 12] does not broadcast to the scores' shape [16, 12]}}
  %o = graph.attention %q, %k, %v, %b {scale = 1.0 : f64} : (tensor<16x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<2x16x12xf32>) -> tensor<16x8xf32>
  func.return
}

// -----

func.func @bias_type(%q: tensor<16x8xf32>, %k: tensor<12x8xf32>, %v: tensor<12x8xf32>, %b: tensor<16x12xi1>) {
  // expected-error@+1 {{bias must have element type f32, f16 or bf16, got i1}}
  %o = graph.attention %q, %k, %v, %b {scale = 1.0 : f64} : (tensor<16x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<16x12xi1>) -> tensor<16x8xf32>
  func.return
}

// -----

func.func @element_types(%q: tensor<16x8xf32>, %k: tensor<12x8xf16>, %v: tensor<12x8xf32>) {
  // expected-error@+1 {{q, k, v and result must have the same element type, got f32 and f16 (k)}}
  %o = graph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<16x8xf32>, tensor<12x8xf16>, tensor<12x8xf32>) -> tensor<16x8xf32>
  func.return
}

// -----

func.func @narrower_result(%q: tensor<16x8xf32>, %k: tensor<12x8xf32>, %v: tensor<12x8xf32>) {
  // expected-error@+1 {{q, k, v and result must have the same element type (or an f32 result of f16/bf16 q, k, v), got f32 and f16 (result)}}
  %o = graph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<16x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<16x8xf16>
  func.return
}

// -----

func.func @integers(%q: tensor<16x8xi32>, %k: tensor<12x8xi32>, %v: tensor<12x8xi32>) {
  // expected-error@+1 {{q must have element type f32, f16 or bf16, got i32}}
  %o = graph.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<16x8xi32>, tensor<12x8xi32>, tensor<12x8xi32>) -> tensor<16x8xi32>
  func.return
}

// -----

func.func @scale_type(%q: tensor<16x8xf32>, %k: tensor<12x8xf32>, %v: tensor<12x8xf32>) {
  // expected-error@+1 {{scale must be an f64, got f32}}
  %o = graph.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<16x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<16x8xf32>
  func.return
}

// -----

func.func @scale_finite(%q: tensor<16x8xf32>, %k: tensor<12x8xf32>, %v: tensor<12x8xf32>) {
  // expected-error@+1 {{scale must be finite, got inf}}
  %o = graph.attention %q, %k, %v {scale = 0x7FF0000000000000 : f64} : (tensor<16x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<16x8xf32>
  func.return
}

// -----

func.func @missing_scale(%q: tensor<16x8xf32>, %k: tensor<12x8xf32>, %v: tensor<12x8xf32>) {
  // expected-error@+1 {{property 'scale' expected in operation 'graph.attention'}}
  %o = graph.attention %q, %k, %v : (tensor<16x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<16x8xf32>
  func.return
}
