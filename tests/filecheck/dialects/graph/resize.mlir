// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
//
// graph.resize's cubic mode (cubic_coeff_a, exclude_outside), antialias and
// tf_crop_and_resize (roi, extrapolation_value) print in the custom syntax and parse back.

// CHECK-LABEL: func.func @cubic
// CHECK-NEXT:    %c = graph.resize %x {mode = "cubic", coordinate_transformation_mode = "half_pixel", scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 1.500000e+00>} : tensor<1x2x4x4xf32> -> tensor<1x2x8x6xf32>
// CHECK-NEXT:    %a = graph.resize %x {mode = "cubic", coordinate_transformation_mode = "asymmetric", cubic_coeff_a = -5.000000e-01 : f32, exclude_outside, scales = array<f32: 1.000000e+00, 1.000000e+00, 5.000000e-01, 2.000000e+00>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x8xf32>
func.func @cubic(%x: tensor<1x2x4x4xf32>) {
  %c = graph.resize %x {mode = "cubic", coordinate_transformation_mode = "half_pixel", scales = array<f32: 1.0, 1.0, 2.0, 1.5>} : tensor<1x2x4x4xf32> -> tensor<1x2x8x6xf32>
  %a = graph.resize %x {mode = "cubic", coordinate_transformation_mode = "asymmetric", cubic_coeff_a = -0.5 : f32, exclude_outside, scales = array<f32: 1.0, 1.0, 0.5, 2.0>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x8xf32>
  func.return
}

// CHECK-LABEL: func.func @antialias
// CHECK-NEXT:    %l = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel", antialias, scales = array<f32: 1.000000e+00, 5.000000e-01, 2.500000e-01>} : tensor<2x8x8xf32> -> tensor<2x4x2xf32>
// CHECK-NEXT:    %c = graph.resize %x {mode = "cubic", coordinate_transformation_mode = "align_corners", exclude_outside, antialias, scales = array<f32: 1.000000e+00, 5.000000e-01, 5.000000e-01>} : tensor<2x8x8xf32> -> tensor<2x4x4xf32>
func.func @antialias(%x: tensor<2x8x8xf32>) {
  %l = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel", antialias, scales = array<f32: 1.0, 0.5, 0.25>} : tensor<2x8x8xf32> -> tensor<2x4x2xf32>
  %c = graph.resize %x {mode = "cubic", coordinate_transformation_mode = "align_corners", exclude_outside, antialias, scales = array<f32: 1.0, 0.5, 0.5>} : tensor<2x8x8xf32> -> tensor<2x4x4xf32>
  func.return
}

// CHECK-LABEL: func.func @tf_crop_and_resize
// CHECK-NEXT:    %n = graph.resize %x {mode = "nearest", coordinate_transformation_mode = "tf_crop_and_resize", roi = array<f32: 0.000000e+00, 2.500000e-01, 1.000000e+00, 1.250000e+00>, scales = array<f32: 1.000000e+00, 2.000000e+00>} : tensor<3x4xf32> -> tensor<3x8xf32>
// CHECK-NEXT:    %l = graph.resize %x {mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize", roi = array<f32: -1.000000e-01, 0.000000e+00, 9.000000e-01, 1.000000e+00>, extrapolation_value = 1.000000e+01 : f32, scales = array<f32: 2.000000e+00, 1.000000e+00>} : tensor<3x4xf32> -> tensor<6x4xf32>
func.func @tf_crop_and_resize(%x: tensor<3x4xf32>) {
  %n = graph.resize %x {mode = "nearest", coordinate_transformation_mode = "tf_crop_and_resize", roi = array<f32: 0.0, 0.25, 1.0, 1.25>, scales = array<f32: 1.0, 2.0>} : tensor<3x4xf32> -> tensor<3x8xf32>
  %l = graph.resize %x {mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize", roi = array<f32: -0.1, 0.0, 0.9, 1.0>, extrapolation_value = 10.0 : f32, scales = array<f32: 2.0, 1.0>} : tensor<3x4xf32> -> tensor<6x4xf32>
  func.return
}
