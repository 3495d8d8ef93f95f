// The grouped convolution of docs/schedules.md (as in tests/filecheck/schedules/conv2d.py):
// 1x32x14x14 input, 64x16x3x3 weight, pad 1, 2 groups.
func.func @main(%x: tensor<1x32x14x14xf32>, %w: tensor<64x16x3x3xf32>, %b: tensor<64xf32>) -> tensor<1x64x14x14xf32> {
  %y = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x32x14x14xf32>, tensor<64x16x3x3xf32>, tensor<64xf32>) -> tensor<1x64x14x14xf32>
  func.return %y : tensor<1x64x14x14xf32>
}
