// RUN: tm-opt %s --split-input-file -p 'convert-graph-to-tm{target-arch=sm_75}' --verify-diagnostics
// RUN: not tm-opt %s --split-input-file -p convert-graph-to-tm 2>&1 | filecheck %s
// (The first RUN line targets sm_75, whose matmuls all take the SIMT or small-M templates: see
// the last cases.)
//
// Invalid pinned schedules: one error each, naming the op (with its place in the text)
// and the parameter. Without --verify-diagnostics the first one stops tm-opt:
// (The same check may also run right after parsing, before any pass: hence no pass name
// in the expectations.)
// CHECK: tm-opt: error: {{.*}}convert_graph_to_tm_schedule_errors.mlir:[[# @LINE + 4]]:3: {{(convert-graph-to-tm: )?}}'graph.matmul': schedule: unknown parameter 'blockk' (did you mean 'block_k'?

func.func @unknown(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>) -> tensor<32x32xf32> {
  // expected-error@+1 {{'graph.matmul': schedule: unknown parameter 'blockk' (did you mean 'block_k'? parameters of matmul_simt: block_warps, lanes, warp_outer, thread_inner, block_k, stages, split_k)}}
  %c = graph.matmul %a, %b {schedule = {blockk = 16}} : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  func.return %c : tensor<32x32xf32>
}

// -----

func.func @derived(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>) -> tensor<32x32xf32> {
  // expected-error@+1 {{'graph.matmul': schedule: 'block_m' is derived from the parameters, not one of them (pin block_warps, lanes, warp_outer, thread_inner, block_k, stages, split_k)}}
  %c = graph.matmul %a, %b {schedule = {block_m = 64}} : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  func.return %c : tensor<32x32xf32>
}

// -----

func.func @wrong_type(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>) -> tensor<32x32xf32> {
  // expected-error@+1 {{'graph.matmul': schedule: parameter 'lanes' expects a pair array<i64: a, b>, got 8 : i64}}
  %c = graph.matmul %a, %b {schedule = {lanes = 8}} : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  func.return %c : tensor<32x32xf32>
}

// -----

func.func @outside_space(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>) -> tensor<32x32xf32> {
  // expected-error@+1 {{'graph.matmul': schedule: parameter 'block_k' = 128 is outside the matmul_simt space (choices: 8, 16, 32, 64)}}
  %c = graph.matmul %a, %b {schedule = {block_k = 128}} : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  func.return %c : tensor<32x32xf32>
}

// -----

// 4x2 warps of 2x2 repeats of 2x16 lanes: a 64 x 256 tile.
func.func @constraint(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>) -> tensor<32x32xf32> {
  // expected-error@+1 {{'graph.matmul': schedule: block_warps=4x2 warp_outer=2x2 breaks the constraint 'block tile <= 128 x 128 (pipeline: 128 x 256, sides <= 256)' of matmul_simt for this problem (candidate: block_warps=4x2 lanes=2x16 warp_outer=2x2 thread_inner=4x4 block_k=8 stages=1 split_k=1)}}
  %c = graph.matmul %a, %b {schedule = {block_warps = array<i64: 4, 2>, warp_outer = array<i64: 2, 2>}} : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  func.return %c : tensor<32x32xf32>
}

// -----

func.func @not_a_dictionary(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>) -> tensor<32x32xf32> {
  // expected-error@+1 {{'graph.matmul': schedule: expects a dictionary of parameters, got "64x64"}}
  %c = graph.matmul %a, %b {schedule = "64x64"} : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
  func.return %c : tensor<32x32xf32>
}

// -----

func.func @no_template(%a: tensor<32x8xf32>) -> tensor<32x8xf32> {
  // expected-error@+1 {{'graph.relu': schedule: this op has no tunable schedule template (schedules pin graph.matmul and 2-D graph.conv on implicit GEMM)}}
  %r = graph.relu %a {schedule = {block_k = 16}} : tensor<32x8xf32>
  func.return %r : tensor<32x8xf32>
}

// -----

// A depthwise convolution has the direct kernel, which has no parameters.
func.func @direct_conv(%x: tensor<1x8x10x10xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x10x10xf32> {
  // expected-error@+1 {{'graph.conv': schedule: this op has no tunable schedule template}}
  %c = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64, schedule = {block_k = 16}} : (tensor<1x8x10x10xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x10x10xf32>
  func.return %c : tensor<1x8x10x10xf32>
}

// -----

func.func @on_the_group(%a: tensor<32x8xf32>, %b: tensor<8x32xf32>) -> tensor<32x32xf32> {
  // expected-error@+1 {{'graph.fused': schedule: put the schedule on the group's anchor (its matmul or convolution), not on the group}}
  %r = graph.fused attributes {schedule = {block_k = 16}} -> tensor<32x32xf32> {
    %c = graph.matmul %a, %b : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
    %r_1 = graph.relu %c : tensor<32x32xf32>
    graph.yield %r_1 : tensor<32x32xf32>
  }
  func.return %r : tensor<32x32xf32>
}

// -----

// A pin of the tensor-core template's parameters, compiled for a GPU without tensor cores
// (nor cp.async: the SIMT template's register path only).
func.func @no_tensor_cores(%a: tensor<32x64xf16>, %b: tensor<64x32xf16>) -> tensor<32x32xf16> {
  // expected-error@+1 {{'graph.matmul': schedule: stages=4 breaks the constraint 'stages > 1 needs cp.async (sm_80+; this is sm_75)' of matmul_simt for this problem (candidate: block_warps=1x1 lanes=2x16 warp_outer=1x1 thread_inner=4x4 block_k=8 stages=4 split_k=1); on sm_75 (no tensor cores) this op takes matmul_simt, not matmul_tc}}
  %c = graph.matmul %a, %b {schedule = {stages = 4}} : (tensor<32x64xf16>, tensor<64x32xf16>) -> tensor<32x32xf16>
  func.return %c : tensor<32x32xf16>
}

// -----

// The same with 16 rows: on sm_75 the small-M template.
func.func @no_tensor_cores_small_m(%a: tensor<16x64xf16>, %b: tensor<64x32xf16>) -> tensor<16x32xf16> {
  // expected-error@+1 {{'graph.matmul': schedule: unknown parameter 'stages' (parameters of matmul_gemv: warps, vector, unroll, block_n); on sm_75 (no tensor cores) this op takes matmul_gemv, not matmul_tc}}
  %c = graph.matmul %a, %b {schedule = {stages = 4}} : (tensor<16x64xf16>, tensor<64x32xf16>) -> tensor<16x32xf16>
  func.return %c : tensor<16x32xf16>
}

// -----

// Small-M pins are checked against the matmul_gemv space: its names and choices, and its
// constraints for the op's problem (B is 8 x 30: 30 columns are not whole vectors of 4).
func.func @gemv_name(%a: tensor<1x8xf32>, %b: tensor<8x30xf32>) -> tensor<1x30xf32> {
  // expected-error@+1 {{'graph.matmul': schedule: unknown parameter 'block_warps' (did you mean 'block_n'? parameters of matmul_gemv: warps, vector, unroll, block_n)}}
  %c = graph.matmul %a, %b {schedule = {block_warps = array<i64: 1, 1>}} : (tensor<1x8xf32>, tensor<8x30xf32>) -> tensor<1x30xf32>
  func.return %c : tensor<1x30xf32>
}

// -----

func.func @gemv_vector(%a: tensor<1x8xf32>, %b: tensor<8x30xf32>) -> tensor<1x30xf32> {
  // expected-error@+1 {{'graph.matmul': schedule: vector=4 block_n=32 breaks the constraint 'vector divides the contiguous dimension' of matmul_gemv for this problem}}
  %c = graph.matmul %a, %b {schedule = {vector = 4, block_n = 32}} : (tensor<1x8xf32>, tensor<8x30xf32>) -> tensor<1x30xf32>
  func.return %c : tensor<1x30xf32>
}
