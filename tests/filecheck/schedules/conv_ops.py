# The kernels of tmlir/schedules/conv.py at the tm level: a transposed convolution (a
# gather with stride checks), a 1-D convolution (the 2-D template on views without the
# height dim) and a batch normalization (per-channel statistics as (C,) buffers).
# RUN: python %s | filecheck %s
from xdsl.dialects.builtin import ModuleOp

from tmlir.schedules.conv import batch_norm_kernel, conv_kernel, conv_transpose_kernel

print(ModuleOp([
    conv_transpose_kernel("deconv", (1, 4, 5, 5), (4, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1),
                          (0, 0), 2, True),
    conv_kernel("conv1d", (2, 4, 10), (6, 4, 3), (2,), (1, 1), (1,), 1, False),
    batch_norm_kernel("bn", (2, 3, 4, 5), 1e-5),
]))

# Stride 2, 3x3, pads 1, groups 2: one thread per output element; a tap (kh, kw) counts
# where oh + 1 - kh is an even number >= 0 (computed as oh + 3 - kh, shifted by M = 1 so
# that the unsigned remainder and division are exact), whose half is < 5 (cannot fail).
# CHECK-LABEL: tm.kernel @deconv(%x: memref<1x4x5x5xf32>, %w: memref<4x3x3x3xf32>, %bias: memref<6xf32>, %y: memref<1x6x9x9xf32>) grid(2) block(256)
# CHECK-SAME:    tm.template = "conv_transpose_direct"
# CHECK:         %group = arith.divui %co, %{{.*}} : index
# CHECK:         %cog = arith.remui %co, %{{.*}} : index
# CHECK:         tm.for_task (%c, %kh, %kw) in repeat(2, 3, 3) {
# CHECK:           %[[NUM:.+]] = arith.subi %{{.*}}, %kh : index
# CHECK-NEXT:      %[[TWO:.+]] = arith.constant 2 : index
# CHECK-NEXT:      %[[REM:.+]] = arith.remui %[[NUM]], %[[TWO]] : index
# CHECK:           arith.cmpi eq, %[[REM]]
# CHECK:           %[[Q:.+]] = arith.divui %[[NUM]]
# CHECK:           arith.cmpi uge, %[[Q]]
# CHECK-NOT:       arith.cmpi ult, %[[Q]]
# CHECK:           %ih = arith.subi %[[Q]]
# CHECK:           %xv = scf.if %{{.*}} -> (f32) {
# CHECK-NEXT:        tm.load %x[%n, %ci, %ih, %iw] : memref<1x4x5x5xf32>
# CHECK:           %wv = tm.load %w[%ci, %cog, %kh, %kw] : memref<4x3x3x3xf32>

# CHECK-LABEL: tm.kernel @conv1d(%x: memref<2x4x10xf32>, %w: memref<6x4x3xf32>, %y: memref<2x6x5xf32>)
# CHECK-SAME:    tm.template = "conv2d_implicit_gemm"
# CHECK-SAME:    kernel = "1x3", stride = "1x2", dilation = "1x1", pads = "0,1,0,1"
# The copies of the SIMT pipeline (weights past M, and the padding, zero-filled) read the
# views too.
# CHECK:         tm.cp_async bytes(4) %a_smem[{{.*}}], %w[%clamped, %c, %kw] zfill_unless %inside : memref<{{.*}}>, memref<6x4x3xf32>
# CHECK:         tm.cp_async bytes(4) %b_smem[{{.*}}], %x[%n, %c_1, %{{.*}}] zfill_unless %{{.*}} : memref<{{.*}}>, memref<2x4x10xf32>
# CHECK:         tm.store %sum, %y[%n_2, %row, %ow_2] guard [0, 1] : memref<2x6x5xf32>

# CHECK-LABEL: tm.kernel @bn(%x: memref<2x3x4x5xf32>, %scale: memref<3xf32>, %bias: memref<3xf32>, %mean: memref<3xf32>, %var: memref<3xf32>, %out: memref<2x3x4x5xf32>)
# CHECK-SAME:    expr = "batch_norm(x, scale, bias, mean, var, epsilon=1e-05)"
# CHECK:         %x_1 = tm.load %x[%[[N:.+]], %[[C:.+]], %{{.*}}, %{{.*}}] guard [0]
# CHECK-NEXT:    tm.load %scale[%[[C]]] : memref<3xf32>
# CHECK-NEXT:    tm.load %bias[%[[C]]] : memref<3xf32>
# CHECK-NEXT:    tm.load %mean[%[[C]]] : memref<3xf32>
# CHECK-NEXT:    tm.load %var[%[[C]]] : memref<3xf32>
# CHECK:         math.sqrt
