// RUN: not tm-opt %s -p graph-canonicalize,lower-to-cuad 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not tm-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=NOHINT
// RUN: not tm-opt %s -t cudaa 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not tm-opt %s -t 'dot{weight=true}' 2>&1 | filecheck %s --check-prefix=OPTION
//
// Misspelled pass, target and option names: one line, with the closest valid name.

// PASS:        {{^}}tm-opt: error: unknown pass 'lower-to-cuad'; did you mean 'lower-to-cuda'?{{$}}
// PASS-NOT:    {{.}}
// NOHINT:      {{^}}tm-opt: error: unknown pass 'no-such-pass' (tm-opt --help lists the passes){{$}}
// TARGET:      {{^}}tm-opt: error: unknown target 'cudaa'; did you mean 'cuda'?{{$}}
// OPTION:      {{^}}tm-opt: error: target 'dot' has no option 'weight'; did you mean 'weights'? (options: weights){{$}}
func.func @f() {
  func.return
}
