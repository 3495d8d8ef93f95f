// RUN: tm-opt %s -p lower-to-cuda -t cost | filecheck %s
// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t cost | filecheck %s --check-prefix=UNFUSED
//
// One attention layer at 2048 tokens (12 heads of 64), as three graph ops: with
// lower-to-cuda, graph-fuse-attention makes it one kernel that reads q, k, v and writes the
// output once (24 MiB); the three kernels of the unfused pipeline write the 192 MiB score
// matrix, and read it twice over (792 MiB): 33x the global bytes.

// CHECK:      attention_0 attention 384 x 128
// CHECK:      total: 1 launch, 1 kernel, {{.*}} MFLOP, 18432.00 KiB read, 6144.00 KiB written
// UNFUSED:    matmul_0 matmul_simt
// UNFUSED:    softmax_1 reduce
// UNFUSED:    matmul_2 matmul_simt
// UNFUSED:    total: 3 launches, 3 kernels, {{.*}} MFLOP, 411648.00 KiB read, 399360.00 KiB written
func.func @main(%q: tensor<1x12x2048x64xf32>, %k: tensor<1x12x2048x64xf32>, %v: tensor<1x12x2048x64xf32>) -> tensor<1x12x2048x64xf32> {
  %s = graph.matmul %q, %k {transpose_rhs, alpha = 0.125 : f32} : (tensor<1x12x2048x64xf32>, tensor<1x12x2048x64xf32>) -> tensor<1x12x2048x2048xf32>
  %p = graph.softmax %s {axes = array<i64: 3>} : tensor<1x12x2048x2048xf32>
  %o = graph.matmul %p, %v : (tensor<1x12x2048x2048xf32>, tensor<1x12x2048x64xf32>) -> tensor<1x12x2048x64xf32>
  func.return %o : tensor<1x12x2048x64xf32>
}
