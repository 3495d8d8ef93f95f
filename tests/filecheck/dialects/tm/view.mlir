// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// tm.view and tmgpu.view: a host buffer seen with another shape (the same element type and
// count); invalid_view.mlir has the verifier's errors.

// CHECK-LABEL: func.func @views
// CHECK-NEXT:    %v = tm.view %x : memref<2x3x4xf32> to memref<6x4xf32>
// CHECK-NEXT:    %w = tmgpu.view %x : memref<2x3x4xf32> to memref<24xf32>
func.func @views(%x: memref<2x3x4xf32>) {
  %v = tm.view %x : memref<2x3x4xf32> to memref<6x4xf32>
  %w = tmgpu.view %x : memref<2x3x4xf32> to memref<24xf32>
  func.return
}

