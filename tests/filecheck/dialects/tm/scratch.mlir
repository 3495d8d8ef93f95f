// RUN: tm-opt %s --split-input-file | filecheck %s
// RUN: tm-opt %s --split-input-file | tm-opt --split-input-file | filecheck %s
//
// A kernel's trailing scratch arguments, by kind, and the zeroed global buffers its counters
// take, print as they are written (round trip), at the tm and the tmgpu level.

// CHECK-LABEL: tm.kernel @split(%x: memref<64xf32>, %y: memref<64xf32>, %ws: memref<2x64xf32>, %counters: memref<1xi32>) grid(2) block(64) scratch(workspace, counters) attributes {tm.template = "hand-written"} {
// CHECK:       func.func @main
// CHECK-NEXT:    %workspace = tm.alloc global : memref<2x64xf32>
// CHECK-NEXT:    %counters = tm.alloc global zeroed : memref<1xi32>
// CHECK-NEXT:    tm.launch @split(%x, %y, %workspace, %counters) : memref<64xf32>, memref<64xf32>, memref<2x64xf32>, memref<1xi32>
tm.kernel @split(%x: memref<64xf32>, %y: memref<64xf32>, %ws: memref<2x64xf32>, %counters: memref<1xi32>) grid(2) block(64) scratch(workspace, counters) attributes {tm.template = "hand-written"} {
  %t = tm.thread_id
}
func.func @main(%x: memref<64xf32>, %y: memref<64xf32>) {
  %workspace = tm.alloc global : memref<2x64xf32>
  %counters = tm.alloc global zeroed : memref<1xi32>
  tm.launch @split(%x, %y, %workspace, %counters) : memref<64xf32>, memref<64xf32>, memref<2x64xf32>, memref<1xi32>
  func.return
}

// -----

// CHECK-LABEL: tmgpu.kernel @gpu_split(%x: memref<64xf32>, %counters: memref<4xi32>) block(64) index_bits(64) scratch(counters) {
// CHECK:       %counters = tmgpu.alloc zeroed : memref<4xi32>
// CHECK-NEXT:  tmgpu.launch @gpu_split(%x, %counters) grid(4) block(64) : memref<64xf32>, memref<4xi32>
tmgpu.kernel @gpu_split(%x: memref<64xf32>, %counters: memref<4xi32>) block(64) index_bits(64) scratch(counters) {
  %t = tmgpu.thread_id x
}
func.func @main(%x: memref<64xf32>) {
  %counters = tmgpu.alloc zeroed : memref<4xi32>
  tmgpu.launch @gpu_split(%x, %counters) grid(4) block(64) : memref<64xf32>, memref<4xi32>
  func.return
}
