tm.kernel @tile(%out: memref<8x16xf32>) grid(1) block(32) {
  %t = tm.thread_id
  tm.for_task (%i, %j) in spatial(4, 8, ranks=[1, 0]) * repeat(2, 2, ranks=[1, 0], unroll=[true, false]) on %t {
    %one = arith.constant 1.0 : f32
    tm.store %one, %out[%i, %j] : memref<8x16xf32>
  }
}
