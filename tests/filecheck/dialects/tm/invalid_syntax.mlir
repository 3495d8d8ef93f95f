// RUN: tm-opt %s --split-input-file --parsing-diagnostics | filecheck %s
//
// Task mappings and buffer scopes are checked while parsing: these are parse errors,
// reported at the offending text (the message is the last line of each diagnostic).

// CHECK: spatial(0): every extent must be >= 1
func.func @zero_extent_attr() attributes {m = #tm.map<spatial(0)>} {
  func.return
}

// -----

// CHECK: cannot compose mappings of different ranks: spatial(4) * repeat(2, 2)
func.func @mixed_ranks_attr() attributes {m = #tm.map<spatial(4) * repeat(2, 2)>} {
  func.return
}

// -----

// CHECK: Expected one of 'repeat', 'spatial' in a task mapping
func.func @empty_attr() attributes {m = #tm.map<>} {
  func.return
}

// -----

tm.kernel @zero_extent(%x: memref<4xf32>) grid(1) block(32) {
  %t = tm.thread_id
  // CHECK: spatial(0): every extent must be >= 1
  tm.for_task (%i) in spatial(0) on %t {
  }
}

// -----

tm.kernel @negative_extent(%x: memref<4xf32>) grid(1) block(32) {
  // CHECK: repeat(-2): every extent must be >= 1
  tm.for_task (%i) in repeat(-2) {
  }
}

// -----

tm.kernel @no_dimensions(%x: memref<4xf32>) grid(1) block(32) {
  %t = tm.thread_id
  // CHECK: spatial() needs at least one dimension
  tm.for_task (%i) in spatial() on %t {
  }
}

// -----

tm.kernel @mixed_ranks(%x: memref<4x4xf32>) grid(1) block(32) {
  %t = tm.thread_id
  // CHECK: cannot compose mappings of different ranks: spatial(4) * repeat(2, 2)
  tm.for_task (%i, %j) in spatial(4) * repeat(2, 2) on %t {
  }
}

// -----

tm.kernel @unknown_atom(%x: memref<4xf32>) grid(1) block(32) {
  %t = tm.thread_id
  // CHECK: Expected one of 'repeat', 'spatial' in a task mapping
  tm.for_task (%i) in tile(4) on %t {
  }
}

// -----

// CHECK: spatial(4, 8, ranks=[0, 0]): ranks must be a permutation of [0, 1], one per dimension
func.func @ranks_not_a_permutation() attributes {m = #tm.map<spatial(4, 8, ranks=[0, 0])>} {
  func.return
}

// -----

// CHECK: repeat(4, ranks=[1]): ranks must be a permutation of [0], one per dimension
func.func @ranks_out_of_range() attributes {m = #tm.map<repeat(4, ranks=[1])>} {
  func.return
}

// -----

// CHECK: spatial(4, unroll=[true]): unroll applies to repeat only
func.func @unroll_on_spatial() attributes {m = #tm.map<spatial(4, unroll=[true])>} {
  func.return
}

// -----

// CHECK: repeat(2, 64, unroll=[true]): unroll has 1 flags for 2 dimensions
func.func @unroll_length() attributes {m = #tm.map<repeat(2, 64, unroll=[true])>} {
  func.return
}

// -----

// CHECK: Expected boolean literal (unroll flag)
func.func @unroll_not_boolean() attributes {m = #tm.map<repeat(2, unroll=[1])>} {
  func.return
}

// -----

// CHECK: unknown keyword 'order' in repeat(...), expected ranks or unroll
func.func @unknown_keyword() attributes {m = #tm.map<repeat(2, order=[0])>} {
  func.return
}

// -----

// CHECK: 'ranks' given twice in spatial(...)
func.func @keyword_twice() attributes {m = #tm.map<spatial(2, ranks=[0], ranks=[0])>} {
  func.return
}

// -----

// CHECK: extents must come before keywords in a task mapping
func.func @extent_after_keyword() attributes {m = #tm.map<spatial(2, ranks=[0, 1], 3)>} {
  func.return
}

// -----

tm.kernel @for_task_bad_ranks(%x: memref<4x8xf32>) grid(1) block(32) {
  %t = tm.thread_id
  // CHECK: spatial(4, 8, ranks=[1, 2]): ranks must be a permutation of [0, 1], one per dimension
  tm.for_task (%i, %j) in spatial(4, 8, ranks=[1, 2]) on %t {
  }
}

// -----

func.func @unknown_scope() {
  // CHECK: Expected one of 'global', 'register', 'shared' (buffer scope)
  %s = tm.alloc local : memref<4xf32>
  func.return
}

// -----

// CHECK: Expected one of 'column_major', 'row_major' in a data layout
func.func @unknown_layout_atom() attributes {l = #tm.layout<swizzle(8, 8)>} {
  func.return
}

// -----

// CHECK: cannot compose layouts of different ranks: row_major(4) * column_major(2, 2)
func.func @layout_mixed_ranks() attributes {l = #tm.layout<row_major(4) * column_major(2, 2)>} {
  func.return
}

// -----

// CHECK: row_major(8, 0): every extent must be >= 1
func.func @layout_zero_extent() attributes {l = #tm.layout<row_major(8, 0)>} {
  func.return
}

// -----

tm.kernel @layout_negative_pad() grid(1) block(32) {
  // CHECK: row_major(8, 8, pad=-1): pad must be >= 0
  %a = tm.alloc shared layout(row_major(8, 8, pad=-1)) : memref<8x8xf32>
}

// -----

tm.kernel @layout_pad_not_last() grid(1) block(32) {
  // CHECK: 'pad=' may appear once, after the extents, in column_major(...)
  %a = tm.alloc shared layout(column_major(8, pad=1, 8)) : memref<8x8xf32>
}

// -----

tm.kernel @swizzle_overlapping_bits() grid(1) block(32) {
  // CHECK: swizzle(3, 3, 2): shift must be >= bits, so that the bits read [5, 8) do not overlap the bits changed [3, 6)
  %a = tm.alloc shared layout(row_major(8, 64) ^ swizzle(3, 3, 2)) : memref<8x64xf16>
}

// -----

// CHECK: row_major(4, 4) ^ swizzle(1, 4, 1): the size 16 must be a multiple of 2 ** (base + bits) = 32, so that every swizzled offset stays in the storage
func.func @swizzle_outside_storage() attributes {l = #tm.layout<row_major(4, 4) ^ swizzle(1, 4, 1)>} {
  func.return
}

// -----

tm.kernel @swizzle_no_bits() grid(1) block(32) {
  // CHECK: swizzle(0, 3, 3): bits must be >= 1
  %a = tm.alloc shared layout(row_major(8, 64) ^ swizzle(0, 3, 3)) : memref<8x64xf16>
}

// -----

tm.kernel @swizzle_two_arguments() grid(1) block(32) {
  // CHECK: swizzle(...) takes 3 integers (bits, base, shift), got (3, 3)
  %a = tm.alloc shared layout(row_major(8, 64) ^ swizzle(3, 3)) : memref<8x64xf16>
}

// -----

tm.kernel @swizzle_misspelt() grid(1) block(32) {
  // CHECK: Expected 'swizzle' after '^' in a data layout
  %a = tm.alloc shared layout(row_major(8, 64) ^ swizle(3, 3, 3)) : memref<8x64xf16>
}

// -----

tm.kernel @swizzle_inside_composition() grid(1) block(32) {
  // CHECK: a swizzle applies to the whole layout: write '^ swizzle(...)' after the last atom
  %a = tm.alloc shared layout(row_major(1, 8) ^ swizzle(2, 0, 2) * row_major(8, 8)) : memref<8x64xf16>
}

// -----

tm.kernel @shuffle_unknown_mode(%x: memref<32xf32>) grid(1) block(32) {
  %t = tm.thread_id
  %v = tm.load %x[%t] : memref<32xf32>
  // CHECK: Expected one of 'down', 'idx', 'up', 'xor' (shuffle mode)
  %s = tm.shuffle bfly %v, 1 : f32
}

// -----

tm.kernel @shuffle_dynamic_offset(%x: memref<32xf32>) grid(1) block(32) {
  %t = tm.thread_id
  %v = tm.load %x[%t] : memref<32xf32>
  // CHECK: Expected integer literal
  %s = tm.shuffle idx %v, %t : f32
}

// -----

// CHECK: expected the vector width as x2, x4 or x8, got 'four'
tm.kernel @vector_width_word(%x: memref<8x16xf32>) grid(1) block(32) {
  %c0 = arith.constant 0 : index
  %v:4 = tm.load_vector four %x[%c0, %c0] : memref<8x16xf32>
}

// -----

// CHECK: Operation has 4 results, but was given 2 to bind.
tm.kernel @vector_result_count(%x: memref<8x16xf32>) grid(1) block(32) {
  %c0 = arith.constant 0 : index
  %a, %b = tm.load_vector x4 %x[%c0, %c0] : memref<8x16xf32>
}
