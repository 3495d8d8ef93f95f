// RUN: tm-opt %s -t cuda | filecheck %s
// RUN: tm-opt %s -t 'cost{format=json}' | filecheck %s --check-prefix=COST
// RUN: tm-opt %s -t cuda -o %t.cu
// RUN: nvcc -ptx -arch=sm_90 %t.cu -o - | filecheck %s --check-prefix=PTX
//
// tmgpu.load_vector prints as one load of a CUDA vector type (float4, float2; uint4 and
// uint2 hold 16-bit floats, two to a component, low half first), its elements named by
// component; nvcc makes them vector loads (ld.global.nc.v4.f32: LDG.E.128 in SASS) when
// every element is used. The cost report counts each as `width` elements read.

// CHECK-LABEL: void __launch_bounds__(32) vectors(const float* __restrict__ x, const tm_half* __restrict__ h, const tm_bf16* __restrict__ g, float* __restrict__ y) {
// CHECK-NEXT:    const int tid = threadIdx.x;
// CHECK-NEXT:    const float4 w_vec = *reinterpret_cast<const float4*>(&x[tid * 16 + 4]);
// CHECK-NEXT:    const float2 p_vec = *reinterpret_cast<const float2*>(&x[tid * 16 + 8]);
// CHECK-NEXT:    const uint4 a_vec = *reinterpret_cast<const uint4*>(&h[tid * 8]);
// CHECK-NEXT:    const uint2 b_vec = *reinterpret_cast<const uint2*>(&g[tid * 4]);
// CHECK-NEXT:    const float s1 = w_vec.x + w_vec.y;
// CHECK-NEXT:    const float s2 = s1 + w_vec.z;
// CHECK-NEXT:    const float s3 = s2 + w_vec.w;
// CHECK-NEXT:    const float s4 = s3 + p_vec.x;
// CHECK-NEXT:    const float s5 = s4 + p_vec.y;
// CHECK:         const float a0 = tm_half_to_float(tm_half{(unsigned short)(a_vec.x & 0xffffu)});
// CHECK-NEXT:    const float a1 = tm_half_to_float(tm_half{(unsigned short)(a_vec.x >> 16)});
// CHECK-NEXT:    const float a2 = tm_half_to_float(tm_half{(unsigned short)(a_vec.y & 0xffffu)});
// CHECK:         const float a7 = tm_half_to_float(tm_half{(unsigned short)(a_vec.w >> 16)});
// CHECK:         const float b3 = tm_bf16_to_float(tm_bf16{(unsigned short)(b_vec.y >> 16)});
tmgpu.kernel @vectors(%x: memref<32x16xf32>, %h: memref<32x8xf16>, %g: memref<32x4xbf16>, %y: memref<32x4xf32>) block(32) {
  %tid = tmgpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %w:4 = tmgpu.load_vector x4 %x[%tid, %c4] : memref<32x16xf32>
  %p:2 = tmgpu.load_vector x2 %x[%tid, %c8] : memref<32x16xf32>
  %a:8 = tmgpu.load_vector x8 %h[%tid, %c0] : memref<32x8xf16>
  %b:4 = tmgpu.load_vector x4 %g[%tid, %c0] : memref<32x4xbf16>
  %s1 = arith.addf %w#0, %w#1 : f32
  %s2 = arith.addf %s1, %w#2 : f32
  %s3 = arith.addf %s2, %w#3 : f32
  %s4 = arith.addf %s3, %p#0 : f32
  %s5 = arith.addf %s4, %p#1 : f32
  memref.store %s5, %y[%tid, %c0] : memref<32x4xf32>
  %a0 = arith.extf %a#0 : f16 to f32
  %a1 = arith.extf %a#1 : f16 to f32
  %a2 = arith.extf %a#2 : f16 to f32
  %a3 = arith.extf %a#3 : f16 to f32
  %a4 = arith.extf %a#4 : f16 to f32
  %a5 = arith.extf %a#5 : f16 to f32
  %a6 = arith.extf %a#6 : f16 to f32
  %a7 = arith.extf %a#7 : f16 to f32
  %h1 = arith.addf %a0, %a1 : f32
  %h2 = arith.addf %h1, %a2 : f32
  %h3 = arith.addf %h2, %a3 : f32
  %h4 = arith.addf %h3, %a4 : f32
  %h5 = arith.addf %h4, %a5 : f32
  %h6 = arith.addf %h5, %a6 : f32
  %h7 = arith.addf %h6, %a7 : f32
  memref.store %h7, %y[%tid, %c1] : memref<32x4xf32>
  %b0 = arith.extf %b#0 : bf16 to f32
  %b1 = arith.extf %b#1 : bf16 to f32
  %b2 = arith.extf %b#2 : bf16 to f32
  %b3 = arith.extf %b#3 : bf16 to f32
  %g1 = arith.addf %b0, %b1 : f32
  %g2 = arith.addf %g1, %b2 : f32
  %g3 = arith.addf %g2, %b3 : f32
  memref.store %g3, %y[%tid, %c2] : memref<32x4xf32>
}

// Read: x 32 threads x (4 + 2) f32 = 768 B, h 32 x 8 f16 = 512 B, g 32 x 4 bf16 = 256 B;
// written: 32 x 3 f32.
// COST: "bytes_read": 1536,
// COST: "bytes_written": 384,

// PTX-LABEL: .entry vectors(
// PTX:       ld.global.nc.v4.f32
// PTX:       ld.global.nc.v2.f32
// PTX:       ld.global.nc.v4.u32
// PTX:       ld.global.nc.v2.u32
func.func @main(%x: memref<32x16xf32>, %h: memref<32x8xf16>, %g: memref<32x4xbf16>, %y: memref<32x4xf32>) {
  tmgpu.launch @vectors(%x, %h, %g, %y) grid(1) block(32) : memref<32x16xf32>, memref<32x8xf16>, memref<32x4xbf16>, memref<32x4xf32>
  func.return
}
