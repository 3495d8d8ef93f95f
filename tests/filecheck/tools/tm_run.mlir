// RUN: tm-run %s --runs 2 --check | filecheck %s
// RUN: tm-run %s -p 'graph-canonicalize,lower-to-cuda' --check-against 'lower-to-cuda' --check | filecheck %s --check-prefix=PIPE
// RUN: not tm-run %s --input x=missing.npy 2>&1 | filecheck %s --check-prefix=ERR
//
// tm-run on hand-written graph-level IR whose weights are inline constants: it prints each
// output (name from the returned SSA value, dtype, shape, values, min/max/mean), the times,
// and with --check the agreement with the unfused reference pipeline.

// relu(w @ w) with w = [[1, -2], [3, 4]] is relu([[-5, -10], [15, 10]]).
// CHECK:      z: float32 [2, 2] [0, 0, 15, 10]  min 0  max 15  mean 6.25
// CHECK-NEXT: compile {{.*}} s, run {{.*}} ms (median of 2 on emu)
// CHECK-NEXT: check z: max abs err 0, max rel err 0: ok
// CHECK-NEXT: check: ok (1 output within rtol 0.0001, atol 1e-05 of {{.*}}tm_run.mlir through lower-to-cuda{fusion=false})

// PIPE: z: float32 [2, 2] [0, 0, 15, 10]
// PIPE: check: ok (1 output within {{.*}} through lower-to-cuda)

// ERR: tm-run: error: --input x: cannot open 'missing.npy'
// ERR-NOT: Traceback
func.func @main() -> tensor<2x2xf32> {
  %w = graph.constant dense<[[1.0, -2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %y = graph.matmul %w, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %z = graph.relu %y : tensor<2x2xf32>
  func.return %z : tensor<2x2xf32>
}
