// RUN: tm-opt %s --split-input-file --verify-diagnostics -t cost | filecheck %s
// RUN: tm-opt %s --split-input-file --verify-diagnostics -t 'cost{format=json}' | filecheck %s --check-prefix=JSON
// RUN: not tm-opt %s -t cost 2>&1 | filecheck %s --check-prefix=GRAPH
// RUN: not tm-opt %s -t 'cost{format=xml}' 2>&1 | filecheck %s --check-prefix=FORMAT
// RUN: tm-opt %s --split-input-file --verify-diagnostics -t 'cost{gpu=H200}' | filecheck %s --check-prefix=H200
// RUN: not tm-opt %s -t 'cost{gpu=B300}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
//
// -t cost: one row per launch, FLOPs weighted by loop trip counts (the larger branch of an
// scf.if) times grid x block threads, whole buffers read and written (a view of a buffer the
// launch already reads counts once), roofline time on an H100 SXM5. The first chunk is
// graph-level IR: --verify-diagnostics expects its error (a whole-module one, no line) and
// prints nothing for it; without the split (the whole file one module) tm-opt exits 1 with
// that one line.
//
// @scale: 2 FLOPs per thread (the mulf and the addf of the guarded branch; the cmpi is not
// one), 4096 x 256 threads: 2097152 FLOPs; reads and writes 4 MiB, so memory-bound:
// 8 MiB / 3.35 TB/s = 2.504 us.
// @tile: 32 x 8 iterations of a mulf and an addf, plus the larger branch of the epilogue's
// scf.if (a maximumf against nothing): 513 FLOPs per thread, 16 x 256 threads: 2101248
// FLOPs on 16 KiB read (%w and its view %wf: one buffer) and 16 KiB written, an intensity
// of 64 FLOP/byte, above the ridge point (20): compute-bound, 2101248 / 67 TFLOP/s = 0.031 us.
//
// Estimates (tmlir.latency; neither kernel is GEMM-like, so no k-loop): @scale's 256-thread
// blocks at 32 registers are 8 per SM, 4096 blocks are 32 on the busiest of 132 SMs: 4
// rounds of one DRAM round trip (0.8 us) = 3.2 us, above its bytes at 85 % of 3.35 TB/s
// (2.95 us): latency, plus 2 us for the launch = 5.2 us. @tile: 1 round, 0.8 + 2 = 2.8 us.
// On an H200 (4.8 TB/s) the roofline of @scale is 8 MiB / 4.8 TB/s = 1.748 us; the
// estimates are the same (latency-bound).

// CHECK:      {{^}}//{{ -----$}}
// CHECK-NEXT: {{^}}# H100: 132 SMs, 67 TFLOP/s FP32, 989.4 f16/bf16 and 494.7 tf32 on tensor cores, 3.35 TB/s HBM, ridge 20 FLOP/byte; roofline: no launch overhead; estimate: the latency model, launches in a CUDA graph{{$}}
// CHECK-NEXT: {{^}}kernel  template      grid x block  MFLOP  KiB read  KiB written  roofline µs  bound    estimate µs  limit{{$}}
// CHECK-NEXT: {{^}}scale   elementwise     4096 x 256  2.097   4096.00      4096.00        2.504  memory         5.200  latency{{$}}
// CHECK-NEXT: {{^}}tile    hand-written      16 x 256  2.101     16.00        16.00        0.031  compute        2.800  latency{{$}}
// CHECK-NEXT: {{^}}total: 2 launches, 2 kernels, 4.198 MFLOP, 4112.00 KiB read, 4112.00 KiB written, 2.535 µs roofline, 8.000 µs estimated (1 compute-bound, 1 memory-bound){{$}}
// CHECK-NOT:  {{.}}

// JSON:      {{^}}//{{ -----$}}
// JSON-NEXT: {{^}}{
// JSON:      "launches": 2,
// JSON-NEXT: "kernels": 2,
// JSON-NEXT: "flops": 4198400,
// JSON-NEXT: "tensor_flops": 0,
// JSON-NEXT: "bytes_read": 4210688,
// JSON-NEXT: "bytes_written": 4210688,
// JSON:      "kernel": "scale",
// JSON-NEXT: "template": "elementwise",
// JSON-NEXT: "grid": 4096,
// JSON-NEXT: "block": 256,
// JSON-NEXT: "flops": 2097152,
// JSON-NEXT: "bytes_read": 4194304,
// JSON-NEXT: "bytes_written": 4194304,
// JSON:      "bound": "memory",
// JSON:      "kernel": "tile",
// JSON:      "flops": 2101248,
// JSON-NEXT: "bytes_read": 16384,
// JSON-NEXT: "bytes_written": 16384,
// JSON:      "bound": "compute",
// JSON:      "estimate_seconds": 2.8{{0*[0-9]?}}e-06,
// JSON-NEXT: "limit": "latency",
// JSON-NEXT: "registers": 32,
// JSON-NEXT: "resident": 8,
// JSON:      "estimate_us": 2.8{{0*[0-9]?}},
// JSON-NEXT: "intensity": 64.125

// H200:      {{^}}# H200: 132 SMs, 67 TFLOP/s FP32, 989.4 f16/bf16 and 494.7 tf32 on tensor cores, 4.8 TB/s HBM, ridge 14 FLOP/byte;
// H200:      {{^}}scale   elementwise     4096 x 256  2.097   4096.00      4096.00        1.748  memory         5.200  latency{{$}}

// UNKNOWN:     {{^}}tm-opt: error: -t cost: unknown GPU 'B300' (known: A100, H100, H200){{$}}
// UNKNOWN-NOT: {{.}}

// GRAPH:     {{^}}tm-opt: error: {{.*}}.mlir:{{[0-9]+}}:3: 'graph.relu' is above the gpu level; run -p lower-to-cuda first{{$}}
// GRAPH-NEXT: {{^}}  %y = graph.relu %x : tensor<4xf32>{{$}}
// GRAPH-NEXT: {{^ +\^$}}
// GRAPH-NOT: {{.}}

// FORMAT:     {{^}}tm-opt: error: -t cost: format must be one of table, json, got 'xml'{{$}}
// FORMAT-NOT: {{.}}

func.func @graph_level(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'graph.relu' is above the gpu level; run -p lower-to-cuda first}}
  %y = graph.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

tmgpu.kernel @scale(%x: memref<1048576xf32>, %y: memref<1048576xf32>) block(256) attributes {tm.template = "elementwise"} {
  %tid = tmgpu.thread_id x
  %bid = tmgpu.block_id x
  %c256 = arith.constant 256 : index
  %n = arith.constant 1048576 : index
  %0 = arith.muli %bid, %c256 : index
  %i = arith.addi %0, %tid : index
  %in = arith.cmpi ult, %i, %n : index
  scf.if %in {
    %v = memref.load %x[%i] : memref<1048576xf32>
    %sq = arith.mulf %v, %v : f32
    %r = arith.addf %sq, %v : f32
    memref.store %r, %y[%i] : memref<1048576xf32>
  }
}

tmgpu.kernel @tile(%w: memref<64x64xf32>, %wf: memref<4096xf32>, %c: memref<64x64xf32>) block(256) {
  %tid = tmgpu.thread_id x
  %bid = tmgpu.block_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.000000e+00 : f32
  %acc = tmgpu.local_alloc : memref<1xf32>
  memref.store %zero, %acc[%c0] : memref<1xf32>
  %row = arith.divui %tid, %c64 : index
  %col = arith.remui %tid, %c64 : index
  scf.for %kt = %c0 to %c256 step %c8 {
    scf.for %kk = %c0 to %c8 step %c1 {
      %k = arith.remui %kk, %c64 : index
      %a = memref.load %w[%row, %k] : memref<64x64xf32>
      %b = memref.load %wf[%col] : memref<4096xf32>
      %p = arith.mulf %a, %b : f32
      %s = memref.load %acc[%c0] : memref<1xf32>
      %t = arith.addf %s, %p : f32
      memref.store %t, %acc[%c0] : memref<1xf32>
    } {tm.unroll}
  }
  %sum = memref.load %acc[%c0] : memref<1xf32>
  %pos = arith.cmpf ogt, %sum, %zero : f32
  %out = scf.if %pos -> (f32) {
    %m = arith.maximumf %sum, %zero : f32
    scf.yield %m : f32
  } else {
    scf.yield %zero : f32
  }
  memref.store %out, %c[%row, %col] : memref<64x64xf32>
}

func.func @main(%x: memref<1048576xf32>, %y: memref<1048576xf32>) {
  %w = tmgpu.weight "w" : memref<64x64xf32>
  %wf = tmgpu.view %w : memref<64x64xf32> to memref<4096xf32>
  %c = tmgpu.alloc : memref<64x64xf32>
  tmgpu.launch @scale(%x, %y) grid(4096) block(256) : memref<1048576xf32>, memref<1048576xf32>
  tmgpu.launch @tile(%w, %wf, %c) grid(16) block(256) : memref<64x64xf32>, memref<4096xf32>, memref<64x64xf32>
  func.return
}
