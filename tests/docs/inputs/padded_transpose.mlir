tm.kernel @transpose(%x: memref<32x32xf32>, %y: memref<32x32xf32>) grid(1) block(1024) {
  %t = tm.thread_id
  %tile = tm.alloc shared layout(row_major(32, 32, pad=1)) : memref<32x32xf32>
  tm.for_task (%i, %j) in spatial(32, 32) on %t {
    %v = tm.load %x[%i, %j] : memref<32x32xf32>
    tm.store %v, %tile[%i, %j] : memref<32x32xf32>
  }
  tm.barrier
  tm.for_task (%j, %i) in spatial(32, 32) on %t {
    %v = tm.load %tile[%i, %j] : memref<32x32xf32>
    tm.store %v, %y[%j, %i] : memref<32x32xf32>
  }
}
