// RUN: tm-opt %s --split-input-file --allow-unregistered-dialect -p arith-simplify | filecheck %s
//
// arith-simplify folds integer ops of constants (with C's int semantics), ops decided by
// value ranges, logic with constants, and duplicate remui; constants leave loops.

// CHECK-LABEL: tmgpu.kernel @constants
// CHECK-NEXT:    %[[ZERO:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[FALSE:[0-9]+]] = arith.constant false
// CHECK-NEXT:    %[[Q:[0-9]+]] = arith.constant -2 : i32
// CHECK-NEXT:    %[[R:[0-9]+]] = arith.constant -1 : i32
// CHECK-NEXT:    %[[C65536:[0-9]+]] = arith.constant 65536 : index
// CHECK-NEXT:    %[[BIG:big]] = arith.muli %[[C65536]], %[[C65536]] : index
// CHECK-NEXT:    arith.constant 1.0
// CHECK-NEXT:    memref.store {{.*}}[%[[ZERO]]]
// CHECK-NEXT:    "test.use"(%[[FALSE]], %[[Q]], %[[R]], %[[BIG]])
tmgpu.kernel @constants(%out: memref<4xf32>) block(32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %rem = arith.remui %c0, %c2 : index
  %lt = arith.cmpi ult, %c1, %c1 : index
  %m5 = arith.constant -5 : i32
  %two = arith.constant 2 : i32
  %q = arith.divsi %m5, %two : i32
  %r = arith.remsi %m5, %two : i32
  // 65536 * 65536 does not fit the C int that index arithmetic is emitted as: kept.
  %c65536 = arith.constant 65536 : index
  %big = arith.muli %c65536, %c65536 : index
  %f = arith.constant 1.0 : f32
  memref.store %f, %out[%rem] : memref<4xf32>
  "test.use"(%lt, %q, %r, %big) : (i1, i32, i32, index) -> ()
}

// -----

// Ranges: the thread id is below the block size (32), a loop index below its bound.
// CHECK-LABEL: tmgpu.kernel @ranges
// CHECK:         %tid = tmgpu.thread_id x
// CHECK:         %[[C8:[0-9]+]] = arith.constant 8 : index
// CHECK-NEXT:    %hi = arith.divui %tid, %[[C8]] : index
// CHECK:         %[[C27:[0-9]+]] = arith.constant 27 : index
// CHECK-NEXT:    scf.for %i =
// CHECK-NEXT:      %[[SCALED:scaled]] = arith.muli %hi, %[[C8]] : index
// CHECK-NEXT:      %[[SUM:sum]] = arith.addi %[[SCALED]], %i : index
// CHECK-NEXT:      %[[IN:[0-9]+]] = arith.constant true
// CHECK-NEXT:      %edge = arith.cmpi ult, %[[SUM]], %[[C27]] : index
// CHECK-NEXT:      "test.keep"(%edge) : (i1) -> ()
// CHECK-NEXT:      %[[NONE:[0-9]+]] = arith.constant false
// CHECK-NEXT:      %[[IS4:[0-9]+]] = arith.constant false
// CHECK-NEXT:      %[[ZERO:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:      memref.store %{{.*}}, %out[%tid, %hi, %i]
// CHECK-NEXT:      "test.use"(%[[ZERO]], %[[IN]], %[[NONE]], %[[IS4]]) : (index, i1, i1, i1) -> ()
// CHECK:         %tid_in_warp = arith.remui %tid, %[[C8]] : index
tmgpu.kernel @ranges(%out: memref<32x4x4xf32>) block(32) {
  %tid = tmgpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %lane = arith.remui %tid, %c32 : index
  %hi = arith.divui %lane, %c8 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %i_mod = arith.remui %i, %c4 : index
    // hi * 8 + i is at most 3 * 8 + 3 = 27 < 32, so the guard is true ...
    %scaled = arith.muli %hi, %c8 : index
    %sum = arith.addi %scaled, %i : index
    %in = arith.cmpi ult, %sum, %c32 : index
    // ... but it reaches 27 (hi = 3, i = 3): `< 27` stays.
    %c27 = arith.constant 27 : index
    %edge = arith.cmpi ult, %sum, %c27 : index
    "test.keep"(%edge) : (i1) -> ()
    %none = arith.cmpi uge, %i, %c4 : index
    %is4 = arith.cmpi eq, %i, %c4 : index
    %zero = arith.divui %i, %c8 : index
    memref.store %f, %out[%lane, %hi, %i_mod] : memref<32x4x4xf32>
    "test.use"(%zero, %in, %none, %is4) : (index, i1, i1, i1) -> ()
  }
  // Not decided: tid % 8 may be anything below 8.
  %tid_in_warp = arith.remui %tid, %c8 : index
  "test.use"(%tid_in_warp) : (index) -> ()
}

// -----

// Logic with constants and selects on constant conditions.
// CHECK-LABEL: tmgpu.kernel @logic
// CHECK:         %tid = tmgpu.thread_id x
// CHECK-NEXT:    %[[C16:[0-9]+]] = arith.constant 16 : index
// CHECK-NEXT:    %lt = arith.cmpi ult, %tid, %[[C16]] : index
// CHECK-NEXT:    %[[FALSE:[0-9]+]] = arith.constant false
// CHECK-NEXT:    "test.use"(%lt, %[[FALSE]], %tid) : (i1, i1, index) -> ()
tmgpu.kernel @logic(%out: memref<4xf32>) block(32) {
  %tid = tmgpu.thread_id x
  %c16 = arith.constant 16 : index
  %true = arith.constant true
  %false = arith.constant false
  %lt = arith.cmpi ult, %tid, %c16 : index
  %and_true = arith.andi %lt, %true : i1
  %and_false = arith.andi %false, %lt : i1
  %or_false = arith.ori %and_true, %false : i1
  %c7 = arith.constant 7 : index
  %picked = arith.select %true, %tid, %c7 : index
  "test.use"(%or_false, %and_false, %picked) : (i1, i1, index) -> ()
}

// -----

// Bit operations on index (a swizzled layout's `o ^ ((o >> shift) & mask)`): of constants
// they fold (a shift by 32 or more is undefined in C: kept); `x ^ 0`, `x >> 0`, `x << 0`
// are `x`, `x & 0` is 0.
// CHECK-LABEL: tmgpu.kernel @bits
// CHECK:         %tid = tmgpu.thread_id x
// CHECK-NEXT:    %[[C1:[0-9]+]] = arith.constant 1 : index
// CHECK-NEXT:    %[[C32:[0-9]+]] = arith.constant 32 : index
// CHECK-NEXT:    %[[FOLDED:[0-9]+]] = arith.constant 52 : index
// CHECK-NEXT:    %wide = arith.shli %[[C1]], %[[C32]] : index
// CHECK-NEXT:    %[[ZERO:[0-9]+]] = arith.constant 0 : index
// CHECK-NEXT:    "test.use"(%[[FOLDED]], %wide, %tid, %tid, %tid, %[[ZERO]]) : (index, index, index, index, index, index) -> ()
tmgpu.kernel @bits(%out: memref<4xf32>) block(32) {
  %tid = tmgpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %c32 = arith.constant 32 : index
  %c40 = arith.constant 40 : index
  %shifted = arith.shrui %c40, %c3 : index
  %masked = arith.andi %shifted, %c6 : index
  %one = arith.shli %c1, %c0 : index
  %eight = arith.shli %one, %c3 : index
  // 40 ^ ((40 >> 3) & 6) = 44, plus (1 << 0) << 3 = 52
  %swizzled = arith.xori %c40, %masked : index
  %plus = arith.addi %swizzled, %eight : index
  %wide = arith.shli %c1, %c32 : index
  %x0 = arith.xori %tid, %c0 : index
  %r0 = arith.shrui %tid, %c0 : index
  %l0 = arith.shli %tid, %c0 : index
  %a0 = arith.andi %tid, %c0 : index
  "test.use"(%plus, %wide, %x0, %r0, %l0, %a0) : (index, index, index, index, index, index) -> ()
}

// -----

// Identical remainders merge when the first dominates (also with equal constants that are
// different SSA values), not across sibling regions; unused ones go.
// CHECK-LABEL: tmgpu.kernel @remainders
// CHECK:         %a = arith.remui %x, %{{[0-9]+}} : index
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      "test.use"(%a) : (index) -> ()
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      %c = arith.remui %y, %{{[0-9]+}} : index
// CHECK-NEXT:      "test.use"(%c) : (index) -> ()
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      %d = arith.remui %y, %{{[0-9]+}} : index
// CHECK-NEXT:      "test.use"(%d) : (index) -> ()
// CHECK-NEXT:    }
// CHECK-NEXT:    "test.use"(%a) : (index) -> ()
// CHECK-NEXT:  }
tmgpu.kernel @remainders(%out: memref<4xf32>) block(32) {
  %x = tmgpu.block_id x
  %y = tmgpu.block_id y
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c8_again = arith.constant 8 : index
  %a = arith.remui %x, %c8 : index
  %unused = arith.remui %y, %c4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %b = arith.remui %x, %c8_again : index
    "test.use"(%b) : (index) -> ()
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %c = arith.remui %y, %c8 : index
    "test.use"(%c) : (index) -> ()
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %d = arith.remui %y, %c8 : index
    "test.use"(%d) : (index) -> ()
  }
  %e = arith.remui %x, %c8 : index
  "test.use"(%e) : (index) -> ()
}

// -----

// What canonicalize did before this pass took its place: a one-trip loop is inlined with
// its induction variable bound to the lower bound, a zero-trip loop and an untaken branch
// go, units and zeros fold, a constant operand of a commutative op goes right, and unused
// pure ops are erased.
// CHECK-LABEL: tmgpu.kernel @control
// CHECK-NEXT:    %tid = tmgpu.thread_id x
// CHECK-NEXT:    %[[C4:[0-9]+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[F:[0-9]+]] = arith.constant 1.0
// CHECK-NEXT:    %scaled = arith.muli %tid, %[[C4]] : index
// CHECK-NEXT:    memref.store %[[F]], %out[%scaled] : memref<128xf32>
// CHECK-NEXT:    memref.store %[[F]], %out[%tid] : memref<128xf32>
// CHECK-NEXT:    %[[C3:[0-9]+]] = arith.constant 3 : index
// CHECK-NEXT:    memref.store %[[F]], %out[%[[C3]]] : memref<128xf32>
// CHECK-NEXT:  }
tmgpu.kernel @control(%out: memref<128xf32>) block(32) {
  %tid = tmgpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  %true = arith.constant true
  %false = arith.constant false
  scf.for %once = %c3 to %c4 step %c1 {
    %scaled = arith.muli %c4, %tid : index
    %dead = arith.addi %scaled, %once : index
    memref.store %f, %out[%scaled] : memref<128xf32>
  }
  scf.for %never = %c4 to %c3 step %c1 {
    memref.store %f, %out[%never] : memref<128xf32>
  }
  scf.if %true {
    %plus0 = arith.addi %tid, %c0 : index
    %times1 = arith.muli %plus0, %c1 : index
    memref.store %f, %out[%times1] : memref<128xf32>
  }
  scf.if %false {
    memref.store %f, %out[%c0] : memref<128xf32>
  }
  %times0 = arith.muli %tid, %c0 : index
  %three = arith.addi %times0, %c3 : index
  memref.store %f, %out[%three] : memref<128xf32>
}
