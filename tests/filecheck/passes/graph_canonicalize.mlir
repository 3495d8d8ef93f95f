// RUN: tm-opt %s --split-input-file -p graph-canonicalize | filecheck %s
//
// graph-canonicalize: one case per rewrite, then what must stay. Every case checks the
// whole body with CHECK-NEXT, so an op left behind fails the test.

// Two transposes compose into one: dim k of %b is dim [2, 0, 1][[2, 0, 1][k]] of %x.
// CHECK-LABEL: func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>)
// CHECK-NEXT:    %b = graph.transpose %x {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
// CHECK-NEXT:    func.return %b : tensor<3x4x2xf32>
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %a = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %b = graph.transpose %a {perm = array<i64: 2, 0, 1>} : tensor<4x2x3xf32> -> tensor<3x4x2xf32>
  func.return %b : tensor<3x4x2xf32>
}

// -----

// Transposes that compose to the identity vanish; so does an identity transpose.
// CHECK-LABEL: func.func @transposes_to_identity(%x: tensor<2x3x4xf32>)
// CHECK-NEXT:    func.return %x, %x : tensor<2x3x4xf32>, tensor<2x3x4xf32>
func.func @transposes_to_identity(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %a = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %b = graph.transpose %a {perm = array<i64: 1, 2, 0>} : tensor<4x2x3xf32> -> tensor<2x3x4xf32>
  %c = graph.transpose %x {perm = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return %b, %c : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// A transpose that moves only extent-1 dims keeps the element order: a reshape.
// CHECK-LABEL: func.func @transpose_of_unit_dims(%x: tensor<1x4x1x3xf32>)
// CHECK-NEXT:    %t = graph.reshape %x : tensor<1x4x1x3xf32> -> tensor<4x1x3x1xf32>
// CHECK-NEXT:    func.return %t : tensor<4x1x3x1xf32>
func.func @transpose_of_unit_dims(%x: tensor<1x4x1x3xf32>) -> tensor<4x1x3x1xf32> {
  %t = graph.transpose %x {perm = array<i64: 1, 0, 3, 2>} : tensor<1x4x1x3xf32> -> tensor<4x1x3x1xf32>
  func.return %t : tensor<4x1x3x1xf32>
}

// -----

// Reshape chains: one reshape from the first input, nothing when it is the input's type.
// CHECK-LABEL: func.func @reshape_chains(%x: tensor<2x3x4xf32>)
// CHECK-NEXT:    %c = graph.reshape %x : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %c, %x, %x : tensor<4x6xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
func.func @reshape_chains(%x: tensor<2x3x4xf32>) -> (tensor<4x6xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %a = graph.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  %b = graph.reshape %a : tensor<24xf32> -> tensor<6x4xf32>
  %c = graph.reshape %b : tensor<6x4xf32> -> tensor<4x6xf32>
  %d = graph.reshape %b : tensor<6x4xf32> -> tensor<2x3x4xf32>
  %e = graph.reshape %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return %c, %d, %e : tensor<4x6xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// Attention's K^T as exported (heads split, transposed, batch dims merged, transposed,
// split again): the reshape only merges a 1, so the second transpose moves above it, the
// two compose, and the reshapes cancel. One transpose kernel instead of two.
// CHECK-LABEL: func.func @attention_key_transpose(%q: tensor<1x2x16x8xf32>, %k: tensor<1x16x2x8xf32>)
// CHECK-NEXT:    %kt = graph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x16x2x8xf32> -> tensor<1x2x8x16xf32>
// CHECK-NEXT:    %s = graph.matmul %q, %kt : (tensor<1x2x16x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x16x16xf32>
// CHECK-NEXT:    func.return %s
func.func @attention_key_transpose(%q: tensor<1x2x16x8xf32>, %k: tensor<1x16x2x8xf32>) -> tensor<1x2x16x16xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %k3 = graph.reshape %kt : tensor<1x2x16x8xf32> -> tensor<2x16x8xf32>
  %kt3 = graph.transpose %k3 {perm = array<i64: 0, 2, 1>} : tensor<2x16x8xf32> -> tensor<2x8x16xf32>
  %kt4 = graph.reshape %kt3 : tensor<2x8x16xf32> -> tensor<1x2x8x16xf32>
  %s = graph.matmul %q, %kt4 : (tensor<1x2x16x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x16x16xf32>
  func.return %s : tensor<1x2x16x16xf32>
}

// -----

// The hoisted transpose may cross a reshape that splits or merges dims, as long as it
// moves whole dims of the reshape's input ([3, 2, 4] -> [3, 8]: the 8 is 2 x 4).
// CHECK-LABEL: func.func @transpose_over_merging_reshape(%x: tensor<2x3x4xf32>)
// CHECK-NEXT:    %a = graph.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
// CHECK-NEXT:    %c = graph.reshape %a : tensor<2x4x3xf32> -> tensor<8x3xf32>
// CHECK-NEXT:    func.return %c
func.func @transpose_over_merging_reshape(%x: tensor<2x3x4xf32>) -> tensor<8x3xf32> {
  %a = graph.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %b = graph.reshape %a : tensor<3x2x4xf32> -> tensor<3x8xf32>
  %c = graph.transpose %b {perm = array<i64: 1, 0>} : tensor<3x8xf32> -> tensor<8x3xf32>
  func.return %c : tensor<8x3xf32>
}

// -----

// Splitting [6, 4] into [2, 3, 4], then moving the 4 first: the transposes cancel.
// CHECK-LABEL: func.func @transpose_over_splitting_reshape(%x: tensor<4x6xf32>)
// CHECK-NEXT:    %c = graph.reshape %x : tensor<4x6xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %c
func.func @transpose_over_splitting_reshape(%x: tensor<4x6xf32>) -> tensor<4x2x3xf32> {
  %a = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
  %b = graph.reshape %a : tensor<6x4xf32> -> tensor<2x3x4xf32>
  %c = graph.transpose %b {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  func.return %c : tensor<4x2x3xf32>
}

// -----

// A transpose of the last two dims feeding a matmul becomes its flag (toggled if set);
// one that also moves an extent-1 dim leaves a reshape behind.
// CHECK-LABEL: func.func @transpose_into_matmul(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>, %c: tensor<8x1x4xf32>, %d: tensor<8x5xf32>)
// CHECK-NEXT:    %y = graph.matmul %a, %b {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %z = graph.matmul %a, %b {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %{{.*}} = graph.reshape %c : tensor<8x1x4xf32> -> tensor<1x8x4xf32>
// CHECK-NEXT:    %w = graph.matmul %{{.*}}, %d {transpose_lhs} : (tensor<1x8x4xf32>, tensor<8x5xf32>) -> tensor<1x4x5xf32>
// CHECK-NEXT:    func.return %y, %z, %w
func.func @transpose_into_matmul(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>, %c: tensor<8x1x4xf32>, %d: tensor<8x5xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<1x4x5xf32>) {
  %bt = graph.transpose %b {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = graph.matmul %a, %bt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %at = graph.transpose %a {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %z = graph.matmul %at, %bt {transpose_lhs} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %ct = graph.transpose %c {perm = array<i64: 1, 2, 0>} : tensor<8x1x4xf32> -> tensor<1x4x8xf32>
  %w = graph.matmul %ct, %d : (tensor<1x4x8xf32>, tensor<8x5xf32>) -> tensor<1x4x5xf32>
  func.return %y, %z, %w : tensor<4x16xf32>, tensor<4x16xf32>, tensor<1x4x5xf32>
}

// -----

// Ops that copy their input unchanged vanish: expand and tile to the input's shape, a
// slice from 0 by 1 (or of extent-1 dims), zero pads in any mode, resize by 1, concat,
// split and n-ary elementwise ops of one input. All results stay function results.
// CHECK-LABEL: func.func @identity_copies(%x: tensor<2x3xf32>, %u: tensor<1x3xf32>)
// CHECK-NEXT:    func.return %x, %x, %x, %x, %x, %x, %x, %x, %x, %u :
func.func @identity_copies(%x: tensor<2x3xf32>, %u: tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x3xf32>) {
  %e = graph.expand %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %t = graph.tile %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %s = graph.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %p = graph.pad %x {pads = array<i64: 0, 0, 0, 0>, mode = "reflect"} : tensor<2x3xf32> -> tensor<2x3xf32>
  %r = graph.resize %x {mode = "linear", coordinate_transformation_mode = "align_corners", scales = array<f32: 1.0, 1.0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %c = graph.concat %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %q = graph.split %x {axis = 0 : i64} : (tensor<2x3xf32>) -> (tensor<2x3xf32>)
  %m = graph.max %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %n = graph.mean %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %v = graph.slice %u {starts = array<i64: 0, 0>, steps = array<i64: -1, 1>} : tensor<1x3xf32> -> tensor<1x3xf32>
  func.return %e, %t, %s, %p, %r, %c, %q, %m, %n, %v : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x3xf32>
}

// -----

// A reduction over extent-1 dims is its input, reshaped without keepdims.
// CHECK-LABEL: func.func @unit_reductions(%x: tensor<4x1x1xf32>)
// CHECK-NEXT:    %c = graph.reshape %x : tensor<4x1x1xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %x, %c : tensor<4x1x1xf32>, tensor<4xf32>
func.func @unit_reductions(%x: tensor<4x1x1xf32>) -> (tensor<4x1x1xf32>, tensor<4xf32>) {
  %a = graph.reduce_mean %x {axes = array<i64: 1, 2>, keepdims} : tensor<4x1x1xf32> -> tensor<4x1x1xf32>
  %b = graph.reduce_max %x {axes = array<i64: 2>} : tensor<4x1x1xf32> -> tensor<4x1xf32>
  %c = graph.reduce_sum %b {axes = array<i64: 1>} : tensor<4x1xf32> -> tensor<4xf32>
  func.return %a, %c : tensor<4x1x1xf32>, tensor<4xf32>
}

// -----

// Chains of expands, tiles and slices become one op.
// CHECK-LABEL: func.func @copy_chains(%x: tensor<3x1xf32>, %y: tensor<8x10xf32>)
// CHECK-NEXT:    %e2 = graph.expand %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT:    %t2 = graph.tile %x : tensor<3x1xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %s2 = graph.slice %y {starts = array<i64: 7, 8>, steps = array<i64: -2, -3>} : tensor<8x10xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %e2, %t2, %s2
func.func @copy_chains(%x: tensor<3x1xf32>, %y: tensor<8x10xf32>) -> (tensor<2x3x4xf32>, tensor<6x4xf32>, tensor<3x2xf32>) {
  %e1 = graph.expand %x : tensor<3x1xf32> -> tensor<3x4xf32>
  %e2 = graph.expand %e1 : tensor<3x4xf32> -> tensor<2x3x4xf32>
  %t1 = graph.tile %x : tensor<3x1xf32> -> tensor<3x2xf32>
  %t2 = graph.tile %t1 : tensor<3x2xf32> -> tensor<6x4xf32>
  // rows 1, 3, 5, 7 and columns 9 down to 2; then rows 3, 2, 1 and columns 1, 4 of those
  %s1 = graph.slice %y {starts = array<i64: 1, 9>, steps = array<i64: 2, -1>} : tensor<8x10xf32> -> tensor<4x8xf32>
  %s2 = graph.slice %s1 {starts = array<i64: 3, 1>, steps = array<i64: -1, 3>} : tensor<4x8xf32> -> tensor<3x2xf32>
  func.return %e2, %t2, %s2 : tensor<2x3x4xf32>, tensor<6x4xf32>, tensor<3x2xf32>
}

// -----

// An expand feeding a broadcasting elementwise op is dropped when the op broadcasts to
// the same shape without it.
// CHECK-LABEL: func.func @expand_into_elementwise(%x: tensor<3x1xf32>, %y: tensor<2x3x4xf32>)
// CHECK-NEXT:    %a = graph.add %x, %y : (tensor<3x1xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %m = graph.max %y, %x, %y : (tensor<2x3x4xf32>, tensor<3x1xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %a, %m
func.func @expand_into_elementwise(%x: tensor<3x1xf32>, %y: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %e = graph.expand %x : tensor<3x1xf32> -> tensor<3x4xf32>
  %a = graph.add %e, %y : (tensor<3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %m = graph.max %y, %e, %y : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %a, %m : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// What must stay.

// A transpose that moves dims of extent > 1; a transpose still used after composing.
// CHECK-LABEL: func.func @kept_transposes(%x: tensor<2x1x3xf32>)
// CHECK-NEXT:    %a = graph.transpose %x {perm = array<i64: 2, 1, 0>} : tensor<2x1x3xf32> -> tensor<3x1x2xf32>
// CHECK-NEXT:    func.return %a, %x : tensor<3x1x2xf32>, tensor<2x1x3xf32>
func.func @kept_transposes(%x: tensor<2x1x3xf32>) -> (tensor<3x1x2xf32>, tensor<2x1x3xf32>) {
  %a = graph.transpose %x {perm = array<i64: 2, 1, 0>} : tensor<2x1x3xf32> -> tensor<3x1x2xf32>
  %b = graph.transpose %a {perm = array<i64: 2, 1, 0>} : tensor<3x1x2xf32> -> tensor<2x1x3xf32>
  func.return %a, %b : tensor<3x1x2xf32>, tensor<2x1x3xf32>
}

// -----

// A reshape that mixes dims the second transpose separates ([6, 4] -> [4, 6]), and a
// transpose after a reshape of anything but a transpose (nothing to compose with).
// CHECK-LABEL: func.func @kept_transpose_reshape(%x: tensor<4x6xf32>, %y: tensor<1x8x4xf32>)
// CHECK-NEXT:    %a = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %b = graph.reshape %a : tensor<6x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %c = graph.transpose %b {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %r = graph.reshape %y : tensor<1x8x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %t = graph.transpose %r {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %c, %t
func.func @kept_transpose_reshape(%x: tensor<4x6xf32>, %y: tensor<1x8x4xf32>) -> (tensor<6x4xf32>, tensor<4x8xf32>) {
  %a = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
  %b = graph.reshape %a : tensor<6x4xf32> -> tensor<4x6xf32>
  %c = graph.transpose %b {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
  %r = graph.reshape %y : tensor<1x8x4xf32> -> tensor<8x4xf32>
  %t = graph.transpose %r {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  func.return %c, %t : tensor<6x4xf32>, tensor<4x8xf32>
}

// -----

// A transpose of batch dims is no matmul flag.
// CHECK-LABEL: func.func @kept_matmul_transpose(%a: tensor<2x3x4x5xf32>, %b: tensor<3x2x5x6xf32>)
// CHECK-NEXT:    %bt = graph.transpose %b {perm = array<i64: 1, 0, 2, 3>}
// CHECK-NEXT:    %y = graph.matmul %a, %bt : (tensor<2x3x4x5xf32>, tensor<2x3x5x6xf32>) -> tensor<2x3x4x6xf32>
func.func @kept_matmul_transpose(%a: tensor<2x3x4x5xf32>, %b: tensor<3x2x5x6xf32>) -> tensor<2x3x4x6xf32> {
  %bt = graph.transpose %b {perm = array<i64: 1, 0, 2, 3>} : tensor<3x2x5x6xf32> -> tensor<2x3x5x6xf32>
  %y = graph.matmul %a, %bt : (tensor<2x3x4x5xf32>, tensor<2x3x5x6xf32>) -> tensor<2x3x4x6xf32>
  func.return %y : tensor<2x3x4x6xf32>
}

// -----

// Copies that change something: a real broadcast and tiling, a reversed or shifted
// slice, pads that shift (crop one side, pad the other), a resize by 2, a concat and a
// max of two inputs, a reduction over an extent > 1.
// CHECK-LABEL: func.func @kept_copies(%x: tensor<2x3xf32>)
// CHECK-NEXT:    graph.expand %x : tensor<2x3xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT:    graph.tile %x : tensor<2x3xf32> -> tensor<2x6xf32>
// CHECK-NEXT:    graph.slice %x {starts = array<i64: 1, 0>, steps = array<i64: -1, 1>}
// CHECK-NEXT:    graph.slice %x {starts = array<i64: 0, 1>, steps = array<i64: 1, 1>}
// CHECK-NEXT:    graph.pad %x {pads = array<i64: 0, -1, 0, 1>}
// CHECK-NEXT:    graph.resize %x
// CHECK-NEXT:    graph.concat %x, %x
// CHECK-NEXT:    graph.max %x, %x
// CHECK-NEXT:    graph.reduce_sum %x
// CHECK-NEXT:    func.return
func.func @kept_copies(%x: tensor<2x3xf32>) -> (tensor<4x2x3xf32>, tensor<2x6xf32>, tensor<2x3xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<4x6xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<2x1xf32>) {
  %e = graph.expand %x : tensor<2x3xf32> -> tensor<4x2x3xf32>
  %t = graph.tile %x : tensor<2x3xf32> -> tensor<2x6xf32>
  %s = graph.slice %x {starts = array<i64: 1, 0>, steps = array<i64: -1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %u = graph.slice %x {starts = array<i64: 0, 1>, steps = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x2xf32>
  %p = graph.pad %x {pads = array<i64: 0, -1, 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %r = graph.resize %x {mode = "nearest", coordinate_transformation_mode = "asymmetric", scales = array<f32: 2.0, 2.0>} : tensor<2x3xf32> -> tensor<4x6xf32>
  %c = graph.concat %x, %x {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %m = graph.max %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = graph.reduce_sum %x {axes = array<i64: 1>, keepdims} : tensor<2x3xf32> -> tensor<2x1xf32>
  func.return %e, %t, %s, %u, %p, %r, %c, %m, %d : tensor<4x2x3xf32>, tensor<2x6xf32>, tensor<2x3xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<4x6xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<2x1xf32>
}

// -----

// An expand the elementwise op needs: without it the result would be 3x1, not 3x4.
// CHECK-LABEL: func.func @kept_expand(%x: tensor<3x1xf32>, %y: tensor<3x1xf32>)
// CHECK-NEXT:    %e = graph.expand %x : tensor<3x1xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    %a = graph.add %e, %y : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
func.func @kept_expand(%x: tensor<3x1xf32>, %y: tensor<3x1xf32>) -> tensor<3x4xf32> {
  %e = graph.expand %x : tensor<3x1xf32> -> tensor<3x4xf32>
  %a = graph.add %e, %y : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  func.return %a : tensor<3x4xf32>
}
