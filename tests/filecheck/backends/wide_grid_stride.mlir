// RUN: tm-opt %s -p 'convert-tm-to-gpu{max-grid=2}' | filecheck %s
// RUN: tm-opt %s -p 'convert-tm-to-gpu{max-grid=2}' | tm-opt | filecheck %s
// RUN: tm-opt %s -p 'convert-tm-to-gpu{max-grid=2},arith-simplify' -t cuda | filecheck %s --check-prefix=CUDA
// RUN: not tm-opt %s -p 'convert-tm-to-gpu{max-grid=0}' 2>&1 | filecheck %s --check-prefix=BAD
//
// convert-tm-to-gpu with a kernel of more blocks than a launch may have (max-grid, CUDA's
// 2^31 - 1 by default, lowered here to 2): the launch takes GRID_STRIDE_BLOCKS blocks (at
// most max-grid) and the kernel loops over its 5 virtual blocks from blockIdx.x by
// gridDim.x. Shared and per-thread arrays and the thread id stay before the loop; every
// tm.block_id becomes the loop counter; a kernel with barriers ends each trip with one, so
// no thread overwrites shared memory that a slower one still reads. The printed IR parses
// back (index_bits, tmgpu.grid_dim).

// CHECK-LABEL: tmgpu.kernel @strided(%x: memref<320xf32>, %y: memref<320xf32>) block(64) {
// CHECK-NEXT:    %tid = tmgpu.thread_id x
// CHECK-NEXT:    %smem = tmgpu.shared_alloc : memref<64xf32>
// CHECK-NEXT:    %first_block = tmgpu.block_id x
// CHECK-NEXT:    %grid_blocks = tmgpu.grid_dim x
// CHECK-NEXT:    %[[N:[0-9]+]] = arith.constant 5 : index
// CHECK-NEXT:    scf.for %bid = %first_block to %[[N]] step %grid_blocks {
// CHECK-NEXT:      %c64 = arith.constant 64 : index
// CHECK-NEXT:      %row = arith.muli %bid, %c64 : index
// CHECK-NEXT:      %i = arith.addi %row, %tid : index
// CHECK-NEXT:      %v = memref.load %x[%i] : memref<320xf32>
// CHECK-NEXT:      memref.store %v, %smem[%tid] : memref<64xf32>
// CHECK-NEXT:      tmgpu.barrier
// CHECK:           %w = memref.load %smem[%rev] : memref<64xf32>
// CHECK-NEXT:      memref.store %w, %y[%i] : memref<320xf32>
// CHECK-NEXT:      tmgpu.barrier
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tm.kernel @strided(%x: memref<320xf32>, %y: memref<320xf32>) grid(5) block(64) {
  %bid = tm.block_id
  %tid = tm.thread_id
  %smem = tm.alloc shared : memref<64xf32>
  %c64 = arith.constant 64 : index
  %row = arith.muli %bid, %c64 : index
  %i = arith.addi %row, %tid : index
  %v = tm.load %x[%i] : memref<320xf32>
  tm.store %v, %smem[%tid] : memref<64xf32>
  tm.barrier
  %c63 = arith.constant 63 : index
  %rev = arith.subi %c63, %tid : index
  %w = tm.load %smem[%rev] : memref<64xf32>
  tm.store %w, %y[%i] : memref<320xf32>
}

// A kernel within max-grid is left as it is, and so is its launch.
// CHECK-LABEL: tmgpu.kernel @small(%x: memref<320xf32>) block(64) {
// CHECK-NEXT:    %bid = tmgpu.block_id x
// CHECK-NEXT:    %tid = tmgpu.thread_id x
// CHECK-NEXT:    %z = arith.constant
// CHECK-NEXT:    memref.store %z, %x[%tid] : memref<320xf32>
// CHECK-NEXT:  }
tm.kernel @small(%x: memref<320xf32>) grid(2) block(64) {
  %bid = tm.block_id
  %tid = tm.thread_id
  %z = arith.constant 0.0 : f32
  tm.store %z, %x[%tid] : memref<320xf32>
}

// CHECK-LABEL: func.func @host(%x: memref<320xf32>, %y: memref<320xf32>) {
// CHECK-NEXT:    tmgpu.launch @strided(%x, %y) grid(2) block(64)
// CHECK-NEXT:    tmgpu.launch @small(%x) grid(2) block(64)
func.func @host(%x: memref<320xf32>, %y: memref<320xf32>) {
  tm.launch @strided(%x, %y) : memref<320xf32>, memref<320xf32>
  tm.launch @small(%x) : memref<320xf32>
  func.return
}

// CUDA-LABEL: extern "C" __global__ void __launch_bounds__(64) strided(
// CUDA-NEXT:    const int tid = threadIdx.x;
// CUDA-NEXT:    __shared__ float smem[64];
// CUDA-NEXT:    const int first_block = blockIdx.x;
// CUDA-NEXT:    const int grid_blocks = gridDim.x;
// CUDA-NEXT:    for (int bid = first_block; bid < 5; bid += grid_blocks) {
// CUDA-NEXT:      const int row = bid * 64;
// CUDA-NEXT:      const int i = row + tid;
// CUDA-NEXT:      const float v = x[i];
// CUDA-NEXT:      smem[tid] = v;
// CUDA-NEXT:      __syncthreads();
// CUDA-NEXT:      const int rev = 63 - tid;
// CUDA-NEXT:      const float w = smem[rev];
// CUDA-NEXT:      y[i] = w;
// CUDA-NEXT:      __syncthreads();
// CUDA-NEXT:    }
// CUDA-NEXT:  }
// CUDA:         strided<<<2, 64, 0, stream>>>

// BAD: convert-tm-to-gpu: max-grid must be in [1, 2147483647], got 0
