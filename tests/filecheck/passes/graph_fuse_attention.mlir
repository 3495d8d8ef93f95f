// RUN: tm-opt %s --split-input-file -p graph-fuse-attention | filecheck %s
//
// graph-fuse-attention: the patterns exporters write for scaled dot-product attention
// become one graph.attention (first the exporters' own shapes, then each way of writing the
// scale and the masks), and what must stay as it is. Every case checks the whole body with
// CHECK-NEXT, so an op left behind fails the test.

// BERT (torch.onnx dynamo): q and kᵀ each scaled by D^-1/4, the padding mask added as
// where(mask, 0, min), the NaN guard after the softmax. kᵀ is a transpose of [B, S, H, D]:
// the op takes k as stored (the transpose's last two dims swapped back).
// CHECK-LABEL: func.func @bert
// CHECK-NEXT:    %zero = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %min = graph.constant dense<-3.40282347e+38> : tensor<f32>
// CHECK-NEXT:    %bias = graph.where %keep, %zero, %min : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
// CHECK-NEXT:    %kt = graph.transpose %kx {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    %o = graph.attention %q, %kt, %v, %bias {scale = 2.500000e-01 : f64, zero_masked_rows} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %o : tensor<1x2x4x8xf32>
func.func @bert(%q: tensor<1x2x4x8xf32>, %kx: tensor<1x4x2x8xf32>, %v: tensor<1x2x4x8xf32>, %keep: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %min = graph.constant dense<-3.40282347e+38> : tensor<f32>
  %kt = graph.transpose %kx {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x2x8xf32> -> tensor<1x2x8x4xf32>
  %qs = graph.mul %q, %half : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %ks = graph.mul %kt, %half : (tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %bias = graph.where %keep, %zero, %min : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %s = graph.matmul %qs, %ks : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %sb = graph.add %s, %bias : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %sb {axes = array<i64: 3>} : tensor<1x2x4x4xf32>
  %nan = graph.is_nan %p : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xi1>
  %pz = graph.where %nan, %zero, %p : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.matmul %pz, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// GPT-2: the causal mask is a constant added to the scores, 0 on and below the diagonal
// and float32's lowest above it (finite: exact because no other mask is added).
// CHECK-LABEL: func.func @gpt2
// CHECK-NEXT:    %o = graph.attention %q, %k, %v {scale = 2.500000e-01 : f64, causal, zero_masked_rows} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %o : tensor<1x2x4x8xf32>
func.func @gpt2(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %causal = graph.constant dense<[[[[0.0, -3.40282347e+38, -3.40282347e+38, -3.40282347e+38], [0.0, 0.0, -3.40282347e+38, -3.40282347e+38], [0.0, 0.0, 0.0, -3.40282347e+38], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %qs = graph.mul %q, %half : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %ks = graph.mul %k, %half : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %s = graph.matmul %qs, %ks {transpose_rhs} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %sb = graph.add %s, %causal : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %sb {axes = array<i64: 3>} : tensor<1x2x4x4xf32>
  %nan = graph.is_nan %p : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xi1>
  %pz = graph.where %nan, %zero, %p : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.matmul %pz, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// ViT: no mask, but the export adds a constant of zeros: dropped.
// CHECK-LABEL: func.func @vit
// CHECK-NEXT:    %o = graph.attention %q, %k, %v {scale = 2.500000e-01 : f64, zero_masked_rows} : (tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
// CHECK-NEXT:    func.return %o : tensor<1x2x5x8xf32>
func.func @vit(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %none = graph.constant dense<0.0> : tensor<1x1x5x5xf32>
  %qs = graph.mul %half, %q : (tensor<f32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  %ks = graph.mul %k, %half : (tensor<1x2x5x8xf32>, tensor<f32>) -> tensor<1x2x5x8xf32>
  %s = graph.matmul %qs, %ks {transpose_rhs} : (tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x5xf32>
  %sb = graph.add %s, %none : (tensor<1x2x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<1x2x5x5xf32>
  %p = graph.softmax %sb {axes = array<i64: 3>} : tensor<1x2x5x5xf32>
  %nan = graph.is_nan %p : tensor<1x2x5x5xf32> -> tensor<1x2x5x5xi1>
  %pz = graph.where %nan, %zero, %p : (tensor<1x2x5x5xi1>, tensor<f32>, tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %o = graph.matmul %pz, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  func.return %o : tensor<1x2x5x8xf32>
}

// -----

// The classic export: scores divided by sqrt(D), a mask built from a cast (1 - m) * -10000,
// no NaN guard (a fully masked row gives NaN, as softmax). k as stored (transpose_rhs).
// CHECK-LABEL: func.func @div_and_cast_mask
// CHECK-NEXT:    %one = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %big = graph.constant dense<-1.000000e+04> : tensor<f32>
// CHECK-NEXT:    %mf = graph.cast %m : tensor<2x1x1x6xi1> -> tensor<2x1x1x6xf32>
// CHECK-NEXT:    %inv = graph.sub %one, %mf : (tensor<f32>, tensor<2x1x1x6xf32>) -> tensor<2x1x1x6xf32>
// CHECK-NEXT:    %mask = graph.mul %inv, %big : (tensor<2x1x1x6xf32>, tensor<f32>) -> tensor<2x1x1x6xf32>
// CHECK-NEXT:    %o = graph.attention %q, %k, %v, %mask {scale = 1.250000e-01 : f64} : (tensor<2x3x5x64xf32>, tensor<2x3x6x64xf32>, tensor<2x3x6x32xf32>, tensor<2x1x1x6xf32>) -> tensor<2x3x5x32xf32>
// CHECK-NEXT:    func.return %o : tensor<2x3x5x32xf32>
func.func @div_and_cast_mask(%q: tensor<2x3x5x64xf32>, %k: tensor<2x3x6x64xf32>, %v: tensor<2x3x6x32xf32>, %m: tensor<2x1x1x6xi1>) -> tensor<2x3x5x32xf32> {
  %eight = graph.constant dense<8.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %big = graph.constant dense<-10000.0> : tensor<f32>
  %mf = graph.cast %m : tensor<2x1x1x6xi1> -> tensor<2x1x1x6xf32>
  %inv = graph.sub %one, %mf : (tensor<f32>, tensor<2x1x1x6xf32>) -> tensor<2x1x1x6xf32>
  %mask = graph.mul %inv, %big : (tensor<2x1x1x6xf32>, tensor<f32>) -> tensor<2x1x1x6xf32>
  %s = graph.matmul %q, %k {transpose_rhs} : (tensor<2x3x5x64xf32>, tensor<2x3x6x64xf32>) -> tensor<2x3x5x6xf32>
  %d = graph.div %s, %eight : (tensor<2x3x5x6xf32>, tensor<f32>) -> tensor<2x3x5x6xf32>
  %sb = graph.add %mask, %d : (tensor<2x1x1x6xf32>, tensor<2x3x5x6xf32>) -> tensor<2x3x5x6xf32>
  %p = graph.softmax %sb {axes = array<i64: 3>} : tensor<2x3x5x6xf32>
  %o = graph.matmul %p, %v : (tensor<2x3x5x6xf32>, tensor<2x3x6x32xf32>) -> tensor<2x3x5x32xf32>
  func.return %o : tensor<2x3x5x32xf32>
}

// -----

// A scalar on the scores' left, the matmul's alpha, a scale on kᵀ only (not a transpose: kᵀ
// stays, k_transposed).
// CHECK-LABEL: func.func @scales
// CHECK-NEXT:    %o = graph.attention %q, %kt, %v {scale = 7.500000e-01 : f64, k_transposed} : (tensor<3x4x8xf32>, tensor<3x8x6xf32>, tensor<3x6x8xf32>) -> tensor<3x4x8xf32>
// CHECK-NEXT:    func.return %o : tensor<3x4x8xf32>
func.func @scales(%q: tensor<3x4x8xf32>, %kt: tensor<3x8x6xf32>, %v: tensor<3x6x8xf32>) -> tensor<3x4x8xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %three = graph.constant dense<3.0> : tensor<1x1x1xf32>
  %ks = graph.mul %kt, %three : (tensor<3x8x6xf32>, tensor<1x1x1xf32>) -> tensor<3x8x6xf32>
  %s = graph.matmul %q, %ks {alpha = 0.5 : f32} : (tensor<3x4x8xf32>, tensor<3x8x6xf32>) -> tensor<3x4x6xf32>
  %d = graph.div %s, %two : (tensor<3x4x6xf32>, tensor<f32>) -> tensor<3x4x6xf32>
  %p = graph.softmax %d {axes = array<i64: 2>} : tensor<3x4x6xf32>
  %o = graph.matmul %p, %v : (tensor<3x4x6xf32>, tensor<3x6x8xf32>) -> tensor<3x4x8xf32>
  func.return %o : tensor<3x4x8xf32>
}

// -----

// A causal mask as where(tril, s, fill), then the scale on the scores (a fill of -inf, or
// finite and at most -1e30 once scaled, without another mask: the text cannot spell -inf).
// CHECK-LABEL: func.func @causal_where
// CHECK-NEXT:    %o = graph.attention %q, %k, %v {scale = 1.250000e-01 : f64, causal} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %o : tensor<2x4x8xf32>
func.func @causal_where(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %tril = graph.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %fill = graph.constant dense<-1.0e+38> : tensor<f32>
  %c = graph.constant dense<0.125> : tensor<f32>
  %s = graph.matmul %q, %k {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %w = graph.where %tril, %s, %fill : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %x = graph.mul %w, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = graph.softmax %x {axes = array<i64: 2>} : tensor<2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %o : tensor<2x4x8xf32>
}

// -----

// masked_fill(triu(1), min): where(strict upper triangle, min, s) is causal too.
// CHECK-LABEL: func.func @causal_masked_fill
// CHECK-NEXT:    %o = graph.attention %q, %k, %v {scale = 1.000000e+00 : f64, causal} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    func.return %o : tensor<3x8xf32>
func.func @causal_masked_fill(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %triu = graph.constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %min = graph.constant dense<-3.40282347e+38> : tensor<f32>
  %s = graph.matmul %q, %k {transpose_rhs} : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x3xf32>
  %w = graph.where %triu, %min, %s : (tensor<3x3xi1>, tensor<f32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %p = graph.softmax %w {axes = array<i64: 1>} : tensor<3x3xf32>
  %o = graph.matmul %p, %v : (tensor<3x3xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  func.return %o : tensor<3x8xf32>
}

// -----

// A where on the scores with a run-time condition: the mask becomes the bias
// where(keep, 0, fill) (a fill of -inf, or at most -1e38: then s + fill == fill).
// CHECK-LABEL: func.func @runtime_where
// CHECK-NEXT:    %min = graph.constant dense<-3.40282347e+38> : tensor<f32>
// CHECK-NEXT:    %mask_zero = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %mask = graph.where %keep, %mask_zero, %min : (tensor<2x1x4xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %o = graph.attention %q, %k, %v, %mask {scale = 1.000000e+00 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x1x4xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %o : tensor<2x4x8xf32>
func.func @runtime_where(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %keep: tensor<2x1x4xi1>) -> tensor<2x4x8xf32> {
  %min = graph.constant dense<-3.40282347e+38> : tensor<f32>
  %s = graph.matmul %q, %k {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %w = graph.where %keep, %s, %min : (tensor<2x1x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = graph.softmax %w {axes = array<i64: 2>} : tensor<2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %o : tensor<2x4x8xf32>
}

// -----

// What stays: a softmax over another axis; scores (or probabilities) read by another op;
// a scale after the mask ((s + b) * c would scale the mask); a negative scale; a second
// matmul with v transposed; a NaN guard that does not give 0.
// CHECK-LABEL: func.func @untouched
// CHECK-COUNT-6: graph.softmax
// CHECK-NOT:     graph.attention
func.func @untouched(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %vt: tensor<2x8x4xf32>, %b: tensor<2x4x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %c = graph.constant dense<0.5> : tensor<f32>
  %neg = graph.constant dense<-0.5> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %s1 = graph.matmul %q, %k {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %p1 = graph.softmax %s1 {axes = array<i64: 1>} : tensor<2x4x4xf32>
  %o1 = graph.matmul %p1, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s2 = graph.matmul %q, %k {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %p2 = graph.softmax %s2 {axes = array<i64: 2>} : tensor<2x4x4xf32>
  %o2 = graph.matmul %p2, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s3 = graph.matmul %q, %k {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %sb3 = graph.add %s3, %b : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x3 = graph.mul %sb3, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p3 = graph.softmax %x3 {axes = array<i64: 2>} : tensor<2x4x4xf32>
  %o3 = graph.matmul %p3, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s4 = graph.matmul %q, %k {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %x4 = graph.mul %s4, %neg : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p4 = graph.softmax %x4 {axes = array<i64: 2>} : tensor<2x4x4xf32>
  %o4 = graph.matmul %p4, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s5 = graph.matmul %q, %k {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %p5 = graph.softmax %s5 {axes = array<i64: 2>} : tensor<2x4x4xf32>
  %o5 = graph.matmul %p5, %vt {transpose_rhs} : (tensor<2x4x4xf32>, tensor<2x8x4xf32>) -> tensor<2x4x8xf32>
  %s6 = graph.matmul %q, %k {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %p6 = graph.softmax %s6 {axes = array<i64: 2>} : tensor<2x4x4xf32>
  %nan6 = graph.is_nan %p6 : tensor<2x4x4xf32> -> tensor<2x4x4xi1>
  %pz6 = graph.where %nan6, %one, %p6 : (tensor<2x4x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o6 = graph.matmul %pz6, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %o1, %o2, %s2, %o3, %o4, %o5, %o6 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// A finite causal fill next to another mask: a row the mask hides entirely would differ
// (softmax spreads it over the causally hidden keys), so the pattern stays.
// CHECK-LABEL: func.func @finite_causal_and_mask
// CHECK:         graph.softmax
// CHECK-NOT:     graph.attention
func.func @finite_causal_and_mask(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>, %b: tensor<3x3xf32>) -> tensor<3x8xf32> {
  %tril = graph.constant dense<[[true, false, false], [true, true, false], [true, true, true]]> : tensor<3x3xi1>
  %min = graph.constant dense<-3.40282347e+38> : tensor<f32>
  %s = graph.matmul %q, %k {transpose_rhs} : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x3xf32>
  %w = graph.where %tril, %s, %min : (tensor<3x3xi1>, tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
  %sb = graph.add %w, %b : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %p = graph.softmax %sb {axes = array<i64: 1>} : tensor<3x3xf32>
  %o = graph.matmul %p, %v : (tensor<3x3xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  func.return %o : tensor<3x8xf32>
}
