// RUN: tm-opt --help-pass lower-to-cuda | filecheck %s
// RUN: tm-opt --help-target dot | filecheck %s --check-prefix=TARGET
// RUN: not tm-opt --help-pass lower-to-cuad 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not tm-opt --help-pass cuda 2>&1 | filecheck %s --check-prefix=ISTARGET
//
// --help-pass NAME: the pass's docstrings and its options (name as on the command line,
// type, default, description); --help-target NAME the same for a target.

// CHECK:      {{^}}lower-to-cuda (pass): The default pipeline: graph ops in, tmgpu kernels and launches out.
// CHECK:      {{^}}Options (-p 'lower-to-cuda{option=value ...}'):
// CHECK-NEXT: {{^}}  OPTION {{ +}}TYPE  DEFAULT  DESCRIPTION
// CHECK-NEXT: {{^}}  fusion {{ +}}bool  true {{ +}}Group ops into fusion groups
// CHECK:      {{^}}  target-arch {{ +}}str   sm_90 {{ +}}The GPU architecture

// TARGET:      {{^}}dot (target): Graph-level IR as Graphviz DOT text
// TARGET:      {{^}}Options (-t 'dot{option=value ...}'):
// TARGET:      {{^}}  weights  bool  false

// UNKNOWN:     {{^}}tm-opt: error: unknown pass 'lower-to-cuad'; did you mean 'lower-to-cuda'?{{$}}
// UNKNOWN-NOT: {{.}}
// ISTARGET:    {{^}}tm-opt: error: unknown pass 'cuda'; 'cuda' is a target: see --help-target cuda{{$}}
