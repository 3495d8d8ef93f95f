# The structure of the reduction template (tmlir/schedules/reduce.py), printed from the
# template itself (no graph op reaches it yet): a block per row (softmax of 5 x 4096:
# 256 threads per row, 8 warps) with the shared-memory combine, and a warp per row (sum
# of 128 x 33, columns not a multiple of 32) without one; then the CUDA C of the latter.
# RUN: python %s softmax | filecheck %s --check-prefix=BLOCK
# RUN: python %s sum | filecheck %s --check-prefix=WARP
# RUN: python %s sum | tm-opt -p lower-to-cuda -t cuda | filecheck %s --check-prefix=CUDA
import sys

from xdsl.dialects.builtin import ModuleOp

from tmlir.schedules.reduce import RowProblem, reduce_kernel, softmax_kernel

# BLOCK-LABEL: tm.kernel @softmax_0(%x: memref<5x4096xf32>, %out: memref<5x4096xf32>) grid(5) block(256)
# BLOCK-SAME:    tm.template = "reduce", tm.params = {op = "softmax", threads_per_row = 256 : i64, rows_per_block = 1 : i64
# One register accumulator, the thread's 16 columns cached in registers (softmax reads
# the row three times), one shared partial buffer per statistic (1 row x 8 warps):
# BLOCK-NEXT:    %bid = tm.block_id
# BLOCK-NEXT:    %tid = tm.thread_id
# BLOCK-NEXT:    %acc = tm.alloc register : memref<1xf32>
# BLOCK-NEXT:    %row_cache = tm.alloc register : memref<16xf32>
# BLOCK-NEXT:    %row_max_partial = tm.alloc shared : memref<1x8xf32>
# BLOCK-NEXT:    %row_sum_partial = tm.alloc shared : memref<1x8xf32>
# Rows over blocks, threads over (row, thread-in-row):
# BLOCK-NEXT:    tm.for_task (%blk) in spatial(5) on %bid {
# BLOCK-NEXT:      tm.for_task (%r, %t) in spatial(1, 256) on %tid {
# BLOCK:             %warp = arith.divui %t
# BLOCK:             %lane = arith.remui %t
# The row max: each thread's strided slice (16 columns, 256 apart, unrolled: the cache's
# indices are constants), loaded into the cache ...
# BLOCK:             tm.for_task (%slot, %tc) in repeat(16, 1, unroll=[true, true]) * spatial(1, 256) on %t {
# BLOCK:               %c = arith.addi
# BLOCK-NEXT:          %v = tm.load %x[%row, %c] : memref<5x4096xf32>
# BLOCK-NEXT:          tm.store %v, %row_cache[%slot] : memref<16xf32>
# BLOCK:               arith.maxnumf
# BLOCK:             }
# ... the butterfly within each warp ...
# BLOCK-NEXT:        %[[C0:[0-9]+]] = arith.constant 0 : index
# BLOCK-NEXT:        %row_max = tm.load %acc[%[[C0]]] : memref<1xf32>
# BLOCK-NEXT:        %row_max_xor16 = tm.shuffle xor %row_max, 16 : f32
# BLOCK-NEXT:        %row_max_1 = arith.maxnumf %row_max, %row_max_xor16 : f32
# BLOCK-NEXT:        %row_max_xor8 = tm.shuffle xor %row_max_1, 8 : f32
# BLOCK-NEXT:        %row_max_2 = arith.maxnumf %row_max_1, %row_max_xor8 : f32
# BLOCK-NEXT:        %row_max_xor4 = tm.shuffle xor %row_max_2, 4 : f32
# BLOCK-NEXT:        %row_max_3 = arith.maxnumf %row_max_2, %row_max_xor4 : f32
# BLOCK-NEXT:        %row_max_xor2 = tm.shuffle xor %row_max_3, 2 : f32
# BLOCK-NEXT:        %row_max_4 = arith.maxnumf %row_max_3, %row_max_xor2 : f32
# BLOCK-NEXT:        %row_max_xor1 = tm.shuffle xor %row_max_4, 1 : f32
# BLOCK-NEXT:        %row_max_5 = arith.maxnumf %row_max_4, %row_max_xor1 : f32
# ... lane 0 of each warp to shared memory, the barrier, and a butterfly over the 8 warps.
# BLOCK-NEXT:        %[[C0:[0-9]+]] = arith.constant 0 : index
# BLOCK-NEXT:        %first_lane = arith.cmpi eq, %lane, %[[C0]] : index
# BLOCK-NEXT:        scf.if %first_lane {
# BLOCK-NEXT:          tm.store %row_max_5, %row_max_partial[%r, %warp] : memref<1x8xf32>
# BLOCK-NEXT:        }
# BLOCK-NEXT:        tm.barrier
# BLOCK-NEXT:        %[[C8:[0-9]+]] = arith.constant 8 : index
# BLOCK-NEXT:        %[[W:[0-9]+]] = arith.remui %lane, %[[C8]] : index
# BLOCK-NEXT:        %row_max_6 = tm.load %row_max_partial[%r, %[[W]]] : memref<1x8xf32>
# BLOCK-NEXT:        %row_max_xor4_1 = tm.shuffle xor %row_max_6, 4 : f32
# BLOCK-NEXT:        %row_max_7 = arith.maxnumf %row_max_6, %row_max_xor4_1 : f32
# BLOCK-NEXT:        %row_max_xor2_1 = tm.shuffle xor %row_max_7, 2 : f32
# BLOCK-NEXT:        %row_max_8 = arith.maxnumf %row_max_7, %row_max_xor2_1 : f32
# BLOCK-NEXT:        %row_max_xor1_1 = tm.shuffle xor %row_max_8, 1 : f32
# BLOCK-NEXT:        %row_max_9 = arith.maxnumf %row_max_8, %row_max_xor1_1 : f32
# The sum of exp(x - max), from the cached row, the same way into its own partial buffer
# (one more barrier) ...
# BLOCK:             tm.for_task (%slot_1, %tc_1) in repeat(16, 1, unroll=[true, true]) * spatial(1, 256) on %t {
# BLOCK:               %v_1 = tm.load %row_cache[%slot_1] : memref<16xf32>
# BLOCK-NEXT:          arith.subf %v_1, %row_max_9
# BLOCK-NEXT:          math.exp
# BLOCK:             %row_sum_xor16 = tm.shuffle xor %row_sum, 16 : f32
# BLOCK:             tm.store %row_sum_5, %row_sum_partial[%r, %warp] : memref<1x8xf32>
# BLOCK:             tm.barrier
# BLOCK:             %row_sum_9 = arith.addf %row_sum_8, %row_sum_xor1_1 : f32
# ... then every element: exp(x - max) / sum, with no further barrier.
# BLOCK-NOT:         tm.barrier
# BLOCK:             %inv_sum = arith.divf %{{[0-9]+}}, %row_sum_9 : f32
# BLOCK-NEXT:        tm.for_task (%slot_2, %tc_2) in repeat(16, 1, unroll=[true, true]) * spatial(1, 256) on %t {
# BLOCK:               %c_2 = arith.addi
# BLOCK-NEXT:          %v_2 = tm.load %row_cache[%slot_2] : memref<16xf32>
# BLOCK-NEXT:          %[[S:[0-9]+]] = arith.subf %v_2, %row_max_9 : f32
# BLOCK-NEXT:          %[[E:[0-9]+]] = math.exp %[[S]] : f32
# BLOCK-NEXT:          %[[Y:[0-9]+]] = arith.mulf %[[E]], %inv_sum : f32
# BLOCK-NEXT:          tm.store %[[Y]], %out[%row, %c_2] : memref<5x4096xf32>
# BLOCK-NEXT:        }
# BLOCK-NOT:         tm.barrier

# WARP-LABEL: tm.kernel @sum_0(%x: memref<128x33xf32>, %out: memref<128x1xf32>) grid(16) block(256)
# WARP-SAME:    threads_per_row = 32 : i64, rows_per_block = 8 : i64
# A warp per row needs no shared memory and no barrier:
# WARP-NOT:     tm.alloc shared
# WARP-NOT:     tm.barrier
# WARP:           tm.for_task (%r, %t) in spatial(8, 32) on %tid {
# 33 columns over 32 lanes: two strided steps, the second masked to the row.
# WARP:             tm.for_task (%c) in repeat(2) * spatial(32) on %t {
# WARP-NEXT:          %[[N:[0-9]+]] = arith.constant 33 : index
# WARP-NEXT:          %in_row = arith.cmpi ult, %c, %[[N]] : index
# WARP-NEXT:          scf.if %in_row {
# WARP-NEXT:            %v = tm.load %x[%row, %c] : memref<128x33xf32>
# WARP:                 arith.addf
# WARP:             %row_sum_xor16 = tm.shuffle xor %row_sum, 16 : f32
# WARP:             %row_sum_xor1 = tm.shuffle xor %row_sum_4, 1 : f32
# WARP-NEXT:        %row_sum_5 = arith.addf %row_sum_4, %row_sum_xor1 : f32
# Every lane has the sum; thread 0 of the row stores it.
# WARP-NEXT:        %[[C0:[0-9]+]] = arith.constant 0 : index
# WARP-NEXT:        %first = arith.cmpi eq, %t, %[[C0]] : index
# WARP-NEXT:        scf.if %first {
# WARP:               tm.store %row_sum_5, %out[%row, %{{[0-9]+}}] : memref<128x1xf32>
# WARP-NOT:     tm.barrier
# WARP-NOT:     tm.shuffle

# CUDA-LABEL: // Kernel sum_0: schedule template 'reduce' (op=sum, threads_per_row=32, rows_per_block=8, threads=256, rows=128, cols=33), 256 threads per block
# CUDA-NEXT:  extern "C" __global__ void __launch_bounds__(256) sum_0(const float* __restrict__ x, float* __restrict__ out) {
# CUDA:         float acc[1];
# CUDA-NEXT:    const int r = tid / 32;
# CUDA-NEXT:    const int t = tid % 32;
# CUDA-NEXT:    const int row = (bid * 8) + r;
# CUDA-NEXT:    acc[0] = 0.0f;
# CUDA-NEXT:    #pragma unroll
# CUDA-NEXT:    for (int [[K:[a-z0-9_]+]] = 0; [[K]] < 2; ++[[K]]) {
# CUDA-NEXT:      const int c = ([[K]] * 32) + t;
# CUDA-NEXT:      const bool in_row = c < 33;
# CUDA-NEXT:      if (in_row) {
# CUDA-NEXT:        const float v = x[row * 33 + c];
# CUDA-NEXT:        acc[0] = acc[0] + v;
# CUDA-NEXT:      }
# CUDA-NEXT:    }
# CUDA-NEXT:    const float row_sum = acc[0];
# CUDA-NEXT:    const float row_sum_xor16 = __shfl_xor_sync(0xffffffffu, row_sum, 16);
# CUDA-NEXT:    const float row_sum_1 = row_sum + row_sum_xor16;
# CUDA-NEXT:    const float row_sum_xor8 = __shfl_xor_sync(0xffffffffu, row_sum_1, 8);
# CUDA:         const float row_sum_xor1 = __shfl_xor_sync(0xffffffffu, row_sum_4, 1);
# CUDA-NEXT:    const float row_sum_5 = row_sum_4 + row_sum_xor1;
# CUDA-NEXT:    const bool first = t == 0;
# CUDA-NEXT:    if (first) {
# CUDA-NEXT:      out[row] = row_sum_5;
# CUDA-NEXT:    }
# CUDA-NEXT:  }

if sys.argv[1] == "softmax":
    kernel = softmax_kernel("softmax_0", RowProblem((5, 4096)))
else:
    kernel = reduce_kernel("sum_0", "sum", RowProblem((128, 33)))
print(ModuleOp([kernel]))
