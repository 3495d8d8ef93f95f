// RUN: tm-opt %s --split-input-file --parsing-diagnostics | filecheck %s
//
// Task mappings and buffer scopes are checked while parsing: these are parse errors,
// reported at the offending text (the message is the last line of each diagnostic).

// CHECK: spatial(0{{,?}}): every extent must be >= 1
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
  // CHECK: spatial(0{{,?}}): every extent must be >= 1
  tm.for_task (%i) in spatial(0) on %t {
  }
}

// -----

tm.kernel @negative_extent(%x: memref<4xf32>) grid(1) block(32) {
  // CHECK: repeat(-2{{,?}}): every extent must be >= 1
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

func.func @unknown_scope() {
  // CHECK: Expected one of 'global', 'register', 'shared' (buffer scope)
  %s = tm.alloc local : memref<4xf32>
  func.return
}
