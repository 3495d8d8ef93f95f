// RUN: tm-opt %s -p lower-to-cuda -t cuda | filecheck %s
//
// The max-pool-with-indices template: one thread per output element walks its window,
// keeping the best value and its flattened input index: (n * C + c) * H * W, plus the
// spatial coordinates numbered row-major, or column-major (storage_order = 1).

// Column-major: the index is ih + iw * H (H = 5); padding checked where it can be reached.
// CHECK-LABEL: // Kernel max_pool_with_indices_0: schedule template 'max_pool_indices' (op=max, kernel=3x3, stride=2x2, dilation=1x1, pads=1,1,1,1, storage_order=1, block=96)
// CHECK:         max_pool_with_indices_0(const float* __restrict__ x, float* __restrict__ y, long long* __restrict__ indices)
// CHECK:         where[0] = -1;
// CHECK:         const int base = ((n * 3) + c) * 35;
// CHECK:         if ((((n_ok && (ph >= 1)) && (ph < 6)) && (pw >= 1)) && (pw < 8)) {
// CHECK:           const bool take = (v > current) || ((where[0] == -1) && (v == v));
// CHECK:             const long long flat = (long long)((base + ih) + (iw * 5));
// CHECK:         indices[n * 36 + c * 12 + oh * 4 + ow] = argmax;
func.func @column_major(%x: tensor<2x3x5x7xf32>) -> (tensor<2x3x3x4xf32>, tensor<2x3x3x4xi64>) {
  %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, column_major} : tensor<2x3x5x7xf32> -> (tensor<2x3x3x4xf32>, tensor<2x3x3x4xi64>)
  func.return %y, %i : tensor<2x3x3x4xf32>, tensor<2x3x3x4xi64>
}

// Row-major, no padding: only the spare threads' check; the index is base + ih * 7 + iw.
// CHECK-LABEL: // Kernel max_pool_with_indices_1: schedule template 'max_pool_indices' (op=max, kernel=2x2, stride=2x2, dilation=1x1, pads=0,0,0,0, block=32)
// CHECK:         const int iw = (ow * 2) + kw;
// CHECK-NEXT:    if (n_ok) {
// CHECK-NEXT:      const float v = x[n * 56 + c * 28 + ih * 7 + iw];
// CHECK:           const long long flat = (long long)((base + (ih * 7)) + iw);
func.func @row_major(%x: tensor<1x2x4x7xf32>) -> (tensor<1x2x2x3xf32>, tensor<1x2x2x3xi64>) {
  %y, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x2x4x7xf32> -> (tensor<1x2x2x3xf32>, tensor<1x2x2x3xi64>)
  func.return %y, %i : tensor<1x2x2x3xf32>, tensor<1x2x2x3xi64>
}
