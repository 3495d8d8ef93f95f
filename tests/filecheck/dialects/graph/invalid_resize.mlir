// RUN: tm-opt %s --split-input-file --verify-diagnostics
//
// graph.resize's verifier: modes, and the properties that belong to a mode.

func.func @resize_mode(%x: tensor<1x4xf32>) {
  // expected-error@+1 {{unknown mode "area", expected one of nearest, linear, cubic}}
  %y = graph.resize %x {mode = "area", coordinate_transformation_mode = "half_pixel", scales = array<f32: 1.0, 2.0>} : tensor<1x4xf32> -> tensor<1x8xf32>
  func.return
}

// -----

func.func @cubic_coeff_a_of_linear(%x: tensor<1x4xf32>) {
  // expected-error@+1 {{cubic_coeff_a applies to cubic mode only}}
  %y = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel", cubic_coeff_a = -0.5 : f32, scales = array<f32: 1.0, 2.0>} : tensor<1x4xf32> -> tensor<1x8xf32>
  func.return
}

// -----

func.func @antialias_of_nearest(%x: tensor<1x4xf32>) {
  // expected-error@+1 {{antialias applies to linear and cubic modes only}}
  %y = graph.resize %x {mode = "nearest", coordinate_transformation_mode = "half_pixel", antialias, scales = array<f32: 1.0, 0.5>} : tensor<1x4xf32> -> tensor<1x2xf32>
  func.return
}

// -----

func.func @roi_missing(%x: tensor<1x4xf32>) {
  // expected-error@+1 {{a roi is expected with tf_crop_and_resize, and only there}}
  %y = graph.resize %x {mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize", scales = array<f32: 1.0, 2.0>} : tensor<1x4xf32> -> tensor<1x8xf32>
  func.return
}

// -----

func.func @roi_length(%x: tensor<1x4xf32>) {
  // expected-error@+1 {{expected a roi of 4 values (starts, then ends), got 2}}
  %y = graph.resize %x {mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize", roi = array<f32: 0.0, 1.0>, scales = array<f32: 1.0, 2.0>} : tensor<1x4xf32> -> tensor<1x8xf32>
  func.return
}

// -----

func.func @extrapolation_value_elsewhere(%x: tensor<1x4xf32>) {
  // expected-error@+1 {{extrapolation_value applies to tf_crop_and_resize only}}
  %y = graph.resize %x {mode = "linear", coordinate_transformation_mode = "asymmetric", extrapolation_value = 1.0 : f32, scales = array<f32: 1.0, 2.0>} : tensor<1x4xf32> -> tensor<1x8xf32>
  func.return
}

// -----

func.func @f64_coefficient(%x: tensor<1x4xf32>) {
  // expected-error@+1 {{expected f32 attributes, got f64}}
  %y = graph.resize %x {mode = "cubic", coordinate_transformation_mode = "half_pixel", cubic_coeff_a = -0.5 : f64, scales = array<f32: 1.0, 2.0>} : tensor<1x4xf32> -> tensor<1x8xf32>
  func.return
}
