// The example plugin (examples/plugin) loaded with --load-plugin: its pass forms its op,
// and its schedule template compiles the op to CUDA.
// RUN: env PYTHONPATH=%S/../../../examples/plugin tm-opt %s --load-plugin tmlir_example_plugin -p example-fuse-swish | filecheck %s
// RUN: env PYTHONPATH=%S/../../../examples/plugin tm-opt %s --load-plugin tmlir_example_plugin -p example-fuse-swish,lower-to-cuda -t cuda | filecheck %s --check-prefix=CUDA
// RUN: not tm-opt %s --load-plugin no_such_plugin 2>&1 | filecheck %s --check-prefix=MISSING

// CHECK-LABEL: func.func @swish
// CHECK-NEXT:    %y = example.swish %x : tensor<2x3xf32>
// CHECK-NEXT:    func.return %y : tensor<2x3xf32>

// CUDA: // Kernel swish_0: schedule template 'elementwise' (block=32, expr=swish(x0))
// CUDA: x / (1.0f + expf(-x))

// MISSING: tm-opt: error: plugin 'no_such_plugin': cannot import it: ModuleNotFoundError: No module named 'no_such_plugin'
func.func @swish(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = graph.sigmoid %x : tensor<2x3xf32>
  %y = graph.mul %x, %s : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
