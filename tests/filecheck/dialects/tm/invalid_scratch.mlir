// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// Scratch arguments and zeroed buffers: the kernel's kinds, and the buffers a launch may
// give them (one case per error; see invalid.mlir for the format).

// expected-error@+1 {{kernel @unknown_kind: unknown scratch kind 'temp', expected workspace or counters}}
tm.kernel @unknown_kind(%x: memref<4xf32>) grid(1) block(4) scratch(temp) {
}

// -----

// expected-error@+1 {{kernel @too_many: 2 scratch kinds for 1 arguments}}
tm.kernel @too_many(%x: memref<4xi32>) grid(1) block(4) scratch(counters, counters) {
}

// -----

// expected-error@+1 {{kernel @float_counters: counters must be i32, got memref<4xf32>}}
tm.kernel @float_counters(%x: memref<4xf32>) grid(1) block(4) scratch(counters) {
}

// -----

tm.kernel @register_zeroed(%x: memref<4xf32>) grid(1) block(4) {
  // expected-error@+1 {{only a global buffer can be zeroed, not a register one}}
  %r = tm.alloc register zeroed : memref<4xi32>
}

// -----

tm.kernel @k(%x: memref<4xf32>, %ws: memref<4xf32>, %c: memref<1xi32>) grid(1) block(4) scratch(workspace, counters) {
}
func.func @input_as_workspace(%x: memref<4xf32>) {
  %c = tm.alloc global zeroed : memref<1xi32>
  // expected-error@+1 {{launch of @k: argument 1 is workspace scratch: it takes a buffer of its own, a 'tm.alloc global'}}
  tm.launch @k(%x, %x, %c) : memref<4xf32>, memref<4xf32>, memref<1xi32>
  func.return
}

// -----

tm.kernel @k(%x: memref<4xf32>, %ws: memref<4xf32>, %c: memref<1xi32>) grid(1) block(4) scratch(workspace, counters) {
}
func.func @plain_counters(%x: memref<4xf32>) {
  %ws = tm.alloc global : memref<4xf32>
  %c = tm.alloc global : memref<1xi32>
  // expected-error@+1 {{launch of @k: argument 2 is counters scratch: it takes a buffer of its own, a 'tm.alloc global zeroed'}}
  tm.launch @k(%x, %ws, %c) : memref<4xf32>, memref<4xf32>, memref<1xi32>
  func.return
}

// -----

tm.kernel @k(%x: memref<1xi32>, %c: memref<1xi32>) grid(1) block(4) scratch(counters) {
}
func.func @counters_as_tensor() {
  %c = tm.alloc global zeroed : memref<1xi32>
  // expected-error@+1 {{launch of @k: argument 0 is a zeroed buffer, which only a kernel's counters scratch argument may take}}
  tm.launch @k(%c, %c) : memref<1xi32>, memref<1xi32>
  func.return
}

// -----

tm.kernel @k(%c: memref<1xi32>, %d: memref<1xi32>) grid(1) block(4) scratch(counters, counters) {
}
func.func @counters_twice() {
  %c = tm.alloc global zeroed : memref<1xi32>
  // expected-error@+1 {{launch of @k: its counters scratch buffer is passed twice}}
  tm.launch @k(%c, %c) : memref<1xi32>, memref<1xi32>
  func.return
}

// -----

tmgpu.kernel @g(%x: memref<4xf32>, %c: memref<1xi32>) block(4) scratch(counters) {
}
func.func @gpu_plain_counters(%x: memref<4xf32>) {
  %c = tmgpu.alloc : memref<1xi32>
  // expected-error@+1 {{launch of @g: argument 1 is counters scratch: it takes a buffer of its own, a 'tmgpu.alloc zeroed'}}
  tmgpu.launch @g(%x, %c) grid(1) block(4) : memref<4xf32>, memref<1xi32>
  func.return
}
