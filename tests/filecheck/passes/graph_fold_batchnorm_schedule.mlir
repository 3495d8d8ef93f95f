// RUN: tm-opt %s -p graph-outline-constants,graph-fold-batchnorm | filecheck %s
//
// A batch norm folded into a convolution keeps the convolution's pinned schedule.

// CHECK:      %w_folded = graph.weight "w.folded"
// CHECK-NEXT: %y = graph.conv %x, %w_folded {{.*}}schedule = {block_k = 16 : i64}
// CHECK-NOT:  graph.batch_norm
func.func @f(%x: tensor<1x8x10x10xf32>) -> tensor<1x8x10x10xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %s = graph.constant dense<2.0> : tensor<8xf32>
  %z = graph.constant dense<0.0> : tensor<8xf32>
  %o = graph.constant dense<1.0> : tensor<8xf32>
  %c = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, schedule = {block_k = 16}} : (tensor<1x8x10x10xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x10x10xf32>
  %y = graph.batch_norm %c, %s, %z, %z, %o {epsilon = 1.0e-05 : f32} : (tensor<1x8x10x10xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x10x10xf32>
  func.return %y : tensor<1x8x10x10xf32>
}
