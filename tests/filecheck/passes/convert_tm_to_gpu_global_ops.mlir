// RUN: tm-opt %s -p tm-lower-mappings,convert-tm-to-gpu | filecheck %s
//
// tm-lower-mappings leaves the global atomic_add, fence and load_cg in place (the mapping's
// body is inlined around them); convert-tm-to-gpu makes each its tmgpu twin, one to one,
// with the same buffer and indices. The kernel keeps its scratch kinds, and the zeroed
// buffer of its counters stays zeroed.

// CHECK-LABEL: tmgpu.kernel @last_block(%ws: memref<3x2x64xf32>, %counters: memref<2xi32>) block(64) scratch(workspace, counters) {
// CHECK:         tmgpu.fence
// CHECK-NEXT:    tmgpu.barrier
// CHECK:         %old = tmgpu.atomic_add %counters[%t], %one : memref<2xi32>
// CHECK:         %p = tmgpu.load_cg %ws[%r, %t, %tid] : memref<3x2x64xf32>
tm.kernel @last_block(%ws: memref<3x2x64xf32>, %counters: memref<2xi32>) grid(6) block(64) scratch(workspace, counters) {
  %bid = tm.block_id
  %tid = tm.thread_id
  %one = arith.constant 1 : i32
  tm.for_task (%t, %s) in spatial(2, 3) on %bid {
    tm.fence
    tm.barrier
    %old = tm.atomic_add %counters[%t], %one : memref<2xi32>
    tm.for_task (%r) in repeat(3) {
      %p = tm.load_cg %ws[%r, %t, %tid] : memref<3x2x64xf32>
    }
  }
}

// CHECK-LABEL: func.func @main() {
// CHECK-NEXT:    %workspace = tmgpu.alloc : memref<3x2x64xf32>
// CHECK-NEXT:    %counters = tmgpu.alloc zeroed : memref<2xi32>
// CHECK-NEXT:    tmgpu.launch @last_block(%workspace, %counters) grid(6) block(64) : memref<3x2x64xf32>, memref<2xi32>
func.func @main() {
  %workspace = tm.alloc global : memref<3x2x64xf32>
  %counters = tm.alloc global zeroed : memref<2xi32>
  tm.launch @last_block(%workspace, %counters) : memref<3x2x64xf32>, memref<2xi32>
  func.return
}
