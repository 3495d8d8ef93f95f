// RUN: tm-opt %s --split-input-file -p convert-graph-to-tm | filecheck %s
// RUN: tm-opt %s --split-input-file -p 'convert-graph-to-tm{target-arch=sm_75}' | filecheck %s --check-prefix=SM75
// RUN: tm-opt %s --split-input-file -p 'graph-mixed-precision,graph-partition' | filecheck %s --check-prefix=MIXED
// RUN: tm-opt %s --split-input-file -p 'lower-to-cuda{precision=fp16}' -t cuda | filecheck %s --check-prefix=FP16
//
// Which template builds a graph.attention: attention_tc (tensor cores) for f16 or bf16
// q, k and v on sm_80 and later, where D is a multiple of 16 and Dv of 8; the SIMT
// template otherwise (sm_75, f32, D = 24). attention_tc copies q, k and v by cp.async
// (copy_q/k/v = "cp16") unless a prologue computes them or, for a kᵀ, Sk is not a
// multiple of 8 ("gather"). graph-mixed-precision gives an f32 attention f16 q, k and v
// (its bias and result stay f32), and graph-partition lets their producers write the f16
// copies, which the attention then copies as stored.

// CHECK-LABEL: tm.kernel @attention_0
// CHECK-SAME:    tm.template = "attention_tc"
// CHECK-SAME:    dtype = "f16", copy_q = "cp16", copy_k = "cp16", copy_v = "cp16", bias = 1
// SM75-LABEL:  tm.kernel @attention_0
// SM75-SAME:     tm.template = "attention"
func.func @half(%q: tensor<2x4x64x64xf16>, %k: tensor<2x4x80x64xf16>, %v: tensor<2x4x80x64xf16>,
                %m: tensor<2x1x1x80xf32>) -> tensor<2x4x64x64xf16> {
  %o = graph.attention %q, %k, %v, %m {scale = 0.125 : f64} : (tensor<2x4x64x64xf16>, tensor<2x4x80x64xf16>, tensor<2x4x80x64xf16>, tensor<2x1x1x80xf32>) -> tensor<2x4x64x64xf16>
  func.return %o : tensor<2x4x64x64xf16>
}

// -----

// A kᵀ [D, Sk] with Sk = 36: its rows are not whole 16-byte chunks, so k is gathered.
// CHECK-LABEL: tm.kernel @attention_0
// CHECK-SAME:    tm.template = "attention_tc"
// CHECK-SAME:    dtype = "bf16", copy_q = "cp16", copy_k = "gather", copy_v = "cp16", causal = 1
func.func @bf16_k_transposed(%q: tensor<4x36x32xbf16>, %kt: tensor<4x32x36xbf16>, %v: tensor<4x36x16xbf16>) -> tensor<4x36x16xbf16> {
  %o = graph.attention %q, %kt, %v {scale = 0.25 : f64, causal, k_transposed} : (tensor<4x36x32xbf16>, tensor<4x32x36xbf16>, tensor<4x36x16xbf16>) -> tensor<4x36x16xbf16>
  func.return %o : tensor<4x36x16xbf16>
}

// -----

// D = 24 is not a multiple of the mma's k (16): the SIMT template.
// CHECK-LABEL: tm.kernel @attention_0
// CHECK-SAME:    tm.template = "attention"
func.func @head_24(%q: tensor<2x32x24xf16>, %k: tensor<2x32x24xf16>, %v: tensor<2x32x24xf16>) -> tensor<2x32x24xf16> {
  %o = graph.attention %q, %k, %v {scale = 0.2 : f64} : (tensor<2x32x24xf16>, tensor<2x32x24xf16>, tensor<2x32x24xf16>) -> tensor<2x32x24xf16>
  func.return %o : tensor<2x32x24xf16>
}

// -----

// An f32 attention is SIMT unless graph-mixed-precision narrows q, k and v. Here q, k and
// v are a layer norm's output, which the residual add also reads: the layer norm's kernel
// writes the f16 copy beside it (a narrow copy), the attention copies it by cp.async (one
// buffer for q, k and v), its bias and result stay f32, and the add fuses as its epilogue.
// CHECK-LABEL: tm.kernel @attention_1
// CHECK-SAME:    tm.template = "attention"
// MIXED-LABEL: func.func @narrow_copy
// MIXED:         %h, %h_f16 = graph.fused -> tensor<2x64x64xf32>, tensor<2x64x64xf16> {
// MIXED-NEXT:      %h_1 = graph.layer_norm
// MIXED-NEXT:      %h_f16_1 = graph.cast %h_1 : tensor<2x64x64xf32> -> tensor<2x64x64xf16>
// MIXED:         graph.attention %h_f16, %h_f16, %h_f16, %m {scale = 1.250000e-01 : f64} : (tensor<2x64x64xf16>, tensor<2x64x64xf16>, tensor<2x64x64xf16>, tensor<2x1x64xf32>) -> tensor<2x64x64xf32>
// MIXED:         graph.add
// FP16:        schedule template 'attention_tc' (Sq=64, Sk=64, D=64, Dv=64, {{.*}}, dtype=f16, copy_q=cp16, copy_k=cp16, copy_v=cp16, bias=1)
// FP16:        attention_1(const tm_half* __restrict__ q, const float* __restrict__ bias, const float* __restrict__ h, float* __restrict__ y)
// FP16:        tmlir_cp_async<16>(
func.func @narrow_copy(%x: tensor<2x64x64xf32>, %s: tensor<64xf32>, %b: tensor<64xf32>, %m: tensor<2x1x64xf32>) -> tensor<2x64x64xf32> {
  %h = graph.layer_norm %x, %s, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x64x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x64x64xf32>
  %o = graph.attention %h, %h, %h, %m {scale = 0.125 : f64} : (tensor<2x64x64xf32>, tensor<2x64x64xf32>, tensor<2x64x64xf32>, tensor<2x1x64xf32>) -> tensor<2x64x64xf32>
  %y = graph.add %o, %h : (tensor<2x64x64xf32>, tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  func.return %y : tensor<2x64x64xf32>
}
