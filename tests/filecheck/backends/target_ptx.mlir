// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t 'ptx{arch=sm_80}' | filecheck %s
// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t ptx --arch sm_80 | filecheck %s
// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t 'ptx{arch=sm_80 compiler=nvcc}' | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda -t ptx -o %t.ptx
// RUN: filecheck %s --input-file %t.ptx --check-prefix=FUSED
// RUN: not tm-opt %s -t ptx 2>&1 | filecheck %s --check-prefix=GRAPH
// RUN: not tm-opt %s -p lower-to-cuda -t 'ptx{arch=sm_91}' 2>&1 | filecheck %s --check-prefix=ARCH
// RUN: not tm-opt %s -p lower-to-cuda -t 'ptx{compiler=nvc}' 2>&1 | filecheck %s --check-prefix=COMPILER
// RUN: not tm-opt %s -p lower-to-cuda -t 'ptx{arch=sm_90}' --arch sm_80 2>&1 | filecheck %s --check-prefix=DISAGREE
// RUN: not tm-opt %s -p lower-to-cuda -t cuda --arch sm_80 2>&1 | filecheck %s --check-prefix=CUDA
//
// -t ptx compiles the CUDA C of a gpu-level module (what -t cuda prints) to PTX, the whole
// program at once: NVRTC by default, nvcc with compiler=nvcc; the same text either way up
// to the compiler's comments. The arch is an option of the target or tm-opt's --arch.
// Unfused, the matmul and the relu are two kernels; fused, the relu is the matmul's
// epilogue.

// CHECK:     {{^}}.version {{[0-9]+\.[0-9]+$}}
// CHECK-NEXT: {{^}}.target sm_80{{$}}
// CHECK:     {{^}}.visible .entry matmul_0(
// CHECK:     {{^}}.visible .entry relu_1(

// FUSED:     {{^}}.target sm_90{{$}}
// FUSED:     {{^}}.visible .entry matmul_0(
// FUSED-NOT: .entry

// GRAPH:     {{^}}tm-opt: error: {{.*}}.mlir:{{[0-9]+}}:3: 'graph.weight' is above the gpu level; run -p lower-to-cuda before -t ptx{{$}}
// GRAPH-NEXT: {{^}}  %w = graph.weight "fc.weight" : tensor<16x6xf32>{{$}}
// GRAPH-NEXT: {{^ +\^$}}
// GRAPH-NOT: {{.}}

// ARCH:      {{^}}tm-opt: error: {{.*}}unknown arch 'sm_91' for target 'ptx'; did you mean 'sm_90'? (valid: sm_75, {{.*}}){{$}}
// COMPILER:  {{^}}tm-opt: error: {{.*}}unknown compiler 'nvc' for target 'ptx'; did you mean 'nvcc'? (valid: auto, nvrtc, nvcc){{$}}
// DISAGREE:  {{^}}tm-opt: error: --arch sm_80 and -t ptx{arch=sm_90} disagree: give one{{$}}
// CUDA:      {{^}}tm-opt: error: --arch applies to -t ptx, cubin and report, not -t cuda{{$}}

func.func @net(%x: tensor<4x16xf32>) -> tensor<4x6xf32> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
  %w = graph.weight "fc.weight" : tensor<16x6xf32>
  %h = graph.matmul %x, %w : (tensor<4x16xf32>, tensor<16x6xf32>) -> tensor<4x6xf32>
  %y = graph.relu %h : tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}
