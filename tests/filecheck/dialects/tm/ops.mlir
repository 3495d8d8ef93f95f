// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// Every tm op and the #tm.map attribute print in their custom syntax and parse back to
// the same text.

// CHECK-LABEL: func.func @mapping_attribute()
// CHECK-SAME:    attributes {tm.mapping = #tm.map<spatial(4, 8) * repeat(2, 2)>, tm.single = #tm.map<repeat(3)>}
func.func @mapping_attribute() attributes {tm.mapping = #tm.map<spatial(4, 8) * repeat(2, 2)>, tm.single = #tm.map<repeat(3)>} {
  func.return
}

// Keywords round-trip; ranks at their default (row-major) are not printed.
// CHECK-LABEL: func.func @mapping_keywords()
// CHECK-SAME:    attributes {tm.cols = #tm.map<spatial(4, 8, ranks=[1, 0]) * repeat(2, 64, ranks=[1, 0], unroll=[true, false])>, tm.rows = #tm.map<spatial(4, 8)>}
func.func @mapping_keywords() attributes {tm.cols = #tm.map<spatial(4, 8, ranks = [1, 0]) * repeat(2, 64, ranks=[1,0], unroll=[true, false])>, tm.rows = #tm.map<spatial(4, 8, ranks=[0, 1])>} {
  func.return
}

// CHECK-LABEL: tm.kernel @for_task_keywords
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    tm.for_task (%i, %j, %k) in spatial(2, 4, 4, ranks=[2, 0, 1]) * repeat(1, 2, 3, unroll=[false, false, true]) on %tid {
// CHECK-NEXT:    }
tm.kernel @for_task_keywords(%x: memref<2x8x12xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i, %j, %k) in spatial(2, 4, 4, ranks=[2, 0, 1]) * repeat(1, 2, 3, unroll=[false, false, true]) on %tid {
  }
}

// CHECK-LABEL: tm.kernel @ids(%x: memref<64xf32>) grid(2) block(32) attributes {tm.template = "test"} {
// CHECK-NEXT:    %bid = tm.block_id
// CHECK-NEXT:    %tid = tm.thread_id
// CHECK-NEXT:    tm.barrier
// CHECK-NEXT:  }
tm.kernel @ids(%x: memref<64xf32>) grid(2) block(32) attributes {tm.template = "test"} {
  %bid = tm.block_id
  %tid = tm.thread_id
  tm.barrier
}

// CHECK-LABEL: tm.kernel @for_task_on_worker
// CHECK:         %tid = tm.thread_id
// CHECK-NEXT:    tm.for_task (%i, %j) in spatial(4, 8) * repeat(2, 2) on %tid {
// CHECK-NEXT:      %v = tm.load %x[%i, %j] : memref<8x16xf32>
// CHECK-NEXT:      tm.store %v, %y[%i, %j] : memref<8x16xf32>
// CHECK-NEXT:    }
tm.kernel @for_task_on_worker(%x: memref<8x16xf32>, %y: memref<8x16xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i, %j) in spatial(4, 8) * repeat(2, 2) on %tid {
    %v = tm.load %x[%i, %j] : memref<8x16xf32>
    tm.store %v, %y[%i, %j] : memref<8x16xf32>
  }
}

// A mapping with one worker (only repeat atoms) takes no worker.
// CHECK-LABEL: tm.kernel @for_task_without_worker
// CHECK-NEXT:    tm.for_task (%i, %j) in repeat(2, 3) {
// CHECK-NEXT:      %v = tm.load %x[%i, %j] : memref<2x3xf32>
// CHECK-NEXT:    }
tm.kernel @for_task_without_worker(%x: memref<2x3xf32>) grid(1) block(1) {
  tm.for_task (%i, %j) in repeat(2, 3) {
    %v = tm.load %x[%i, %j] : memref<2x3xf32>
  }
}

// CHECK-LABEL: tm.kernel @guards
// CHECK:         %a = tm.load %x[%i, %j] guard [0] : memref<30x20xf32>
// CHECK-NEXT:    %b = tm.load %x[%i, %j] guard [0, 1] : memref<30x20xf32>
// CHECK-NEXT:    %c = tm.load %x[%i, %j] : memref<30x20xf32>
// CHECK-NEXT:    tm.store %a, %y[%i, %j] guard [1] : memref<30x20xf32>
// CHECK-NEXT:    tm.store %b, %y[%i, %j] guard [1, 0] : memref<30x20xf32>
// CHECK-NEXT:    tm.store %c, %y[%i, %j] : memref<30x20xf32>
tm.kernel @guards(%x: memref<30x20xf32>, %y: memref<30x20xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i, %j) in spatial(4, 8) on %tid {
    %a = tm.load %x[%i, %j] guard [0] : memref<30x20xf32>
    %b = tm.load %x[%i, %j] guard [0, 1] : memref<30x20xf32>
    %c = tm.load %x[%i, %j] : memref<30x20xf32>
    tm.store %a, %y[%i, %j] guard [1] : memref<30x20xf32>
    tm.store %b, %y[%i, %j] guard [1, 0] : memref<30x20xf32>
    tm.store %c, %y[%i, %j] : memref<30x20xf32>
  }
}

// Warp shuffles: the mode, the lane offset (or mask, or source lane) and, when not the
// whole warp, the segment width.
// CHECK-LABEL: tm.kernel @shuffles
// CHECK:         %xor = tm.shuffle xor %v, 16 : f32
// CHECK-NEXT:    %down = tm.shuffle down %v, 1 width(16) : f32
// CHECK-NEXT:    %up = tm.shuffle up %v, 2 {tag} : f32
// CHECK-NEXT:    %idx = tm.shuffle idx %tid, 0 width(8) : index
// CHECK-NEXT:    %i = tm.shuffle xor %n, 31 : i32
// CHECK-NEXT:    %l = tm.shuffle xor %w, 0 width(1) : i64
tm.kernel @shuffles(%x: memref<64xf32>, %y: memref<64xi32>, %z: memref<64xi64>) grid(1) block(64) {
  %tid = tm.thread_id
  %v = tm.load %x[%tid] : memref<64xf32>
  %n = tm.load %y[%tid] : memref<64xi32>
  %w = tm.load %z[%tid] : memref<64xi64>
  %xor = tm.shuffle xor %v, 16 : f32
  %down = tm.shuffle down %v, 1 width(16) : f32
  %up = tm.shuffle up %v, 2 {tag} : f32
  %idx = tm.shuffle idx %tid, 0 width(8) : index
  %i = tm.shuffle xor %n, 31 : i32
  %l = tm.shuffle xor %w, 0 width(1) : i64
}

// CHECK-LABEL: tm.kernel @kernel_allocs
// CHECK-NEXT:    %smem = tm.alloc shared : memref<8x64xf32>
// CHECK-NEXT:    %acc = tm.alloc register : memref<4x4xf32>
tm.kernel @kernel_allocs() grid(1) block(32) {
  %smem = tm.alloc shared : memref<8x64xf32>
  %acc = tm.alloc register : memref<4x4xf32>
}

// CHECK-LABEL: func.func @host(%x: memref<64xf32>, %y: memref<64xf32>) {
// CHECK-NEXT:    %tmp = tm.alloc global : memref<64xf32>
// CHECK-NEXT:    %w = tm.weight "fc.weight" : memref<64xf32>
// CHECK-NEXT:    tm.launch @ids(%x) : memref<64xf32>
// CHECK-NEXT:    tm.launch @copy(%x, %tmp) : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    tm.launch @copy(%w, %y) : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    func.return
tm.kernel @copy(%x: memref<64xf32>, %y: memref<64xf32>) grid(2) block(32) {
  tm.barrier
}
func.func @host(%x: memref<64xf32>, %y: memref<64xf32>) {
  %tmp = tm.alloc global : memref<64xf32>
  %w = tm.weight "fc.weight" : memref<64xf32>
  tm.launch @ids(%x) : memref<64xf32>
  tm.launch @copy(%x, %tmp) : memref<64xf32>, memref<64xf32>
  tm.launch @copy(%w, %y) : memref<64xf32>, memref<64xf32>
  func.return
}

// A vector load: one result per element (x4 f32: 16 bytes; x8 f16: 16 bytes), guarded on a
// dimension before the last.
// CHECK-LABEL: tm.kernel @load_vector
// CHECK:         %w, %w_1, %w_2, %w_3 = tm.load_vector x4 %x[%tid, %c4] guard [0] : memref<8x16xf32>
// CHECK-NEXT:    %h, %h_1, %h_2, %h_3, %h_4, %h_5, %h_6, %h_7 = tm.load_vector x8 %g[%c0, %c0] : memref<3x8xf16>
// CHECK-NEXT:    %p, %q = tm.load_vector x2 %x[%tid, %c4] guard [0] {tm.note} : memref<8x16xf32>
tm.kernel @load_vector(%x: memref<8x16xf32>, %g: memref<3x8xf16>, %y: memref<8xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %w:4 = tm.load_vector x4 %x[%tid, %c4] guard [0] : memref<8x16xf32>
  %h:8 = tm.load_vector x8 %g[%c0, %c0] : memref<3x8xf16>
  %p, %q = tm.load_vector x2 %x[%tid, %c4] guard [0] {tm.note} : memref<8x16xf32>
  tm.store %w#3, %y[%tid] guard [0] : memref<8xf32>
}
