# The split-K protocol of the tensor-core matmul at the tm level (tmlir/schedules/split_k.py).
# RUN: python %s | filecheck %s
#
# 64 x 64 x 160, f16, tile 64 x 64 x 32 (one output tile), 2 x 2 warps, 3 stages, split_k 2:
# 5 k-tiles split 2 + 3, so a block walks at most 3 k-steps, the third only in split 1.
# Each block publishes its accumulators to the workspace, fences, and counts itself in;
# the last block adds both partials in split order (both read back from L2), resets the
# counter and runs the epilogue.
from xdsl.dialects.builtin import ModuleOp

from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.matmul_tc import matmul_tc_kernel
from tmlir.schedules.tc_gemm import MatmulTcParams

problem = MatmulProblem.plain(64, 64, 160)
print(ModuleOp([matmul_tc_kernel("mm_split", problem, MatmulTcParams(64, 64, 32, (2, 2), 3, 2))]))

# Two scratch arguments: the workspace (2 splits x 1 tile x 32 accumulators x 128 threads)
# and the counters (one per tile); two blocks per tile.
# CHECK-LABEL: tm.kernel @mm_split(%A: memref<64x160xf16>, %B: memref<160x64xf16>, %C: memref<64x64xf32>,
# CHECK-SAME:    %workspace: memref<2x1x32x128xf32>, %counters: memref<1xi32>) grid(2) block(128)
# CHECK-SAME:    scratch(workspace, counters)
# CHECK-SAME:    stages = 3 : i64, split_k = 2 : i64
# CHECK:         tm.for_task (%batch, %tile_m, %tile_n, %split) in spatial(1, 1, 1, 2) on %bid {

# This split's k-tiles: [split * 5 / 2, (split + 1) * 5 / 2).
# CHECK:           %k_first = arith.divui {{.*}}
# CHECK:           %k_end = arith.divui {{.*}}
# CHECK:           %k_count = arith.subi %k_end, %k_first : index
# The prologue's 2 tiles: both splits have them.
# CHECK:           tm.cp_async_commit
# CHECK:           tm.cp_async_commit
# The loop runs the longest split's 3 steps; a step past a split's k-tiles does nothing
# (taken 5 times of 6, for the cost report).
# CHECK:           scf.for %kt = %{{.*}} to %{{.*}} step
# CHECK-NEXT:        %in_split = arith.cmpi ult, %kt, %k_count : index
# CHECK-NEXT:        scf.if %in_split {
# CHECK-NEXT:          tm.cp_async_wait pending(1)
# CHECK-NEXT:          tm.barrier
# CHECK:             }{tm.branch_weights = array<i64: 5, 1>}

# Publish: the 32 accumulators of each thread, consecutive threads at consecutive addresses.
# CHECK:           %tile = arith.divui %bid, %{{.*}} : index
# CHECK:           tm.for_task (%a0, %a1, %a2) in repeat(2, 4, 4, unroll=[true, true, true]) {
# CHECK:             tm.store %{{.*}}, %workspace[%split, %tile, %reg, %tid] : memref<2x1x32x128xf32>
# CHECK:           }
# CHECK-NEXT:      tm.fence
# CHECK-NEXT:      tm.barrier
# CHECK-NEXT:      %arrived = tm.alloc shared : memref<1xi32>
# CHECK:           scf.if %first_thread {
# CHECK:             %before = tm.atomic_add %counters[%tile], %{{.*}} : memref<1xi32>
# CHECK-NEXT:        tm.fence
# CHECK:             tm.store %before, %arrived[%{{.*}}] : memref<1xi32>
# CHECK:           tm.barrier
# CHECK:           %arrived_before = tm.load %arrived[%{{.*}}] : memref<1xi32>
# CHECK:           %last_block = arith.cmpi eq, %arrived_before, %{{.*}} : i32

# The last block: partial 0 from L2 into the accumulators, then a loop (never unrolled:
# one split's loads in flight) adding partials 1 .. S-1, its own read back like the others.
# CHECK:           scf.if %last_block {
# CHECK:             tm.for_task (%{{.*}}) in repeat(2, 4, 4, unroll=[true, true, true]) {
# CHECK:               %part = tm.load_cg %workspace[%{{.*}}, %tile, %reg_1, %tid] : memref<2x1x32x128xf32>
# CHECK-NEXT:          tm.store %part, %acc[
# CHECK:             scf.for %s = %{{.*}} to %{{.*}} step %{{.*}} {
# CHECK:                 %part_1 = tm.load_cg %workspace[%s, %tile, %reg_2, %tid] : memref<2x1x32x128xf32>
# CHECK-NEXT:            %[[SUM:.*]] = tm.load %acc[
# CHECK-NEXT:            %[[NEW:.*]] = arith.addf %[[SUM]], %part_1 : f32
# CHECK-NEXT:            tm.store %[[NEW]], %acc[
# CHECK:             } {tm.no_unroll}
# CHECK:           scf.if %first_thread {
# CHECK:             tm.store %{{.*}}, %counters[%tile] : memref<1xi32>
# The epilogue, in the last block only.
# CHECK:           tm.store %{{.*}}, %C[%{{.*}}, %{{.*}}] : memref<64x64xf32>
# CHECK:         }{tm.branch_weights = array<i64: 1, 1>}
