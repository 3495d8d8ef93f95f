// RUN: tm-opt %s -p lower-to-cuda -t cuda | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda -t cuda | nvcc -ptx -arch=sm_90 -x cu - -o %t.ptx
//
// The CUDA C of the element types beyond f32/i64/i32/i1: a float16 buffer holds tm_half
// (the prelude, once, defines it and its exact conversions); a float16 element is computed
// in float, widened where it is read and rounded where it is stored, also by templates
// that compute in f32 only (the reduction); double stays double; an i8 product is
// computed in int and converted back (it wraps); unsigned integers divide and compare as
// unsigned, with unsigned literals; casts between signed and unsigned reinterpret the bits.
// 4x64 elements fill one block of 256 threads exactly. The file compiles with nvcc.

// CHECK:       struct tm_half { unsigned short bits; };
// CHECK:       __device__ __forceinline__ float tm_half_to_float(tm_half h) {
// CHECK:       __device__ __forceinline__ tm_half tm_float_to_half(float f) {
// CHECK-NOT:   struct tm_half

// CHECK-LABEL: // Kernel relu_0: schedule template 'elementwise' (block=256, expr=relu(x0))
// CHECK-NEXT:  relu_0(const tm_half* __restrict__ x0, tm_half* __restrict__ out) {
// CHECK:         const float x = tm_half_to_float(x0[{{.*}}]);
// CHECK-NEXT:    out[{{.*}}] = tm_float_to_half((x < 0.0f) ? 0.0f : x);

// CHECK-LABEL: // Kernel add_1: {{.*}} expr=x0 + x1
// CHECK-NEXT:  add_1(const double* __restrict__ x0, const double* __restrict__ x1, double* __restrict__ out) {
// CHECK:         out[{{.*}}] = x + x_1;

// CHECK-LABEL: // Kernel mul_2: {{.*}} expr=x0 * x1
// CHECK:         out[{{.*}}] = (signed char)((int)x * x_1);

// CHECK-LABEL: // Kernel div_3: {{.*}} expr=x0 / x1
// CHECK:         const bool [[ZERO:.*]] = x_1 == 0u;
// CHECK-NEXT:    out[{{.*}}] = [[ZERO]] ? 0u : ((unsigned short)((unsigned int)x / ([[ZERO]] ? 1u : x_1)));

// CHECK-LABEL: // Kernel less_4: {{.*}} expr=x0 < x1
// CHECK-NEXT:  less_4(const unsigned long long* __restrict__ x0, const unsigned long long* __restrict__ x1, bool* __restrict__ out) {
// CHECK:         out[{{.*}}] = x < x_1;

// CHECK-LABEL: // Kernel cast_5: {{.*}} expr=cast(x0, to=f16)
// CHECK:         out[{{.*}}] = tm_float_to_half((float)x);

// CHECK-LABEL: // Kernel cast_6: {{.*}} expr=cast(x0, to=ui8)
// CHECK:         out[{{.*}}] = (unsigned char)x;

// CHECK-LABEL: // Kernel reduce_sum_7: schedule template 'reduce'
// CHECK-NEXT:  reduce_sum_7(const tm_half* __restrict__ x, tm_half* __restrict__ out) {
// CHECK:         const float v = tm_half_to_float(x[{{.*}}]);
// CHECK:         out[r] = tm_float_to_half(row_sum_{{[0-9]+}});

// CHECK:       //   [0] h: tm_half[4x64] (argument)
func.func @main(%h: tensor<4x64xf16>, %d: tensor<4x64xf64>, %s: tensor<4x64xi8>, %u: tensor<4x64xui16>, %w: tensor<4x64xui64>) -> (tensor<4x64xf16>, tensor<4x64xf64>, tensor<4x64xi8>, tensor<4x64xui16>, tensor<4x64xi1>, tensor<4x64xf16>, tensor<4x64xui8>, tensor<4xf16>) {
  %r = graph.relu %h : tensor<4x64xf16>
  %dd = graph.add %d, %d : (tensor<4x64xf64>, tensor<4x64xf64>) -> tensor<4x64xf64>
  %ss = graph.mul %s, %s : (tensor<4x64xi8>, tensor<4x64xi8>) -> tensor<4x64xi8>
  %uu = graph.div %u, %u : (tensor<4x64xui16>, tensor<4x64xui16>) -> tensor<4x64xui16>
  %lt = graph.less %w, %w : (tensor<4x64xui64>, tensor<4x64xui64>) -> tensor<4x64xi1>
  %hc = graph.cast %d : tensor<4x64xf64> -> tensor<4x64xf16>
  %sc = graph.cast %s : tensor<4x64xi8> -> tensor<4x64xui8>
  %sum = graph.reduce_sum %h {axes = array<i64: 1>} : tensor<4x64xf16> -> tensor<4xf16>
  func.return %r, %dd, %ss, %uu, %lt, %hc, %sc, %sum : tensor<4x64xf16>, tensor<4x64xf64>, tensor<4x64xi8>, tensor<4x64xui16>, tensor<4x64xi1>, tensor<4x64xf16>, tensor<4x64xui8>, tensor<4xf16>
}
