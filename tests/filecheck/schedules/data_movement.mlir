// RUN: tm-opt %s -p convert-graph-to-tm | filecheck %s
// RUN: tm-opt %s -p lower-to-cuda -t cuda | filecheck %s --check-prefix=CUDA
//
// The data-movement template: one thread per output element, the output's elements mapped
// onto the global thread id by one task mapping; each op computes its source index.

// A transpose reads x at the permuted coordinates; 120 elements on 128 threads.
// CHECK-LABEL: tm.kernel @transpose_0(%x: memref<4x5x6xf32>, %out: memref<6x4x5xf32>) grid(1) block(128)
// CHECK-SAME:    attributes {tm.template = "data_movement", tm.params = {op = "transpose", perm = "2,0,1", block = 128 : i64}} {
// CHECK:         %gid = arith.addi %{{[0-9]+}}, %tid : index
// CHECK-NEXT:    tm.for_task (%i0, %i1, %i2) in spatial(6, 4, 5) on %gid {
// CHECK-NEXT:      %v = tm.load %x[%i1, %i2, %i0] : memref<4x5x6xf32>
// CHECK-NEXT:      tm.store %v, %out[%i0, %i1, %i2] : memref<6x4x5xf32>
// CHECK-NEXT:    }
func.func @transpose(%x: tensor<4x5x6xf32>) -> tensor<6x4x5xf32> {
  %y = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<4x5x6xf32> -> tensor<6x4x5xf32>
  func.return %y : tensor<6x4x5xf32>
}

// A concat is one kernel over the output: nested ifs on the segment bounds of the axis pick
// the input that holds the element (the last input innermost, without a test).
// CHECK-LABEL: tm.kernel @concat_1(%x0: memref<2x3xf32>, %x1: memref<2x5xf32>, %x2: memref<2x1xf32>, %out: memref<2x9xf32>)
// CHECK:         tm.for_task (%i0, %i1) in spatial(2, 9) on %gid {
// CHECK:           %in0 = arith.cmpi ult, %i1, %{{[0-9]+}} : index
// CHECK-NEXT:      %v = scf.if %in0 -> (f32) {
// CHECK-NEXT:        %[[A:[0-9]+]] = tm.load %x0[%i0, %i1] : memref<2x3xf32>
// CHECK-NEXT:        scf.yield %[[A]] : f32
// CHECK-NEXT:      } else {
// CHECK:             %in1 = arith.cmpi ult, %i1, %{{[0-9]+}} : index
// CHECK-NEXT:        %v_1 = scf.if %in1 -> (f32) {
// CHECK:               tm.load %x1[%i0, %{{[0-9]+}}] : memref<2x5xf32>
// CHECK:             } else {
// CHECK:               tm.load %x2[%i0, %{{[0-9]+}}] : memref<2x1xf32>
// CHECK:           tm.store %v, %out[%i0, %i1] : memref<2x9xf32>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<2x1xf32>) -> tensor<2x9xf32> {
  %y = graph.concat %a, %b, %c {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x9xf32>
  func.return %y : tensor<2x9xf32>
}

// A constant-mode pad loads only inside the input (the index is computed there) and stores
// the pad value elsewhere; 65 elements on 96 threads, so the mapping guards gid.
// CUDA-LABEL: // Kernel pad_2: schedule template 'data_movement' (op=pad, mode=constant, pads=0,1,1,2, block=96), 96 threads per block
// CUDA-NEXT:  extern "C" __global__ void __launch_bounds__(96) pad_2(const float* __restrict__ x, float* __restrict__ out) {
// CUDA-NEXT:    const int bid = blockIdx.x;
// CUDA-NEXT:    const int tid = threadIdx.x;
// CUDA-NEXT:    const int gid = (bid * 96) + tid;
// CUDA-NEXT:    if (gid < 65) {
// CUDA-NEXT:      const int i0 = gid / 13;
// CUDA-NEXT:      const int i1 = gid % 13;
// CUDA-NEXT:      const bool inside = ((i0 < 4) && (i1 >= 1)) && (i1 < 11);
// CUDA-NEXT:      float v;
// CUDA-NEXT:      if (inside) {
// CUDA-NEXT:        v = x[i0 * 10 + (i1 - 1)];
// CUDA-NEXT:      } else {
// CUDA-NEXT:        v = 1.5f;
// CUDA-NEXT:      }
// CUDA-NEXT:      out[i0 * 13 + i1] = v;
// CUDA-NEXT:    }
// CUDA-NEXT:  }
func.func @pad(%x: tensor<4x10xf32>) -> tensor<5x13xf32> {
  %y = graph.pad %x {pads = array<i64: 0, 1, 1, 2>, value = 1.5 : f32} : tensor<4x10xf32> -> tensor<5x13xf32>
  func.return %y : tensor<5x13xf32>
}

// A depth-to-space (DCR) reads the channel of the output element's offset in its 2x2 block.
// CUDA-LABEL: // Kernel depth_to_space_3: schedule template 'data_movement' (op=depth_to_space, blocksize=2, mode=DCR, block=128), 128 threads per block
// CUDA:         if (gid < 120) {
// CUDA-NEXT:      const int i1 = (gid / 60) % 2;
// CUDA-NEXT:      const int i2 = (gid / 10) % 6;
// CUDA-NEXT:      const int i3 = gid % 10;
// CUDA-NEXT:      const float v = x[(((((i2 % 2) * 2) + (i3 % 2)) * 2) + i1) * 15 + (i2 / 2) * 5 + (i3 / 2)];
// CUDA-NEXT:      out[i1 * 60 + i2 * 10 + i3] = v;
func.func @depth_to_space(%x: tensor<1x8x3x5xf32>) -> tensor<1x2x6x10xf32> {
  %y = graph.depth_to_space %x {blocksize = 2 : i64, mode = "DCR"} : tensor<1x8x3x5xf32> -> tensor<1x2x6x10xf32>
  func.return %y : tensor<1x2x6x10xf32>
}
