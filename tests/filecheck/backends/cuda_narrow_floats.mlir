// RUN: tm-opt %s -p lower-to-cuda -t cuda | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda -t cuda -o %t.cu
// RUN: nvcc -c -arch=sm_90 -Werror all-warnings %t.cu -o %t.o
//
// The CUDA C of bfloat16 and float8: each is a struct of its bits (tm_bf16, tm_f8e4m3fn,
// ...), defined once at the top of the source with its two conversions, which call one
// generic pair parametrized by the format (exponent bits, mantissa bits, bias, kind: 0
// IEEE-like, 1 FN, 2 FNUZ) -- on an sm_80+ GPU bfloat16 takes the hardware's cvt instead,
// but for a NaN --; only the types the source uses are defined. Elements are
// computed in float: widened where read, rounded where stored, also by data movement.
// The file compiles with nvcc without a warning.

// CHECK:       __device__ __forceinline__ float tm_narrow_to_float(unsigned int bits, int E, int M, int bias, int kind) {
// CHECK:       __device__ __forceinline__ unsigned int tm_float_to_narrow(float f, int E, int M, int bias, int kind) {
// CHECK:       struct tm_bf16 { unsigned short bits; };
// CHECK-NEXT:  __device__ __forceinline__ float tm_bf16_to_float(tm_bf16 h) {
// CHECK-NEXT:  #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// CHECK-NEXT:    return __uint_as_float((unsigned int)h.bits << 16);
// CHECK-NEXT:  #else
// CHECK-NEXT:    return tm_narrow_to_float(h.bits, 8, 7, 127, 0);
// CHECK:       __device__ __forceinline__ tm_bf16 tm_float_to_bf16(float f) {
// CHECK:           asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
// CHECK:         h.bits = (unsigned short)tm_float_to_narrow(f, 8, 7, 127, 0);
// CHECK:       struct tm_f8e4m3fn { unsigned char bits; };
// CHECK-NEXT:  __device__ __forceinline__ float tm_f8e4m3fn_to_float(tm_f8e4m3fn h) {
// CHECK-NEXT:    return tm_narrow_to_float(h.bits, 4, 3, 7, 1);
// CHECK:       struct tm_f8e4m3fnuz { unsigned char bits; };
// CHECK:         return tm_narrow_to_float(h.bits, 4, 3, 8, 2);
// CHECK:       struct tm_f8e5m2 { unsigned char bits; };
// CHECK:         return tm_narrow_to_float(h.bits, 5, 2, 15, 0);
// CHECK-NOT:   struct tm_f8e5m2fnuz
// CHECK-NOT:   struct tm_half
// CHECK-NOT:   tm_narrow_to_float(unsigned

// CHECK-LABEL: // Kernel relu_0: schedule template 'elementwise' (block=256, expr=relu(x0))
// CHECK-NEXT:  relu_0(const tm_bf16* __restrict__ x0, tm_bf16* __restrict__ out) {
// CHECK:         const float x = tm_bf16_to_float(x0[{{.*}}]);
// CHECK-NEXT:    out[{{.*}}] = tm_float_to_bf16((x < 0.0f) ? 0.0f : x);

// CHECK-LABEL: // Kernel cast_1: {{.*}} expr=cast(x0, to=f8E4M3FN)
// CHECK-NEXT:  cast_1(const float* __restrict__ x0, tm_f8e4m3fn* __restrict__ out) {
// CHECK:         out[{{.*}}] = tm_float_to_f8e4m3fn(x);

// CHECK-LABEL: // Kernel cast_2: {{.*}} expr=cast(x0, to=f32)
// CHECK-NEXT:  cast_2(const tm_f8e5m2* __restrict__ x0, float* __restrict__ out) {
// CHECK:         const float x = tm_f8e5m2_to_float(x0[{{.*}}]);
// CHECK-NEXT:    out[{{.*}}] = x;

// CHECK-LABEL: // Kernel cast_3: {{.*}} expr=cast(x0, to=bf16)
// CHECK-NEXT:  cast_3(const double* __restrict__ x0, tm_bf16* __restrict__ out) {
// CHECK:         out[{{.*}}] = tm_float_to_bf16((float)x);

// CHECK-LABEL: // Kernel transpose_4: schedule template 'data_movement' (op=transpose
// CHECK:         const float v = tm_f8e4m3fnuz_to_float(x[{{.*}}]);
// CHECK-NEXT:    out[{{.*}}] = tm_float_to_f8e4m3fnuz(v);

// CHECK-LABEL: // Kernel pad_5:
// CHECK:           v = tm_bf16_to_float(x[{{.*}}]);
// CHECK:           v = 1.5f;
// CHECK:         out[{{.*}}] = tm_float_to_bf16(v);

// CHECK:       //   [0] b: tm_bf16[4x64] (argument)
// CHECK:       //   [2] e: tm_f8e5m2[4x64] (argument)
func.func @main(%b: tensor<4x64xbf16>, %x: tensor<4x64xf32>, %e: tensor<4x64xf8E5M2>, %d: tensor<4x64xf64>, %z: tensor<64x4xf8E4M3FNUZ>) -> (tensor<4x64xbf16>, tensor<4x64xf8E4M3FN>, tensor<4x64xf32>, tensor<4x64xbf16>, tensor<4x64xf8E4M3FNUZ>, tensor<4x66xbf16>) {
  %r = graph.relu %b : tensor<4x64xbf16>
  %c = graph.cast %x : tensor<4x64xf32> -> tensor<4x64xf8E4M3FN>
  %w = graph.cast %e : tensor<4x64xf8E5M2> -> tensor<4x64xf32>
  %n = graph.cast %d : tensor<4x64xf64> -> tensor<4x64xbf16>
  %t = graph.transpose %z {perm = array<i64: 1, 0>} : tensor<64x4xf8E4M3FNUZ> -> tensor<4x64xf8E4M3FNUZ>
  %p = graph.pad %b {pads = array<i64: 0, 1, 0, 1>, value = 1.5 : f32} : tensor<4x64xbf16> -> tensor<4x66xbf16>
  func.return %r, %c, %w, %n, %t, %p : tensor<4x64xbf16>, tensor<4x64xf8E4M3FN>, tensor<4x64xf32>, tensor<4x64xbf16>, tensor<4x64xf8E4M3FNUZ>, tensor<4x66xbf16>
}
