// RUN: tm-opt --help | filecheck %s
// RUN: tm-opt --help-all | filecheck %s --check-prefix=ALL
//
// tm-opt --help: the useful flags, then our passes, pipelines, a few generic xDSL passes
// and our targets, one line each; xDSL's foreign passes and targets only in --help-all.

// CHECK:      {{^}}usage: tm-opt [options] [input_file]
// CHECK:      {{^}}Options:
// CHECK:      {{^}}  -p, --passes PIPELINE {{ +}}the pass pipeline
// CHECK:      {{^}}  --help-pass NAME {{ +}}describe pass NAME and its options, then exit
// CHECK:      {{^}}Passes:
// CHECK-NOT:  {{^}}Pipelines:
// CHECK:      {{^}}  convert-tm-to-gpu {{ +}}Lower tm kernels, buffers, accesses and launches to the tmgpu level.
// CHECK:      {{^}}  graph-partition {{ +}}Move the ops that will share a kernel into `graph.fused` groups.
// CHECK:      {{^}}Pipelines:
// CHECK-NEXT: {{^}}  lower-to-cuda {{ +}}The default pipeline: graph ops in, tmgpu kernels and launches out.
// CHECK:      {{^}}Generic passes (xDSL):
// CHECK-NEXT: {{^}}  canonicalize {{ +}}Apply
// CHECK-NEXT: {{^}}  cse {{ +}}Merge identical
// CHECK-NEXT: {{^}}  dce {{ +}}Erase ops
// CHECK:      {{^}}Targets:
// CHECK-NEXT: {{^}}  mlir {{ +}}Print the IR as MLIR text (the default target).
// CHECK-NEXT: {{^}}  cuda {{ +}}Print the CUDA C of a gpu-level module.
// CHECK-NOT:  arm-asm
// CHECK-NOT:  stencil-unroll

// ALL:        {{^}}usage: tm-opt [-h]
// ALL:        {{^}}All passes:
// ALL:        {{^}}  stencil-unroll{{$}}
// ALL:        {{^}}All targets:
// ALL:        {{^}}  arm-asm{{$}}
