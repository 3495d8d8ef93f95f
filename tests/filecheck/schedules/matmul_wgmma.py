# The Hopper matmul (wgmma, sm_90a): its structure at the tm level and in CUDA C.
# RUN: python %s | filecheck %s
# RUN: python %s | tm-opt -p tm-lower-mappings,convert-tm-to-gpu,arith-simplify -t cuda | filecheck %s --check-prefix=CUDA
# RUN: python %s | tm-opt -p tm-lower-mappings,convert-tm-to-gpu,arith-simplify -t cuda | nvcc -cubin -arch=sm_90a -x cu - -o %t.cubin
#
# 72 x 80 x 88 with a bias: one consumer warpgroup (64 x 64 tile), one producer warp, 3
# stages of 64-wide k-tiles -- every tile partial. A is K-major, B (K x N) N-major, both
# with the 128-byte swizzle, the stages stacked along mn. Two mbarriers a stage: full
# (32 producer arrivals), empty (128 consumer arrivals).
from xdsl.dialects.builtin import ModuleOp

from tmlir.schedules.gemm import MatmulProblem
from tmlir.schedules.matmul_wgmma import matmul_wgmma_kernel
from tmlir.schedules.matmul_wgmma_params import MatmulWgmmaParams

problem = MatmulProblem((72, 88), (88, 80), (72, 80), (80,))
print(ModuleOp([matmul_wgmma_kernel("mm_wgmma", problem, MatmulWgmmaParams(block_n=64, consumers=1, producers=1,
                                                                           stages=3))]))

# CHECK-LABEL: tm.kernel @mm_wgmma(%A: memref<72x88xf16>, %B: memref<88x80xf16>, %bias: memref<80xf32>,
# CHECK-SAME:    %C: memref<72x80xf32>) grid(4) block(160)
# CHECK-SAME:    tm.template = "matmul_wgmma"
# CHECK-SAME:    consumers = 1 : i64, producers = 1 : i64, stages = 3 : i64
# CHECK:         %a_smem = tm.alloc shared layout(row_major(192, 64) ^ swizzle(3, 3, 3)) : memref<192x64xf16>
# CHECK-NEXT:    %b_smem = tm.alloc shared layout(row_major(3, 8) * column_major(64, 8) ^ swizzle(3, 3, 3)) : memref<192x64xf16>
# CHECK-NEXT:    %full = tm.alloc shared : memref<3xi64>
# CHECK-NEXT:    %empty = tm.alloc shared : memref<3xi64>
# CHECK-NEXT:    %acc = tm.alloc register : memref<32xf32>
# CHECK:         scf.if %first_thread {
# CHECK-COUNT-3:   tm.mbarrier_init %full[%{{.*}}] count(32) : memref<3xi64>
# CHECK:         tm.barrier

# The consumers: wait for the tile, fence, 4 wgmmas (k 0, 16, 32, 48 of the 64-wide tile),
# commit, let one group run, release the previous tile's stage.
# CHECK:         %is_consumer = arith.cmpi ult, %tid, %{{.*}} : index
# CHECK-NEXT:    scf.if %is_consumer {
# CHECK:           scf.for %kt =
# CHECK:             %stage = arith.remui %kt,
# CHECK:             tm.mbarrier_wait %full[%stage] parity(%full_parity) : memref<3xi64>
# CHECK-NEXT:        tm.wgmma_fence
# CHECK-COUNT-4:     tm.wgmma m64n64k16 f16 %acc, %desc_a{{.*}} kmajor, %desc_b{{.*}} mnmajor : memref<32xf32>
# CHECK-NEXT:        tm.wgmma_commit
# CHECK-NEXT:        tm.wgmma_wait pending(1) %acc : memref<32xf32>
# CHECK:             scf.if %has_previous {
# CHECK:               tm.mbarrier_arrive %empty[%released] : memref<3xi64>
# CHECK:           tm.wgmma_wait pending(0) %acc : memref<32xf32>

# The producer warp: wait until the stage is free, zero-filling 16-byte copies (clamped
# sources), and announce the tile one step behind (stages - 2 = 1 group in flight).
# CHECK:         } else {
# CHECK:           %ptid = arith.subi %tid,
# CHECK:           scf.for %kt_1 =
# CHECK:             scf.if %has_tile {
# CHECK:               tm.mbarrier_wait %empty[%stage_1] parity(%empty_parity) : memref<3xi64>
# CHECK:               tm.for_task (%cr, %cc) in repeat(16, 1, unroll=[true, true]) * spatial(4, 8) on %ptid {
# CHECK:                 tm.cp_async bytes(16) %a_smem[%s_row, %cs], %A[%clamped, %clamped_1] zfill_unless %inside
# CHECK:                 tm.cp_async bytes(16) %b_smem[%s_row_1, %cr_1], %B[%clamped_3, %clamped_2] zfill_unless %inside_1
# CHECK:             tm.cp_async_commit
# CHECK:             scf.if
# CHECK-NEXT:          tm.cp_async_wait pending(1)
# CHECK-NEXT:          tm.fence_proxy_async
# CHECK:               tm.mbarrier_arrive %full[%full_stage] : memref<3xi64>
# CHECK:         }{tm.branch_weights = array<i64: 128, 32>}

# The epilogue: register 4j + 2h + e by unrolled loops (constant indices), guarded stores.
# CHECK:         scf.if %is_consumer {
# CHECK:           tm.for_task (%j, %h, %e) in repeat(8, 2, 2, unroll=[true, true, true]) {
# CHECK:             %sum = tm.load %acc[%reg] : memref<32xf32>
# CHECK:             tm.store %{{.*}}, %C[%row, %col] guard [0, 1] : memref<72x80xf32>

# CUDA-LABEL: // Kernel mm_wgmma: schedule template 'matmul_wgmma'
# CUDA-NEXT:  extern "C" __global__ void __launch_bounds__(160, 1) mm_wgmma(
# CUDA:         extern __shared__ __align__(1024) unsigned char tmlir_dynamic_smem[];
# CUDA:         float acc[32];
# CUDA:         tmlir_mbarrier_init(&full[0], 32);
# CUDA-NEXT:    tmlir_mbarrier_init(&empty[0], 128);
# CUDA:         if (is_consumer) {
# CUDA:           tmlir_mbarrier_wait(&full[
# CUDA-NEXT:      tmlir_wgmma_fence();
# CUDA:           const long long desc_a = tmlir_wgmma_desc(&a_smem[a_row * 64], 16, 1024, 128);
# CUDA:           const long long desc_b = tmlir_wgmma_desc(&b_smem[{{.*}}], 16, 1024, 128);
# CUDA-NEXT:      tmlir_wgmma_m64n64k16_f16<0, 1>(acc, desc_a, desc_b, 1);
# CUDA:           tmlir_wgmma_commit();
# CUDA-NEXT:      tmlir_wgmma_wait<1>();
# CUDA-NEXT:      tmlir_wgmma_fence_operand<32>((float*)acc);
# CUDA:           tmlir_mbarrier_arrive(&empty[released]);
# CUDA:         } else {
# CUDA:           tmlir_mbarrier_wait(&empty[
# CUDA:           tmlir_cp_async_zfill<16>(&a_smem[unswizzled ^ ((unswizzled >> 3) & 56)], &A[clamped * 88 + clamped_1], inside);
# CUDA:           tmlir_cp_async_commit();
# CUDA:           tmlir_cp_async_wait<1>();
# CUDA-NEXT:      tmlir_fence_proxy_async();
# CUDA:           tmlir_mbarrier_arrive(&full[full_stage]);
# CUDA:         if (is_consumer) {
# CUDA:           const float sum = acc[reg];
# CUDA:           if ((row < 72) && (col < 80)) {
