// RUN: tm-opt %s -p graph-partition,convert-graph-to-tm | filecheck %s
// RUN: tm-opt %s -p graph-partition,convert-graph-to-tm | tm-opt | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda -t cuda | filecheck %s --check-prefix=CUDA
//
// A matmul pinned to split_k = 4 gets a kernel with two scratch arguments after its
// tensors (fusion keeps them last), and each launch gets buffers of its own for them: a
// workspace (an intermediate like any other) and zeroed counters. The second group has
// the first's structure: the same kernel, launched again with scratch of its own. The
// text round-trips.

// CHECK-LABEL: tm.kernel @matmul_0(%A: memref<32x512xf16>, %B: memref<512x64xf16>, %bias: memref<64xf32>,
// CHECK-SAME:    %y1: memref<32x64xf32>, %workspace: memref<4x1x32x128xf32>, %counters: memref<1xi32>)
// CHECK-SAME:    grid(4) block(128) scratch(workspace, counters)
// CHECK-SAME:    split_k = 4 : i64
// CHECK-SAME:    tm.fused = "epilogue: relu"
// CHECK-NOT:   tm.kernel
// CHECK-LABEL: func.func @two_layers
// CHECK-NEXT:    %workspace = tm.alloc global : memref<4x1x32x128xf32>
// CHECK-NEXT:    %counters = tm.alloc global zeroed : memref<1xi32>
// CHECK-NEXT:    tm.launch @matmul_0(%x, %w, %b, %y1_out, %workspace, %counters)
// CHECK-NEXT:    %workspace_1 = tm.alloc global : memref<4x1x32x128xf32>
// CHECK-NEXT:    %counters_1 = tm.alloc global zeroed : memref<1xi32>
// CHECK-NEXT:    tm.launch @matmul_0(%x, %w, %b, %y2_out, %workspace_1, %counters_1)

// CUDA:        // Kernel matmul_0: schedule template 'matmul_tc' ({{.*}}stages=3, split_k=4, threads=128{{.*}}K=512)
// CUDA-NEXT:   //   fused epilogue: relu
// CUDA-NEXT:   extern "C" __global__ void __launch_bounds__(128, 1) matmul_0({{.*}}, float* __restrict__ workspace, int* __restrict__ counters) {
// CUDA:        //   [{{[0-9]+}}] counters: int[1] (zeroed)
// CUDA:        //   [{{[0-9]+}}] counters_1: int[1] (zeroed)
func.func @two_layers(%x: tensor<32x512xf16>, %w: tensor<512x64xf16>, %b: tensor<64xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
  %m1 = graph.matmul %x, %w, %b {schedule = {block_m = 64, block_n = 64, block_k = 32, split_k = 4}} : (tensor<32x512xf16>, tensor<512x64xf16>, tensor<64xf32>) -> tensor<32x64xf32>
  %y1 = graph.relu %m1 : tensor<32x64xf32>
  %m2 = graph.matmul %x, %w, %b {schedule = {block_m = 64, block_n = 64, block_k = 32, split_k = 4}} : (tensor<32x512xf16>, tensor<512x64xf16>, tensor<64xf32>) -> tensor<32x64xf32>
  %y2 = graph.relu %m2 : tensor<32x64xf32>
  func.return %y1, %y2 : tensor<32x64xf32>, tensor<32x64xf32>
}
