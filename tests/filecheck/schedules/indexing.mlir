// RUN: tm-opt %s -p convert-graph-to-tm | filecheck %s
// RUN: tm-opt %s -p 'lower-to-cuda{fusion=false}' -t cuda | filecheck %s --check-prefix=CUDA
//
// Gathers with run-time indices (schedules/indexing.py) on the data-movement template: each
// thread loads its index in the index tensor's own type, wraps a negative one, clamps it
// into the axis and only then narrows it to an index. Masks are bool buffers.

// CHECK-LABEL: tm.kernel @take_0(%x0: memref<128x32xf32>, %x1: memref<1x16xi64>, %out: memref<1x16x32xf32>) grid(2) block(256)
// CHECK-SAME:    tm.params = {op = "take", axis = 0 : i64, block = 256 : i64}
// CHECK:         tm.for_task (%i0, %i1, %i2) in spatial(1, 16, 32) on %gid {
// CHECK-NEXT:      %raw = tm.load %x1[%i0, %i1] : memref<1x16xi64>
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-NEXT:      %[[N:.*]] = arith.constant 128 : i64
// CHECK-NEXT:      %[[LAST:.*]] = arith.constant 127 : i64
// CHECK-NEXT:      %[[NEG:.*]] = arith.cmpi slt, %raw, %[[ZERO]] : i64
// CHECK-NEXT:      %[[PLUS:.*]] = arith.addi %raw, %[[N]] : i64
// CHECK-NEXT:      %k_wrapped = arith.select %[[NEG]], %[[PLUS]], %raw : i64
// CHECK-NEXT:      %[[BELOW:.*]] = arith.cmpi slt, %k_wrapped, %[[ZERO]] : i64
// CHECK-NEXT:      %[[ABOVE:.*]] = arith.cmpi sgt, %k_wrapped, %[[LAST]] : i64
// CHECK-NEXT:      %[[HIGH:.*]] = arith.select %[[ABOVE]], %[[LAST]], %k_wrapped : i64
// CHECK-NEXT:      %[[CLAMPED:.*]] = arith.select %[[BELOW]], %[[ZERO]], %[[HIGH]] : i64
// CHECK-NEXT:      %k = arith.index_cast %[[CLAMPED]] : i64 to index
// CHECK-NEXT:      %v = tm.load %x0[%k, %i2] : memref<128x32xf32>
// CHECK-NEXT:      tm.store %v, %out[%i0, %i1, %i2] : memref<1x16x32xf32>
// CHECK-NEXT:    }
//
// CUDA-LABEL: take_0(const float* __restrict__ x0, const long long* __restrict__ x1, float* __restrict__ out) {
// CUDA:         const long long raw = x1[i1];
// CUDA-NEXT:    const long long k_wrapped = (raw < 0) ? (raw + 128) : raw;
// CUDA-NEXT:    const int k = (int)((k_wrapped < 0) ? 0 : ((k_wrapped > 127) ? 127 : k_wrapped));
// CUDA-NEXT:    const float v = x0[k * 32 + i2];
// CUDA-NEXT:    out[i1 * 32 + i2] = v;
func.func @take(%table: tensor<128x32xf32>, %ids: tensor<1x16xi64>) -> tensor<1x16x32xf32> {
  %y = graph.take %table, %ids {axis = 0 : i64} : (tensor<128x32xf32>, tensor<1x16xi64>) -> tensor<1x16x32xf32>
  func.return %y : tensor<1x16x32xf32>
}

// GatherND: one loaded index per indexed dim (here 2), each made safe on its own.
// CHECK-LABEL: tm.kernel @gather_nd_1(%x0: memref<2x3x4xi1>, %x1: memref<5x2xi32>, %out: memref<5x4xi1>)
// CHECK:         %raw0 = tm.load %x1[%i0, %{{.*}}] : memref<5x2xi32>
// CHECK:         %k0 = arith.index_cast %{{.*}} : i32 to index
// CHECK:         %raw1 = tm.load %x1[%i0, %{{.*}}] : memref<5x2xi32>
// CHECK:         %k1 = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT:    %v = tm.load %x0[%k0, %k1, %i1] : memref<2x3x4xi1>
// CHECK-NEXT:    tm.store %v, %out[%i0, %i1] : memref<5x4xi1>
//
// CUDA-LABEL: gather_nd_1(const bool* __restrict__ x0, const int* __restrict__ x1, bool* __restrict__ out) {
func.func @gather_nd(%m: tensor<2x3x4xi1>, %i: tensor<5x2xi32>) -> tensor<5x4xi1> {
  %y = graph.gather_nd %m, %i {batch_dims = 0 : i64} : (tensor<2x3x4xi1>, tensor<5x2xi32>) -> tensor<5x4xi1>
  func.return %y : tensor<5x4xi1>
}

// The elementwise template with one element type per argument: a cast to bool is x != 0,
// is_nan is x != x, and/where are C's && and ?:.
// CUDA-LABEL: cast_2(const long long* __restrict__ x0, bool* __restrict__ out) {
// CUDA:         const bool v_3 = x != 0;
// CUDA-LABEL: is_nan_3(const float* __restrict__ x0, bool* __restrict__ out) {
// CUDA:         const bool v_3 = x != x;
// CUDA-LABEL: and_4(const bool* __restrict__ x0, const bool* __restrict__ x1, bool* __restrict__ out) {
// CUDA:         const bool v_3 = x && x_1;
// CUDA-LABEL: where_5(const bool* __restrict__ x0, const float* __restrict__ x1, const float* __restrict__ x2, float* __restrict__ out) {
// CUDA:         ? x_1 : x_2;
func.func @mask(%m: tensor<1x16xi64>, %x: tensor<1x16xf32>) -> tensor<1x16xf32> {
  %b = graph.cast %m : tensor<1x16xi64> -> tensor<1x16xi1>
  %nan = graph.is_nan %x : tensor<1x16xf32> -> tensor<1x16xi1>
  %k = graph.and %b, %nan : (tensor<1x16xi1>, tensor<1x16xi1>) -> tensor<1x16xi1>
  %y = graph.where %k, %x, %x : (tensor<1x16xi1>, tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
  func.return %y : tensor<1x16xf32>
}
