// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false target-arch=sm_80},cse' | filecheck %s
// RUN: not tm-opt %s -p 'lower-to-cuda{fusion=maybe}' 2>&1 | filecheck %s --check-prefix=BOOL
// RUN: not tm-opt %s -p 'lower-to-cuda{fuson=false}' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not tm-opt %s -p 'lower-to-cuda{target-arch=sm_12}' 2>&1 | filecheck %s --check-prefix=ARCH
// RUN: not tm-opt %s -p 'convert-tm-to-gpu{max-grid=1.5}' 2>&1 | filecheck %s --check-prefix=INT
// RUN: not tm-opt %s -p 'cse{aggressive=true}' 2>&1 | filecheck %s --check-prefix=NONE
//
// Pass options in MLIR syntax: typed and validated, each mistake one line naming the option
// and the pass, before the input is read.

// CHECK:       tmgpu.kernel @relu_0
// CHECK:       tmgpu.launch @relu_0

// BOOL:        {{^}}tm-opt: error: option 'fusion' of pass 'lower-to-cuda' expects a bool (true/false), got 'maybe'{{$}}
// BOOL-NOT:    {{.}}
// NAME:        {{^}}tm-opt: error: pass 'lower-to-cuda' has no option 'fuson'; did you mean 'fusion'? (options: fusion, target-device, target-arch, {{.*}}){{$}}
// ARCH:        {{^}}tm-opt: error: option 'target-arch' of pass 'lower-to-cuda' must be one of sm_75, {{.*}}, got 'sm_12'{{$}}
// INT:         {{^}}tm-opt: error: option 'max-grid' of pass 'convert-tm-to-gpu' expects an integer, got '1.5'{{$}}
// NONE:        {{^}}tm-opt: error: pass 'cse' takes no options, got 'aggressive'{{$}}
func.func @relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
