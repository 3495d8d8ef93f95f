// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// graph.fused round-trips: a region of graph ops reading outer values, its results the
// values graph.yield names.

// CHECK-LABEL: func.func @group
// CHECK-NEXT:    %y, %m = graph.fused -> tensor<4x8xf32>, tensor<4x8xf32> {
// CHECK-NEXT:      %m_1 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:      %r = graph.relu %m_1 : tensor<4x8xf32>
// CHECK-NEXT:      graph.yield %r, %m_1 : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y, %m : tensor<4x8xf32>, tensor<4x8xf32>
func.func @group(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y, %m = graph.fused -> tensor<4x8xf32>, tensor<4x8xf32> {
    %m_1 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = graph.relu %m_1 : tensor<4x8xf32>
    graph.yield %r, %m_1 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.return %y, %m : tensor<4x8xf32>, tensor<4x8xf32>
}
