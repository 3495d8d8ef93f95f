# The structure of the conv2d templates at the tm level.
# RUN: python %s | filecheck %s
#
# GEMM: 1x32x14x14 input, 64x16x3x3 weight, pad 1, groups 2: per group a 32 x 196 x 144
# GEMM. On sm_75 (the register path; default tile 8 x 64, one warp of spatial(2, 16) lanes *
# repeat(4, 4)) A is the group's weight rows, B the im2col view of the input, loaded
# through predicated loads into the double-buffered shared tiles. On sm_90 (the cp.async
# pipeline; 16 x 32 tiles, 3 stages of 16) both are copied element by element, an im2col
# element in the padding zero-filled from a clamped address.
from xdsl.dialects.builtin import ModuleOp

from tmlir.schedules.conv2d import Conv2dProblem, conv2d_kernel

grouped = Conv2dProblem((1, 32, 14, 14), (64, 16, 3, 3), pads=(1, 1, 1, 1), groups=2, bias=True)
depthwise = Conv2dProblem((1, 8, 9, 9), (8, 1, 3, 3), strides=(2, 2), pads=(1, 1, 1, 1), groups=8)
print(ModuleOp([conv2d_kernel("conv_gemm", grouped, arch="sm_75"), conv2d_kernel("conv_pipe", grouped, arch="sm_90"),
                conv2d_kernel("conv_dw", depthwise)]))

# CHECK-LABEL: tm.kernel @conv_gemm(%x: memref<1x32x14x14xf32>, %w: memref<64x16x3x3xf32>, %bias: memref<64xf32>, %y: memref<1x64x14x14xf32>) grid(32) block(32)
# CHECK-SAME:    tm.template = "conv2d_implicit_gemm"
# CHECK-SAME:    M = 32 : i64, N = 196 : i64, K = 144 : i64,
# CHECK-SAME:    stages = 1 : i64, split_k = 1 : i64, copy_a = "ldg", copy_b = "ldg",
# CHECK-SAME:    kernel = "3x3", stride = "1x1", dilation = "1x1", pads = "1,1,1,1", groups = 2 : i64

# The matmul template's two-stage shared tiles and registers.
# CHECK:         %a_smem = tm.alloc shared layout(row_major(2, 8, 8, pad=4)) : memref<2x8x8xf32>
# CHECK-NEXT:    %b_smem = tm.alloc shared : memref<2x8x64xf32>
# CHECK:         %b_ldg = tm.alloc register : memref<16xf32>

# Groups are a grid dimension; a block's first input and output channels.
# CHECK:         tm.for_task (%group, %tile_m, %tile_n) in spatial(2, 4, 4) on %bid {
# CHECK:           %c0 = arith.muli %group
# CHECK:           %co0 = arith.muli %group

# Prologue, A: weight rows of the group, k unravelled to (c, kh, kw).
# CHECK:           tm.for_task (%s0, %s1) in spatial(4, 8) on %tid {
# CHECK:               %c = arith.divui
# CHECK:               %kh = arith.remui
# CHECK:               %kw = arith.remui
# CHECK-NEXT:          %[[CO:[0-9]+]] = arith.addi %co0,
# CHECK-NEXT:          %{{[0-9]+}} = tm.load %w[%[[CO]], %c, %kh, %kw] : memref<64x16x3x3xf32>
# CHECK-NEXT:          tm.store {{.*}}, %a_ldg[

# Prologue, B: the column unravels to the output pixel (n, oh, ow); the element is
# loaded only inside the input (the padding, and n past the last image, give 0).
# CHECK:           tm.for_task (%s0_1, %s1_1) in spatial(1, 32) on %tid {
# CHECK-NEXT:        tm.for_task (%r0_1, %r1_1) in repeat(8, 2) {
# CHECK:               %n = arith.divui %{{[0-9]+}}, %{{[0-9]+}} : index
# CHECK:               %oh = arith.remui
# CHECK:               %ow = arith.remui
# CHECK:               arith.cmpi ult, %n,
# CHECK:               %ci = arith.addi %c0, %c_1
# CHECK:               %[[PH:[0-9]+]] = arith.addi %oh, %kh_1
# CHECK:               arith.cmpi uge, %[[PH]],
# CHECK:               arith.cmpi ult, %[[PH]],
# CHECK:               %ih = arith.subi %[[PH]],
# CHECK:               %iw = arith.subi
# CHECK:               %inside = arith.andi
# CHECK-NEXT:          %[[V:[0-9]+]] = scf.if %inside -> (f32) {
# CHECK-NEXT:            %[[X:[0-9]+]] = tm.load %x[%n, %ci, %ih, %iw] : memref<1x32x14x14xf32>
# CHECK-NEXT:            scf.yield %[[X]] : f32
# CHECK-NEXT:          } else {
# CHECK-NEXT:            %[[ZERO:[0-9]+]] = arith.constant 0.000000e+00 : f32
# CHECK-NEXT:            scf.yield %[[ZERO]] : f32
# CHECK-NEXT:          }
# CHECK-NEXT:          tm.store %[[V]], %b_ldg[
# CHECK:               tm.store {{.*}}, %a_smem[
# CHECK:               tm.store {{.*}}, %b_smem[
# CHECK:           tm.barrier

# The k loop prefetches the next tile's weight rows and im2col elements first ...
# CHECK:           scf.for %kt =
# CHECK:             scf.if %has_next {
# CHECK:                 tm.load %w[
# CHECK:                 %inside_1 = arith.andi
# CHECK-NEXT:            scf.if %inside_1 -> (f32) {
# CHECK-NEXT:              tm.load %x[%n_1, %ci_1, %ih_1, %iw_1]
# CHECK-NOT:         tm.barrier
# CHECK:             scf.for %kk =
# CHECK-NOT:         tm.barrier
# CHECK:             } {tm.unroll}
# ... and stores them to the other stage behind the one barrier per k-step.
# CHECK-NEXT:        scf.if %has_next {
# CHECK:                 tm.store {{.*}}, %b_smem[%next_stage,
# CHECK:               tm.barrier

# Epilogue: the row is the output channel (plus its bias), the column the pixel; NCHW
# stores, guarded where the last column tile overhangs N * OH * OW.
# CHECK:               %n_2 = arith.divui %col
# CHECK:               %co = arith.addi %co0, %row
# CHECK-NEXT:          %bias_1 = tm.load %bias[%co] : memref<64xf32>
# CHECK-NEXT:          %[[OUT:[0-9]+]] = arith.addf %sum, %bias_1 : f32
# CHECK-NEXT:          tm.store %[[OUT]], %y[%n_2, %co, %oh_2, %ow_2] guard [0] : memref<1x64x14x14xf32>

# The pipeline: weights by 4-byte copies (a warp: 8 k of 4 rows), im2col elements by
# 4-byte copies under the padding predicate, their input coordinates clamped to 0 outside.
# CHECK-LABEL: tm.kernel @conv_pipe(
# CHECK-SAME:    stages = 3 : i64, split_k = 1 : i64, copy_a = "cp4", copy_b = "cp4"
# CHECK:         %a_smem = tm.alloc shared layout(row_major(3, 16, 16, pad=4)) : memref<3x16x16xf32>
# CHECK-NEXT:    %b_smem = tm.alloc shared : memref<3x16x32xf32>
# CHECK:           tm.for_task (%s0, %s1) in spatial(4, 8) on %tid {
# CHECK:               %co = arith.addi %co0, %g_outer
# CHECK:               tm.cp_async bytes(4) %a_smem[%{{[0-9]+}}, %t_k, %t_outer], %w[%co, %c, %kh, %kw]
# CHECK:           tm.for_task (%s0_1, %s1_1) in spatial(1, 32) on %tid {
# CHECK:               %in_outer = arith.cmpi ult, %g_outer_1
# CHECK:               %ih = arith.subi
# CHECK:               %iw = arith.subi
# CHECK:               %inside = arith.andi
# CHECK:               %clamped_1 = arith.select %inside, %ih,
# CHECK:               %clamped_2 = arith.select %inside, %iw,
# CHECK-NEXT:          %inside_1 = arith.andi %in_outer, %inside : i1
# CHECK:               tm.cp_async bytes(4) %b_smem[%{{[0-9]+}}, %t_k_1, %t_outer_1], %x[%{{[0-9]+}}, %ci, %clamped_1, %clamped_2] zfill_unless %inside_1
# CHECK:           tm.cp_async_commit
# CHECK:           tm.cp_async_wait pending(1)
# CHECK-NEXT:      tm.barrier
# CHECK:           scf.for %kt =
# CHECK:             tm.cp_async_commit
# CHECK:             scf.if %has_next {
# CHECK-NEXT:          tm.cp_async_wait pending(1)
# CHECK-NEXT:          tm.barrier

# Depthwise: one thread per output element, repeat over its taps, the same predicate.
# CHECK-LABEL: tm.kernel @conv_dw(%x: memref<1x8x9x9xf32>, %w: memref<8x1x3x3xf32>, %y: memref<1x8x5x5xf32>) grid(1) block(224)
# CHECK-SAME:    tm.template = "conv2d_direct"
# CHECK:         %acc = tm.alloc register : memref<1xf32>
# CHECK-NEXT:    tm.for_task (%blk) in spatial(1) on %bid {
# CHECK-NEXT:      tm.for_task (%t) in spatial(224) on %tid {
# CHECK:             %co = arith.remui
# CHECK:             %oh = arith.remui
# CHECK:             %ow = arith.remui
# CHECK:             tm.for_task (%c, %kh, %kw) in repeat(1, 3, 3) {
# CHECK:               %inside = arith.andi
# CHECK-NEXT:          %xv = scf.if %inside -> (f32) {
# CHECK-NEXT:            tm.load %x[%n, %{{.*}}, %ih, %iw] : memref<1x8x9x9xf32>
# CHECK:               %wv = tm.load %w[%co, %c, %kh, %kw] : memref<8x1x3x3xf32>
# CHECK:             tm.store {{.*}}, %y[%n, %co, %oh, %ow] guard [0] : memref<1x8x5x5xf32>
