// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t cuda | nvcc -ptx -arch=sm_90 -x cu - -o %t.ptx
// RUN: filecheck %s --input-file %t.ptx --check-prefix=PTX
// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t cuda -o %t.cu
// RUN: nvcc -c -arch=sm_90 -Werror all-warnings %t.cu -o %t.o
// RUN: nm %t.o | filecheck %s --check-prefix=HOST
// RUN: tm-opt %s -p lower-to-cuda -t cuda -o %t.fused.cu
// RUN: nvcc -ptx -arch=sm_90 -Werror all-warnings %t.fused.cu -o %t.fused.ptx
// RUN: filecheck %s --input-file %t.fused.ptx --check-prefix=FUSED
//
// The emitted file compiles with nvcc (needs nvcc on the PATH): the kernels to PTX, and
// the whole file, host launch sequence included, to an object without warnings. The
// graph covers every schedule template and printer path: a gemm with transposed weight,
// bias, alpha and beta, unary ops, broadcasting binary ops and a copy kernel. Fused, the
// elementwise ops (a diamond: `sub` reads the matmul's result again) are the matmul's
// epilogue.

// PTX-DAG: .visible .entry matmul_0(
// PTX-DAG: .visible .entry sigmoid_1(
// PTX-DAG: .visible .entry tanh_2(
// PTX-DAG: .visible .entry div_3(
// PTX-DAG: .visible .entry sub_4(
// PTX-DAG: .visible .entry copy_5(
// PTX-DAG: .shared .align 4 .b8 {{.*}}a_smem

// HOST: T tmlir_run

// FUSED-DAG: .visible .entry matmul_0(
// FUSED-DAG: .visible .entry copy_1(
// FUSED-NOT: .entry
func.func @net(%x: tensor<20x24xf32>, %b2: tensor<3x1xf32>) -> (tensor<20x10xf32>, tensor<3x1xf32>) attributes {tm.inputs = ["x", "b2"], tm.outputs = ["y", "b2_copy"]} {
  %w = graph.weight "fc.weight" : tensor<10x24xf32>
  %b = graph.weight "fc.bias" : tensor<10xf32>
  %h = graph.matmul %x, %w, %b {transpose_rhs, alpha = 0.5 : f32, beta = 2.0 : f32} : (tensor<20x24xf32>, tensor<10x24xf32>, tensor<10xf32>) -> tensor<20x10xf32>
  %s = graph.sigmoid %h : tensor<20x10xf32>
  %t = graph.tanh %s : tensor<20x10xf32>
  %d = graph.div %t, %b : (tensor<20x10xf32>, tensor<10xf32>) -> tensor<20x10xf32>
  %e = graph.sub %d, %h : (tensor<20x10xf32>, tensor<20x10xf32>) -> tensor<20x10xf32>
  func.return %e, %b2 : tensor<20x10xf32>, tensor<3x1xf32>
}
