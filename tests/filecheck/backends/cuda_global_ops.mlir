// RUN: tm-opt %s -p lower-to-cuda -t cuda | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda -t cuda | nvcc -ptx -arch=sm_90 -x cu - -o %t.ptx
// RUN: filecheck %s --input-file %t.ptx --check-prefix=PTX
//
// The global ops print as CUDA's atomicAdd, __threadfence and __ldcg, each a statement of
// its own in program order; a buffer an atomic_add writes is not const. The PTX has the
// GPU-scope fence (membar.gl, which PTX 6+ defines as fence.sc.gpu), the atomic add and the
// L2-only load. The host code lists a zeroed buffer (a kernel's counters) as such.

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(64) publish(float* __restrict__ y, float* __restrict__ ws, int* __restrict__ counters) {
// CHECK:         ws[bid * 64 + tid] = 2.0f;
// CHECK-NEXT:    __threadfence();
// CHECK-NEXT:    __syncthreads();
// CHECK-NEXT:    const int old = atomicAdd(&counters[0], 1);
// CHECK-NEXT:    const float p = __ldcg(&ws[tid]);
// CHECK-NEXT:    y[tid] = p;

// CHECK:       //   [2] counters: int[4] (zeroed)
// CHECK-NEXT:  // zeroed buffers must be zero before the first run; every run leaves them zero.

// PTX-LABEL: .visible .entry publish(
// PTX:         membar.gl
// PTX-NEXT:    bar.sync
// PTX-NEXT:    atom.global.add.u32
// PTX:         ld.global.cg.f32
tm.kernel @publish(%y: memref<64xf32>, %ws: memref<2x64xf32>, %counters: memref<4xi32>) grid(2) block(64) scratch(workspace, counters) {
  %bid = tm.block_id
  %tid = tm.thread_id
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %v = arith.constant 2.0 : f32
  tm.store %v, %ws[%bid, %tid] : memref<2x64xf32>
  tm.fence
  tm.barrier
  %old = tm.atomic_add %counters[%c0], %one : memref<4xi32>
  %p = tm.load_cg %ws[%c0, %tid] : memref<2x64xf32>
  tm.store %p, %y[%tid] : memref<64xf32>
}
func.func @main(%y: memref<64xf32>) attributes {tm.inputs = [], tm.outputs = ["y"]} {
  %ws = tm.alloc global : memref<2x64xf32>
  %counters = tm.alloc global zeroed : memref<4xi32>
  tm.launch @publish(%y, %ws, %counters) : memref<64xf32>, memref<2x64xf32>, memref<4xi32>
  func.return
}
