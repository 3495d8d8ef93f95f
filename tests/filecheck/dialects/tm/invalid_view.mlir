// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// tm.view and tmgpu.view keep the element type and count, and live on the host (see
// invalid.mlir for how the checks are written).

func.func @count(%x: memref<2x3xf32>) {
  // expected-error@+1 {{a view of 6 elements cannot have 8 (memref<2x4xf32>)}}
  %v = tm.view %x : memref<2x3xf32> to memref<2x4xf32>
  func.return
}

// -----

func.func @element_type(%x: memref<4xf32>) {
  // expected-error@+1 {{a view must keep the element type}}
  %v = tmgpu.view %x : memref<4xf32> to memref<4xi32>
  func.return
}

// -----

tm.kernel @in_kernel(%x: memref<4xf32>) grid(1) block(4) {
  // expected-error@+1 {{'tm.view' is a host operation, not allowed in a kernel}}
  %v = tm.view %x : memref<4xf32> to memref<2x2xf32>
}
