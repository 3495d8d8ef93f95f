"""Whatever escapes a tool is one line on stderr: an internal error or an interrupt."""

from __future__ import annotations

import pytest

from tmlir.tools import tm_opt
from tmlir.tools.cli import DEBUG_ENV, INTERNAL_ERROR, INTERRUPTED, one_line_failures


def _tool(exc: BaseException):
    @one_line_failures("tm-x")
    def main(argv=None) -> int:
        raise exc

    return main


def test_an_unexpected_exception_is_one_line_naming_it(capsys, monkeypatch) -> None:
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    assert _tool(KeyError("k"))() == INTERNAL_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("tm-x: internal error: KeyError: 'k' (a bug in tmlir")
    assert f"set {DEBUG_ENV}=1 for the traceback" in err


def test_ctrl_c_is_one_line_and_status_130(capsys, monkeypatch) -> None:
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    assert _tool(KeyboardInterrupt())() == INTERRUPTED
    assert capsys.readouterr().err == "tm-x: interrupted\n"


def test_debug_lets_the_exception_through(monkeypatch) -> None:
    monkeypatch.setenv(DEBUG_ENV, "1")
    with pytest.raises(KeyError):
        _tool(KeyError("k"))()


def test_an_exception_inside_a_pass_of_tm_opt_is_one_line(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    source = tmp_path / "in.mlir"
    source.write_text("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  %y = graph.relu %x : tensor<4xf32>\n  func.return %y : tensor<4xf32>\n}\n")

    def broken(self, module) -> None:
        raise IndexError("list index out of range")

    monkeypatch.setattr(tm_opt.TmOptMain, "apply_passes", broken)
    assert tm_opt.main([str(source), "-p", "lower-to-cuda"]) == INTERNAL_ERROR
    err = capsys.readouterr().err
    assert err.startswith("tm-opt: internal error: IndexError: list index out of range at ")
    assert err.count("\n") == 1
