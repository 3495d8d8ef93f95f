// RUN: tm-opt %s --split-input-file -p 'graph-outline-constants,graph-mixed-precision' | filecheck %s
// RUN: tm-opt %s --split-input-file -p 'graph-outline-constants,graph-mixed-precision{dtype=bf16}' | filecheck %s --check-prefix=BF16
// RUN: tm-opt %s --split-input-file -p graph-mixed-precision | filecheck %s --check-prefix=NOTABLE
// RUN: tm-opt %s --split-input-file -p 'graph-outline-constants,graph-mixed-precision{dtype=tf32}' | filecheck %s --check-prefix=TF32
// RUN: not tm-opt %s -p 'graph-mixed-precision{dtype=fp16}' 2>&1 | filecheck %s --check-prefix=BADDTYPE
// RUN: not tm-opt %s -p 'lower-to-cuda{precision=f16}' 2>&1 | filecheck %s --check-prefix=BADPRECISION
//
// graph-mixed-precision: an f32 matmul the tensor-core template takes reads f16 (bf16)
// operands; the bias and result stay f32. A weight is converted at compile time into a
// new table entry, shared by every matmul that reads it; an activation gets one cast.

// BADDTYPE: tm-opt: error: option 'dtype' of pass 'graph-mixed-precision' expects one of f16, bf16, tf32, got 'fp16'; did you mean 'f16'?
// BADPRECISION: tm-opt: error: option 'precision' of pass 'lower-to-cuda' expects one of fp32, fp16, bf16, tf32, got 'f16'; did you mean 'fp16'?

// CHECK-LABEL: func.func @shared_weight
// CHECK-NEXT:    %x_f16 = graph.cast %x : tensor<32x64xf32> -> tensor<32x64xf16>
// CHECK-NEXT:    %w_f16 = graph.weight "w.f16" : tensor<64x48xf16>
// CHECK-NEXT:    %b = graph.weight "b" : tensor<48xf32>
// CHECK-NEXT:    %y = graph.matmul %x_f16, %w_f16, %b : (tensor<32x64xf16>, tensor<64x48xf16>, tensor<48xf32>) -> tensor<32x48xf32>
// CHECK-NEXT:    %z = graph.matmul %x_f16, %w_f16 : (tensor<32x64xf16>, tensor<64x48xf16>) -> tensor<32x48xf32>
// CHECK-NEXT:    func.return
// BF16-LABEL: func.func @shared_weight
// BF16-NEXT:    %x_bf16 = graph.cast %x : tensor<32x64xf32> -> tensor<32x64xbf16>
// BF16-NEXT:    %w_bf16 = graph.weight "w.bf16" : tensor<64x48xbf16>
// BF16:         %y = graph.matmul %x_bf16, %w_bf16, %b : (tensor<32x64xbf16>, tensor<64x48xbf16>, tensor<48xf32>) -> tensor<32x48xf32>
// tf32 converts nothing: it marks the matmuls the tensor-core template takes (TF32 mma).
// TF32-LABEL: func.func @shared_weight
// TF32-NEXT:    %w = graph.weight "w" : tensor<64x48xf32>
// TF32-NEXT:    %b = graph.weight "b" : tensor<48xf32>
// TF32-NEXT:    %y = graph.matmul %x, %w, %b {tf32} : (tensor<32x64xf32>, tensor<64x48xf32>, tensor<48xf32>) -> tensor<32x48xf32>
// TF32-NEXT:    %z = graph.matmul %x, %w {tf32} : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
// TF32-NEXT:    func.return
// Run on its own, the pass converts a graph.constant in place.
// NOTABLE-LABEL: func.func @shared_weight
// NOTABLE-NEXT:    %x_f16 = graph.cast %x : tensor<32x64xf32> -> tensor<32x64xf16>
// NOTABLE-NEXT:    %w_f16 = graph.constant dense<1.500000e+00> : tensor<64x48xf16>
// NOTABLE-NEXT:    %b = graph.constant
// NOTABLE-NEXT:    %y = graph.matmul %x_f16, %w_f16, %b
func.func @shared_weight(%x: tensor<32x64xf32>) -> (tensor<32x48xf32>, tensor<32x48xf32>) {
  %w = graph.constant dense<1.5> : tensor<64x48xf32>
  %b = graph.constant dense<0.5> : tensor<48xf32>
  %y = graph.matmul %x, %w, %b : (tensor<32x64xf32>, tensor<64x48xf32>, tensor<48xf32>) -> tensor<32x48xf32>
  %z = graph.matmul %x, %w : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  func.return %y, %z : tensor<32x48xf32>, tensor<32x48xf32>
}

// -----

// A weight something else still reads keeps its f32 op beside the converted copy.
// CHECK-LABEL: func.func @weight_read_elsewhere
// CHECK-NEXT:    %x_f16 = graph.cast %x
// CHECK-NEXT:    %w = graph.weight "[[W:w[_0-9]*]]" : tensor<64x64xf32>
// CHECK-NEXT:    %w_f16 = graph.weight "[[W]].f16" : tensor<64x64xf16>
// CHECK:         graph.matmul %x_f16, %w_f16 : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf32>
// CHECK-NEXT:    graph.add %y, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
func.func @weight_read_elsewhere(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %w = graph.constant dense<0.25> : tensor<64x64xf32>
  %y = graph.matmul %x, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = graph.add %y, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %r : tensor<64x64xf32>
}

// -----

// Left alone: f64 operands, K not a multiple of 8, operands already f16, a pinned schedule.
// CHECK-LABEL: func.func @not_taken
// CHECK-NEXT:    %0 = graph.matmul %a, %b : (tensor<32x64xf64>, tensor<64x48xf64>) -> tensor<32x48xf64>
// CHECK-NEXT:    %1 = graph.matmul %c, %d : (tensor<32x60xf32>, tensor<60x48xf32>) -> tensor<32x48xf32>
// CHECK-NEXT:    %2 = graph.matmul %e, %f : (tensor<32x64xf16>, tensor<64x48xf16>) -> tensor<32x48xf32>
// CHECK-NEXT:    %3 = graph.matmul %g, %h {schedule = {block_k = 16 : i64}} : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
// CHECK-NEXT:    func.return
// NOTABLE-LABEL: func.func @not_taken
// NOTABLE-NOT:     graph.cast
// NOTABLE:         func.return
func.func @not_taken(%a: tensor<32x64xf64>, %b: tensor<64x48xf64>, %c: tensor<32x60xf32>,
                     %d: tensor<60x48xf32>, %e: tensor<32x64xf16>, %f: tensor<64x48xf16>,
                     %g: tensor<32x64xf32>, %h: tensor<64x48xf32>)
    -> (tensor<32x48xf64>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x48xf32>) {
  %0 = graph.matmul %a, %b : (tensor<32x64xf64>, tensor<64x48xf64>) -> tensor<32x48xf64>
  %1 = graph.matmul %c, %d : (tensor<32x60xf32>, tensor<60x48xf32>) -> tensor<32x48xf32>
  %2 = graph.matmul %e, %f : (tensor<32x64xf16>, tensor<64x48xf16>) -> tensor<32x48xf32>
  %3 = graph.matmul %g, %h {schedule = {block_k = 16}} : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  func.return %0, %1, %2, %3 : tensor<32x48xf64>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x48xf32>
}

// -----

// Without a weight table (a .mlir file under tm-opt) a graph.weight has no data to
// convert: it is cast like an activation.
// NOTABLE-LABEL: func.func @weight_without_table
// NOTABLE-NEXT:    %x_f16 = graph.cast %x
// NOTABLE-NEXT:    %w = graph.weight "w" : tensor<64x48xf32>
// NOTABLE-NEXT:    %w_f16 = graph.cast %w : tensor<64x48xf32> -> tensor<64x48xf16>
// NOTABLE-NEXT:    %y = graph.matmul %x_f16, %w_f16
func.func @weight_without_table(%x: tensor<32x64xf32>) -> tensor<32x48xf32> {
  %w = graph.weight "w" : tensor<64x48xf32>
  %y = graph.matmul %x, %w : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  func.return %y : tensor<32x48xf32>
}

// -----

// A reshape has no kernel: its input is narrowed and reshaped instead, so the cast reads
// the value its producer writes (graph-partition can then put it in the producer's kernel).
// CHECK-LABEL: func.func @reshape_narrowed
// CHECK-NEXT:    %x_f16 = graph.cast %x : tensor<2x16x64xf32> -> tensor<2x16x64xf16>
// CHECK-NEXT:    %w_f16 = graph.weight "w.f16" : tensor<64x48xf16>
// CHECK-NEXT:    %f_f16 = graph.reshape %x_f16 : tensor<2x16x64xf16> -> tensor<32x64xf16>
// CHECK-NEXT:    %y = graph.matmul %f_f16, %w_f16 : (tensor<32x64xf16>, tensor<64x48xf16>) -> tensor<32x48xf32>
// CHECK-NEXT:    func.return %y
func.func @reshape_narrowed(%x: tensor<2x16x64xf32>) -> tensor<32x48xf32> {
  %w = graph.constant dense<0.5> : tensor<64x48xf32>
  %f = graph.reshape %x : tensor<2x16x64xf32> -> tensor<32x64xf32>
  %y = graph.matmul %f, %w : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  func.return %y : tensor<32x48xf32>
}

// -----

// A float16 value widened to f32 (a float16 model's cast before a float32 matmul) is its
// own narrow copy: the matmul reads it, no cast back.
// CHECK-LABEL: func.func @widened_half
// CHECK-NEXT:    %w_f16 = graph.weight "w.f16" : tensor<64x48xf16>
// CHECK-NEXT:    %y = graph.matmul %x, %w_f16 : (tensor<32x64xf16>, tensor<64x48xf16>) -> tensor<32x48xf32>
// CHECK-NEXT:    func.return %y
func.func @widened_half(%x: tensor<32x64xf16>) -> tensor<32x48xf32> {
  %w = graph.constant dense<0.5> : tensor<64x48xf32>
  %x32 = graph.cast %x : tensor<32x64xf16> -> tensor<32x64xf32>
  %y = graph.matmul %x32, %w : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  func.return %y : tensor<32x48xf32>
}
