// RUN: tm-opt %s --split-input-file --parsing-diagnostics | filecheck %s
//
// Errors the tmgpu parser reports (the message is the last line of each diagnostic).

tmgpu.kernel @unknown_dimension() block(4) {
  // CHECK: Expected one of 'x', 'y', 'z' (dimension)
  %t = tmgpu.thread_id w
}

// -----

func.func @launch_of_string() {
  // CHECK: expected a kernel symbol like @name
  tmgpu.launch "k"() grid(1) block(4)
  func.return
}

// -----

tmgpu.kernel @k() block(4) {
  tmgpu.barrier
}
func.func @negative_grid() {
  // CHECK: Expected integer literal
  tmgpu.launch @k() grid(-1) block(4)
  func.return
}
