// RUN: tm-opt %s -p graph-partition | filecheck %s --check-prefix=PART
// RUN: tm-opt %s -p 'graph-partition,convert-graph-to-tm{matmul="stages=3"}' | filecheck %s --check-prefix=TM
// RUN: tm-opt %s -p 'lower-to-cuda{matmul="stages=3"}' -t cuda | filecheck %s --check-prefix=CUDA
//
// Post-scheduling fusion, one pattern per function: graph-partition's groups (PART), the
// anchor's kernel with its loads and stores rewritten (TM), and the CUDA C (CUDA). The SIMT
// matmuls keep the template's rule default (the `matmul` option: its cp.async pipeline),
// where the latency model might take the register path for these tiny problems.

// A matmul epilogue: the bias add and GELU are computed from each sum and stored once,
// into the group's output. 16 rows: the small-M template, whose warps' partial sums meet
// in shared memory; N = 20 overhangs its 8-column tiles: the epilogue is under the store's
// guard.
// PART-LABEL: func.func @matmul_epilogue
// PART-NEXT:    %y = graph.fused -> tensor<16x20xf32> {
// PART-NEXT:      %m = graph.matmul %x, %w
// PART-NEXT:      %a = graph.add %m, %b
// PART-NEXT:      %y_1 = graph.gelu %a
// PART-NEXT:      graph.yield %y_1 : tensor<16x20xf32>
// TM-LABEL: tm.kernel @matmul_0(%A: memref<16x32xf32>, %B: memref<32x20xf32>, %b: memref<20xf32>, %y: memref<16x20xf32>)
// TM-SAME:    tm.template = "matmul_gemv"
// TM-SAME:    tm.fused = "epilogue: add, gelu"
// TM:         tm.barrier
// TM:         %sum = arith.addf
// TM:         %in_range = arith.cmpi ult, %n, %{{[0-9]+}} : index
// TM-NEXT:    scf.if %in_range {
// TM-NEXT:      %[[B:[0-9]+]] = tm.load %b[%n] : memref<20xf32>
// TM-NEXT:      %[[S:[0-9]+]] = arith.addf %sum, %[[B]] : f32
// TM:           math.erf
// TM:           tm.store %{{[0-9]+}}, %y[%r{{[_0-9]*}}, %n] : memref<16x20xf32>
// TM-NEXT:    }
// TM-NOT:     tm.store %sum
// CUDA-LABEL: // Kernel matmul_0: schedule template 'matmul_gemv'
// CUDA-NEXT:  //   fused epilogue: add, gelu
// CUDA-NEXT:  matmul_0(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ b, float* __restrict__ y) {
// CUDA:         const float sum = {{.*}}partial[1][{{.*}}];
// CUDA-NEXT:    const int n = col0 + col;
// CUDA-NEXT:    const bool in_range = n < 20;
// CUDA-NEXT:    if (in_range) {
// CUDA-NEXT:      const float [[V:v(_[0-9]+)?]] = sum + b[n];
// CUDA-NEXT:      y[{{.*}} * 20 + n] = (0.5f * [[V]]) * (1.0f + erff(0.70710677f * [[V]]));
func.func @matmul_epilogue(%x: tensor<16x32xf32>, %w: tensor<32x20xf32>, %b: tensor<20xf32>) -> tensor<16x20xf32> {
  %m = graph.matmul %x, %w : (tensor<16x32xf32>, tensor<32x20xf32>) -> tensor<16x20xf32>
  %a = graph.add %m, %b : (tensor<16x20xf32>, tensor<20xf32>) -> tensor<16x20xf32>
  %y = graph.gelu %a : tensor<16x20xf32>
  func.return %y : tensor<16x20xf32>
}

// A ResNet block's end: the conv (its bias folded in), the residual add and the ReLU.
// PART-LABEL: func.func @conv_residual
// PART-NEXT:    %y = graph.fused -> tensor<1x8x10x10xf32> {
// PART-NEXT:      %c = graph.conv %x, %w, %b
// PART-NEXT:      %s = graph.add %c, %r
// PART-NEXT:      %y_1 = graph.relu %s
// PART-NEXT:      graph.yield %y_1
// TM-LABEL: tm.kernel @conv_1(%x: memref<1x8x10x10xf32>, %w: memref<8x8x3x3xf32>, %bias: memref<8xf32>, %r: memref<1x8x10x10xf32>, %y: memref<1x8x10x10xf32>)
// TM-SAME:    tm.fused = "epilogue: add, relu"
// CUDA-LABEL: // Kernel conv_1: schedule template 'conv2d_implicit_gemm'
// CUDA-NEXT:  //   fused epilogue: add, relu
// CUDA:         const float [[C:v_[0-9]+]] = sum + bias_1;
// CUDA:         if (in_range) {
// CUDA-NEXT:      const float [[S:v_[0-9]+]] = [[C]] + r[[[N:n(_[0-9]+)?]] * 800 + row * 100 + [[OH:oh_[0-9]+]] * 10 + [[OW:ow_[0-9]+]]];
// CUDA-NEXT:      y[[[N]] * 800 + row * 100 + [[OH]] * 10 + [[OW]]] = ([[S]] < 0.0f) ? 0.0f : [[S]];
func.func @conv_residual(%x: tensor<1x8x10x10xf32>, %w: tensor<8x8x3x3xf32>, %b: tensor<8xf32>, %r: tensor<1x8x10x10xf32>) -> tensor<1x8x10x10xf32> {
  %c = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x10x10xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x10x10xf32>
  %s = graph.add %c, %r : (tensor<1x8x10x10xf32>, tensor<1x8x10x10xf32>) -> tensor<1x8x10x10xf32>
  %y = graph.relu %s : tensor<1x8x10x10xf32>
  func.return %y : tensor<1x8x10x10xf32>
}

// A softmax prologue: the attention scale (a rank-0 input) and the broadcast mask are
// computed at the softmax's first read of the row, which it keeps in registers
// (`row_cache`) for its other two passes.
// PART-LABEL: func.func @softmax_prologue
// PART-NEXT:    %y = graph.fused -> tensor<2x4x8x8xf32> {
// PART-NEXT:      %a = graph.mul %x, %s
// PART-NEXT:      %z = graph.add %a, %mask
// PART-NEXT:      %y_1 = graph.softmax %z
// TM-LABEL: tm.kernel @softmax_2(%x: memref<2x4x8x8xf32>, %s: memref<1xf32>, %mask: memref<1x1x8x8xf32>, %out: memref<2x4x8x8xf32>)
// TM-SAME:    tm.fused = "prologue: mul, add"
// TM:         %row_cache = tm.alloc register : memref<1xf32>
// TM:         tm.load %x[
// TM:         tm.load %s[
// TM:         tm.load %mask[
// TM:         tm.store %{{.*}}, %row_cache[
// TM-NOT:     tm.load %x[
// TM-NOT:     tm.load %mask[
// TM:         tm.load %row_cache[
// TM-NOT:     tm.load %x[
// TM-NOT:     tm.load %mask[
// TM:         tm.load %row_cache[
// TM-NOT:     tm.load %mask[
// TM-LABEL: func.func @softmax_prologue
// TM:         tm.launch @softmax_2(%x, %{{.*}}, %mask, %y_out)
// CUDA-LABEL: // Kernel softmax_2: schedule template 'reduce'
// CUDA-NEXT:  //   fused prologue: mul, add
// CUDA:       = ({{v_[0-9]+}} * s[0]) + mask[v_2 * 8 + t];
// CUDA-NOT:   mask[
// CUDA:       out[v * 256 + v_1 * 64 + v_2 * 8 + t] = expf(
func.func @softmax_prologue(%x: tensor<2x4x8x8xf32>, %s: tensor<f32>, %mask: tensor<1x1x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %a = graph.mul %x, %s : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %z = graph.add %a, %mask : (tensor<2x4x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = graph.softmax %z {axes = array<i64: 3>} : tensor<2x4x8x8xf32>
  func.return %y : tensor<2x4x8x8xf32>
}

// A layer-norm prologue: the residual add, at every read of the row.
// PART-LABEL: func.func @layernorm_prologue
// PART-NEXT:    %y = graph.fused
// PART-NEXT:      %s = graph.add %a, %r
// PART-NEXT:      %y_1 = graph.layer_norm %s, %g, %b
// TM-LABEL: tm.kernel @layer_norm_3(%a: memref<4x16xf32>, %r: memref<4x16xf32>, %scale: memref<16xf32>, %bias: memref<16xf32>, %out: memref<4x16xf32>)
// TM-SAME:    tm.fused = "prologue: add"
// CUDA-LABEL: // Kernel layer_norm_3: schedule template 'reduce'
// CUDA:         const float [[A:v]] = a[r_1 * 16 + t];
// CUDA-NEXT:    const float {{v_[0-9]+}} = [[A]] + r[r_1 * 16 + t];
func.func @layernorm_prologue(%a: tensor<4x16xf32>, %r: tensor<4x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %s = graph.add %a, %r : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = graph.layer_norm %s, %g, %b {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}

// A transpose into a matmul load (attention's heads): A is read from x at the permuted
// coordinates, k past K = 4 still under the guard (the SIMT template gathers A: a
// prologue computes it).
// PART-LABEL: func.func @transpose_into_matmul
// PART-NEXT:    %y = graph.fused
// PART-NEXT:      %q = graph.transpose %x
// PART-NEXT:      %y_1 = graph.matmul %q, %k
// TM-LABEL: tm.kernel @matmul_4(%x: memref<1x8x2x4xf32>, %B: memref<1x2x4x8xf32>, %C: memref<1x2x8x8xf32>)
// TM-SAME:    copy_a = "gather"
// TM-SAME:    tm.fused = "prologue: transpose"
// TM:         %[[ROW:g_outer]] = arith.addi %row0, %{{[a-z_0-9]+}} : index
// TM:         %in_range = arith.andi %{{[0-9]+}}, %{{[0-9]+}} : i1
// TM-NEXT:    %{{[0-9]+}} = scf.if %in_range -> (f32) {
// TM-NEXT:      %[[T:[0-9]+]] = tm.load %x[%{{[0-9]+}}, %[[ROW]], %{{[0-9]+}}, %{{[a-z_0-9]+}}] : memref<1x8x2x4xf32>
// TM-NEXT:      scf.yield %[[T]] : f32
// CUDA-LABEL: // Kernel matmul_4: schedule template 'matmul_simt'
// CUDA-NEXT:  //   fused prologue: transpose
func.func @transpose_into_matmul(%x: tensor<1x8x2x4xf32>, %k: tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32> {
  %q = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %y = graph.matmul %q, %k : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  func.return %y : tensor<1x2x8x8xf32>
}

// A chain of injective ops without an anchor: one elementwise kernel (the last op's),
// the others its prologue; exp, read twice by the mul, is computed once.
// PART-LABEL: func.func @elementwise_chain
// PART-NEXT:    %y = graph.fused
// PART-NEXT:      %t = graph.transpose %x
// PART-NEXT:      %e = graph.exp %t
// PART-NEXT:      %m = graph.mul %e, %e
// PART-NEXT:      %y_1 = graph.neg %m
// TM-LABEL: tm.kernel @neg_5(%x: memref<6x5xf32>, %out: memref<5x6xf32>)
// TM-SAME:    tm.fused = "prologue: transpose, exp, mul"
// TM:         scf.if %in_range -> (f32) {
// TM-NEXT:      %[[L:[0-9]+]] = tm.load %x[%{{[0-9]+}}, %{{[0-9]+}}] : memref<6x5xf32>
// TM-NEXT:      %[[E:[0-9]+]] = math.exp %[[L]] : f32
// TM-NEXT:      %{{[0-9]+}} = arith.mulf %[[E]], %[[E]] : f32
// CUDA-LABEL: // Kernel neg_5: schedule template 'elementwise'
// CUDA:         const float [[E:v_[0-9]+]] = expf(x[v_1 * 5 + v]);
// CUDA-NEXT:    x_1 = [[E]] * [[E]];
func.func @elementwise_chain(%x: tensor<6x5xf32>) -> tensor<5x6xf32> {
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<6x5xf32> -> tensor<5x6xf32>
  %e = graph.exp %t : tensor<5x6xf32>
  %m = graph.mul %e, %e : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xf32>
  %y = graph.neg %m : tensor<5x6xf32>
  func.return %y : tensor<5x6xf32>
}

// A value with two readers is fused into neither: the relu is a kernel of its own and
// both matmuls read its buffer.
// PART-LABEL: func.func @two_users
// PART-NEXT:    %r = graph.relu %x
// PART-NEXT:    %y1 = graph.matmul %r, %w1
// PART-NEXT:    %y2 = graph.matmul %r, %w2
// PART-NOT:     graph.fused
// TM-LABEL: func.func @two_users
// TM:         tm.launch @relu_6(%x, %r)
// TM-NEXT:    tm.launch @matmul_7(%r, %w1, %y1_out)
// TM-NEXT:    tm.launch @matmul_8(%r, %w2, %y2_out)
// CUDA-NOT:   fused
func.func @two_users(%x: tensor<4x8xf32>, %w1: tensor<8x3xf32>, %w2: tensor<8x5xf32>) -> (tensor<4x3xf32>, tensor<4x5xf32>) {
  %r = graph.relu %x : tensor<4x8xf32>
  %y1 = graph.matmul %r, %w1 : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %y2 = graph.matmul %r, %w2 : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  func.return %y1, %y2 : tensor<4x3xf32>, tensor<4x5xf32>
}
