// RUN: tm-opt %s --split-input-file -p convert-graph-to-tm --verify-diagnostics
//
// Hand-written graph.fused groups that cannot be one kernel: one line each.

func.func @two_anchors(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{convert-graph-to-tm: 'graph.fused': a fusion group has one anchor, got 2: 'graph.matmul', 'graph.matmul'}}
  %y = graph.fused -> tensor<4x8xf32> {
    %a = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %b = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    graph.yield %b : tensor<4x8xf32>
  }
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @broadcast_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x1xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = graph.fused -> tensor<4x8xf32> {
    %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x1xf32>) -> tensor<4x1xf32>
    // expected-error@+1 {{convert-graph-to-tm: 'graph.add': 'graph.add' cannot be in the epilogue of 'graph.matmul': only elementwise ops on the unbroadcast result, transposes and reshapes can}}
    %a = graph.add %m, %z : (tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    graph.yield %a : tensor<4x8xf32>
  }
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @prologue_yielded(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %r, %y = graph.fused -> tensor<4x8xf32>, tensor<4x8xf32> {
    // expected-error@+1 {{convert-graph-to-tm: 'graph.relu': a prologue value of 'graph.matmul' cannot leave its group (only the anchor's results and its epilogue can)}}
    %a = graph.relu %x : tensor<4x8xf32>
    %m = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    graph.yield %a, %m : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.return %r, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

func.func @reshape_sink(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  // expected-error@+1 {{convert-graph-to-tm: 'graph.fused': a fusion group cannot end in 'graph.reshape' (it has no kernel)}}
  %y = graph.fused -> tensor<32xf32> {
    %a = graph.relu %x : tensor<4x8xf32>
    %b = graph.reshape %a : tensor<4x8xf32> -> tensor<32xf32>
    graph.yield %b : tensor<32xf32>
  }
  func.return %y : tensor<32xf32>
}

// -----

func.func @two_maps(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = graph.fused -> tensor<4x4xf32> {
    %m = graph.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %t = graph.transpose %m {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    // expected-error@+1 {{convert-graph-to-tm: 'graph.add': 'graph.add' reads the result of 'graph.matmul' at two different coordinates; it cannot be in its epilogue}}
    %a = graph.add %m, %t : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    graph.yield %a : tensor<4x4xf32>
  }
  func.return %y : tensor<4x4xf32>
}

// -----

// Not a fusion error, but one of this pass: inline constants are moved out first.
func.func @inline_constant(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'graph.constant' must be moved into the weight table first: run graph-outline-constants}}
  %w = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = graph.add %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
