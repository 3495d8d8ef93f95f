// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t cuda -o %t.cu
// RUN: nvcc -ptx -arch=sm_80 -Werror all-warnings %t.cu -o %t.ptx
// RUN: filecheck %s --input-file %t.ptx
//
// Kernels with 64-bit indices and grid-stride loops compile with nvcc, host launch
// sequence included: a slice of 3e9 elements, a 10^12-element relu and a 10^7 x 10^7
// matmul (6103515625 tiles of 128 x 128, barriers inside the loop).

// CHECK-DAG: .visible .entry slice_0(
// CHECK-DAG: .visible .entry relu_1(
// CHECK-DAG: .visible .entry matmul_2(
func.func @wide(%x: tensor<3x1000000000xui8>, %h: tensor<1000000000000xf32>, %a: tensor<10000000x64xf32>, %b: tensor<64x10000000xf32>) -> (tensor<1x1000000000xui8>, tensor<1000000000000xf32>, tensor<10000000x10000000xf32>) attributes {tm.inputs = ["x", "h", "a", "b"], tm.outputs = ["y", "r", "c"]} {
  %y = graph.slice %x {starts = array<i64: 2, 0>, steps = array<i64: 1, 1>} : tensor<3x1000000000xui8> -> tensor<1x1000000000xui8>
  %r = graph.relu %h : tensor<1000000000000xf32>
  %c = graph.matmul %a, %b : (tensor<10000000x64xf32>, tensor<64x10000000xf32>) -> tensor<10000000x10000000xf32>
  func.return %y, %r, %c : tensor<1x1000000000xui8>, tensor<1000000000000xf32>, tensor<10000000x10000000xf32>
}
