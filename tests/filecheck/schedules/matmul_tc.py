# The structure of the tensor-core matmul template at the tm level.
# RUN: python %s | filecheck %s
#
# 256 x 128 x 128, f16, tile 128 x 64 x 32, 4 x 2 warps (each 32 x 32: 2 x 4 mma tiles of
# 16 x 8), 3 stages: a prologue of 2 tiles (2 commits), then per k-step one wait leaving
# 1 group in flight, one barrier, the next tile's copies under a uniform condition, one
# commit, and per 16-wide k slice ldmatrix x4 (A), ldmatrix x2 trans (B) and the mmas.
from xdsl.dialects.builtin import ModuleOp

from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.matmul_tc import MatmulTcParams, matmul_tc_kernel

problem = MatmulProblem.plain(256, 128, 128)
print(ModuleOp([matmul_tc_kernel("mm_tc", problem, MatmulTcParams(128, 64, 32, (4, 2), 3))]))
# Partial tiles (40 x 24 x 48, tile 32 x 32 x 32): see the end of the file.
partial = MatmulProblem.plain(40, 24, 48)
print(ModuleOp([matmul_tc_kernel("mm_tc_partial", partial, MatmulTcParams(32, 32, 32, (1, 2), 2))]))

# CHECK-LABEL: tm.kernel @mm_tc(%A: memref<256x128xf16>, %B: memref<128x128xf16>,
# CHECK-SAME:    %C: memref<256x128xf32>) grid(4) block(256)
# CHECK-SAME:    tm.template = "matmul_tc"
# CHECK-SAME:    block_m = 128 : i64, block_n = 64 : i64, block_k = 32 : i64, warps = "4x2", stages = 3 : i64

# Stage-deep shared tiles, swizzled (no padding); fragments and accumulators in registers.
# CHECK:         %a_smem = tm.alloc shared layout(row_major(3, 128, 32) ^ swizzle(2, 3, 3)) : memref<3x128x32xf16>
# CHECK-NEXT:    %b_smem = tm.alloc shared layout(row_major(3, 32, 64) ^ swizzle(3, 3, 3)) : memref<3x32x64xf16>
# CHECK-NEXT:    %a_frag = tm.alloc register : memref<2x4xi32>
# CHECK-NEXT:    %b_frag = tm.alloc register : memref<4x2xi32>
# CHECK-NEXT:    %acc = tm.alloc register : memref<2x4x4xf32>
# CHECK-NEXT:    tm.for_task (%batch, %tile_m, %tile_n) in spatial(1, 2, 2) on %bid {
# CHECK-NEXT:      tm.for_task (%wi, %wj) in spatial(4, 2) on %warp {

# Prologue: tiles 0 and 1, 16-byte copies spread over the 256 threads, one commit each.
# CHECK:           tm.for_task (%cr, %cc) in repeat(2, 1) * spatial(64, 4) on %tid {
# CHECK:             tm.cp_async bytes(16) %a_smem[{{.*}}], %A[{{.*}}]
# CHECK:           tm.for_task (%cr_1, %cc_1) in repeat(1, 1) * spatial(32, 8) on %tid {
# CHECK:             tm.cp_async bytes(16) %b_smem[{{.*}}], %B[{{.*}}]
# CHECK:           tm.cp_async_commit
# CHECK-NOT:       tm.cp_async_wait
# CHECK:           tm.cp_async bytes(16) %a_smem
# CHECK:           tm.cp_async bytes(16) %b_smem
# CHECK:           tm.cp_async_commit
# CHECK-NOT:       tm.cp_async_commit

# The k loop: wait, barrier, the copies of tile kt + 2 (if any), one commit, the compute.
# CHECK:           scf.for %kt =
# CHECK-NEXT:        tm.cp_async_wait pending(1)
# CHECK-NEXT:        tm.barrier
# CHECK:             %stage = arith.remui %kt
# CHECK:             %next_kt = arith.addi %kt
# CHECK:             scf.if %has_next {
# CHECK:               %next_stage = arith.remui %next_kt
# CHECK:               tm.cp_async bytes(16) %a_smem[%next_stage, %cr_4, %cs_4], %A[%g_row_3, %g_col_3]
# CHECK:               tm.cp_async bytes(16) %b_smem[%next_stage, %cr_5, %cs_5], %B[%g_row_4, %g_col_4]
# CHECK-NEXT:          }
# CHECK-NEXT:        }
# CHECK-NEXT:        tm.cp_async_commit
# CHECK-NOT:         tm.barrier
# CHECK:             scf.for %kk =
# CHECK:               tm.for_task (%i_1) in repeat(2) {
# CHECK:                 tm.ldmatrix x4 %a_frag[%i_1], %a_smem[%stage, %a_row, %a_col]
# CHECK:               tm.for_task (%j_1) in repeat(4) {
# CHECK:                 tm.ldmatrix x2 trans %b_frag[%j_1], %b_smem[%stage, %b_row, %b_col]
# CHECK:               tm.for_task (%i_2, %j_2) in repeat(2, 4) {
# CHECK-NEXT:            tm.mma m16n8k16 f16 %acc[%i_2, %j_2], %a_frag[%i_2], %b_frag[%j_2], %acc[%i_2, %j_2]
# CHECK:             } {tm.unroll}
# CHECK-NEXT:      }

# Epilogue: accumulator register (h, e) of mma tile (i, j) to C, no guards (tiles divide).
# CHECK:           tm.for_task (%i_3, %j_3, %h, %e) in repeat(2, 4, 2, 2) {
# CHECK:             %sum = tm.load %acc[%i_3, %j_3, %{{.*}}] : memref<2x4x4xf32>
# CHECK-NEXT:        tm.store %sum, %C[%row, %col] : memref<256x128xf32>

# Partial tiles: a chunk past the end of A (row >= 40 or k >= 48) or B (k >= 48 or column
# >= 24) is one zero-filling copy whose source indices are clamped to 0 where it is outside
# (the address stays inside the operand; nothing is read), no scf.if, no zero stores.
# CHECK-LABEL: tm.kernel @mm_tc_partial(%A: memref<40x48xf16>, %B: memref<48x24xf16>,
# CHECK:           tm.for_task (%cr, %cc) in repeat(2, 1) * spatial(16, 4) on %tid {
# CHECK:             %g_row = arith.addi %row0, %cr : index
# CHECK:             %[[ROW_IN:.*]] = arith.cmpi ult, %g_row, %{{.*}} : index
# CHECK:             %[[K_IN:.*]] = arith.cmpi ult, %cs, %{{.*}} : index
# CHECK-NEXT:        %inside = arith.andi %[[ROW_IN]], %[[K_IN]] : i1
# CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0 : index
# CHECK-NEXT:        %clamped = arith.select %inside, %g_row, %[[ZERO]] : index
# CHECK-NEXT:        %[[ZERO2:.*]] = arith.constant 0 : index
# CHECK-NEXT:        %clamped_1 = arith.select %inside, %cs, %[[ZERO2]] : index
# CHECK-NEXT:        tm.cp_async bytes(16) %a_smem[%{{.*}}, %cr, %cs], %A[%clamped, %clamped_1] zfill_unless %inside
# CHECK-NEXT:      }
# CHECK:           tm.cp_async bytes(16) %b_smem[{{.*}}], %B[%clamped_3, %clamped_2] zfill_unless %inside_1
# CHECK-NOT:       scf.if %inside
# CHECK-NOT:       tm.store %{{.*}}, %a_smem
# CHECK:           scf.for %kt =
# CHECK:             scf.if %has_next {
# CHECK:               tm.cp_async bytes(16) %a_smem[{{.*}}] zfill_unless %inside_2
# CHECK:               tm.cp_async bytes(16) %b_smem[{{.*}}] zfill_unless %inside_3
# CHECK-NOT:         tm.store %{{.*}}, %{{[ab]}}_smem
# CHECK:           tm.for_task (%i_3, %j_3, %h, %e) in repeat(2, 2, 2, 2) {
