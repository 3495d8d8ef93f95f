# The tensor-core matmul on f32 operands: TF32 mma m16n8k8, at the tm level.
# RUN: python %s | filecheck %s
#
# 128 x 128 x 64, tile 64 x 64 x 32, 2 x 2 warps (each 32 x 32: 2 x 4 mma tiles), 2 stages;
# then the same problem with B stored N x K (Gemm transB), tile 64 x 64 x 16, 3 stages.
# 16-byte copies hold 4 floats; tiles are swizzled (a K x N B, read by scalar loads, has
# rows padded by 8 floats instead); each 32-wide k tile is 4 slices of 8: ldmatrix x4 of A on the b16 view
# of the f32 tile (lane l: row l % 16, k 4 (l / 16)), B by two shared loads per lane
# (b0 = B[k8 + t][n + g], b1 = B[k8 + t + 4][n + g]) or, from an N x K tile, ldmatrix x2.
from xdsl.dialects.builtin import Float32Type, ModuleOp

from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.matmul_tc import MatmulTcParams, matmul_tc_kernel

f32 = Float32Type()
print(ModuleOp([matmul_tc_kernel("mm_tf32", MatmulProblem.plain(128, 128, 64), MatmulTcParams(64, 64, 32, (2, 2), 2),
                                 f32)]))
print(ModuleOp([matmul_tc_kernel("mm_tf32_nk", MatmulProblem((128, 64), (128, 64), (128, 128), transpose_rhs=True),
                                 MatmulTcParams(64, 64, 16, (2, 2), 3), f32)]))

# CHECK-LABEL: tm.kernel @mm_tf32(%A: memref<128x64xf32>, %B: memref<64x128xf32>,
# CHECK-SAME:    %C: memref<128x128xf32>) grid(4) block(128)
# CHECK-SAME:    tm.template = "matmul_tc"
# CHECK-SAME:    stages = 2 : i64, split_k = 1 : i64, threads = 128 : i64, dtype = "tf32"

# CHECK:         %a_smem = tm.alloc shared layout(row_major(2, 64, 32) ^ swizzle(3, 2, 3)) : memref<2x64x32xf32>
# CHECK-NEXT:    %b_smem = tm.alloc shared layout(row_major(2, 32, 64, pad=8)) : memref<2x32x64xf32>
# CHECK-NEXT:    %a_frag = tm.alloc register : memref<2x4xi32>
# CHECK-NEXT:    %b_frag = tm.alloc register : memref<4x2xf32>
# CHECK-NEXT:    %acc = tm.alloc register : memref<2x4x4xf32>

# ldmatrix addresses: column 4 * (lane / 16).
# CHECK:           %[[LANE16:.*]] = arith.divui %lane, %{{.*}} : index
# CHECK-NEXT:      %[[FOUR:.*]] = arith.constant 4 : index
# CHECK-NEXT:      %lc4 = arith.muli %[[LANE16]], %[[FOUR]] : index

# 4-float chunks: a 64 x 32 A tile is 8 chunks a row, 512 in all, 4 per thread.
# CHECK:           tm.for_task (%cr, %cc) in repeat(4, 1) * spatial(16, 8) on %tid {
# CHECK:             %[[CS:.*]] = arith.constant 4 : index
# CHECK-NEXT:        %cs = arith.muli %cc, %[[CS]] : index
# CHECK:             tm.cp_async bytes(16) %a_smem[{{.*}}], %A[{{.*}}] : memref<2x64x32xf32>, memref<128x64xf32>
# CHECK:           tm.for_task (%cr_1, %cc_1) in repeat(4, 1) * spatial(8, 16) on %tid {
# CHECK:             tm.cp_async bytes(16) %b_smem[{{.*}}], %B[{{.*}}] : memref<2x32x64xf32>, memref<64x128xf32>

# CHECK:           scf.for %kt =
# CHECK-NEXT:        tm.cp_async_wait pending(0)
# CHECK-NEXT:        tm.barrier
# CHECK:             scf.for %kk =
# CHECK:               %k8 = arith.muli %kk
# CHECK:               tm.for_task (%i_1) in repeat(2) {
# CHECK:                 %a_col = arith.addi %k8, %lc4 : index
# CHECK-NEXT:            tm.ldmatrix x4 %a_frag[%i_1], %a_smem[%stage, %a_row, %a_col]
# CHECK-SAME:              : memref<2x4xi32>, memref<2x64x32xf32>
# CHECK:               tm.for_task (%j_1) in repeat(4) {
# CHECK:                 %[[G:.*]] = arith.divui %lane, %{{.*}} : index
# CHECK-NEXT:            %b_n = arith.addi %b_col, %[[G]] : index
# CHECK:                 %[[T:.*]] = arith.remui %lane, %{{.*}} : index
# CHECK-NEXT:            %b_k = arith.addi %k8, %[[T]] : index
# CHECK-NEXT:            %b0 = tm.load %b_smem[%stage, %b_k, %b_n] : memref<2x32x64xf32>
# CHECK:                 tm.store %b0, %b_frag[%j_1, %{{.*}}] : memref<4x2xf32>
# CHECK:                 %b_k4 = arith.addi %b_k, %{{.*}} : index
# CHECK-NEXT:            %b1 = tm.load %b_smem[%stage, %b_k4, %b_n] : memref<2x32x64xf32>
# CHECK:                 tm.store %b1, %b_frag[%j_1, %{{.*}}] : memref<4x2xf32>
# CHECK-NOT:             tm.ldmatrix
# CHECK:               tm.for_task (%i_2, %j_2) in repeat(2, 4) {
# CHECK-NEXT:            tm.mma m16n8k8 tf32 %acc[%i_2, %j_2], %a_frag[%i_2], %b_frag[%j_2], %acc[%i_2, %j_2]
# CHECK-SAME:              memref<2x4x4xf32>, memref<2x4xi32>, memref<4x2xf32>, memref<2x4x4xf32>
# CHECK:             } {tm.unroll}

# CHECK-LABEL: tm.kernel @mm_tf32_nk(%A: memref<128x64xf32>, %B: memref<128x64xf32>,
# CHECK:         %a_smem = tm.alloc shared layout(row_major(3, 64, 16) ^ swizzle(2, 2, 3)) : memref<3x64x16xf32>
# CHECK-NEXT:    %b_smem = tm.alloc shared layout(row_major(3, 64, 16) ^ swizzle(2, 2, 3)) : memref<3x64x16xf32>
# CHECK-NEXT:    %a_frag = tm.alloc register : memref<2x4xi32>
# CHECK-NEXT:    %b_frag = tm.alloc register : memref<4x2xi32>
# CHECK:           scf.for %kt =
# CHECK-NEXT:        tm.cp_async_wait pending(1)
# CHECK:               tm.ldmatrix x4 %a_frag[%i_1], %a_smem[%stage, %a_row, %a_col]
# B from N x K: lanes 0-7 at k 0, lanes 8-15 at k 4 of the slice.
# CHECK:               tm.for_task (%j_1) in repeat(4) {
# CHECK:                 %[[HALF:.*]] = arith.divui %l16, %{{.*}} : index
# CHECK-NEXT:            %[[K4:.*]] = arith.constant 4 : index
# CHECK-NEXT:            %[[KOFF:.*]] = arith.muli %[[HALF]], %[[K4]] : index
# CHECK-NEXT:            %b_k = arith.addi %k8, %[[KOFF]] : index
# CHECK-NEXT:            tm.ldmatrix x2 %b_frag[%j_1], %b_smem[%stage, %b_n, %b_k]
# CHECK-SAME:              : memref<4x2xi32>, memref<3x64x16xf32>
# CHECK:                 tm.mma m16n8k8 tf32
