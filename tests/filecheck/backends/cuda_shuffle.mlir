// RUN: tm-opt %s -p lower-to-cuda -t cuda | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda -t cuda | nvcc -ptx -arch=sm_90 -x cu - -o %t.ptx
// RUN: filecheck %s --input-file %t.ptx --check-prefix=PTX
//
// Warp shuffles print as CUDA's full-mask __shfl_*_sync intrinsics, each a statement of
// its own in program order (never inlined into an expression); the width is printed only
// when it is not the whole warp. The PTX has one shfl.sync per shuffle.

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(64) warp_sums(const float* __restrict__ x, float* __restrict__ y) {
// CHECK-NEXT:    const int tid = threadIdx.x;
// CHECK-NEXT:    const float v = x[tid];
// CHECK-NEXT:    const float v16 = __shfl_xor_sync(0xffffffffu, v, 16);
// CHECK-NEXT:    const float s16 = v + v16;
// CHECK-NEXT:    const float down = __shfl_down_sync(0xffffffffu, s16, 2, 8);
// CHECK-NEXT:    const float up = __shfl_up_sync(0xffffffffu, down, 1);
// CHECK-NEXT:    const int lane0 = __shfl_sync(0xffffffffu, tid, 0);
// CHECK-NEXT:    y[tid] = up;
// CHECK-NEXT:    y[lane0] = s16;
// CHECK-NEXT:  }

// PTX-LABEL: .visible .entry warp_sums(
// PTX:         shfl.sync.bfly.b32
// PTX:         shfl.sync.down.b32
// PTX:         shfl.sync.up.b32
// PTX:         shfl.sync.idx.b32
tm.kernel @warp_sums(%x: memref<64xf32>, %y: memref<64xf32>) grid(1) block(64) {
  %tid = tm.thread_id
  %v = tm.load %x[%tid] : memref<64xf32>
  %v16 = tm.shuffle xor %v, 16 : f32
  %s16 = arith.addf %v, %v16 : f32
  %down = tm.shuffle down %s16, 2 width(8) : f32
  %up = tm.shuffle up %down, 1 : f32
  %lane0 = tm.shuffle idx %tid, 0 : index
  tm.store %up, %y[%tid] : memref<64xf32>
  tm.store %s16, %y[%lane0] : memref<64xf32>
}
