// RUN: tm-opt %s -p graph-partition | filecheck %s
// RUN: tm-opt %s -p graph-partition,graph-partition | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda -o /dev/null
//
// graph-partition's rules (tests/filecheck/schedules/fusion.mlir has one kernel per
// pattern): nothing fuses across a graph output or a broadcast, an anchor with several
// results takes a prologue only, a reshape alone costs no kernel, a group moves after an
// input a later member reads, and a second run changes nothing.

// A value returned by the function leaves its group: the relu is not the matmul's epilogue.
// CHECK-LABEL: func.func @graph_output
// CHECK-NEXT:    %y1 = graph.matmul %x, %w
// CHECK-NEXT:    %y2 = graph.relu %y1
// CHECK-NEXT:    func.return %y1, %y2
func.func @graph_output(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %y1 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %y2 = graph.relu %y1 : tensor<4x3xf32>
  func.return %y1, %y2 : tensor<4x3xf32>, tensor<4x3xf32>
}

// One element of (4, 1) feeds eight of (4, 8): not an epilogue; the add is a kernel.
// CHECK-LABEL: func.func @broadcast
// CHECK-NEXT:    %m = graph.matmul %x, %w
// CHECK-NEXT:    %y = graph.add %m, %z
// CHECK-NOT:     graph.fused
func.func @broadcast(%x: tensor<4x8xf32>, %w: tensor<8x1xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x1xf32>) -> tensor<4x1xf32>
  %y = graph.add %m, %z : (tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// Split has two results: its prologue fuses, each result's reader is a kernel of its own.
// CHECK-LABEL: func.func @split
// CHECK-NEXT:    %s, %t = graph.fused -> tensor<4x3xf32>, tensor<4x7xf32> {
// CHECK-NEXT:      %r = graph.relu %x
// CHECK-NEXT:      %s_1, %t_1 = graph.split %r
// CHECK-NEXT:      graph.yield %s_1, %t_1 : tensor<4x3xf32>, tensor<4x7xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %a = graph.neg %s
// CHECK-NEXT:    %b = graph.exp %t
func.func @split(%x: tensor<4x10xf32>) -> (tensor<4x3xf32>, tensor<4x7xf32>) {
  %r = graph.relu %x : tensor<4x10xf32>
  %s, %t = graph.split %r {axis = 1 : i64} : (tensor<4x10xf32>) -> (tensor<4x3xf32>, tensor<4x7xf32>)
  %a = graph.neg %s : tensor<4x3xf32>
  %b = graph.exp %t : tensor<4x7xf32>
  func.return %a, %b : tensor<4x3xf32>, tensor<4x7xf32>
}

// A reshape with two readers stays outside any group (a view of its input: no kernel); a
// reshape in an epilogue is part of the group.
// CHECK-LABEL: func.func @reshape_alone
// CHECK-NEXT:    %f = graph.reshape %x
// CHECK-NEXT:    %y1 = graph.matmul %f, %w
// CHECK-NEXT:    %y2 = graph.fused
// CHECK-NEXT:      %m = graph.matmul %f, %w
// CHECK-NEXT:      %y2_1 = graph.reshape %m
func.func @reshape_alone(%x: tensor<1x2x4xf32>, %w: tensor<8x4xf32>) -> (tensor<1x4xf32>, tensor<4xf32>) {
  %f = graph.reshape %x : tensor<1x2x4xf32> -> tensor<1x8xf32>
  %y1 = graph.matmul %f, %w : (tensor<1x8xf32>, tensor<8x4xf32>) -> tensor<1x4xf32>
  %m = graph.matmul %f, %w : (tensor<1x8xf32>, tensor<8x4xf32>) -> tensor<1x4xf32>
  %y2 = graph.reshape %m : tensor<1x4xf32> -> tensor<4xf32>
  func.return %y1, %y2 : tensor<1x4xf32>, tensor<4xf32>
}

// ResNet's downsampling block: the shortcut conv comes after the main branch's last conv,
// whose epilogue adds it, so the group moves below it.
// CHECK-LABEL: func.func @shortcut_after
// CHECK-NEXT:    %s = graph.conv %x, %ws
// CHECK-NEXT:    %y = graph.fused -> tensor<1x4x3x3xf32> {
// CHECK-NEXT:      %m = graph.conv %x, %wm
// CHECK-NEXT:      %a = graph.add %m, %s
// CHECK-NEXT:      %y_1 = graph.relu %a
func.func @shortcut_after(%x: tensor<1x2x3x3xf32>, %wm: tensor<4x2x1x1xf32>, %ws: tensor<4x2x1x1xf32>) -> tensor<1x4x3x3xf32> {
  %m = graph.conv %x, %wm {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x3x3xf32>
  %s = graph.conv %x, %ws {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x3x3xf32>
  %a = graph.add %m, %s : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %y = graph.relu %a : tensor<1x4x3x3xf32>
  func.return %y : tensor<1x4x3x3xf32>
}

// The epilogue may branch and close again (x * tanh(x), with a transpose after): it ends
// where one value leaves the group.
// CHECK-LABEL: func.func @diamond
// CHECK-NEXT:    %y = graph.fused -> tensor<3x2xf32> {
// CHECK-NEXT:      %m = graph.matmul
// CHECK-NEXT:      %t = graph.tanh %m
// CHECK-NEXT:      %p = graph.mul %m, %t
// CHECK-NEXT:      %y_1 = graph.transpose %p
// CHECK-NEXT:      graph.yield %y_1
func.func @diamond(%x: tensor<2x5xf32>, %w: tensor<5x3xf32>) -> tensor<3x2xf32> {
  %m = graph.matmul %x, %w : (tensor<2x5xf32>, tensor<5x3xf32>) -> tensor<2x3xf32>
  %t = graph.tanh %m : tensor<2x3xf32>
  %p = graph.mul %m, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = graph.transpose %p {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
