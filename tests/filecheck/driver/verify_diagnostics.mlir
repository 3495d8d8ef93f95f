// RUN: tm-opt %s --split-input-file -p graph-fold-empty --verify-diagnostics | filecheck %s
//
// --verify-diagnostics as mlir-opt: every error (parse, verifier, pass) must be announced by
// an expected-error comment about its line (same line, @+N, @-N; @unknown for an error that
// has no line), its text a substring of the message. Chunks that fail print nothing; the
// others print their module, as without the flag. verify_diagnostics_wrong.mlir: mismatches.

// CHECK-NOT:   @bad
// CHECK-LABEL: func.func @fine
// CHECK-NOT:   @bad
// CHECK-NOT:   @empty

func.func @bad_verify_next(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{shapes 2x3, 4 do not broadcast}}
  %x = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @bad_verify_same_line(%a: tensor<3xf32>) {
  %x = graph.gelu %a {approximate = "erf"} : tensor<3xf32> // expected-error {{approximate must be "none" or "tanh"}}
  func.return
}

// -----

func.func @bad_verify_above(%a: tensor<3xf32>) {
  %y = graph.relu %y : tensor<3xf32>
  // expected-error@-1 {{uses its own result %y}}
  func.return
}

// -----

func.func @fine(%a: tensor<3xf32>) -> tensor<3xf32> {
  %y = graph.relu %a : tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

func.func @bad_parse(%a: tensor<3xf32>) {
  // expected-error@+1 {{Expected ':'}}
  %y = graph.relu %a tensor<3xf32>
  func.return
}

// -----

// A pass error about an op: on the op's line.
func.func @empty_reduce(%x: tensor<0x3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{graph-fold-empty: 'graph.reduce_sum' (%y): reads the empty tensor<0x3xf32> (%x)}}
  %y = graph.reduce_sum %x {axes = array<i64: 0>} : tensor<0x3xf32> -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
