// RUN: tm-opt %s -p lower-to-cuda -t cuda | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda -t cuda | nvcc -ptx -arch=sm_90 -x cu - -o %t.ptx
// RUN: filecheck %s --input-file %t.ptx --check-prefix=PTX
//
// The CUDA C of elementwise functions: one expression per element, parameters as float
// literals, CUDA's accurate math functions (expf, log1pf, ...), and max/min/clip/relu
// written as comparisons that keep a NaN (fmaxf would drop it). 4x64 elements fill one
// block of 256 threads exactly, so no access is guarded. The file compiles with nvcc.

// CHECK-LABEL: // Kernel leaky_relu_0: schedule template 'elementwise' (block=256, expr=leaky_relu(x0, alpha=0.1)), 256 threads per block
// CHECK-NEXT:  extern "C" __global__ void __launch_bounds__(256) leaky_relu_0(const float* __restrict__ x0, float* __restrict__ out) {
// CHECK-NEXT:    const int tid = threadIdx.x;
// CHECK-NEXT:    const int [[ROW:.*]] = tid / 64;
// CHECK-NEXT:    const int [[COL:.*]] = tid % 64;
// CHECK-NEXT:    const float x = x0[[[ROW]] * 64 + [[COL]]];
// CHECK-NEXT:    out[[[ROW]] * 64 + [[COL]]] = (x < 0.0f) ? (0.1f * x) : x;
// CHECK-NEXT:  }

// CHECK-LABEL: // Kernel hard_sigmoid_1: {{.*}} expr=hard_sigmoid(x0, alpha=0.2, beta=0.5)
// CHECK:         const float t = (0.2f * x) + 0.5f;
// CHECK-NEXT:    const float [[LOW:.*]] = (t < 0.0f) ? 0.0f : t;
// CHECK-NEXT:    out[{{.*}}] = ([[LOW]] > 1.0f) ? 1.0f : [[LOW]];

// tanh-GELU as x * sigmoid(2u): no 1 + tanh(u) that cancels for x << 0.
// CHECK-LABEL: // Kernel gelu_2: {{.*}} expr=gelu(x0, approximate=tanh)
// CHECK:         out[{{.*}}] = x / (1.0f + expf(-1.5957692f * (x + (0.044715f * ((x * x) * x)))));

// CHECK-LABEL: // Kernel clip_3: {{.*}} expr=clip(x0, min=0.0, max=6.0)
// CHECK:         const float [[LOW:.*]] = (x < 0.0f) ? 0.0f : x;
// CHECK-NEXT:    out[{{.*}}] = ([[LOW]] > 6.0f) ? 6.0f : [[LOW]];

// Three broadcast operands; an operand that is NaN wins.
// CHECK-LABEL: // Kernel max_4: {{.*}} expr=max(x0, x1, x2)
// CHECK:         const float x = x0[[[ROW:.*]] * 64 + [[COL:.*]]];
// CHECK-NEXT:    const float x_1 = x1[[[COL]]];
// CHECK-NEXT:    const float x_2 = x2[[[ROW]]];
// CHECK-NEXT:    const float [[M:.*]] = ((x < x_1) || (x_1 != x_1)) ? x_1 : x;
// CHECK-NEXT:    out[{{.*}}] = (([[M]] < x_2) || (x_2 != x_2)) ? x_2 : [[M]];

// CHECK-LABEL: // Kernel softplus_5: {{.*}} expr=softplus(x0)
// CHECK:         out[{{.*}}] = fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));

// CHECK-LABEL: // Kernel pow_6: {{.*}} expr=pow(x0, x1)
// CHECK:         out[{{.*}}] = powf(x, x_1);

// PTX-DAG: .visible .entry leaky_relu_0(
// PTX-DAG: .visible .entry hard_sigmoid_1(
// PTX-DAG: .visible .entry gelu_2(
// PTX-DAG: .visible .entry clip_3(
// PTX-DAG: .visible .entry max_4(
// PTX-DAG: .visible .entry softplus_5(
// PTX-DAG: .visible .entry pow_6(
func.func @activations(%x: tensor<4x64xf32>, %b: tensor<64xf32>, %c: tensor<4x1xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>) attributes {tm.inputs = ["x", "b", "c"], tm.outputs = ["leaky", "hsig", "gelu", "clip", "max", "softplus", "pow"]} {
  %leaky = graph.leaky_relu %x {alpha = 0.1 : f32} : tensor<4x64xf32>
  %hsig = graph.hard_sigmoid %x {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<4x64xf32>
  %gelu = graph.gelu %x {approximate = "tanh"} : tensor<4x64xf32>
  %clip = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<4x64xf32>
  %max = graph.max %x, %b, %c : (tensor<4x64xf32>, tensor<64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
  %softplus = graph.softplus %x : tensor<4x64xf32>
  %pow = graph.pow %x, %b : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  func.return %leaky, %hsig, %gelu, %clip, %max, %softplus, %pow : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>
}
