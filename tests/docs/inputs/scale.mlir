tm.kernel @scale(%x: memref<1000xf32>, %y: memref<1000xf32>) grid(4) block(256) {
  %bid = tm.block_id
  %tid = tm.thread_id
  %c256 = arith.constant 256 : index
  %0 = arith.muli %bid, %c256 : index
  %i = arith.addi %0, %tid : index
  %v = tm.load %x[%i] guard [0] : memref<1000xf32>
  %two = arith.constant 2.0 : f32
  %r = arith.mulf %v, %two : f32
  tm.store %r, %y[%i] guard [0] : memref<1000xf32>
}
