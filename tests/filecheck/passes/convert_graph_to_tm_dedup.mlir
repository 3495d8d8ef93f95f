// RUN: tm-opt %s -p convert-graph-to-tm | filecheck %s
//
// Groups of the same structure (ops, attributes, types, how they read each other and
// the values from outside) share one kernel, launched once per group with that group's
// buffers (%a + %b and %b + %a: one kernel). A different shape or pattern of reads
// (%c + %c) gets a kernel of its own.

// CHECK:       tm.kernel @relu_0(
// CHECK:       tm.kernel @add_1(
// CHECK:       tm.kernel @add_2(
// CHECK:       tm.kernel @relu_3(%x0: memref<8x4xf32>
// CHECK:       tm.kernel @transpose_4(
// CHECK-NOT:   tm.kernel
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %a = tm.alloc global
// CHECK-NEXT:    tm.launch @relu_0(%x, %a)
// CHECK-NEXT:    %b = tm.alloc global
// CHECK-NEXT:    tm.launch @relu_0(%a, %b)
// CHECK-NEXT:    %c = tm.alloc global
// CHECK-NEXT:    tm.launch @add_1(%a, %b, %c)
// CHECK-NEXT:    %d = tm.alloc global
// CHECK-NEXT:    tm.launch @add_1(%b, %a, %d)
// CHECK-NEXT:    tm.launch @add_2(%c, %c, %e_out)
// CHECK-NEXT:    tm.launch @relu_3(%y, %f_out)
// CHECK-NEXT:    tm.launch @transpose_4(%d, %g_out)
// CHECK-NEXT:    tm.launch @transpose_4(%e_out, %h_out)
func.func @main(%x: tensor<4x8xf32>, %y: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %a = graph.relu %x : tensor<4x8xf32>
  %b = graph.relu %a : tensor<4x8xf32>
  %c = graph.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = graph.add %b, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = graph.add %c, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %f = graph.relu %y : tensor<8x4xf32>
  %g = graph.transpose %d {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %h = graph.transpose %e {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  func.return %f, %e, %g, %h : tensor<8x4xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
