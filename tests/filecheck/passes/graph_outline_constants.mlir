// RUN: tm-opt %s --split-input-file -p graph-outline-constants | filecheck %s
// RUN: tm-opt %s --split-input-file -p lower-to-cuda -t cuda | filecheck %s --check-prefix=CUDA
//
// graph-outline-constants: each graph.constant becomes a graph.weight named after its SSA
// name (numbered when the name is taken), its data moved into the weight table; the
// round trip prints and parses dense and splat constants of several element types.

// CHECK-LABEL: func.func @named
// CHECK-NEXT:    %w = graph.weight "w" : tensor<2x2xf32>
// CHECK-NEXT:    %b = graph.weight "b" : tensor<2xf32>
// CHECK-NEXT:    %y = graph.matmul %x, %w, %b
// CHECK-NOT:     graph.constant
// The weights are device buffers of the program, like those of an ONNX model.
// CUDA-LABEL: // Host launch sequence.
// CUDA:       (weight 'w')
// CUDA:       (weight 'b')
func.func @named(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = graph.constant dense<0.5> : tensor<2xf32>
  %y = graph.matmul %x, %w, %b : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}

// -----

// A name a graph.weight of the module already has is not reused.
// CHECK-LABEL: func.func @taken
// CHECK-NEXT:    %w = graph.weight "w_1" : tensor<4xf32>
// CHECK-NEXT:    %{{.*}} = graph.weight "w" : tensor<4xf32>
// CHECK-NEXT:    %{{.*}} = graph.weight "constant" : tensor<4xf32>
func.func @taken(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = graph.weight "w" : tensor<4xf32>
  %1 = graph.constant dense<1.0> : tensor<4xf32>
  %a = graph.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = graph.add %a, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = graph.add %b, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// Integer, half and bool constants.
// CHECK-LABEL: func.func @types
// CHECK-NEXT:    %i = graph.weight "i" : tensor<3xi64>
// CHECK-NEXT:    %h = graph.weight "h" : tensor<2xf16>
// CHECK-NEXT:    %m = graph.weight "m" : tensor<3xi1>
func.func @types(%x: tensor<3xi64>) -> (tensor<3xi64>, tensor<2xf16>, tensor<3xi1>) {
  %i = graph.constant dense<[1, -2, 3]> : tensor<3xi64>
  %h = graph.constant dense<1.5> : tensor<2xf16>
  %m = graph.constant dense<[true, false, true]> : tensor<3xi1>
  %s = graph.add %x, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  func.return %s, %h, %m : tensor<3xi64>, tensor<2xf16>, tensor<3xi1>
}

// -----

// Each chunk of --split-input-file starts with no weight table: the same SSA name gives
// the same weight name in every chunk (not c_1, c_2 after an earlier chunk's c).
// CHECK-LABEL: func.func @chunk_a
// CHECK:         graph.weight "c" : tensor<2xf32>
func.func @chunk_a() -> tensor<2xf32> {
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  func.return %c : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @chunk_b
// CHECK:         graph.weight "c" : tensor<2xf32>
func.func @chunk_b() -> tensor<2xf32> {
  %c = graph.constant dense<[3.0, 4.0]> : tensor<2xf32>
  func.return %c : tensor<2xf32>
}
