// RUN: not tm-opt %s -t cuda 2>&1 | filecheck %s --check-prefix=GRAPH
// RUN: not tm-opt %s -p convert-graph-to-tm -t cuda 2>&1 | filecheck %s --check-prefix=TM
//
// -t cuda on IR above the gpu level is one error naming the op (with its line) and the fix.

// GRAPH:     {{^}}tm-opt: error: {{.*}}.mlir:{{[0-9]+}}:3: 'graph.relu' is above the gpu level; run -p lower-to-cuda before -t cuda{{$}}
// GRAPH-NEXT: {{^}}  %y = graph.relu %x : tensor<4xf32>{{$}}
// GRAPH-NEXT: {{^ +\^$}}
// GRAPH-NOT: {{.}}

// TM:        {{^}}tm-opt: error: 'tm.kernel' is above the gpu level; run -p lower-to-cuda before -t cuda{{$}}
// TM-NEXT:   {{^}}  tm.kernel @relu_0({{.*}} {{\{$}}
// TM-NOT:    {{.}}
func.func @relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
