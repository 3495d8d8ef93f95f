// RUN: tm-opt %s --split-input-file -p convert-graph-to-tm | filecheck %s
// RUN: tm-opt %s --split-input-file -p 'convert-graph-to-tm{target-arch=sm_75}' | filecheck %s --check-prefix=SM75
// RUN: tm-opt %s --split-input-file -p lower-to-cuda -t cuda | filecheck %s --check-prefix=CUDA
//
// From sm_80 (the default target is sm_90) a matmul or 2-D convolution on f16/bf16
// operands is built by a tensor-core template (mma.sync, ldmatrix, cp.async); sm_75 has
// none of them and gets the SIMT templates. An f16 result is stored rounded from the f32
// accumulators; the bias is read widened.

// CHECK-LABEL: tm.kernel @matmul_0(%A: memref<64x32xf16>, %B: memref<32x48xf16>, %bias: memref<48xf16>, %C: memref<64x48xf16>)
// CHECK-SAME:    tm.template = "matmul_tc"
// CHECK-SAME:    block_m = 64 : i64, block_n = 64 : i64, block_k = 32 : i64, warps = "2x2", stages = 3 : i64
// CHECK:         tm.cp_async
// CHECK:         tm.mma
// SM75-LABEL:  tm.kernel @matmul_0(
// SM75-SAME:     tm.template = "matmul_simt"
// The source's prelude defines only the primitives its kernels call, as inline PTX.
// CUDA:        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CUDA:        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CUDA:        asm volatile("cp.async.cg.shared.global
// CUDA:        // Kernel matmul_0: schedule template 'matmul_tc'
// ptxas plans for one resident block (it would trade spills for guessed occupancy).
// CUDA:        __launch_bounds__(128, 1) matmul_0(
func.func @linear(%x: tensor<64x32xf16>, %w: tensor<32x48xf16>, %b: tensor<48xf16>) -> tensor<64x48xf16> {
  %y = graph.matmul %x, %w, %b : (tensor<64x32xf16>, tensor<32x48xf16>, tensor<48xf16>) -> tensor<64x48xf16>
  func.return %y : tensor<64x48xf16>
}

// -----

// CHECK-LABEL: tm.kernel @conv_0(%x: memref<1x16x8x8xf16>, %w: memref<32x16x3x3xf16>, %y: memref<1x32x8x8xf16>)
// CHECK-SAME:    tm.template = "conv2d_tc"
// SM75-LABEL:  tm.kernel @conv_0(
// SM75-SAME:     tm.template = "conv2d_implicit_gemm"
// CUDA:        mma.sync.aligned.m16n8k16
// CUDA:        // Kernel conv_0: schedule template 'conv2d_tc'
func.func @conv(%x: tensor<1x16x8x8xf16>, %w: tensor<32x16x3x3xf16>) -> tensor<1x32x8x8xf16> {
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf16>, tensor<32x16x3x3xf16>) -> tensor<1x32x8x8xf16>
  func.return %y : tensor<1x32x8x8xf16>
}

// -----

// K = 60 is not a multiple of 8 (16-byte copies): not the tensor-core template; 16 rows:
// the small-M one, widening what it loads (B's vectors become 8-byte vectors of 4 f16).
// CHECK-LABEL: tm.kernel @matmul_0(
// CHECK-SAME:    tm.template = "matmul_gemv"
// CHECK:         %[[W0:[0-9]+]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} = tm.load_vector x4 %B[%{{[a-z0-9]+}}, %n0] : memref<60x32xf16>
// CHECK-NEXT:    %w = arith.extf %[[W0]] : f16 to f32
func.func @odd_k(%x: tensor<16x60xf16>, %w: tensor<60x32xf16>) -> tensor<16x32xf16> {
  %y = graph.matmul %x, %w : (tensor<16x60xf16>, tensor<60x32xf16>) -> tensor<16x32xf16>
  func.return %y : tensor<16x32xf16>
}
