// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// Every tmgpu op prints in its custom syntax and parses back to the same text.

// CHECK-LABEL: tmgpu.kernel @ids(%x: memref<64xf32>) block(32) attributes {tm.template = "test"} {
// CHECK-NEXT:    %tx = tmgpu.thread_id x
// CHECK-NEXT:    %ty = tmgpu.thread_id y
// CHECK-NEXT:    %tz = tmgpu.thread_id z
// CHECK-NEXT:    %bx = tmgpu.block_id x
// CHECK-NEXT:    %by = tmgpu.block_id y
// CHECK-NEXT:    %bz = tmgpu.block_id z
// CHECK-NEXT:    tmgpu.barrier
// CHECK-NEXT:  }
tmgpu.kernel @ids(%x: memref<64xf32>) block(32) attributes {tm.template = "test"} {
  %tx = tmgpu.thread_id x
  %ty = tmgpu.thread_id y
  %tz = tmgpu.thread_id z
  %bx = tmgpu.block_id x
  %by = tmgpu.block_id y
  %bz = tmgpu.block_id z
  tmgpu.barrier
}

// CHECK-LABEL: tmgpu.kernel @buffers(%x: memref<64xf32>, %y: memref<64xf32>) block(32) {
// CHECK-NEXT:    %tid = tmgpu.thread_id x
// CHECK-NEXT:    %smem = tmgpu.shared_alloc : memref<32xf32>
// CHECK-NEXT:    %acc = tmgpu.local_alloc : memref<2x2xf32>
// CHECK-NEXT:    %v = memref.load %x[%tid] : memref<64xf32>
// CHECK-NEXT:    memref.store %v, %smem[%tid] : memref<32xf32>
tmgpu.kernel @buffers(%x: memref<64xf32>, %y: memref<64xf32>) block(32) {
  %tid = tmgpu.thread_id x
  %smem = tmgpu.shared_alloc : memref<32xf32>
  %acc = tmgpu.local_alloc : memref<2x2xf32>
  %v = memref.load %x[%tid] : memref<64xf32>
  memref.store %v, %smem[%tid] : memref<32xf32>
}

// CHECK-LABEL: tmgpu.kernel @shuffles(%x: memref<64xf32>) block(64) {
// CHECK:         %xor = tmgpu.shuffle xor %v, 16 : f32
// CHECK-NEXT:    %down = tmgpu.shuffle down %v, 4 width(8) : f32
// CHECK-NEXT:    %up = tmgpu.shuffle up %v, 1 : f32
// CHECK-NEXT:    %idx = tmgpu.shuffle idx %tid, 3 {tag} : index
tmgpu.kernel @shuffles(%x: memref<64xf32>) block(64) {
  %tid = tmgpu.thread_id x
  %v = memref.load %x[%tid] : memref<64xf32>
  %xor = tmgpu.shuffle xor %v, 16 : f32
  %down = tmgpu.shuffle down %v, 4 width(8) : f32
  %up = tmgpu.shuffle up %v, 1 : f32
  %idx = tmgpu.shuffle idx %tid, 3 {tag} : index
}

// CHECK-LABEL: tmgpu.kernel @no_args() block(1) {
// CHECK-NEXT:    tmgpu.barrier
tmgpu.kernel @no_args() block(1) {
  tmgpu.barrier
}

// CHECK-LABEL: func.func @host(%x: memref<64xf32>, %y: memref<64xf32>) {
// CHECK-NEXT:    %tmp = tmgpu.alloc : memref<64xf32>
// CHECK-NEXT:    %w = tmgpu.weight "fc.weight" : memref<64xf32>
// CHECK-NEXT:    tmgpu.launch @buffers(%x, %tmp) grid(2) block(32) : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    tmgpu.launch @buffers(%w, %y) grid(2) block(32) : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    tmgpu.launch @no_args() grid(1) block(1)
// CHECK-NEXT:    func.return
func.func @host(%x: memref<64xf32>, %y: memref<64xf32>) {
  %tmp = tmgpu.alloc : memref<64xf32>
  %w = tmgpu.weight "fc.weight" : memref<64xf32>
  tmgpu.launch @buffers(%x, %tmp) grid(2) block(32) : memref<64xf32>, memref<64xf32>
  tmgpu.launch @buffers(%w, %y) grid(2) block(32) : memref<64xf32>, memref<64xf32>
  tmgpu.launch @no_args() grid(1) block(1)
  func.return
}

// CHECK-LABEL: tmgpu.kernel @load_vector(%x: memref<8x16xf32>, %g: memref<64xbf16>) block(32) {
// CHECK-NEXT:    %tid = tmgpu.thread_id x
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %w, %w_1, %w_2, %w_3 = tmgpu.load_vector x4 %x[%tid, %c4] : memref<8x16xf32>
// CHECK-NEXT:    %h, %h_1, %h_2, %h_3 = tmgpu.load_vector x4 %g[%c4] : memref<64xbf16>
// CHECK-NEXT:  }
tmgpu.kernel @load_vector(%x: memref<8x16xf32>, %g: memref<64xbf16>) block(32) {
  %tid = tmgpu.thread_id x
  %c4 = arith.constant 4 : index
  %w:4 = tmgpu.load_vector x4 %x[%tid, %c4] : memref<8x16xf32>
  %h:4 = tmgpu.load_vector x4 %g[%c4] : memref<64xbf16>
}
