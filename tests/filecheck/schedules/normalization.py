# The windowed normalizations' templates, printed from the template: an LRN over 4 channels
# (one below the centre, two above: both channel checks; the last block is partial), its
# CUDA C, and an Lp pool (p = 3, padding 1) on the pooling template.
# RUN: python %s lrn | filecheck %s --check-prefix=LRN
# RUN: python %s lrn | tm-opt -p lower-to-cuda -t cuda | filecheck %s --check-prefix=CUDA
# RUN: python %s lp | filecheck %s --check-prefix=LP
import sys

from xdsl.dialects.builtin import ModuleOp

from tmlir.schedules.normalization import LRNProblem, lrn_kernel
from tmlir.schedules.pool import PoolProblem, pool_kernel

# LRN-LABEL: tm.kernel @lrn_0(%x: memref<2x6x5x5xf32>, %y: memref<2x6x5x5xf32>) grid(2) block(256)
# LRN-SAME:    tm.template = "lrn", tm.params = {size = 4 : i64, alpha = "0.0001",
# LRN-SAME:    beta = "0.75", bias = "2", block = 256 : i64}
# LRN:         %acc = tm.alloc register : memref<1xf32>
# One thread per element:
# LRN-NEXT:    tm.for_task (%blk) in spatial(2) on %bid {
# LRN-NEXT:      tm.for_task (%t) in spatial(256) on %tid {
# LRN:             %c = arith.remui
# 300 elements in blocks of 256: a spare thread's batch index is past the input.
# LRN:             %n_ok = arith.cmpi ult, %n
# The channel window, a repeat over its taps: channel c - 1 + k, checked against [0, 6).
# LRN:             tm.for_task (%k) in repeat(4) {
# LRN-NEXT:          %shifted = arith.addi %c, %k : index
# LRN-NEXT:          %[[ONE:[0-9]+]] = arith.constant 1 : index
# LRN-NEXT:          arith.cmpi uge, %shifted, %[[ONE]] : index
# LRN-NEXT:          %[[SEVEN:[0-9]+]] = arith.constant 7 : index
# LRN-NEXT:          arith.cmpi ult, %shifted, %[[SEVEN]] : index
# LRN:               %j = arith.subi %shifted
# LRN:               %inside = arith.andi
# LRN-NEXT:          scf.if %inside {
# LRN-NEXT:            %v = tm.load %x[%n, %j, %d0, %d1] : memref<2x6x5x5xf32>
# LRN-NEXT:            %sq = arith.mulf %v, %v : f32
# LRN:               }
# LRN-NEXT:        }
# alpha / size = 2.5e-05:
# LRN:             %square_sum = tm.load %acc
# LRN-NEXT:        %[[SCALE:[0-9]+]] = arith.constant 2.500000e-05 : f32
# LRN-NEXT:        %[[SCALED:[0-9]+]] = arith.mulf %[[SCALE]], %square_sum : f32
# LRN-NEXT:        %[[BIAS:[0-9]+]] = arith.constant 2.000000e+00 : f32
# LRN-NEXT:        %base = arith.addf %[[BIAS]], %[[SCALED]] : f32
# LRN-NEXT:        %[[BETA:[0-9]+]] = arith.constant 7.500000e-01 : f32
# LRN-NEXT:        %divisor = math.powf %base, %[[BETA]] : f32
# LRN-NEXT:        %center = tm.load %x[%n, %c, %d0, %d1] guard [0] : memref<2x6x5x5xf32>
# LRN-NEXT:        %out = arith.divf %center, %divisor : f32
# LRN-NEXT:        tm.store %out, %y[%n, %c, %d0, %d1] guard [0] : memref<2x6x5x5xf32>

# CUDA-LABEL: // Kernel lrn_0: schedule template 'lrn' (size=4, alpha=0.0001, beta=0.75, bias=2,
# CUDA-SAME:   block=256), 256 threads per block
# CUDA:         #pragma unroll
# CUDA-NEXT:    for (int k = 0; k < 4; ++k) {
# CUDA-NEXT:      const int shifted = c + k;
# CUDA-NEXT:      const int j = shifted - 1;
# CUDA-NEXT:      const bool inside = (n_ok && (shifted >= 1)) && (shifted < 7);
# CUDA-NEXT:      if (inside) {
# CUDA-NEXT:        const float v = x[n * 150 + j * 25 + d0 * 5 + d1];
# CUDA-NEXT:        const float sq = v * v;
# CUDA-NEXT:        acc[0] = acc[0] + sq;
# CUDA-NEXT:      }
# CUDA-NEXT:    }
# CUDA-NEXT:    const float square_sum = acc[0];
# CUDA-NEXT:    const float base = 2.0f + (2.5e-05f * square_sum);
# CUDA-NEXT:    const float divisor = powf(base, 0.75f);

# LP-LABEL: tm.kernel @lp_pool_1(%x: memref<1x2x6x6xf32>, %y: memref<1x2x3x3xf32>) grid(1) block(32)
# LP-SAME:    tm.template = "pool", tm.params = {op = "lp", p = 3 : i64, kernel = "3x3",
# LP-SAME:    stride = "2x2", dilation = "1x1", pads = "1,1,1,1", block = 32 : i64}
# Padding adds 0: the accumulator starts at 0 and only taps inside the input are summed.
# LP:         %[[ZERO:[0-9]+]] = arith.constant 0.000000e+00 : f32
# LP:         tm.store %[[ZERO]], %acc
# LP:         tm.for_task (%kh, %kw) in repeat(3, 3) {
# LP:           %ph = arith.addi
# LP:           %ih = arith.subi %ph
# LP:           %pw = arith.addi
# LP:           %iw = arith.subi %pw
# LP:           scf.if %inside {
# LP-NEXT:        %v = tm.load %x[%n, %c, %ih, %iw] : memref<1x2x6x6xf32>
# LP-NEXT:        %magnitude = math.absf %v : f32
# LP-NEXT:        %[[P:[0-9]+]] = arith.constant 3.000000e+00 : f32
# LP-NEXT:        %term = math.powf %magnitude, %[[P]] : f32
# LP:             arith.addf {{.*}}, %term : f32
# LP:         %sum = tm.load %acc
# LP-NEXT:    %[[INVERSE_P:[0-9]+]] = arith.constant 0.333333343 : f32
# LP-NEXT:    %norm = math.powf %sum, %[[INVERSE_P]] : f32
# LP-NEXT:    tm.store %norm, %y[%n, %c, %oh, %ow] guard [0] : memref<1x2x3x3xf32>
if sys.argv[1] == "lrn":
    kernel = lrn_kernel("lrn_0", LRNProblem((2, 6, 5, 5), 4, 1e-4, 0.75, 2.0))
else:
    kernel = pool_kernel("lp_pool_1", PoolProblem("lp", (1, 2, 6, 6), (3, 3), (2, 2), (1, 1, 1, 1),
                                                  p=3))
print(ModuleOp([kernel]))
