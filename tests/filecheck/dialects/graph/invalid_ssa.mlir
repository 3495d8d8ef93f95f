// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// xDSL 0.74's parser accepts forward references anywhere and its verifier does not check
// dominance; tm-opt does, before any pass, and names file:line:col of the offending op.

func.func @own_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{operand #0 of 'graph.relu' uses its own result %y (SSA values must be defined before use)}}
  %y = graph.relu %y : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @use_before_def(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{operand #0 of 'graph.relu' uses %b before its definition}}
  %a = graph.relu %b : tensor<4xf32>
  %b = graph.relu %x : tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// -----

func.func @cycle(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{operand #0 of 'graph.relu' uses %b before its definition}}
  %a = graph.relu %b : tensor<4xf32>
  %b = graph.relu %a : tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// -----

func.func @verifier_error_has_a_location(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{shapes 2x3, 4 do not broadcast}}
  %x = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}
