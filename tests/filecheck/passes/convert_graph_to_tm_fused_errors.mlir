// RUN: tm-opt %s --split-input-file -p convert-graph-to-tm --verify-diagnostics | filecheck %s
//
// Hand-written graph.fused groups that cannot be one kernel: one line each.

// CHECK: convert-graph-to-tm: 'graph.fused': a fusion group has one anchor, got 2: 'graph.matmul', 'graph.matmul'
func.func @two_anchors(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %y = graph.fused -> tensor<4x8xf32> {
    %a = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %b = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    graph.yield %b : tensor<4x8xf32>
  }
  func.return %y : tensor<4x8xf32>
}

// -----

// CHECK: convert-graph-to-tm: 'graph.matmul': 'graph.add' cannot be in the epilogue of 'graph.matmul': only elementwise ops on the unbroadcast result, transposes and reshapes can
func.func @broadcast_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x1xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = graph.fused -> tensor<4x8xf32> {
    %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x1xf32>) -> tensor<4x1xf32>
    %a = graph.add %m, %z : (tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    graph.yield %a : tensor<4x8xf32>
  }
  func.return %y : tensor<4x8xf32>
}

// -----

// CHECK: convert-graph-to-tm: 'graph.matmul': a prologue value of 'graph.matmul' cannot leave its group (only the anchor's results and its epilogue can)
func.func @prologue_yielded(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %r, %y = graph.fused -> tensor<4x8xf32>, tensor<4x8xf32> {
    %a = graph.relu %x : tensor<4x8xf32>
    %m = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    graph.yield %a, %m : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.return %r, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// CHECK: convert-graph-to-tm: 'graph.fused': a fusion group cannot end in 'graph.reshape' (it has no kernel)
func.func @reshape_sink(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %y = graph.fused -> tensor<32xf32> {
    %a = graph.relu %x : tensor<4x8xf32>
    %b = graph.reshape %a : tensor<4x8xf32> -> tensor<32xf32>
    graph.yield %b : tensor<32xf32>
  }
  func.return %y : tensor<32xf32>
}

// -----

// CHECK: convert-graph-to-tm: 'graph.matmul': 'graph.add' reads the result of 'graph.matmul' at two different coordinates; it cannot be in its epilogue
func.func @two_maps(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = graph.fused -> tensor<4x4xf32> {
    %m = graph.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %t = graph.transpose %m {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    %a = graph.add %m, %t : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    graph.yield %a : tensor<4x4xf32>
  }
  func.return %y : tensor<4x4xf32>
}
