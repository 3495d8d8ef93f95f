// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// The data-movement ops' verifiers (see invalid.mlir for how the checks are written).

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{cannot reshape 6 elements ([2, 3]) into [4, 2]}}
  %y = graph.reshape %x : tensor<2x3xf32> -> tensor<4x2xf32>
  func.return
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{perm [0, 0] is not a permutation of the 2 input dims}}
  %y = graph.transpose %x {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// -----

func.func @transpose_result(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{result shape [2, 3] does not match expected [3, 2]}}
  %y = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @concat_other_dims(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error@+1 {{input #0 has shape [3, 3], which differs from [2, 3] outside axis 1}}
  %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

func.func @split_sizes(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{the results' extents along axis 1 add up to 7, not the input's 8}}
  %p, %q = graph.split %x {axis = 1 : i64} : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>)
  func.return
}

// -----

func.func @slice_out_of_range(%x: tensor<10xf32>) {
  // expected-error@+1 {{dim 0: 4 elements from 1 by 3 leave the input extent 10}}
  %y = graph.slice %x {starts = array<i64: 1>, steps = array<i64: 3>} : tensor<10xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @slice_zero_step(%x: tensor<10xf32>) {
  // expected-error@+1 {{step of dim 0 must not be 0}}
  %y = graph.slice %x {starts = array<i64: 1>, steps = array<i64: 0>} : tensor<10xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @gather_index(%x: tensor<3x4xf32>) {
  // expected-error@+1 {{index 3 is out of range for axis 0 of extent 3}}
  %y = graph.gather %x {axis = 0 : i64, indices = array<i64: 0, 3>} : tensor<3x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @gather_count(%x: tensor<3x4xf32>) {
  // expected-error@+1 {{expected 2 indices for index shape [2], got 3}}
  %y = graph.gather %x {axis = 0 : i64, indices = array<i64: 0, 1, 2>} : tensor<3x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @expand(%x: tensor<3x2xf32>) {
  // expected-error@+1 {{input shape [3, 2] does not broadcast to the result shape [3, 4]}}
  %y = graph.expand %x : tensor<3x2xf32> -> tensor<3x4xf32>
  func.return
}

// -----

func.func @tile(%x: tensor<3x2xf32>) {
  // expected-error@+1 {{result shape [3, 5] is not a tiling of the input shape [3, 2]}}
  %y = graph.tile %x : tensor<3x2xf32> -> tensor<3x5xf32>
  func.return
}

// -----

func.func @pad_mode(%x: tensor<3xf32>) {
  // expected-error@+1 {{unknown mode "mirror", expected one of constant, reflect, edge, wrap}}
  %y = graph.pad %x {pads = array<i64: 1, 1>, mode = "mirror"} : tensor<3xf32> -> tensor<5xf32>
  func.return
}

// -----

func.func @pad_reflect(%x: tensor<3xf32>) {
  // expected-error@+1 {{mode "reflect" needs pads below the extent 3 of dim 0, got 3, 0}}
  %y = graph.pad %x {pads = array<i64: 3, 0>, mode = "reflect"} : tensor<3xf32> -> tensor<6xf32>
  func.return
}

// -----

func.func @pad_negative_edge(%x: tensor<3xf32>) {
  // expected-error@+1 {{mode "edge" needs pads >= 0, got -1, 0 for dim 0}}
  %y = graph.pad %x {pads = array<i64: -1, 0>, mode = "edge"} : tensor<3xf32> -> tensor<2xf32>
  func.return
}

// -----

func.func @resize_mode(%x: tensor<1x4xf32>) {
  // expected-error@+1 {{unknown mode "area", expected one of nearest, linear, cubic}}
  %y = graph.resize %x {mode = "area", coordinate_transformation_mode = "half_pixel", scales = array<f32: 1.0, 2.0>} : tensor<1x4xf32> -> tensor<1x8xf32>
  func.return
}

// -----

func.func @depth_to_space_channels(%x: tensor<1x6x2x2xf32>) {
  // expected-error@+1 {{6 input channels are not a multiple of blocksize^2 = 4}}
  %y = graph.depth_to_space %x {blocksize = 2 : i64, mode = "DCR"} : tensor<1x6x2x2xf32> -> tensor<1x1x4x4xf32>
  func.return
}

// -----

func.func @depth_to_space_mode(%x: tensor<1x4x2x2xf32>) {
  // expected-error@+1 {{mode must be "DCR" or "CRD", got "RCD"}}
  %y = graph.depth_to_space %x {blocksize = 2 : i64, mode = "RCD"} : tensor<1x4x2x2xf32> -> tensor<1x1x4x4xf32>
  func.return
}

// -----

func.func @space_to_depth_shape(%x: tensor<1x1x4x5xf32>) {
  // expected-error@+1 {{spatial dims 4x5 are not multiples of blocksize 2}}
  %y = graph.space_to_depth %x {blocksize = 2 : i64, mode = "DCR"} : tensor<1x1x4x5xf32> -> tensor<1x4x2x2xf32>
  func.return
}

// -----

func.func @space_to_depth_result(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{result shape [1, 4, 2, 4] does not match expected [1, 4, 2, 2]}}
  %y = graph.space_to_depth %x {blocksize = 2 : i64, mode = "DCR"} : tensor<1x1x4x4xf32> -> tensor<1x4x2x4xf32>
  func.return
}
