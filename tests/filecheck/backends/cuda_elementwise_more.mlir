// RUN: tm-opt %s -p lower-to-cuda -t cuda | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda -t cuda | nvcc -ptx -arch=sm_90 -x cu - -o %t.ptx
//
// The CUDA C of mod, shifts, bitwise ops, is_inf and round: numpy's mod as fmodf plus the
// divisor where the signs differ, an integer remainder that never traps, a right shift
// whose amount is kept in range, `&` (not `&&`) on integers, halves to even with rintf.
// 4x64 elements fill one block of 256 threads exactly. The file compiles with nvcc.

// CHECK-LABEL: // Kernel mod_0: schedule template 'elementwise' (block=256, expr=mod(x0, x1))
// CHECK:         const float r = fmodf(x, x_1);
// CHECK-NEXT:    const float [[R:.*]] = ((r != 0.0f) && ((r < 0.0f) ^ (x_1 < 0.0f))) ? (r + x_1) : r;
// CHECK-NEXT:    out[{{.*}}] = ([[R]] == 0.0f) ? copysignf(0.0f, x_1) : [[R]];

// CHECK-LABEL: // Kernel mod_1: {{.*}} expr=fmod(x0, x1)
// CHECK:         const int r = x % (((x_1 == 0) || (x_1 == -1)) ? 1 : x_1);
// CHECK-NEXT:    out[{{.*}}] = r;

// CHECK-LABEL: // Kernel shift_right_2: {{.*}} expr=x0 >> x1
// CHECK:         out[{{.*}}] = x >> (((x_1 >= 0) && (x_1 < 32)) ? x_1 : 31);

// CHECK-LABEL: // Kernel bitwise_and_3: {{.*}} expr=x0 & x1
// CHECK:         out[{{.*}}] = x & x_1;

// CHECK-LABEL: // Kernel is_inf_4: {{.*}} expr=is_inf(x0, detect_positive_only)
// CHECK:         out[{{.*}}] = x == __int_as_float(0x7f800000);

// CHECK-LABEL: // Kernel round_5: {{.*}} expr=round(x0)
// CHECK:         out[{{.*}}] = rintf(x);
func.func @main(%x: tensor<4x64xf32>, %y: tensor<64xf32>, %a: tensor<4x64xi32>, %b: tensor<64xi32>) -> (tensor<4x64xf32>, tensor<4x64xi32>, tensor<4x64xi32>, tensor<4x64xi32>, tensor<4x64xi1>, tensor<4x64xf32>) {
  %mod = graph.mod %x, %y : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  %imod = graph.mod %a, %b {fmod} : (tensor<4x64xi32>, tensor<64xi32>) -> tensor<4x64xi32>
  %shr = graph.shift_right %a, %b : (tensor<4x64xi32>, tensor<64xi32>) -> tensor<4x64xi32>
  %and = graph.bitwise_and %a, %b : (tensor<4x64xi32>, tensor<64xi32>) -> tensor<4x64xi32>
  %inf = graph.is_inf %x {detect_negative = false} : tensor<4x64xf32> -> tensor<4x64xi1>
  %round = graph.round %x : tensor<4x64xf32>
  func.return %mod, %imod, %shr, %and, %inf, %round : tensor<4x64xf32>, tensor<4x64xi32>, tensor<4x64xi32>, tensor<4x64xi32>, tensor<4x64xi1>, tensor<4x64xf32>
}
