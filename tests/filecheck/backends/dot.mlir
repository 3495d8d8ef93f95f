// RUN: tm-opt %s -t dot | filecheck %s
// RUN: tm-opt %s -t 'dot{weights=true}' | filecheck %s --check-prefix=WEIGHTS
// RUN: not tm-opt %s -p convert-graph-to-tm -t dot 2>&1 | filecheck %s --check-prefix=LOWER
//
// -t dot: a graph.fused group is a cluster labelled by its anchor, holding exactly its
// member ops, the anchor highlighted; edges connect the inner ops directly (the tanh reads
// the group's result from the relu that yields it); weights are drawn only on request.
// Below the graph level, -t dot is one error line.

// CHECK:      {{^}}digraph "tmlir" {
// CHECK:        "in0" [label = "input x\n4x8", shape = ellipse
// CHECK-NEXT:   "in1" [label = "input b\n4x16", shape = ellipse
// CHECK-NEXT:   subgraph cluster_0 {
// CHECK-NEXT:     label = "matmul group"; style = filled;
// CHECK-NEXT:     "op0" [label = "matmul\n4x16", style = "rounded,filled,bold", fillcolor = "#f6c177", penwidth = 2];
// CHECK-NEXT:     "op1" [label = "add\n4x16"];
// CHECK-NEXT:     "op2" [label = "relu\n4x16"];
// CHECK-NEXT:   }
// CHECK-NEXT:   "op3" [label = "tanh\n4x16"];
// CHECK-NEXT:   "out0" [label = "output y\n4x16", shape = ellipse, peripheries = 2
// CHECK-NEXT:   "in0" -> "op0";
// CHECK-NEXT:   "op0" -> "op1";
// CHECK-NEXT:   "in1" -> "op1";
// CHECK-NEXT:   "op1" -> "op2";
// CHECK-NEXT:   "op2" -> "op3";
// CHECK-NEXT:   "op3" -> "out0";
// CHECK-NEXT: }
// CHECK-NOT:  {{.}}

// WEIGHTS:      "w0" [label = "fc.weight\n16x8", fontsize = 8
// WEIGHTS:      subgraph cluster_0 {
// WEIGHTS:        "w0" -> "op0";
// WEIGHTS-NEXT:   "op0" -> "op1";

// LOWER:     {{^}}tm-opt: error: -t dot draws graph-level IR, but 'tm.kernel' is below it; run -t dot before convert-graph-to-tm{{$}}
// LOWER-NOT: {{.}}

func.func @main(%x: tensor<4x8xf32>, %b: tensor<4x16xf32>) -> tensor<4x16xf32> attributes {tm.inputs = ["x", "b"], tm.outputs = ["y"]} {
  %w = graph.weight "fc.weight" : tensor<16x8xf32>
  %r = graph.fused -> tensor<4x16xf32> {
    %h = graph.matmul %x, %w {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %s = graph.add %h, %b : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %t = graph.relu %s : tensor<4x16xf32>
    graph.yield %t : tensor<4x16xf32>
  }
  %y = graph.tanh %r : tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}
