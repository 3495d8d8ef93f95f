// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t cubin --arch sm_80 -o %t.cubin
// RUN: readelf -h %t.cubin | filecheck %s --check-prefix=ELF80
// RUN: nm %t.cubin | filecheck %s --check-prefix=SYMBOLS
// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t 'cubin{arch=sm_80}' > %t.stdout.cubin
// RUN: cmp %t.cubin %t.stdout.cubin
// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t 'cubin{compiler=nvcc}' -o %t.nvcc.cubin
// RUN: readelf -h %t.nvcc.cubin | filecheck %s --check-prefix=ELF90
// RUN: nm %t.nvcc.cubin | filecheck %s --check-prefix=SYMBOLS
// RUN: not tm-opt %s --split-input-file -p 'lower-to-cuda{fusion=false}' -t cubin -o %t.split.cubin 2>&1 | filecheck %s --check-prefix=SPLIT
// RUN: not tm-opt %s -t cubin -o %t.graph.cubin 2>&1 | filecheck %s --check-prefix=GRAPH
//
// -t cubin writes the CUBIN (an ELF file for the GPU) of a gpu-level module to -o FILE or
// a redirected stdout (the same bytes; a terminal is refused, see test_ptx_targets.py).
// The ELF header's flags hold the SM version in bits 8-15 (0x50 = 80, 0x5a = 90); the
// kernels are its global function symbols. One module makes one binary: split input is
// refused.

// ELF80:   Machine: {{ *}}NVIDIA CUDA architecture
// ELF80:   Flags: {{ *}}0x{{[0-9a-f]*}}50{{[0-9a-f][0-9a-f]$}}
// ELF90:   Machine: {{ *}}NVIDIA CUDA architecture
// ELF90:   Flags: {{ *}}0x{{[0-9a-f]*}}5a{{[0-9a-f][0-9a-f]$}}

// SYMBOLS-DAG: {{^}}{{[0-9a-f]+}} T matmul_0{{$}}
// SYMBOLS-DAG: {{^}}{{[0-9a-f]+}} T relu_1{{$}}

// SPLIT:     {{^}}tm-opt: error: -t cubin writes the binary of one module: drop --split-input-file{{$}}
// GRAPH:     {{^}}tm-opt: error: {{.*}}.mlir:{{[0-9]+}}:3: 'graph.weight' is above the gpu level; run -p lower-to-cuda before -t cubin{{$}}

func.func @net(%x: tensor<4x16xf32>) -> tensor<4x6xf32> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
  %w = graph.weight "fc.weight" : tensor<16x6xf32>
  %h = graph.matmul %x, %w : (tensor<4x16xf32>, tensor<16x6xf32>) -> tensor<4x6xf32>
  %y = graph.relu %h : tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}

// -----

func.func @neg(%x: tensor<8xf32>) -> tensor<8xf32> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
  %y = graph.neg %x : tensor<8xf32>
  func.return %y : tensor<8xf32>
}
