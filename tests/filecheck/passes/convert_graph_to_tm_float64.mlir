// RUN: tm-opt %s --split-input-file -p convert-graph-to-tm | filecheck %s
//
// float64 tensors are computed in double (registers, shared tiles, constants and math ops
// of f64); a row of an f64 reduction is one thread's (tm.shuffle takes no f64). An integer
// max pool starts from the type's smallest value and compares signed or unsigned.

// CHECK-LABEL: tm.kernel @sigmoid_0(%x0: memref<2x3xf64>, %out: memref<2x3xf64>)
// CHECK:         %x = tm.load %x0[%{{.*}}, %{{.*}}] guard [0] : memref<2x3xf64>
// CHECK-NEXT:    %[[NEG:.*]] = arith.negf %x : f64
// CHECK-NEXT:    %[[E:.*]] = math.exp %[[NEG]] : f64
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:    %[[ONE2:.*]] = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:    %[[SUM:.*]] = arith.addf %[[ONE2]], %[[E]] : f64
// CHECK-NEXT:    %[[Y:.*]] = arith.divf %[[ONE]], %[[SUM]] : f64
// CHECK-NEXT:    tm.store %[[Y]], %out
func.func @sigmoid(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = graph.sigmoid %x : tensor<2x3xf64>
  func.return %y : tensor<2x3xf64>
}

// -----

// CHECK-LABEL: tm.kernel @reduce_log_sum_exp_0(%x: memref<4x40xf64>, %out: memref<4xf64>)
// CHECK-SAME:    tm.params = {op = "log_sum_exp", threads_per_row = 1 : i64, rows_per_block = 32 : i64
// CHECK:         %acc = tm.alloc register : memref<1xf64>
// CHECK-NOT:     tm.shuffle
// CHECK:         math.exp %{{.*}} : f64
// CHECK:         math.log %{{.*}} : f64
func.func @log_sum_exp(%x: tensor<4x40xf64>) -> tensor<4xf64> {
  %y = graph.reduce_log_sum_exp %x {axes = array<i64: 1>} : tensor<4x40xf64> -> tensor<4xf64>
  func.return %y : tensor<4xf64>
}

// -----

// CHECK-LABEL: tm.kernel @matmul_0(%A: memref<4x40xf64>, %B: memref<40x8xf64>, %C: memref<4x8xf64>)
// CHECK:         %a_smem = tm.alloc shared layout(row_major(2, 8, 16, pad=4)) : memref<2x8x16xf64>
// CHECK-NEXT:    %b_smem = tm.alloc shared : memref<2x8x32xf64>
// CHECK:         %acc = tm.alloc register : memref<4x4xf64>
// CHECK:         arith.constant 0.000000e+00 : f64
// CHECK:         arith.mulf %a, %b : f64
func.func @matmul(%x: tensor<4x40xf64>, %w: tensor<40x8xf64>) -> tensor<4x8xf64> {
  %p = graph.matmul %x, %w : (tensor<4x40xf64>, tensor<40x8xf64>) -> tensor<4x8xf64>
  func.return %p : tensor<4x8xf64>
}

// -----

// CHECK-LABEL: tm.kernel @max_pool_0(%x: memref<1x1x4x4xi8>, %y: memref<1x1x2x2xi8>)
// CHECK:         %acc = tm.alloc register : memref<1xi8>
// CHECK:         arith.constant -128 : i8
// CHECK:         %[[GT:.*]] = arith.cmpi sgt, %v, %[[ACC:.*]] : i8
// CHECK-NEXT:    arith.select %[[GT]], %v, %[[ACC]] : i8
// CHECK-LABEL: tm.kernel @max_pool_1(%x: memref<1x1x5xui8>, %y: memref<1x1x3xui8>)
// CHECK:         arith.cmpi ugt, %v, %{{.*}} : ui8
func.func @integer_max_pool(%x: tensor<1x1x4x4xi8>, %u: tensor<1x1x5xui8>) -> (tensor<1x1x2x2xi8>, tensor<1x1x3xui8>) {
  %a = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xi8> -> tensor<1x1x2x2xi8>
  %b = graph.max_pool %u {kernel_shape = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : tensor<1x1x5xui8> -> tensor<1x1x3xui8>
  func.return %a, %b : tensor<1x1x2x2xi8>, tensor<1x1x3xui8>
}
