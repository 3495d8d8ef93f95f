// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// graph.max_pool_with_indices: MaxPool with its Indices output (row-major by default,
// column_major for ONNX's storage_order = 1).

// CHECK-LABEL: func.func @row_major
// CHECK-NEXT:    %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<2x3x8x8xf32> -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>)
// CHECK-NEXT:    func.return %y, %i : tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>
func.func @row_major(%x: tensor<2x3x8x8xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>) {
  %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<2x3x8x8xf32> -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>)
  func.return %y, %i : tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>
}

// CHECK-LABEL: func.func @column_major_ceil_1d
// CHECK-NEXT:    %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, ceil_mode, column_major} : tensor<1x2x7xf32> -> (tensor<1x2x4xf32>, tensor<1x2x4xi64>)
func.func @column_major_ceil_1d(%x: tensor<1x2x7xf32>) -> tensor<1x2x4xi64> {
  %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, ceil_mode, column_major} : tensor<1x2x7xf32> -> (tensor<1x2x4xf32>, tensor<1x2x4xi64>)
  func.return %i : tensor<1x2x4xi64>
}
