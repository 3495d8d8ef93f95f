// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t report | filecheck %s
// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t 'report{compiler=nvcc}' --arch sm_80 | filecheck %s --check-prefix=SM80
// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t 'report{format=json}' | filecheck %s --check-prefix=JSON
// RUN: not tm-opt %s -t report 2>&1 | filecheck %s --check-prefix=GRAPH
// RUN: not tm-opt %s -p lower-to-cuda -t 'report{fromat=json}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not tm-opt %s -p lower-to-cuda -t 'report{format=xml}' 2>&1 | filecheck %s --check-prefix=FORMAT
//
// -t report: one row per kernel, in module order: its schedule template, the grid x block
// of its launches, then what ptxas -v reports (registers per thread, spilled bytes, static
// shared memory per block, stack frame per thread), its template parameters last; then
// the totals. The matmul (4 rows: the small-M template; 6 columns, so scalar loads of B:
// one block of 4 warps, 2 threads across a tile of 8 columns, 16 threads splitting K)
// sums its warps' partial results in shared memory: 4 warps x 4 rows x 8 columns x 4
// bytes = 512. Register counts depend on the ptxas version: only their form is checked.
// (Dynamic shared memory, added to ptxas' static bytes: backends/cuda_dynamic_shared.mlir.)

// CHECK:      {{^}}# ptxas -v for sm_90: registers per thread, bytes per thread or block{{$}}
// CHECK-NEXT: {{^}}kernel    template     grid x block  regs  spill B  smem B  stack B  parameters{{$}}
// CHECK-NEXT: {{^}}matmul_0  matmul_gemv       1 x 128  {{ *[0-9]+}}        0     512        0  M=4, N=6, K=16, layout=kn, block_m=4, block_n=8, block_k=16, threads=128, {{.*}}, k_steps=1, {{.*}}{{$}}
// CHECK-NEXT: {{^}}relu_1    elementwise        1 x 32  {{ *[0-9]+}}        0       0        0  block=32, expr=relu(x0){{$}}
// CHECK-NEXT: {{^}}total: 2 kernels, 2 launches, max {{[0-9]+}} registers, 0 B spilled, 512 B shared, 0 B stack{{$}}
// CHECK-NOT:  {{.}}

// SM80:       {{^}}# ptxas -v for sm_80: registers per thread, bytes per thread or block{{$}}
// SM80:       {{^}}relu_1    elementwise        1 x 32

// JSON:       "arch": "sm_90",
// JSON:       "kernels": 2,
// JSON-NEXT:  "launches": 2,
// JSON:       "shared_bytes": 512,
// JSON:       "kernel": "matmul_0",
// JSON-NEXT:  "template": "matmul_gemv",
// JSON:       "launches": [
// JSON-NEXT:    {
// JSON-NEXT:      "grid": 1,
// JSON-NEXT:      "block": 128
// JSON:       "registers": {{[0-9]+}},
// JSON-NEXT:  "spill_bytes": 0,
// JSON-NEXT:  "shared_bytes": 512,
// JSON-NEXT:  "stack_bytes": 0
// JSON:       "kernel": "relu_1",

// GRAPH:      {{^}}tm-opt: error: {{.*}}.mlir:{{[0-9]+}}:3: 'graph.weight' is above the gpu level; run -p lower-to-cuda before -t report{{$}}
// OPTION:     {{^}}tm-opt: error: {{.*}}'fromat'; did you mean 'format'? (options: arch, compiler, format){{$}}
// FORMAT:     {{^}}tm-opt: error: {{.*}}unknown format 'xml' for target 'report' (valid: table, json){{$}}

func.func @net(%x: tensor<4x16xf32>) -> tensor<4x6xf32> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
  %w = graph.weight "fc.weight" : tensor<16x6xf32>
  %h = graph.matmul %x, %w : (tensor<4x16xf32>, tensor<16x6xf32>) -> tensor<4x6xf32>
  %y = graph.relu %h : tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}
