// RUN: tm-opt %s -p convert-graph-to-tm | filecheck %s
//
// Reductions, normalizations and pooling get their templates: a softmax over the channels
// (a strided row: one thread per row), a layer norm whose inverse standard deviation is a
// function output (three result buffers: an intermediate, a new buffer for the unused
// mean, the output argument), and a max pool.

// CHECK:      tm.kernel @softmax_0(%x: memref<2x16x8x8xf32>, %out: memref<2x16x8x8xf32>) grid(1) block(128)
// CHECK-SAME:   tm.template = "reduce", tm.params = {op = "softmax", threads_per_row = 1 : i64, rows_per_block = 128 : i64, threads = 128 : i64, rows = 128 : i64, cols = 16 : i64, axes = "1"}
// CHECK:      tm.kernel @layer_norm_1(%x: memref<2x16x8x8xf32>, %scale: memref<8x8xf32>, %out: memref<2x16x8x8xf32>, %mean: memref<2x16x1x1xf32>, %inv_std_dev: memref<2x16x1x1xf32>)
// CHECK-SAME:   tm.params = {op = "layernorm"
// CHECK:      tm.kernel @max_pool_2(%x: memref<2x16x8x8xf32>, %y: memref<2x16x4x4xf32>)
// CHECK-SAME:   tm.template = "pool", tm.params = {op = "max", kernel = "2x2", stride = "2x2", dilation = "1x1", pads = "0,0,0,0", block = 256 : i64}
// CHECK-LABEL: func.func @main(%x: memref<2x16x8x8xf32>, %g: memref<8x8xf32>, %p_out: memref<2x16x8x8xf32>, %inv_std_dev_out: memref<2x16x1x1xf32>, %q_out: memref<2x16x4x4xf32>)
// CHECK-NEXT:    tm.launch @softmax_0(%x, %p_out)
// CHECK-NEXT:    %y = tm.alloc global : memref<2x16x8x8xf32>
// CHECK-NEXT:    %mean = tm.alloc global : memref<2x16x1x1xf32>
// CHECK-NEXT:    tm.launch @layer_norm_1(%p_out, %g, %y, %mean, %inv_std_dev_out)
// CHECK-NEXT:    tm.launch @max_pool_2(%y, %q_out)
// CHECK-NEXT:    func.return
func.func @main(%x: tensor<2x16x8x8xf32>, %g: tensor<8x8xf32>) -> (tensor<2x16x8x8xf32>, tensor<2x16x1x1xf32>, tensor<2x16x4x4xf32>) attributes {tm.inputs = ["x", "g"], tm.outputs = ["p", "r", "q"]} {
  %p = graph.softmax %x {axes = array<i64: 1>} : tensor<2x16x8x8xf32>
  %y, %mean, %inv_std_dev = graph.layer_norm %p, %g {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x16x8x8xf32>, tensor<8x8xf32>) -> (tensor<2x16x8x8xf32>, tensor<2x16x1x1xf32>, tensor<2x16x1x1xf32>)
  %q = graph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<2x16x8x8xf32> -> tensor<2x16x4x4xf32>
  func.return %p, %inv_std_dev, %q : tensor<2x16x8x8xf32>, tensor<2x16x1x1xf32>, tensor<2x16x4x4xf32>
}
