"""Errors and warnings that name the op's file:line:col, and ``tm-opt --verify-diagnostics``
(``tmlir/tools/opt_diagnostics.py``): annotations, matching, warnings, errors after passes."""

from __future__ import annotations

import pytest

from tmlir.dialects import graph
from tmlir.ir.diagnostics import OpError, failing_op, warn_about
from tmlir.ir.ssa import LocatingParser
from tmlir.passes.graph_fold_empty import GraphFoldEmpty
from tmlir.registry import make_context
from tmlir.schedules.templates import kernel_for
from tmlir.tools.opt_diagnostics import Diagnostic, check, parse_expectations
from tmlir.tools.tm_opt import main


def _relu(note: str) -> str:
    """A function of one relu, `note` at the end of the relu's line (line 2)."""
    return ("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            f"  %y = graph.relu %x : tensor<4xf32>{note}\n"
            "  func.return %y : tensor<4xf32>\n}\n")


def test_annotations_name_their_line():
    text = ("%a = x // expected-error {{same}}\n"
            "// expected-warning@+2 {{two below}}\n"
            "// expected-note@-1 {{above}}\n"
            "// expected-error@unknown {{nowhere}}\n"
            "// an expected-error comment, in prose, is none\n")
    expectations, problems = parse_expectations(text, line_offset=10)
    assert [(e.severity, e.text, e.line, e.written_at) for e in expectations] == [
        ("error", "same", 11, 11), ("warning", "two below", 14, 12), ("note", "above", 12, 13),
        ("error", "nowhere", None, 14)]
    assert problems == []


def test_malformed_annotations_are_reported():
    _, problems = parse_expectations("// expected-error@here {{x}}\n// expected-error@+1 x\n")
    assert problems == [(1, "bad location '@here' in expected-error (expected @+N, @-N or @unknown)"),
                        (2, "expected-error needs its text in {{...}}")]


def test_check_matches_severity_line_and_substring():
    expectations, _ = parse_expectations("// expected-error {{do not}}\n// expected-warning {{slow}}\n")
    diagnostics = [Diagnostic("error", "shapes do not broadcast", 1, 3), Diagnostic("error", "slow", 2, 1)]
    assert check(expectations, diagnostics, "f.mlir") == [
        "f.mlir:2:1: error: unexpected error: slow",
        'f.mlir:2: error: expected warning "slow" was not produced']


def test_pass_error_names_the_op_line(tmp_path, capsys):
    source = tmp_path / "in.mlir"
    source.write_text("func.func @f(%x: tensor<0x3xf32>) -> tensor<3xf32> {\n"
                      "  %y = graph.reduce_sum %x {axes = array<i64: 0>} : tensor<0x3xf32> -> tensor<3xf32>\n"
                      "  func.return %y : tensor<3xf32>\n}\n")
    assert main([str(source), "-p", "graph-fold-empty"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"tm-opt: error: {source}:2:3: graph-fold-empty: 'graph.reduce_sum' (%y): reads")
    assert err.splitlines()[1:] == ["    %y = graph.reduce_sum %x {axes = array<i64: 0>} : tensor<0x3xf32> -> "
                                    "tensor<3xf32>", "    ^"]


def _relu_of(module) -> graph.ReluOp:
    return next(op for op in module.walk() if isinstance(op, graph.ReluOp))


def test_expected_warning_matches_an_op_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(GraphFoldEmpty, "apply", lambda self, ctx, module: warn_about(
        _relu_of(module), "graph-fold-empty: a warning about this relu"))
    source = tmp_path / "in.mlir"
    source.write_text(_relu(" // expected-warning {{about this relu}}"))
    assert main([str(source), "-p", "graph-fold-empty", "--verify-diagnostics"]) == 0
    out, err = capsys.readouterr()
    assert "graph.relu" in out and err == ""
    source.write_text(_relu(""))
    assert main([str(source), "-p", "graph-fold-empty", "--verify-diagnostics"]) == 1
    assert capsys.readouterr().err == f"{source}:2:3: error: unexpected warning: graph-fold-empty: a warning " \
                                      "about this relu\n"
    assert main([str(source), "-p", "graph-fold-empty"]) == 0  # without the flag: shown, located
    assert capsys.readouterr().err.startswith(f"tm-opt: warning: {source}:2:3: graph-fold-empty: a warning")


def test_verifier_error_after_a_pass_names_the_op(tmp_path, monkeypatch, capsys):
    def break_relu(self, ctx, module) -> None:  # reads the tensor<5xf32>: no longer verifies
        relu = _relu_of(module)
        relu.operands = [relu.parent_block().args[1]]
    monkeypatch.setattr(GraphFoldEmpty, "apply", break_relu)
    source = tmp_path / "in.mlir"
    source.write_text(_relu("").replace("%x: tensor<4xf32>", "%x: tensor<4xf32>, %z: tensor<5xf32>"))
    assert main([str(source), "-p", "graph-fold-empty"]) == 1
    assert capsys.readouterr().err.startswith(f"tm-opt: error: {source}:2:3: 'graph.relu' op does not verify")


def test_an_op_a_pass_created_is_printed(tmp_path, monkeypatch, capsys):
    def fail_on_new_op(self, ctx, module) -> None:
        relu = _relu_of(module)
        raise OpError(graph.ReluOp(relu.input), "graph-fold-empty: this new op")
    monkeypatch.setattr(GraphFoldEmpty, "apply", fail_on_new_op)
    source = tmp_path / "in.mlir"
    source.write_text(_relu(""))
    assert main([str(source), "-p", "graph-fold-empty"]) == 1
    assert capsys.readouterr().err.splitlines()[:2] == ["tm-opt: error: graph-fold-empty: this new op",
                                                        "  %0 = graph.relu %x : tensor<4xf32>"]


def test_template_errors_carry_their_op():
    parser = LocatingParser(make_context(), _relu("").replace("f32", "i8"), "in.mlir")
    relu = _relu_of(parser.parse_module())
    with pytest.raises(ValueError, match="is scheduled for") as raised:
        kernel_for("k", relu)
    assert failing_op(raised.value) is relu
