// RUN: tm-opt %s -p convert-graph-to-tm | filecheck %s
//
// Split-K on the SIMT GEMM engine (schedules/simt_gemm.py with schedules/split_k.py),
// pinned on a matmul in the cp.async pipeline (sm_90; the register path:
// conv2d_split_k.mlir). Each split walks its k-tiles; every block publishes its partial
// sums to the workspace and counts itself in; the last block of a tile adds them in split
// order and runs the epilogue. The host gives each launch a workspace and zeroed counters.

// 64 x 64 x 416 in 64 x 32 tiles (2 of them), 3 stages of 32, 3 splits of the 13 k-tiles:
// 4 + 4 + 5. Each of the 6 blocks walks at most 5 k-steps.
func.func @mm(%a: tensor<64x416xf32>, %b: tensor<416x64xf32>, %bias: tensor<64xf32>) -> tensor<64x64xf32> {
  %c = graph.matmul %a, %b, %bias {schedule = {block_warps = array<i64: 2, 2>, warp_outer = array<i64: 1, 1>,
                                               lanes = array<i64: 8, 4>, block_k = 32, stages = 3, split_k = 3}}
       : (tensor<64x416xf32>, tensor<416x64xf32>, tensor<64xf32>) -> tensor<64x64xf32>
  func.return %c : tensor<64x64xf32>
}

// Two scratch arguments: the workspace (3 splits x 2 tiles x 16 accumulators x 128
// threads) and the counters (one per tile); three blocks per tile.
// CHECK-LABEL: tm.kernel @matmul_0(%A: memref<64x416xf32>, %B: memref<416x64xf32>, %bias: memref<64xf32>,
// CHECK-SAME:    %C: memref<64x64xf32>, %workspace: memref<3x2x16x128xf32>, %counters: memref<2xi32>)
// CHECK-SAME:    grid(6) block(128) scratch(workspace, counters)
// CHECK-SAME:    stages = 3 : i64, split_k = 3 : i64, copy_a = "cp4", copy_b = "cp16"
// The split index runs fastest: a tile's 3 blocks are neighbours in the grid.
// CHECK:         tm.for_task (%batch, %tile_m, %tile_n, %split) in spatial(1, 1, 2, 3) on %bid {

// This split's k-tiles: [split * 13 / 3, (split + 1) * 13 / 3); the prologue's two tiles
// (every split has them) start at k_first.
// CHECK:           %k_first = arith.divui
// CHECK:           %k_end = arith.divui
// CHECK-NEXT:      %k_count = arith.subi %k_end, %k_first : index
// CHECK:           %k0 = arith.muli %k_first
// CHECK:           tm.cp_async_commit
// CHECK:           tm.cp_async_commit
// CHECK-NEXT:      tm.cp_async_wait pending(1)
// CHECK-NEXT:      tm.barrier

// The loop runs the longest split's 5 steps; a step past a split's k-tiles does nothing
// (taken 13 times of 15). Tiles are issued and awaited against the split's own count.
// CHECK:           scf.for %kt =
// CHECK-NEXT:        %in_split = arith.cmpi ult, %kt, %k_count : index
// CHECK-NEXT:        scf.if %in_split {
// CHECK:               %has_issue = arith.cmpi ult, %issue_kt, %k_count : index
// CHECK:                 arith.addi %k_first, %issue_kt : index
// CHECK:               %has_next = arith.cmpi ult, %next_kt, %k_count : index
// CHECK:             }{tm.branch_weights = array<i64: 13, 2>}

// Publish, count in, and the last block adds the 3 partials in order, then the epilogue.
// CHECK:           %tile = arith.divui %bid
// CHECK:             tm.store %{{.*}}, %workspace[%split, %tile, %reg, %tid] : memref<3x2x16x128xf32>
// CHECK:           tm.fence
// CHECK-NEXT:      tm.barrier
// CHECK:             %before = tm.atomic_add %counters[%tile]
// CHECK:           %last_block = arith.cmpi eq, %arrived_before
// CHECK-NEXT:      scf.if %last_block {
// CHECK:               %part = tm.load_cg %workspace[%{{.*}}, %tile, %{{.*}}, %tid]
// CHECK:             scf.for %s = %{{.*}} to %{{.*}} step
// CHECK:                 %part_1 = tm.load_cg %workspace[%s, %tile, %{{.*}}, %tid]
// CHECK:             } {tm.no_unroll}
// CHECK:             tm.store %{{.*}}, %counters[%tile] : memref<2xi32>
// CHECK:             %bias_1 = tm.load %bias
// CHECK:             tm.store %{{.*}}, %C[%row, %col] : memref<64x64xf32>
// CHECK:           }{tm.branch_weights = array<i64: 1, 2>}

// CHECK-LABEL: func.func @mm(
// CHECK-NEXT:    %workspace = tm.alloc global : memref<3x2x16x128xf32>
// CHECK-NEXT:    %counters = tm.alloc global zeroed : memref<2xi32>
// CHECK-NEXT:    tm.launch @matmul_0(%a, %b, %bias, %c_out, %workspace, %counters)
