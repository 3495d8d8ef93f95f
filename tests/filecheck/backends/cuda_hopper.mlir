// RUN: tm-opt %s -p tm-lower-mappings,convert-tm-to-gpu -t cuda | filecheck %s
// RUN: tm-opt %s -p tm-lower-mappings,convert-tm-to-gpu -t cuda | nvcc -cubin -arch=sm_90a -x cu - -o %t.cubin
// RUN: tm-opt %s -p tm-lower-mappings,convert-tm-to-gpu -t 'ptx{arch=sm_90a compiler=nvcc}' | filecheck %s --check-prefix=PTX
// RUN: not tm-opt %s -p tm-lower-mappings,convert-tm-to-gpu -t 'ptx{arch=sm_90}' 2>&1 | filecheck %s --check-prefix=SM90
//
// One warpgroup multiplies a 64x16 tile of A by a 16x64 tile of B on Hopper's tensor cores
// (tests/ir/test_hopper_ops.py runs it on emu against numpy). A is copied 16 bytes a thread
// by cp.async into a K-major buffer with 32-byte rows, swizzled; B (row-major K x N in
// global memory) into an N-major buffer indexed [n, k], in 128-byte swizzled atoms of 64 n
// by 8 k. After the copies land, fence.proxy.async hands them to the tensor cores, the
// barrier to the other threads; one wgmma computes D = A * B (accumulate_if false: the
// accumulator's old contents are ignored), and each thread stores its 32 elements of D by
// the accumulator's layout, its registers in order (constant indices: acc stays in registers).

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(128) wgmma_tile(const tm_half* __restrict__ a, const tm_half* __restrict__ b, float* __restrict__ c) {
// CHECK:         __shared__ tm_half sa[1024] __align__(1024);
// CHECK-NEXT:    __shared__ tm_half sb[1024] __align__(1024);
// CHECK-NEXT:    float acc[32];
// CHECK:         tmlir_cp_async<16>(&sa[{{.*}}], &a[{{.*}}]);
// CHECK:         tmlir_cp_async<16>(&sb[{{.*}}], &b[{{.*}}]);
// CHECK-NEXT:    tmlir_cp_async_commit();
// CHECK-NEXT:    tmlir_cp_async_wait<0>();
// CHECK-NEXT:    tmlir_fence_proxy_async();
// CHECK-NEXT:    __syncthreads();
// CHECK-NEXT:    const long long da = tmlir_wgmma_desc(&sa[{{.*}}], 16, 256, 32);
// CHECK-NEXT:    const long long db = tmlir_wgmma_desc(&sb[{{.*}}], 16, 1024, 128);
// CHECK-NEXT:    tmlir_wgmma_fence();
// CHECK-NEXT:    tmlir_wgmma_m64n64k16_f16<0, 1>(acc, da, db, false);
// CHECK-NEXT:    tmlir_wgmma_commit();
// CHECK-NEXT:    tmlir_wgmma_wait<0>();
// CHECK-NEXT:    tmlir_wgmma_fence_operand<32>((float*)acc);

// PTX-LABEL: .entry wgmma_tile(
// PTX:       cp.async.cg.shared.global
// PTX:       fence.proxy.async.shared::cta;
// PTX:       wgmma.fence.sync.aligned;
// PTX:       wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// PTX:       wgmma.commit_group.sync.aligned;
// PTX:       wgmma.wait_group.sync.aligned 0;

// SM90: {{^}}tm-opt: error: -t ptx: 'tmgpu.wgmma_fence' needs target arch sm_90a (wgmma is sm_90a-specific), not sm_90{{$}}

tm.kernel @wgmma_tile(%a: memref<64x16xf16>, %b: memref<16x64xf16>, %c: memref<64x64xf32>) grid(1) block(128) {
  %t = tm.thread_id
  %sa = tm.alloc shared layout(row_major(64, 16) ^ swizzle(1, 3, 3)) : memref<64x16xf16>
  %sb = tm.alloc shared layout(row_major(1, 2) * column_major(64, 8) ^ swizzle(3, 3, 3)) : memref<64x16xf16>
  %acc = tm.alloc register : memref<32xf32>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %false = arith.constant false
  // A: thread t copies chunk t % 2 of row t / 2
  %ra = arith.divui %t, %c2 : index
  %odd = arith.remui %t, %c2 : index
  %ca = arith.muli %odd, %c8 : index
  tm.cp_async bytes(16) %sa[%ra, %ca], %a[%ra, %ca] : memref<64x16xf16>, memref<64x16xf16>
  // B: thread t copies n = 8 (t % 8) .. +7 of row k = t / 8
  %kb = arith.divui %t, %c8 : index
  %q = arith.remui %t, %c8 : index
  %nb = arith.muli %q, %c8 : index
  tm.cp_async bytes(16) %sb[%nb, %kb], %b[%kb, %nb] : memref<64x16xf16>, memref<16x64xf16>
  tm.cp_async_commit
  tm.cp_async_wait pending(0)
  tm.fence_proxy_async
  tm.barrier
  %da = tm.wgmma_desc kmajor %sa[%c0, %c0] tile(64, 16) : memref<64x16xf16>
  %db = tm.wgmma_desc mnmajor %sb[%c0, %c0] tile(64, 16) : memref<64x16xf16>
  tm.wgmma_fence
  tm.wgmma m64n64k16 f16 %acc, %da kmajor, %db mnmajor accumulate_if %false : memref<32xf32>
  tm.wgmma_commit
  tm.wgmma_wait pending(0) %acc : memref<32xf32>
  // Register 4j + 2h + e of thread 32w + 4g + t holds D[16w + 8h + g][8j + 2t + e]: the
  // accumulator's task mapping (wgmma_accumulator) iterated by its registers
  %w = arith.divui %t, %c32 : index
  %lane = arith.remui %t, %c32 : index
  %g = arith.divui %lane, %c4 : index
  %t4 = arith.remui %lane, %c4 : index
  %w16 = arith.muli %w, %c16 : index
  %row0 = arith.addi %w16, %g : index
  %col0 = arith.muli %t4, %c2 : index
  tm.for_task (%j, %h, %e) in repeat(8, 2, 2) {
    %h8 = arith.muli %h, %c8 : index
    %row = arith.addi %row0, %h8 : index
    %j8 = arith.muli %j, %c8 : index
    %cj = arith.addi %col0, %j8 : index
    %col = arith.addi %cj, %e : index
    %j4 = arith.muli %j, %c4 : index
    %h2 = arith.muli %h, %c2 : index
    %jh = arith.addi %j4, %h2 : index
    %reg = arith.addi %jh, %e : index
    %v = tm.load %acc[%reg] : memref<32xf32>
    tm.store %v, %c[%row, %col] : memref<64x64xf32>
  }
}
