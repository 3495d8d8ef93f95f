// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s

// arith ops that xDSL 0.74 lacks, loaded by tmlir.ir.arith_ext with MLIR's syntax.

// CHECK-LABEL: func.func @remainder
// CHECK-NEXT:    %r = arith.remf %a, %b : f32
// CHECK-NEXT:    func.return %r : f32
func.func @remainder(%a: f32, %b: f32) -> f32 {
  %r = arith.remf %a, %b : f32
  func.return %r : f32
}
