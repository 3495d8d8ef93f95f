// RUN: tm-opt %s -t cuda | filecheck %s
// RUN: tm-opt %s -t cuda | nvcc -ptx -arch=sm_80 -x cu - -o %t.ptx
// RUN: filecheck %s --input-file %t.ptx --check-prefix=PTX
// RUN: tm-opt %s -t 'report{compiler=nvcc}' | filecheck %s --check-prefix=REPORT
//
// Shared arrays past the static 48 KiB: the printer declares them in dynamic shared
// memory (one extern byte array, a typed view per array at a 16-byte aligned offset), the
// launch passes the bytes and, in the host code, raises the kernel's limit first. At most
// 48 KiB they stay static __shared__ arrays. (-t report adds the dynamic bytes to the
// static ones ptxas reports.)

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(256) dynamic(const float* __restrict__ x, float* __restrict__ y) {
// CHECK:         extern __shared__ __align__(16) unsigned char tmlir_dynamic_smem[];  // 65552 bytes of dynamic shared memory: 3 arrays
// CHECK-NEXT:    float (&a)[3][4096] = *reinterpret_cast<float (*)[3][4096]>(tmlir_dynamic_smem);
// CHECK-NEXT:    bool (&flag)[1] = *reinterpret_cast<bool (*)[1]>(tmlir_dynamic_smem + 49152);
// CHECK-NEXT:    float (&b)[4096] = *reinterpret_cast<float (*)[4096]>(tmlir_dynamic_smem + 49168);
// CHECK:         a[2][tid] = v;
// CHECK-NEXT:    b[tid] = v;
// CHECK-NEXT:    __syncthreads();
// CHECK:         const float p = a[2][other];
// CHECK-NEXT:    const float q = b[other];

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(256) static_48k(const float* __restrict__ x, float* __restrict__ y) {
// CHECK:         __shared__ float s[12288];
// CHECK-NOT:     tmlir_dynamic_smem

// CHECK:         extern "C" void tmlir_run(void* const* buffers, cudaStream_t stream) {
// CHECK-NEXT:      cudaFuncSetAttribute(dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, 65552);
// CHECK-NEXT:      dynamic<<<4, 256, 65552, stream>>>((float*)buffers[0], (float*)buffers[1]);
// CHECK-NEXT:      dynamic<<<4, 256, 65552, stream>>>((float*)buffers[1], (float*)buffers[0]);
// CHECK-NEXT:      static_48k<<<4, 256, 0, stream>>>((float*)buffers[0], (float*)buffers[1]);

// PTX:       .extern .shared .align 16 .b8 tmlir_dynamic_smem[];
// PTX-LABEL: .entry dynamic(
// PTX:       mov.u32 {{.*}}, tmlir_dynamic_smem;

// REPORT:      {{^}}dynamic     hand-written        4 x 256  {{ *[0-9]+}}        0   65552        0  -{{$}}
// REPORT-NEXT: {{^}}static_48k  hand-written        4 x 256  {{ *[0-9]+}}        0   49152        0  -{{$}}

tmgpu.kernel @dynamic(%x: memref<1024xf32>, %y: memref<1024xf32>) block(256) {
  %tid = tmgpu.thread_id x
  %a = tmgpu.shared_alloc : memref<3x4096xf32>
  %flag = tmgpu.shared_alloc : memref<1xi1>
  %b = tmgpu.shared_alloc : memref<4096xf32>
  %c2 = arith.constant 2 : index
  %c255 = arith.constant 255 : index
  %v = memref.load %x[%tid] : memref<1024xf32>
  memref.store %v, %a[%c2, %tid] : memref<3x4096xf32>
  memref.store %v, %b[%tid] : memref<4096xf32>
  tmgpu.barrier
  %other = arith.subi %c255, %tid : index
  %p = memref.load %a[%c2, %other] : memref<3x4096xf32>
  %q = memref.load %b[%other] : memref<4096xf32>
  %s = arith.addf %p, %q : f32
  memref.store %s, %y[%tid] : memref<1024xf32>
}

tmgpu.kernel @static_48k(%x: memref<1024xf32>, %y: memref<1024xf32>) block(256) {
  %tid = tmgpu.thread_id x
  %s = tmgpu.shared_alloc : memref<12288xf32>
  %v = memref.load %x[%tid] : memref<1024xf32>
  memref.store %v, %s[%tid] : memref<12288xf32>
  tmgpu.barrier
  %c255 = arith.constant 255 : index
  %other = arith.subi %c255, %tid : index
  %w = memref.load %s[%other] : memref<12288xf32>
  memref.store %w, %y[%tid] : memref<1024xf32>
}

func.func @main(%x: memref<1024xf32>, %y: memref<1024xf32>) {
  tmgpu.launch @dynamic(%x, %y) grid(4) block(256) : memref<1024xf32>, memref<1024xf32>
  tmgpu.launch @dynamic(%y, %x) grid(4) block(256) : memref<1024xf32>, memref<1024xf32>
  tmgpu.launch @static_48k(%x, %y) grid(4) block(256) : memref<1024xf32>, memref<1024xf32>
  func.return
}
