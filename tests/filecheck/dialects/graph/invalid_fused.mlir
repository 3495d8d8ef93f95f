// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// graph.fused's verifier (see invalid.mlir for the format).

func.func @yield_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'graph.fused' yields tensor<4xf32> but has results tensor<2x2xf32>}}
  %y = graph.fused -> tensor<2x2xf32> {
    %r = graph.relu %x : tensor<4xf32>
    graph.yield %r : tensor<4xf32>
  }
  func.return %x : tensor<4xf32>
}

// -----

func.func @weight_inside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'graph.fused' must not hold 'graph.weight' (weights stay outside and are read by the group)}}
  %y = graph.fused -> tensor<4xf32> {
    %w = graph.weight "w" : tensor<4xf32>
    %r = graph.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.yield %r : tensor<4xf32>
  }
  func.return %y : tensor<4xf32>
}

// -----

func.func @nested(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'graph.fused' may hold graph ops only (no nested groups), got 'graph.fused'}}
  %y = graph.fused -> tensor<4xf32> {
    %z = graph.fused -> tensor<4xf32> {
      %r = graph.relu %x : tensor<4xf32>
      graph.yield %r : tensor<4xf32>
    }
    graph.yield %z : tensor<4xf32>
  }
  func.return %y : tensor<4xf32>
}

// -----

func.func @empty(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'graph.fused' must hold at least one op}}
  %y = graph.fused -> tensor<4xf32> {
    graph.yield %x : tensor<4xf32>
  }
  func.return %y : tensor<4xf32>
}
