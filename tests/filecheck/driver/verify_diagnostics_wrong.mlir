// RUN: not tm-opt %s --split-input-file --verify-diagnostics 2>&1 >/dev/null | filecheck %s
// RUN: not tm-opt %s --split-input-file --verify-diagnostics 2>/dev/null | filecheck %s --check-prefix=OUT
//
// --verify-diagnostics fails (status 1) on each mismatch, one mlir-opt style line each:
// a wrong text, a wrong line, an error nobody expected, an expectation never met, and a
// malformed annotation. The chunks that compile are still printed.

// CHECK:      verify_diagnostics_wrong.mlir:12:3: error: unexpected error: 'graph.add' op does not verify: shapes 2x3, 4 do not broadcast
// CHECK-NEXT: verify_diagnostics_wrong.mlir:11: error: expected error "shapes 2x3, 5 do not broadcast" was not produced
func.func @wrong_text(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{shapes 2x3, 5 do not broadcast}}
  %x = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK-NEXT: verify_diagnostics_wrong.mlir:22:3: error: unexpected error: 'graph.add' op does not verify: shapes 2x3, 4 do not broadcast
// CHECK-NEXT: verify_diagnostics_wrong.mlir:21: error: expected error "do not broadcast" was not produced
func.func @wrong_line(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+2 {{do not broadcast}}
  %x = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK-NEXT: verify_diagnostics_wrong.mlir:30:3: error: unexpected error: operand #0 of 'graph.relu' uses its own result %y
func.func @not_expected(%a: tensor<3xf32>) {
  %y = graph.relu %y : tensor<3xf32>
  func.return
}

// -----

// CHECK-NEXT: verify_diagnostics_wrong.mlir:39: error: expected error "never" was not produced
// CHECK-NEXT: verify_diagnostics_wrong.mlir:40: error: expected warning "nor this" was not produced
func.func @fine(%a: tensor<3xf32>) {
  // expected-error@+1 {{never}}
  func.return // expected-warning {{nor this}}
}

// -----

// CHECK-NEXT: verify_diagnostics_wrong.mlir:48: error: bad location '@next' in expected-error (expected @+N, @-N or @unknown)
// CHECK-NEXT: verify_diagnostics_wrong.mlir:49: error: expected-error needs its text in {{[{][{]}}...{{[}][}]}}
func.func @malformed(%a: tensor<3xf32>) {
  // expected-error@next {{x}}
  // expected-error@+1 shapes
  func.return
}
// CHECK-NOT:  {{.}}

// OUT-LABEL:  func.func @fine
// OUT-NEXT:     func.return
// OUT-LABEL:  func.func @malformed
