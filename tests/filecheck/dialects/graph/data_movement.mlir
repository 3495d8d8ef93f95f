// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// The data-movement ops print in their custom syntax and parse back to the same text;
// split has one result per piece.

// CHECK-LABEL: func.func @reshape_transpose
// CHECK-NEXT:    %r = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %t = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
func.func @reshape_transpose(%x: tensor<2x3x4xf32>) {
  %r = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %t = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  func.return
}

// CHECK-LABEL: func.func @concat_split
// CHECK-NEXT:    %c = graph.concat %a, %b, %a {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
// CHECK-NEXT:    %p, %q = graph.split %c {axis = 1 : i64} : (tensor<2x11xf32>) -> (tensor<2x4xf32>, tensor<2x7xf32>)
func.func @concat_split(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) {
  %c = graph.concat %a, %b, %a {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %p, %q = graph.split %c {axis = 1 : i64} : (tensor<2x11xf32>) -> (tensor<2x4xf32>, tensor<2x7xf32>)
  func.return
}

// CHECK-LABEL: func.func @index_maps
// CHECK-NEXT:    %s = graph.slice %x {starts = array<i64: 0, 9>, steps = array<i64: 1, -2>} : tensor<4x10xf32> -> tensor<4x5xf32>
// CHECK-NEXT:    %g = graph.gather %x {axis = 1 : i64, indices = array<i64: 2, 0, 9, 9>} : tensor<4x10xf32> -> tensor<4x2x2xf32>
// CHECK-NEXT:    %e = graph.expand %x : tensor<4x10xf32> -> tensor<3x4x10xf32>
// CHECK-NEXT:    %l = graph.tile %x : tensor<4x10xf32> -> tensor<8x30xf32>
func.func @index_maps(%x: tensor<4x10xf32>) {
  %s = graph.slice %x {starts = array<i64: 0, 9>, steps = array<i64: 1, -2>} : tensor<4x10xf32> -> tensor<4x5xf32>
  %g = graph.gather %x {axis = 1 : i64, indices = array<i64: 2, 0, 9, 9>} : tensor<4x10xf32> -> tensor<4x2x2xf32>
  %e = graph.expand %x : tensor<4x10xf32> -> tensor<3x4x10xf32>
  %l = graph.tile %x : tensor<4x10xf32> -> tensor<8x30xf32>
  func.return
}

// CHECK-LABEL: func.func @pad_resize
// CHECK-NEXT:    %c = graph.pad %x {pads = array<i64: 0, 1, 0, -2>, value = 1.500000e+00 : f32} : tensor<4x10xf32> -> tensor<4x9xf32>
// CHECK-NEXT:    %r = graph.pad %x {pads = array<i64: 0, 1, 0, 2>, mode = "reflect"} : tensor<4x10xf32> -> tensor<4x13xf32>
// CHECK-NEXT:    %z = graph.resize %y {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 1.500000e+00>} : tensor<1x3x4x4xf32> -> tensor<1x3x8x6xf32>
func.func @pad_resize(%x: tensor<4x10xf32>, %y: tensor<1x3x4x4xf32>) {
  %c = graph.pad %x {pads = array<i64: 0, 1, 0, -2>, value = 1.5 : f32} : tensor<4x10xf32> -> tensor<4x9xf32>
  %r = graph.pad %x {pads = array<i64: 0, 1, 0, 2>, mode = "reflect"} : tensor<4x10xf32> -> tensor<4x13xf32>
  %z = graph.resize %y {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", scales = array<f32: 1.0, 1.0, 2.0, 1.5>} : tensor<1x3x4x4xf32> -> tensor<1x3x8x6xf32>
  func.return
}

// CHECK-LABEL: func.func @depth_to_space
// CHECK-NEXT:    %d = graph.depth_to_space %x {blocksize = 2 : i64, mode = "CRD"} : tensor<1x8x3x5xf32> -> tensor<1x2x6x10xf32>
// CHECK-NEXT:    %s = graph.space_to_depth %d {blocksize = 2 : i64, mode = "DCR"} : tensor<1x2x6x10xf32> -> tensor<1x8x3x5xf32>
func.func @depth_to_space(%x: tensor<1x8x3x5xf32>) {
  %d = graph.depth_to_space %x {blocksize = 2 : i64, mode = "CRD"} : tensor<1x8x3x5xf32> -> tensor<1x2x6x10xf32>
  %s = graph.space_to_depth %d {blocksize = 2 : i64, mode = "DCR"} : tensor<1x2x6x10xf32> -> tensor<1x8x3x5xf32>
  func.return
}
