// RUN: tm-opt %s --split-input-file -p convert-graph-to-tm | filecheck %s
// RUN: tm-opt %s --split-input-file -p lower-to-cuda -t cuda | filecheck %s --check-prefix=CUDA
//
// graph.reshape costs no kernel: its result is a tm.view of its operand's buffer (a view
// of the underlying buffer, never a view of a view). A producer whose result is returned
// through reshapes writes straight into the output argument, seen through a view.

// CHECK-LABEL: func.func @chain(%x: memref<2x3x4xf32>, %y_out: memref<24xf32>)
// CHECK-NEXT:    %h = tm.view %y_out : memref<24xf32> to memref<2x3x4xf32>
// CHECK-NEXT:    tm.launch @relu_0(%x, %h) : memref<2x3x4xf32>, memref<2x3x4xf32>
// CHECK-NEXT:    %f = tm.view %y_out : memref<24xf32> to memref<6x4xf32>
// CHECK-NEXT:    func.return
// CHECK-NOT:   tm.kernel
//
// CUDA:       relu_0(const float* __restrict__ x0, float* __restrict__ out)
// CUDA-NOT:   __global__
// CUDA:       relu_0<<<1, 32, 0, stream>>>((float*)buffers[0], (float*)buffers[1]);
// CUDA-NEXT:  }
func.func @chain(%x: tensor<2x3x4xf32>) -> tensor<24xf32> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
  %h = graph.relu %x : tensor<2x3x4xf32>
  %f = graph.reshape %h : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %y = graph.reshape %f : tensor<6x4xf32> -> tensor<24xf32>
  func.return %y : tensor<24xf32>
}

// -----

// A reshaped input or weight feeds the next kernel through a view; returning a reshape of
// an input needs a copy (the output is a buffer of its own).
// CHECK-LABEL: tm.kernel @add_0(%x0: memref<4x6xf32>, %x1: memref<4x6xf32>, %out: memref<4x6xf32>)
// CHECK-LABEL: tm.kernel @copy_1(%x0: memref<24xf32>, %out: memref<24xf32>)
// CHECK-LABEL: func.func @operands(%x: memref<2x12xf32>, %y_out: memref<4x6xf32>, %z_out: memref<24xf32>)
// CHECK-NEXT:    %w = tm.weight "w" : memref<24xf32>
// CHECK-NEXT:    %xr = tm.view %x : memref<2x12xf32> to memref<4x6xf32>
// CHECK-NEXT:    %wr = tm.view %w : memref<24xf32> to memref<4x6xf32>
// CHECK-NEXT:    tm.launch @add_0(%xr, %wr, %y_out)
// CHECK-NEXT:    %z = tm.view %x : memref<2x12xf32> to memref<24xf32>
// CHECK-NEXT:    tm.launch @copy_1(%z, %z_out)
// CHECK-NEXT:    func.return
//
// The launch plan passes the viewed buffers themselves: [0] x, [3] the weight w.
// CUDA:       add_0<<<1, 32, 0, stream>>>((float*)buffers[0], (float*)buffers[3], (float*)buffers[1]);
// CUDA-NEXT:  copy_1<<<1, 32, 0, stream>>>((float*)buffers[0], (float*)buffers[2]);
func.func @operands(%x: tensor<2x12xf32>) -> (tensor<4x6xf32>, tensor<24xf32>) attributes {tm.inputs = ["x"], tm.outputs = ["y", "z"]} {
  %w = graph.weight "w" : tensor<24xf32>
  %xr = graph.reshape %x : tensor<2x12xf32> -> tensor<4x6xf32>
  %wr = graph.reshape %w : tensor<24xf32> -> tensor<4x6xf32>
  %y = graph.add %xr, %wr : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %z = graph.reshape %x : tensor<2x12xf32> -> tensor<24xf32>
  func.return %y, %z : tensor<4x6xf32>, tensor<24xf32>
}
