// RUN: tm-opt %s --split-input-file -p convert-graph-to-tm | filecheck %s
// RUN: tm-opt %s --split-input-file -p 'lower-to-cuda{fusion=false}' -t cuda | filecheck %s --check-prefix=CUDA
//
// The recurrence template (schedules/recurrent.py): one block per (batch row, direction),
// a thread per hidden unit reading R transposed (consecutive threads, consecutive
// addresses), h in shared memory as two halves read and written in turns (one barrier a
// step), c in registers, the time loop inside the kernel; with sequence_lens the loop
// stops at the row's length, the rest of Y is zeros, and an empty row's states are zeros.

// CHECK-LABEL: tm.kernel @recurrence_0(%xw: memref<5x2x2x160xf32>, %rt: memref<2x40x160xf32>, %lens: memref<2xi32>, %h0: memref<2x2x40xf32>, %y: memref<5x2x2x40xf32>, %y_h: memref<2x2x40xf32>, %y_c: memref<2x2x40xf32>) grid(4) block(64)
// CHECK-SAME:    tm.params = {cell = "lstm", direction = "bidirectional", steps = 5 : i64, hidden = 40 : i64, threads = 64 : i64, units_per_thread = 1 : i64}
// CHECK:         %h = tm.alloc shared : memref<2x40xf32>
// CHECK:         %c = tm.alloc register : memref<1xf32>
// CHECK:         tm.for_task (%n, %d) in spatial(2, 2) on %bid {
// CHECK:             tm.store %h_init, %h[%{{.*}}, %lane] : memref<2x40xf32>
// CHECK:           tm.barrier
// CHECK:           %len = arith.index_cast
// CHECK:           scf.for %step = %{{.*}} to %len step
// CHECK:             %t = arith.select %backward, %t_back, %step : index
// CHECK:             %cur = arith.remui %step, %{{.*}} : index
// CHECK:             %next = arith.subi %{{.*}}, %cur : index
// CHECK:               scf.for %k =
// CHECK-NEXT:            %hk = tm.load %h[%cur, %k] : memref<2x40xf32>
// CHECK-COUNT-4:         tm.load %rt[%d, %k, {{.*}}] : memref<2x40x160xf32>
// CHECK:               tm.store %{{.*}}, %c[%{{.*}}] : memref<1xf32>
// CHECK:               tm.store %[[H:.*]], %h[%next, %lane_1] : memref<2x40xf32>
// CHECK-NEXT:          tm.store %[[H]], %y[%t, %d, %n, %lane_1] : memref<5x2x2x40xf32>
// CHECK:             tm.barrier
// CHECK-NEXT:      }
// CHECK-NEXT:      %{{.*}} = arith.constant 5 : index
// CHECK:           scf.for %pad = %len to
// CHECK:               tm.store %{{.*}}, %y[%pad, %d, %n, %{{.*}}] : memref<5x2x2x40xf32>
// CHECK:           %empty = arith.cmpi eq, %len, %{{.*}} : index
// CHECK:           %last = arith.remui %len, %{{.*}} : index
// CHECK:               %h_last = tm.load %h[%last, %{{.*}}] : memref<2x40xf32>
// CHECK:               %[[HL:.*]] = arith.select %empty, %{{.*}}, %h_last : f32
// CHECK-NEXT:          tm.store %[[HL]], %y_h[%d, %n, %{{.*}}] : memref<2x2x40xf32>
// CHECK:               %[[CL:.*]] = arith.select %empty, %{{.*}}, %c_last : f32
// CHECK-NEXT:          tm.store %[[CL]], %y_c[%d, %n, %{{.*}}] : memref<2x2x40xf32>

// CUDA-LABEL: // Kernel recurrence_0: schedule template 'recurrence' (cell=lstm, direction=bidirectional, steps=5, hidden=40, threads=64, units_per_thread=1), 64 threads per block
// CUDA:         __shared__ float h[2][40];
// CUDA:         const int len = (len_raw < 0) ? 0 : ((len_raw > 5) ? 5 : len_raw);
// CUDA:         for (int step = 0; step < len; ++step) {
// CUDA:           const int t = backward ? t_back : step;
// CUDA:           const int cur = step % 2;
// CUDA:           for (int k = 0; k < 40; ++k) {
// CUDA-NEXT:        const float hk = h[cur][k];
// CUDA-NEXT:        const float w = rt[d * 6400 + k * 160 + tid];
// CUDA:             h[next][tid] = v_5;
// CUDA-NEXT:        y[t * 160 + d * 80 + n * 40 + tid] = v_5;
// CUDA-NEXT:      }
// CUDA-NEXT:      __syncthreads();
// CUDA-NEXT:    }
// CUDA-NEXT:    for (int pad = len; pad < 5; ++pad) {
// CUDA:         const bool empty = len == 0;
// CUDA:           const float h_last = h[last][tid];
// CUDA:           y_h[d * 80 + n * 40 + tid] = empty ? 0.0f : h_last;
// CUDA-NEXT:      y_c[d * 80 + n * 40 + tid] = empty ? 0.0f : c_last;
func.func @lstm(%p: tensor<5x2x2x160xf32>, %r: tensor<2x40x160xf32>, %lens: tensor<2xi32>, %h0: tensor<2x2x40xf32>) -> tensor<5x2x2x40xf32> {
  %y, %y_h, %y_c = graph.recurrence %p, %r lens(%lens : tensor<2xi32>) h0(%h0 : tensor<2x2x40xf32>) {cell = "lstm", direction = "bidirectional", activations = ["sigmoid", "tanh", "tanh", "sigmoid", "tanh", "tanh"]} : tensor<5x2x2x160xf32>, tensor<2x40x160xf32> -> tensor<5x2x2x40xf32>, tensor<2x2x40xf32>, tensor<2x2x40xf32>
  func.return %y : tensor<5x2x2x40xf32>
}

// -----

// A GRU without linear_before_reset: r ⊙ h and z go to shared buffers, and the candidate
// state waits at a barrier for all of r ⊙ h. 300 units: two per thread of 256, the second
// one guarded.

// CHECK-LABEL: tm.kernel @recurrence_0
// CHECK-SAME:    grid(3) block(256)
// CHECK-SAME:    tm.params = {cell = "gru", direction = "reverse", steps = 4 : i64, hidden = 300 : i64, threads = 256 : i64, units_per_thread = 2 : i64}
// CHECK:         %h = tm.alloc shared : memref<2x300xf32>
// CHECK:         %rh = tm.alloc shared : memref<300xf32>
// CHECK:         %z = tm.alloc shared : memref<300xf32>
// CHECK:         scf.for %step =
// CHECK:           %t_back = arith.subi
// CHECK:             tm.store %{{.*}}, %z[%lane_2] : memref<300xf32>
// CHECK:             tm.store %{{.*}}, %rh[%lane_2] : memref<300xf32>
// CHECK:             %in_hidden_1 = arith.cmpi ult, %j_1, %{{.*}} : index
// CHECK:               tm.store %{{.*}}, %rh[%j_1] : memref<300xf32>
// CHECK:           tm.barrier
// CHECK:               tm.load %rh[%k{{.*}}] : memref<300xf32>
// CHECK:             tm.store %{{.*}}, %h[%next, %lane_4] : memref<2x300xf32>
// CHECK:           tm.barrier
// CHECK-NEXT:    }

// CUDA-LABEL: // Kernel recurrence_0: schedule template 'recurrence' (cell=gru, direction=reverse, steps=4, hidden=300, threads=256, units_per_thread=2), 256 threads per block
// CUDA:         __shared__ float h[2][300];
// CUDA:         __shared__ float rh[300];
// CUDA:         __shared__ float z[300];
// CUDA:         for (int step = 0; step < 4; ++step) {
// CUDA-COUNT-2:   __syncthreads();
// CUDA-NEXT:    }
// CUDA:         const float h_last = h[0][tid];
func.func @gru(%p: tensor<4x3x1x900xf32>, %r: tensor<1x300x900xf32>, %b: tensor<1x1800xf32>) -> tensor<1x3x300xf32> {
  %y, %y_h = graph.recurrence %p, %r bias(%b : tensor<1x1800xf32>) {cell = "gru", direction = "reverse", activations = ["sigmoid", "tanh"]} : tensor<4x3x1x900xf32>, tensor<1x300x900xf32> -> tensor<4x1x3x300xf32>, tensor<1x3x300xf32>
  func.return %y_h : tensor<1x3x300xf32>
}
