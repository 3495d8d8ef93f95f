// RUN: tm-opt %s --split-input-file -p 'lower-to-cuda{fusion=false}' | filecheck %s --check-prefix=IR
// RUN: tm-opt %s --split-input-file -p 'lower-to-cuda{fusion=false}' -t cuda | filecheck %s
//
// Index arithmetic is 64-bit only in the kernels that need it: convert-tm-to-gpu marks a
// kernel whose index values may pass 2^31 - 1 (a buffer of more elements, more threads,
// index arithmetic that reaches further) with index_bits(64), and -t cuda gives its
// `index` values the C type `long long`, with a constant index times a stride folded
// (2 * 1000000000 would overflow an int). Every other kernel keeps `int`, its text as it
// always was. A grid past CUDA's 2^31 - 1 blocks is launched with 65536 blocks that loop
// over the virtual ones (grid-stride).

// The last row of a [3, 10^9] uint8 tensor: 3e9 elements, so 64-bit indices.
// IR-LABEL: tmgpu.kernel @slice_0(%x: memref<3x1000000000xui8>, %out: memref<1x1000000000xui8>) block(256) index_bits(64)
// IR:         tmgpu.launch @slice_0(%x, %y_out) grid(3906250) block(256)
// CHECK-LABEL: // Kernel slice_0: schedule template 'data_movement' (op=slice, starts=2,0, steps=1,1, block=256), 256 threads per block, 64-bit indices
// CHECK-NEXT:  extern "C" __global__ void __launch_bounds__(256) slice_0(const unsigned char* __restrict__ x, unsigned char* __restrict__ out) {
// CHECK-NEXT:    const long long bid = blockIdx.x;
// CHECK-NEXT:    const long long tid = threadIdx.x;
// CHECK-NEXT:    const long long gid = (bid * 256) + tid;
// CHECK-NEXT:    const long long i1 = gid % 1000000000;
// CHECK-NEXT:    const unsigned char v = x[2000000000 + i1];
// CHECK-NEXT:    out[i1] = v;
// CHECK-NEXT:  }
func.func @slice_last_row(%x: tensor<3x1000000000xui8>) -> tensor<1x1000000000xui8> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
  %y = graph.slice %x {starts = array<i64: 2, 0>, steps = array<i64: 1, 1>} : tensor<3x1000000000xui8> -> tensor<1x1000000000xui8>
  func.return %y : tensor<1x1000000000xui8>
}

// -----

// The same slice of a [3, 1000] tensor: int, the constant row offset as before.
// IR-LABEL: tmgpu.kernel @slice_0(%x: memref<3x1000xui8>, %out: memref<1x1000xui8>) block(256) attributes {
// CHECK-LABEL: // Kernel slice_0: schedule template 'data_movement' (op=slice, starts=2,0, steps=1,1, block=256), 256 threads per block
// CHECK-NEXT:  extern "C" __global__ void __launch_bounds__(256) slice_0(
// CHECK-NEXT:    const int bid = blockIdx.x;
// CHECK-NEXT:    const int tid = threadIdx.x;
// CHECK-NEXT:    const int gid = (bid * 256) + tid;
// CHECK-NEXT:    if (gid < 1000) {
// CHECK-NEXT:      const int i1 = gid % 1000;
// CHECK-NEXT:      const unsigned char v = x[2 * 1000 + i1];
// CHECK-NOT:   long long
func.func @slice_small(%x: tensor<3x1000xui8>) -> tensor<1x1000xui8> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
  %y = graph.slice %x {starts = array<i64: 2, 0>, steps = array<i64: 1, 1>} : tensor<3x1000xui8> -> tensor<1x1000xui8>
  func.return %y : tensor<1x1000xui8>
}

// -----

// A row sum over 1000 rows of 10^9: the block's threads loop over the row in 64 bits.
// CHECK-LABEL: // Kernel reduce_sum_0: {{.*}}, 1024 threads per block, 64-bit indices
// CHECK:         for (long long i = 0; i < 976563; ++i) {
// CHECK-NEXT:      const long long c = (i * 1024) + tid;
// CHECK:             const float v = x[bid * 1000000000 + c];
// CHECK:         reduce_sum_0<<<1000, 1024, 0, stream>>>
func.func @row_sums(%x: tensor<1000x1000000000xf32>) -> tensor<1000xf32> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
  %y = graph.reduce_sum %x {axes = array<i64: 1>} : tensor<1000x1000000000xf32> -> tensor<1000xf32>
  func.return %y : tensor<1000xf32>
}

// -----

// 10^12 elements: 3906250000 blocks of 256 threads, past CUDA's 2^31 - 1. The launch takes
// 65536 blocks; each loops over the virtual blocks.
// IR-LABEL: tmgpu.kernel @relu_0({{.*}}) block(256) index_bits(64)
// IR:         scf.for %bid = %first_block to %{{.*}} step %grid_blocks {
// IR:         tmgpu.launch @relu_0(%x, %y_out) grid(65536) block(256)
// CHECK-LABEL: // Kernel relu_0: {{.*}}, 256 threads per block, 64-bit indices
// CHECK:         const long long first_block = blockIdx.x;
// CHECK-NEXT:    const long long grid_blocks = gridDim.x;
// CHECK-NEXT:    for (long long bid = first_block; bid < 3906250000LL; bid += grid_blocks) {
// CHECK-NEXT:      const long long idx = (bid * 256) + tid;
// CHECK:         relu_0<<<65536, 256, 0, stream>>>
func.func @relu_huge(%x: tensor<1000000000000xf32>) -> tensor<1000000000000xf32> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
  %y = graph.relu %x : tensor<1000000000000xf32>
  func.return %y : tensor<1000000000000xf32>
}
