// RUN: tm-opt %s --split-input-file -p convert-tm-to-gpu | filecheck %s
//
// convert-tm-to-gpu: tm kernels, ids, buffers, barriers, accesses and launches to the
// tmgpu level (memref.load/store, guards as scf.if).

// A guarded load is an scf.if that yields the element in range and 0 otherwise.
// CHECK-LABEL: tmgpu.kernel @guarded_load(%x: memref<30x20xf32>, %y: memref<30x20xf32>) block(64) {
// CHECK-NEXT:    %bid = tmgpu.block_id x
// CHECK-NEXT:    %tid = tmgpu.thread_id x
// CHECK-NEXT:    %[[ROWS:[0-9]+]] = arith.constant 30 : index
// CHECK-NEXT:    %[[IN:[0-9]+]] = arith.cmpi ult, %bid, %[[ROWS]] : index
// CHECK-NEXT:    %v = scf.if %[[IN]] -> (f32) {
// CHECK-NEXT:      %[[L:[0-9]+]] = memref.load %x[%bid, %tid] : memref<30x20xf32>
// CHECK-NEXT:      scf.yield %[[L]] : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[Z:[0-9]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      scf.yield %[[Z]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.store %v, %y[%bid, %tid] : memref<30x20xf32>
// CHECK-NEXT:  }
tm.kernel @guarded_load(%x: memref<30x20xf32>, %y: memref<30x20xf32>) grid(4) block(64) {
  %bid = tm.block_id
  %tid = tm.thread_id
  %v = tm.load %x[%bid, %tid] guard [0] : memref<30x20xf32>
  tm.store %v, %y[%bid, %tid] : memref<30x20xf32>
}

// -----

// Several guarded dimensions are and-ed; the element type of the 0 follows the buffer.
// CHECK-LABEL: tmgpu.kernel @guarded_load_2d
// CHECK:         %[[ROWS:[0-9]+]] = arith.constant 30 : index
// CHECK-NEXT:    %[[IN0:[0-9]+]] = arith.cmpi ult, %bid, %[[ROWS]] : index
// CHECK-NEXT:    %[[COLS:[0-9]+]] = arith.constant 20 : index
// CHECK-NEXT:    %[[IN1:[0-9]+]] = arith.cmpi ult, %tid, %[[COLS]] : index
// CHECK-NEXT:    %[[IN:[0-9]+]] = arith.andi %[[IN0]], %[[IN1]] : i1
// CHECK-NEXT:    %v = scf.if %[[IN]] -> (i32) {
// CHECK-NEXT:      %[[L:[0-9]+]] = memref.load %x[%bid, %tid] : memref<30x20xi32>
// CHECK-NEXT:      scf.yield %[[L]] : i32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[Z:[0-9]+]] = arith.constant 0 : i32
// CHECK-NEXT:      scf.yield %[[Z]] : i32
// CHECK-NEXT:    }
tm.kernel @guarded_load_2d(%x: memref<30x20xi32>) grid(4) block(64) {
  %bid = tm.block_id
  %tid = tm.thread_id
  %v = tm.load %x[%bid, %tid] guard [0, 1] : memref<30x20xi32>
}

// -----

// A guarded store is an scf.if without else; only the guarded dimension is checked.
// CHECK-LABEL: tmgpu.kernel @guarded_store
// CHECK:         %c = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[COLS:[0-9]+]] = arith.constant 20 : index
// CHECK-NEXT:    %[[IN:[0-9]+]] = arith.cmpi ult, %tid, %[[COLS]] : index
// CHECK-NEXT:    scf.if %[[IN]] {
// CHECK-NEXT:      memref.store %c, %y[%bid, %tid] : memref<30x20xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tm.kernel @guarded_store(%y: memref<30x20xf32>) grid(4) block(64) {
  %bid = tm.block_id
  %tid = tm.thread_id
  %c = arith.constant 1.0 : f32
  tm.store %c, %y[%bid, %tid] guard [1] : memref<30x20xf32>
}

// -----

// Unguarded accesses are plain memref ops.
// CHECK-LABEL: tmgpu.kernel @unguarded
// CHECK-NEXT:    %tid = tmgpu.thread_id x
// CHECK-NEXT:    %v = memref.load %x[%tid] : memref<64xf32>
// CHECK-NEXT:    memref.store %v, %x[%tid] : memref<64xf32>
// CHECK-NEXT:  }
tm.kernel @unguarded(%x: memref<64xf32>) grid(1) block(64) {
  %tid = tm.thread_id
  %v = tm.load %x[%tid] : memref<64xf32>
  tm.store %v, %x[%tid] : memref<64xf32>
}

// -----

// Kernel attributes are kept; shared and register buffers become shared/local arrays,
// tm.barrier a tmgpu.barrier.
// CHECK-LABEL: tmgpu.kernel @buffers(%x: memref<64xf32>) block(64) attributes {tm.template = "test", tm.params = {block = 64 : i64}} {
// CHECK-NEXT:    %tid = tmgpu.thread_id x
// CHECK-NEXT:    %smem = tmgpu.shared_alloc : memref<64xf32>
// CHECK-NEXT:    %acc = tmgpu.local_alloc : memref<2x2xf32>
// CHECK-NEXT:    %v = memref.load %x[%tid] : memref<64xf32>
// CHECK-NEXT:    memref.store %v, %smem[%tid] : memref<64xf32>
// CHECK-NEXT:    tmgpu.barrier
// CHECK-NEXT:  }
tm.kernel @buffers(%x: memref<64xf32>) grid(1) block(64) attributes {tm.template = "test", tm.params = {block = 64 : i64}} {
  %tid = tm.thread_id
  %smem = tm.alloc shared : memref<64xf32>
  %acc = tm.alloc register : memref<2x2xf32>
  %v = tm.load %x[%tid] : memref<64xf32>
  tm.store %v, %smem[%tid] : memref<64xf32>
  tm.barrier
}

// -----

// Warp shuffles move one to one, with their mode, offset and width.
// CHECK-LABEL: tmgpu.kernel @shuffles(%x: memref<64xf32>) block(64) {
// CHECK-NEXT:    %tid = tmgpu.thread_id x
// CHECK-NEXT:    %v = memref.load %x[%tid] : memref<64xf32>
// CHECK-NEXT:    %s = tmgpu.shuffle xor %v, 16 : f32
// CHECK-NEXT:    %d = tmgpu.shuffle down %s, 2 width(4) : f32
// CHECK-NEXT:    %u = tmgpu.shuffle up %d, 1 : f32
// CHECK-NEXT:    %i = tmgpu.shuffle idx %u, 0 width(16) : f32
// CHECK-NEXT:  }
tm.kernel @shuffles(%x: memref<64xf32>) grid(1) block(64) {
  %tid = tm.thread_id
  %v = tm.load %x[%tid] : memref<64xf32>
  %s = tm.shuffle xor %v, 16 : f32
  %d = tm.shuffle down %s, 2 width(4) : f32
  %u = tm.shuffle up %d, 1 : f32
  %i = tm.shuffle idx %u, 0 width(16) : f32
}

// -----

// Host: global buffers become device allocations, weights tmgpu.weight, and each launch
// takes the grid and block of its kernel.
// CHECK-LABEL: func.func @host(%x: memref<64xf32>, %y: memref<64xf32>) {
// CHECK-NEXT:    %tmp = tmgpu.alloc : memref<64xf32>
// CHECK-NEXT:    %w = tmgpu.weight "fc.weight" : memref<64xf32>
// CHECK-NEXT:    tmgpu.launch @first(%x, %w, %tmp) grid(4) block(16) : memref<64xf32>, memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    tmgpu.launch @second(%tmp, %y) grid(1) block(64) : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    func.return
tm.kernel @first(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>) grid(4) block(16) {
  tm.barrier
}
tm.kernel @second(%a: memref<64xf32>, %b: memref<64xf32>) grid(1) block(64) {
  tm.barrier
}
func.func @host(%x: memref<64xf32>, %y: memref<64xf32>) {
  %tmp = tm.alloc global : memref<64xf32>
  %w = tm.weight "fc.weight" : memref<64xf32>
  tm.launch @first(%x, %w, %tmp) : memref<64xf32>, memref<64xf32>, memref<64xf32>
  tm.launch @second(%tmp, %y) : memref<64xf32>, memref<64xf32>
  func.return
}

// -----

// A vector load becomes tmgpu.load_vector; its guard an scf.if that yields the vector's
// elements in range and zeros otherwise.
// CHECK-LABEL: tmgpu.kernel @load_vector(%x: memref<30x16xf32>, %y: memref<30xf32>) block(64) {
// CHECK-NEXT:    %tid = tmgpu.thread_id x
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %p, %p_1 = tmgpu.load_vector x2 %x[%tid, %c4] : memref<30x16xf32>
// CHECK-NEXT:    %[[ROWS:[0-9]+]] = arith.constant 30 : index
// CHECK-NEXT:    %[[IN:[0-9]+]] = arith.cmpi ult, %tid, %[[ROWS]] : index
// CHECK-NEXT:    %w, %w_1, %w_2, %w_3 = scf.if %[[IN]] -> (f32, f32, f32, f32) {
// CHECK-NEXT:      %w_4, %w_5, %w_6, %w_7 = tmgpu.load_vector x4 %x[%tid, %c4] : memref<30x16xf32>
// CHECK-NEXT:      scf.yield %w_4, %w_5, %w_6, %w_7 : f32, f32, f32, f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[Z:[0-9]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      scf.yield %[[Z]], %[[Z]], %[[Z]], %[[Z]] : f32, f32, f32, f32
// CHECK-NEXT:    }
tm.kernel @load_vector(%x: memref<30x16xf32>, %y: memref<30xf32>) grid(1) block(64) {
  %tid = tm.thread_id
  %c4 = arith.constant 4 : index
  %p:2 = tm.load_vector x2 %x[%tid, %c4] : memref<30x16xf32>
  %w:4 = tm.load_vector x4 %x[%tid, %c4] guard [0] : memref<30x16xf32>
  tm.store %w#3, %y[%tid] guard [0] : memref<30xf32>
}
