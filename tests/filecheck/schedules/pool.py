# The pooling template (tmlir/schedules/pool.py), printed from the template: a 3x3 / 2 max
# pool with padding 1 (only the lower bounds checks can fail; the last block is partial),
# and an average pool whose ceil_mode windows hang past the input (an upper check and a
# divisor counted at run time); then the CUDA C of the latter.
# RUN: python %s max | filecheck %s --check-prefix=MAX
# RUN: python %s average | filecheck %s --check-prefix=AVERAGE
# RUN: python %s average | tm-opt -p lower-to-cuda -t cuda | filecheck %s --check-prefix=CUDA
import sys

from xdsl.dialects.builtin import ModuleOp

from tmlir.schedules.pool import PoolProblem, pool_kernel

# MAX-LABEL: tm.kernel @max_pool_0(%x: memref<1x8x14x14xf32>, %y: memref<1x8x7x7xf32>) grid(2) block(256)
# MAX-SAME:    tm.template = "pool", tm.params = {op = "max", kernel = "3x3", stride = "2x2", dilation = "1x1", pads = "1,1,1,1", block = 256 : i64}
# MAX:         %acc = tm.alloc register : memref<1xf32>
# One thread per output element:
# MAX-NEXT:    tm.for_task (%blk) in spatial(2) on %bid {
# MAX-NEXT:      tm.for_task (%t) in spatial(256) on %tid {
# MAX:             %n = arith.divui %idx
# MAX:             %c = arith.remui
# MAX:             %oh = arith.remui
# MAX:             %ow = arith.remui %idx
# 392 outputs in blocks of 256: a spare thread's batch index is past the input.
# MAX:             %n_ok = arith.cmpi ult, %n
# MAX:             %[[NEG_INF:[0-9]+]] = arith.constant 0xff800000 : f32
# MAX:             tm.store %[[NEG_INF]], %acc
# The window, a repeat over the taps; the tap is in the input unless before the top/left.
# MAX-NEXT:        tm.for_task (%kh, %kw) in repeat(3, 3) {
# MAX:               arith.cmpi uge
# MAX:               %ih = arith.subi
# MAX:               arith.cmpi uge
# MAX:               %iw = arith.subi
# MAX-NOT:           arith.cmpi ult
# MAX:               %inside = arith.andi
# MAX-NEXT:          scf.if %inside {
# MAX-NEXT:            %v = tm.load %x[%n, %c, %ih, %iw] : memref<1x8x14x14xf32>
# MAX:                 arith.maxnumf
# MAX:               }
# MAX-NEXT:        }
# MAX:             %max = tm.load %acc
# MAX-NEXT:        tm.store %max, %y[%n, %c, %oh, %ow] guard [0] : memref<1x8x7x7xf32>

# AVERAGE-LABEL: tm.kernel @average_pool_1(%x: memref<1x4x10x10xf32>, %y: memref<1x4x5x5xf32>) grid(1) block(128)
# AVERAGE-SAME:    ceil_mode = 1 : i64
# AVERAGE:         %acc = tm.alloc register : memref<1xf32>
# AVERAGE-NEXT:    %count = tm.alloc register : memref<1xf32>
# AVERAGE:         tm.for_task (%kh, %kw) in repeat(3, 3) {
# AVERAGE:           %ih = arith.addi
# AVERAGE-NEXT:      %[[TEN:[0-9]+]] = arith.constant 10 : index
# AVERAGE-NEXT:      arith.cmpi ult, %ih, %[[TEN]] : index
# AVERAGE:           %inside = arith.andi
# AVERAGE-NEXT:      scf.if %inside {
# AVERAGE:             arith.addf
# AVERAGE:             tm.store {{.*}}, %count
# AVERAGE:           }
# AVERAGE-NEXT:    }
# AVERAGE:         %sum = tm.load %acc
# AVERAGE:         %count_1 = tm.load %count
# AVERAGE-NEXT:    %mean = arith.divf %sum, %count_1 : f32
# AVERAGE-NEXT:    tm.store %mean, %y[%n, %c, %oh, %ow] guard [0] : memref<1x4x5x5xf32>

# CUDA-LABEL: // Kernel average_pool_1: schedule template 'pool' (op=average, kernel=3x3, stride=2x2, dilation=1x1, pads=0,0,0,0, ceil_mode=1, block=128), 128 threads per block
# CUDA-NEXT:  extern "C" __global__ void __launch_bounds__(128) average_pool_1(const float* __restrict__ x, float* __restrict__ y) {
# CUDA-NEXT:    const int tid = threadIdx.x;
# CUDA-NEXT:    float acc[1];
# CUDA-NEXT:    float count[1];
# CUDA-NEXT:    const int n = tid / 100;
# CUDA-NEXT:    const int c = (tid / 25) % 4;
# CUDA-NEXT:    const int oh = (tid / 5) % 5;
# CUDA-NEXT:    const int ow = tid % 5;
# CUDA-NEXT:    const bool n_ok = n < 1;
# CUDA-NEXT:    acc[0] = 0.0f;
# CUDA-NEXT:    count[0] = 0.0f;
# CUDA-NEXT:    #pragma unroll
# CUDA-NEXT:    for (int kh = 0; kh < 3; ++kh) {
# CUDA-NEXT:      #pragma unroll
# CUDA-NEXT:      for (int kw = 0; kw < 3; ++kw) {
# CUDA-NEXT:        const int ih = (oh * 2) + kh;
# CUDA-NEXT:        const int iw = (ow * 2) + kw;
# CUDA-NEXT:        const bool inside = (n_ok && (ih < 10)) && (iw < 10);
# CUDA-NEXT:        if (inside) {
# CUDA-NEXT:          const float v = x[n * 400 + c * 100 + ih * 10 + iw];
# CUDA-NEXT:          acc[0] = acc[0] + v;
# CUDA-NEXT:          count[0] = count[0] + 1.0f;
# CUDA-NEXT:        }
# CUDA-NEXT:      }
# CUDA-NEXT:    }
# CUDA-NEXT:    const float sum = acc[0];
# CUDA-NEXT:    const float count_1 = count[0];
# CUDA-NEXT:    const float mean = sum / count_1;
# CUDA-NEXT:    if (n_ok) {
# CUDA-NEXT:      y[n * 100 + c * 25 + oh * 5 + ow] = mean;
# CUDA-NEXT:    }
# CUDA-NEXT:  }
if sys.argv[1] == "max":
    kernel = pool_kernel("max_pool_0", PoolProblem("max", (1, 8, 14, 14), (3, 3), (2, 2),
                                                   (1, 1, 1, 1)))
else:
    kernel = pool_kernel("average_pool_1", PoolProblem("average", (1, 4, 10, 10), (3, 3),
                                                       (2, 2), ceil_mode=True))
print(ModuleOp([kernel]))
