// RUN: tm-opt %s --split-input-file | filecheck %s
// RUN: tm-opt %s --split-input-file | tm-opt --split-input-file | filecheck %s
//
// graph.recurrence (dialects/graph/recurrent.py): the time loop of an LSTM, GRU or RNN on
// its precomputed input projection. Optional operands are keyword groups with their types;
// every property prints in the attribute dictionary. Verifier errors are tested in
// tests/frontends/test_onnx_recurrent.py::test_verifier.

// CHECK-LABEL: func.func @lstm_forward
// CHECK:         %y, %y_h, %y_c = graph.recurrence %p, %r bias(%b : tensor<1x80xf32>) {cell = "lstm", direction = "forward", activations = ["sigmoid", "tanh", "tanh"]} : tensor<7x3x1x40xf32>, tensor<1x10x40xf32> -> tensor<7x1x3x10xf32>, tensor<1x3x10xf32>, tensor<1x3x10xf32>
// CHECK-NEXT:    func.return %y_h : tensor<1x3x10xf32>
func.func @lstm_forward(%p: tensor<7x3x1x40xf32>, %r: tensor<1x10x40xf32>, %b: tensor<1x80xf32>) -> tensor<1x3x10xf32> {
  %y, %y_h, %y_c = graph.recurrence %p, %r bias(%b : tensor<1x80xf32>) {cell = "lstm", direction = "forward", activations = ["sigmoid", "tanh", "tanh"]} : tensor<7x3x1x40xf32>, tensor<1x10x40xf32> -> tensor<7x1x3x10xf32>, tensor<1x3x10xf32>, tensor<1x3x10xf32>
  func.return %y_h : tensor<1x3x10xf32>
}

// -----

// CHECK-LABEL: func.func @gru_bidirectional_batch_major
// CHECK:         %y, %y_h = graph.recurrence %p, %r lens(%lens : tensor<3xi32>) h0(%h0 : tensor<3x2x5xf32>) {cell = "gru", direction = "bidirectional", activations = ["sigmoid", "tanh", "sigmoid", "relu"], batch_major, linear_before_reset, clip = 2.500000e+00 : f32} : tensor<3x5x2x15xf32>, tensor<2x5x15xf32> -> tensor<3x5x2x5xf32>, tensor<3x2x5xf32>
func.func @gru_bidirectional_batch_major(%p: tensor<3x5x2x15xf32>, %r: tensor<2x5x15xf32>, %lens: tensor<3xi32>, %h0: tensor<3x2x5xf32>) -> tensor<3x5x2x5xf32> {
  %y, %y_h = graph.recurrence %p, %r lens(%lens : tensor<3xi32>) h0(%h0 : tensor<3x2x5xf32>) {cell = "gru", direction = "bidirectional", activations = ["sigmoid", "tanh", "sigmoid", "relu"], batch_major, linear_before_reset, clip = 2.5 : f32} : tensor<3x5x2x15xf32>, tensor<2x5x15xf32> -> tensor<3x5x2x5xf32>, tensor<3x2x5xf32>
  func.return %y : tensor<3x5x2x5xf32>
}

// -----

// CHECK-LABEL: func.func @lstm_every_operand
// CHECK:         graph.recurrence %p, %r bias(%b : tensor<1x16xf32>) lens(%lens : tensor<2xi64>) h0(%h0 : tensor<1x2x2xf32>) c0(%c0 : tensor<1x2x2xf32>) peepholes(%pp : tensor<1x6xf32>) {cell = "lstm", direction = "reverse", activations = ["sigmoid", "tanh", "tanh"], input_forget}
func.func @lstm_every_operand(%p: tensor<4x2x1x8xf32>, %r: tensor<1x2x8xf32>, %b: tensor<1x16xf32>, %lens: tensor<2xi64>, %h0: tensor<1x2x2xf32>, %c0: tensor<1x2x2xf32>, %pp: tensor<1x6xf32>) -> tensor<4x1x2x2xf32> {
  %y, %y_h, %y_c = graph.recurrence %p, %r bias(%b : tensor<1x16xf32>) lens(%lens : tensor<2xi64>) h0(%h0 : tensor<1x2x2xf32>) c0(%c0 : tensor<1x2x2xf32>) peepholes(%pp : tensor<1x6xf32>) {cell = "lstm", direction = "reverse", activations = ["sigmoid", "tanh", "tanh"], input_forget} : tensor<4x2x1x8xf32>, tensor<1x2x8xf32> -> tensor<4x1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>
  func.return %y : tensor<4x1x2x2xf32>
}

// -----

// CHECK-LABEL: func.func @rnn
// CHECK:         %y, %y_h = graph.recurrence %p, %r {cell = "rnn", direction = "forward", activations = ["tanh"]} : tensor<2x1x1x4xf32>, tensor<1x4x4xf32> -> tensor<2x1x1x4xf32>, tensor<1x1x4xf32>
func.func @rnn(%p: tensor<2x1x1x4xf32>, %r: tensor<1x4x4xf32>) -> tensor<1x1x4xf32> {
  %y, %y_h = graph.recurrence %p, %r {cell = "rnn", direction = "forward", activations = ["tanh"]} : tensor<2x1x1x4xf32>, tensor<1x4x4xf32> -> tensor<2x1x1x4xf32>, tensor<1x1x4xf32>
  func.return %y_h : tensor<1x1x4xf32>
}
