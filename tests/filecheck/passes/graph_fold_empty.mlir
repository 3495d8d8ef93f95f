// RUN: tm-opt %s --split-input-file -p graph-fold-empty --verify-diagnostics | filecheck %s
// RUN: tm-opt %s --split-input-file -p lower-to-cuda -t cuda --verify-diagnostics | filecheck %s --check-prefix=CUDA
//
// graph-fold-empty: ops whose results have no element become empty graph.weights (no
// kernel computes them), graph.concat drops empty operands, and an op reading an empty
// tensor into a non-empty result is one error line.

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %s = graph.weight "s_empty" : tensor<0x3xf32>
// CHECK-NEXT:    func.return %s, %z : tensor<0x3xf32>, tensor<2x3xf32>
// The only kernel copies %z into its output; the empty output gets none.
// CUDA-LABEL: // Kernel copy_0:
// CUDA-NOT:   // Kernel
// CUDA:       tmlir_run(
// CUDA-NEXT:    copy_0<<<1, 32, 0, stream>>>((float*)buffers[1], (float*)buffers[3]);
// CUDA-NEXT:  }
func.func @chain(%x: tensor<0x3xf32>, %z: tensor<2x3xf32>) -> (tensor<0x3xf32>, tensor<2x3xf32>) {
  %r = graph.relu %x : tensor<0x3xf32>
  %s = graph.add %r, %x : (tensor<0x3xf32>, tensor<0x3xf32>) -> tensor<0x3xf32>
  %c = graph.concat %x, %z, %r {axis = 0} : (tensor<0x3xf32>, tensor<2x3xf32>, tensor<0x3xf32>) -> tensor<2x3xf32>
  func.return %s, %c : tensor<0x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @concat_two_left
// CHECK-NEXT:    %c = graph.concat %z, %z {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    func.return %c
func.func @concat_two_left(%x: tensor<2x0xf32>, %z: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %c = graph.concat %z, %x, %z {axis = 1} : (tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return %c : tensor<2x6xf32>
}

// -----

// A split with an empty piece keeps its other results.
// CHECK-LABEL: func.func @split
// CHECK-NEXT:    %q = graph.weight "q_empty" : tensor<2x0xf32>
// CHECK-NEXT:    %p, %{{.*}} = graph.split %x
// CHECK-NEXT:    func.return %p, %q
func.func @split(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x0xf32>) {
  %p, %q = graph.split %x {axis = 1 : i64} : (tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x0xf32>)
  func.return %p, %q : tensor<2x8xf32>, tensor<2x0xf32>
}

