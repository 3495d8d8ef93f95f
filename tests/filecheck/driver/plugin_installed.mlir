// The example plugin installed as a user installs it (pip, offline, into a folder on
// PYTHONPATH): its `tmlir.plugins` entry point is found with no --load-plugin, and
// TMLIR_PLUGINS=0 turns it off.
// RUN: rm -rf %t && mkdir -p %t && cp -r %S/../../../examples/plugin %t/src && rm -rf %t/src/build %t/src/*.egg-info
// RUN: python -m pip install -q --no-deps --no-build-isolation --no-index --target %t/site %t/src 2>/dev/null
// RUN: env PYTHONPATH=%t/site tm-opt %s -p example-fuse-swish | filecheck %s
// RUN: env PYTHONPATH=%t/site tm-opt --help | filecheck %s --check-prefix=HELP
// RUN: env PYTHONPATH=%t/site TMLIR_PLUGINS=0 not tm-opt %s -p example-fuse-swish 2>&1 | filecheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @swish
// CHECK-NEXT:    %y = example.swish %x : tensor<2x3xf32>

// HELP: Passes:
// HELP: example-fuse-swish

// OFF: tm-opt: error: unknown pass 'example-fuse-swish'
func.func @swish(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = graph.sigmoid %x : tensor<2x3xf32>
  %y = graph.mul %x, %s : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
