// RUN: tm-opt %s --split-input-file -p graph-partition | filecheck %s
// RUN: tm-opt %s --split-input-file -p lower-to-cuda -o /dev/null
//
// graph-partition and 16-bit values between kernels: a narrowing cast that a tensor-core
// matmul reads is written by the producer of its input, beside the f32 value its other
// readers take (a narrow copy); a widening cast at the end of an epilogue moves to its
// reader's prologue, so the narrow value crosses between the kernels.

// BERT's post-LN block: the layer norm feeds the next matmul (through its f16 cast) and
// the residual add. The layer norm's kernel writes both %h and its f16 copy; the matmul
// reads the copy as it is stored (no prologue: copied by cp.async).
// CHECK-LABEL: func.func @narrow_copy
// CHECK-NEXT:    %h, %h_f16 = graph.fused -> tensor<32x64xf32>, tensor<32x64xf16> {
// CHECK-NEXT:      %h_1 = graph.layer_norm %x, %s, %b
// CHECK-NEXT:      %h_f16_1 = graph.cast %h_1 : tensor<32x64xf32> -> tensor<32x64xf16>
// CHECK-NEXT:      graph.yield %h_1, %h_f16_1 : tensor<32x64xf32>, tensor<32x64xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    %y = graph.fused -> tensor<32x64xf32> {
// CHECK-NEXT:      %m = graph.matmul %h_f16, %w
// CHECK-NEXT:      %y_1 = graph.add %m, %h
// CHECK-NEXT:      graph.yield %y_1
func.func @narrow_copy(%x: tensor<32x64xf32>, %s: tensor<64xf32>, %b: tensor<64xf32>,
                       %w: tensor<64x64xf16>) -> tensor<32x64xf32> {
  %h = graph.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
  %h_f16 = graph.cast %h : tensor<32x64xf32> -> tensor<32x64xf16>
  %m = graph.matmul %h_f16, %w : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf32>
  %y = graph.add %m, %h : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  func.return %y : tensor<32x64xf32>
}

// -----

// A convolution gathers its input (im2col) either way: the copy would only move bytes from
// its reads to the producer's writes, so the cast stays the convolution's prologue.
// CHECK-LABEL: func.func @conv_gathers_anyway
// CHECK-NEXT:    %r = graph.fused -> tensor<1x16x8x8xf32> {
// CHECK-NEXT:      %c = graph.conv %x, %w
// CHECK-NEXT:      %r_1 = graph.relu %c
// CHECK-NEXT:      graph.yield %r_1 : tensor<1x16x8x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %y = graph.fused -> tensor<1x16x8x8xf32> {
// CHECK-NEXT:      %r_f16 = graph.cast %r
// CHECK-NEXT:      %d = graph.conv %r_f16, %v
// CHECK-NEXT:      %y_1 = graph.add %d, %r
func.func @conv_gathers_anyway(%x: tensor<1x16x8x8xf16>, %w: tensor<16x16x3x3xf16>,
                               %v: tensor<16x16x3x3xf16>) -> tensor<1x16x8x8xf32> {
  %c = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf16>, tensor<16x16x3x3xf16>) -> tensor<1x16x8x8xf32>
  %r = graph.relu %c : tensor<1x16x8x8xf32>
  %r_f16 = graph.cast %r : tensor<1x16x8x8xf32> -> tensor<1x16x8x8xf16>
  %d = graph.conv %r_f16, %v {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf16>, tensor<16x16x3x3xf16>) -> tensor<1x16x8x8xf32>
  %y = graph.add %d, %r : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}

// -----

// A float16 model's softmax in float32 between casts, as exporters write it: the scores
// leave the matmul in f16 and the softmax's prologue widens them (exactly); no f32 value
// crosses between the kernels.
// CHECK-LABEL: func.func @widen_in_the_reader
// CHECK-NEXT:    %s = graph.matmul %q, %k {transpose_rhs}
// CHECK-NEXT:    %p = graph.fused -> tensor<32x32xf16> {
// CHECK-NEXT:      %s32 = graph.cast %s : tensor<32x32xf16> -> tensor<32x32xf32>
// CHECK-NEXT:      %p32 = graph.softmax %s32
// CHECK-NEXT:      %p_1 = graph.cast %p32 : tensor<32x32xf32> -> tensor<32x32xf16>
func.func @widen_in_the_reader(%q: tensor<32x64xf16>, %k: tensor<32x64xf16>) -> tensor<32x32xf16> {
  %s = graph.matmul %q, %k {transpose_rhs} : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x32xf16>
  %s32 = graph.cast %s : tensor<32x32xf16> -> tensor<32x32xf32>
  %p32 = graph.softmax %s32 {axes = array<i64: 1>} : tensor<32x32xf32>
  %p = graph.cast %p32 : tensor<32x32xf32> -> tensor<32x32xf16>
  func.return %p : tensor<32x32xf16>
}

// -----

// Two kernels read the widened value: the epilogue keeps the cast (one f32 copy written,
// not a widening kernel of its own).
// CHECK-LABEL: func.func @widened_twice
// CHECK-NEXT:    %s32 = graph.fused -> tensor<32x32xf32> {
// CHECK-NEXT:      %s = graph.matmul %q, %k {transpose_rhs}
// CHECK-NEXT:      %s32_1 = graph.cast %s : tensor<32x32xf16> -> tensor<32x32xf32>
// CHECK-NEXT:      graph.yield %s32_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %p = graph.softmax %s32
// CHECK-NEXT:    %m = graph.reduce_max %s32
func.func @widened_twice(%q: tensor<32x64xf16>, %k: tensor<32x64xf16>) -> (tensor<32x32xf32>, tensor<32xf32>) {
  %s = graph.matmul %q, %k {transpose_rhs} : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x32xf16>
  %s32 = graph.cast %s : tensor<32x32xf16> -> tensor<32x32xf32>
  %p = graph.softmax %s32 {axes = array<i64: 1>} : tensor<32x32xf32>
  %m = graph.reduce_max %s32 {axes = array<i64: 1>} : tensor<32x32xf32> -> tensor<32xf32>
  func.return %p, %m : tensor<32x32xf32>, tensor<32xf32>
}

// -----

// A returned narrow copy is written by the producer too (not a cast kernel of its own).
// CHECK-LABEL: func.func @returned_copy
// CHECK-NEXT:    %h, %h16 = graph.fused -> tensor<32x64xf32>, tensor<32x64xf16> {
// CHECK-NEXT:      %h_1 = graph.layer_norm %x, %s, %b
// CHECK-NEXT:      %h16_1 = graph.cast %h_1
// CHECK-NEXT:      graph.yield %h_1, %h16_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %h, %h16
func.func @returned_copy(%x: tensor<32x64xf32>, %s: tensor<64xf32>, %b: tensor<64xf32>)
    -> (tensor<32x64xf32>, tensor<32x64xf16>) {
  %h = graph.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
  %h16 = graph.cast %h : tensor<32x64xf32> -> tensor<32x64xf16>
  func.return %h, %h16 : tensor<32x64xf32>, tensor<32x64xf16>
}
