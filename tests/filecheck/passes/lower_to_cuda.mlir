// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false matmul="stages=3"}' | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda | filecheck %s --check-prefix=LEVEL
// RUN: tm-opt %s -p 'lower-to-cuda{matmul="stages=3"}' | filecheck %s --check-prefix=FUSED
//
// lower-to-cuda runs the whole pipeline (graph-canonicalize, graph-fold-batchnorm,
// graph-partition, convert-graph-to-tm, tm-lower-mappings, convert-tm-to-gpu, canonicalize,
// arith-simplify, canonicalize, cse): graph ops in, tmgpu kernels and launches out. With
// {fusion=false} there is no graph-partition: one kernel per graph op. The matmul's schedule
// is the template's rule default (`matmul="stages=3"` keeps it; untuned, the latency model
// would choose), so the checks follow one known kernel.

// Fused: one kernel, the matmul's, storing relu(sum) straight into the output.
// FUSED-LABEL: tmgpu.kernel @matmul_0(%A: memref<2x4x8xf32>, %B: memref<2x8x6xf32>, %y: memref<2x4x6xf32>) block(32)
// FUSED-SAME:    tm.fused = "epilogue: relu"
// FUSED:         %sum = memref.load %acc
// FUSED:         scf.if %in_range {
// FUSED-NEXT:      arith.cmpf olt, %sum,
// FUSED-NEXT:      %[[R:[0-9]+]] = arith.select
// FUSED-NEXT:      memref.store %[[R]], %y[%bid, %row, %col] : memref<2x4x6xf32>
// FUSED-NOT:     tmgpu.kernel
// FUSED-LABEL: func.func @mlp(%x: memref<2x4x8xf32>, %w: memref<2x8x6xf32>, %y_out: memref<2x4x6xf32>)
// FUSED-NEXT:    tmgpu.launch @matmul_0(%x, %w, %y_out) grid(2) block(32)
// FUSED-NEXT:    func.return

// No graph or tm op survives (only the tm.* attributes that the CUDA printer reads).
// LEVEL-NOT: graph.
// LEVEL-NOT: {{(= |^ *)tm\.}}
// LEVEL:     func.func @mlp
// LEVEL-NOT: {{(= |^ *)tm\.}}

// The matmul (a batch of 2, B batched too, so the SIMT template; M = 4, N = 6, K = 8 on a
// 16x32x16 tile in 3 cp.async stages, one warp, a block per batch): three shared buffers
// and two of register fragments, the prologue's zero-filling copies (past M, N and K) of
// tile 0 and two commits (the second empty), the wait and barrier of tile 0, a guarded
// store. K = 8 is one k-step: canonicalize inlines the k loop, arith-simplify decides
// `has_issue` (2 < 1) and `has_next` (1 < 1): the copies of later tiles, the k-step's wait
// and barrier all go. `tid % 32` is `tid` with 32 threads.
// CHECK-LABEL: tmgpu.kernel @matmul_0(%A: memref<2x4x8xf32>, %B: memref<2x8x6xf32>, %C: memref<2x4x6xf32>) block(32)
// CHECK-SAME:    attributes {tm.template = "matmul_simt"
// CHECK:         %tid = tmgpu.thread_id x
// CHECK:         %a_smem = tmgpu.shared_alloc : memref<960xf32>
// CHECK-NEXT:    %b_smem = tmgpu.shared_alloc : memref<3x16x32xf32>
// CHECK-NEXT:    %a_frag = tmgpu.local_alloc : memref<2x4xf32>
// CHECK-NEXT:    %b_frag = tmgpu.local_alloc : memref<2x4xf32>
// CHECK-NEXT:    %acc = tmgpu.local_alloc : memref<4x4xf32>
// CHECK-NEXT:    %[[C8:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %li = arith.divui %tid, %[[C8]] : index
// CHECK-NEXT:    %lj = arith.remui %tid, %[[C8]] : index
// CHECK-NOT:     arith.remui %tid, %[[C8]]
// CHECK:         memref.store %{{.*}}, %acc[%i, %j] : memref<4x4xf32>
// CHECK:         %inside = arith.andi %in_outer, %in_k : i1
// CHECK:         tmgpu.cp_async bytes(4) %a_smem[%{{[0-9]+}}], %A[%bid, %clamped, %clamped_1] zfill_unless %inside
// CHECK:         %inside_1 = arith.andi %in_outer_1, %in_k_1 : i1
// CHECK:         tmgpu.cp_async bytes(4) %b_smem[{{.*}}], %B[%bid, %clamped_3, %clamped_2] zfill_unless %inside_1
// CHECK:         tmgpu.cp_async_commit
// CHECK-NEXT:    tmgpu.cp_async_commit
// CHECK-NEXT:    tmgpu.cp_async_wait pending(1)
// CHECK-NEXT:    tmgpu.barrier
// CHECK-NOT:     tmgpu.barrier
// CHECK-NOT:     tmgpu.cp_async bytes
// CHECK:         scf.for %kk =
// CHECK:           memref.load %b_smem[%{{[0-9]+}}, %next_kk,
// CHECK-NOT:     tmgpu.barrier
// CHECK:         {{^    \} \{tm.unroll\}$}}
// CHECK-NOT:     tmgpu.barrier
// CHECK-NOT:     tmgpu.cp_async_wait
// CHECK-NOT:     has_next
// CHECK:         %sum = memref.load %acc
// CHECK:         scf.if %{{[0-9]+}} {
// CHECK-NEXT:      memref.store %sum, %C[%bid, %row, %col] : memref<2x4x6xf32>
// CHECK-NEXT:    }

// CHECK-LABEL: tmgpu.kernel @relu_1(%x0: memref<2x4x6xf32>, %out: memref<2x4x6xf32>) block(64)
// CHECK-SAME:    attributes {tm.template = "elementwise", tm.params = {block = 64 : i64, expr = "relu(x0)"}}
// CHECK:         %tid = tmgpu.thread_id x
// CHECK-NOT:     tmgpu.block_id
// CHECK:         arith.divui %tid, %{{.*}} : index
// CHECK:         %[[IN:[0-9]+]] = arith.cmpi ult,
// CHECK-NEXT:    %x = scf.if %[[IN]] -> (f32) {
// CHECK:         arith.cmpf olt, %x,
// CHECK:         scf.if %[[IN]] {
// CHECK-NEXT:      memref.store

// The host: the intermediate is a device buffer; launches carry grid and block sizes.
// CHECK-LABEL: func.func @mlp(%x: memref<2x4x8xf32>, %w: memref<2x8x6xf32>, %y_out: memref<2x4x6xf32>)
// CHECK-SAME:    attributes {tm.inputs = ["x", "w"], tm.outputs = ["y"]} {
// CHECK-NEXT:    %h = tmgpu.alloc : memref<2x4x6xf32>
// CHECK-NEXT:    tmgpu.launch @matmul_0(%x, %w, %h) grid(2) block(32) : memref<2x4x8xf32>, memref<2x8x6xf32>, memref<2x4x6xf32>
// CHECK-NEXT:    tmgpu.launch @relu_1(%h, %y_out) grid(1) block(64) : memref<2x4x6xf32>, memref<2x4x6xf32>
// CHECK-NEXT:    func.return
func.func @mlp(%x: tensor<2x4x8xf32>, %w: tensor<2x8x6xf32>) -> tensor<2x4x6xf32> attributes {tm.inputs = ["x", "w"], tm.outputs = ["y"]} {
  %h = graph.matmul %x, %w : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %y = graph.relu %h : tensor<2x4x6xf32>
  func.return %y : tensor<2x4x6xf32>
}
