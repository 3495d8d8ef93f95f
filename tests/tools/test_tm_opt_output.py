"""``tm-opt`` output: ``-o`` writes whole, through symlinks, keeping the file's mode; a
device such as /dev/null is written to, never replaced by a regular file; a warning is one
``tm-opt: warning:`` line; a malformed pipeline, a directory as input, an output folder that
does not exist and a cache directory that is a file are one ``error:`` line each."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tmlir.tools.tm_opt import main

IR = "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %x : tensor<4xf32>\n}\n"


def _source(tmp_path: Path) -> str:
    path = tmp_path / "in.mlir"
    path.write_text(IR)
    return str(path)


def test_output_through_a_symlink_keeps_the_link_and_the_mode(tmp_path):
    target = tmp_path / "real.mlir"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    assert main([_source(tmp_path), "-o", str(link)]) == 0
    assert link.is_symlink()
    assert "func.func @f" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_new_output_file_gets_the_umask_mode(tmp_path):
    out = tmp_path / "new.mlir"
    assert main([_source(tmp_path), "-o", str(out)]) == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_output_to_dev_null_leaves_the_device(tmp_path):
    assert main([_source(tmp_path), "-o", os.devnull]) == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_warning_is_one_line(tmp_path, capsys):
    import onnx
    from onnx import TensorProto, helper

    info = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Neg", ["h"], ["y"])],
                              "g", [info("x", TensorProto.FLOAT, [2, 3])], [info("y", TensorProto.FLOAT, None)],
                              value_info=[info("h", TensorProto.FLOAT, [4, 7])])
    path = tmp_path / "stale.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert main([str(path), "-o", str(tmp_path / "out.mlir")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("tm-opt: warning: ignored the shapes the model stores")


def test_bad_inputs_and_outputs_are_one_line_errors(tmp_path, capsys):
    source = _source(tmp_path)
    cases = [
        ([source, "-p", "canonicalize,,"],
         "tm-opt: error: bad pass pipeline 'canonicalize,,': Expected pass name here (column 14)"),
        ([str(tmp_path)], f"tm-opt: error: cannot read '{tmp_path}': it is a directory"),
        ([source, "-o", str(tmp_path / "missing" / "out.mlir")],
         f"tm-opt: error: cannot write '{tmp_path / 'missing' / 'out.mlir'}': No such file or directory"),
    ]
    for argv, message in cases:
        assert main(argv) == 1
        captured = capsys.readouterr()
        assert captured.err.splitlines() == [message] and captured.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mlir"]  # no stray temp file


def test_a_cache_directory_that_is_a_file_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    from tmlir.backends.cache import CacheError, cache_dir

    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(blocker))
    with pytest.raises(CacheError) as info:
        cache_dir()
    assert str(info.value) == (f"cache directory '{blocker}' ($TMLIR_CACHE_DIR) cannot be used: "
                               "it is not a directory")
    assert blocker.read_text() == "not a folder"
    assert main([_source(tmp_path), "-t", "cuda"]) == 0  # printing CUDA C needs no cache


RELU = b"func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = graph.relu %x : tensor<4xf32>\n" \
       b"  func.return %y : tensor<4xf32>\n}\n"


def _stdin(monkeypatch, data: bytes) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_dash_reads_standard_input_and_errors_name_it(monkeypatch, capsys):
    _stdin(monkeypatch, RELU)
    assert main(["-"]) == 0
    assert "graph.relu %x" in capsys.readouterr().out
    _stdin(monkeypatch, RELU.replace(b"graph.relu %x", b"graph.relu %y"))
    assert main(["-"]) == 1
    assert capsys.readouterr().err.startswith("tm-opt: error: <stdin>:2:3: operand #0 of 'graph.relu' uses its own")


def test_pass_timings_go_to_stderr_not_into_the_output(monkeypatch, capsys):
    _stdin(monkeypatch, RELU)
    assert main(["-", "-p", "lower-to-cuda", "--time-passes", "-t", "cuda"]) == 0
    out, err = capsys.readouterr()
    assert "Pass convert-graph-to-tm took" in err and "took" not in out
    assert "__global__" in out


def test_split_chunks_keep_their_order_with_diagnostics(tmp_path, capsys):
    bad = ("func.func @{0}(%x: tensor<4xf32>) {{\n  %y = graph.relu %y : tensor<4xf32> // {1}\n"
           "  func.return\n}}\n")
    good = "func.func @b(%x: tensor<4xf32>) {\n  func.return\n}\n"
    source = tmp_path / "in.mlir"
    expected = "expected-error {{uses its own result %y}}"
    source.write_text(bad.format("a", expected) + "// -----\n" + good + "// -----\n" + bad.format("c", ""))
    assert main([str(source), "--split-input-file", "--verify-diagnostics"]) == 1
    out, err = capsys.readouterr()
    assert out.split("// -----\n")[0] == "" and "func.func @b" in out.split("// -----\n")[1]
    assert err.strip().endswith("in.mlir:11:3: error: unexpected error: operand #0 of 'graph.relu' uses its "
                                "own result %y (SSA values must be defined before use)")
    assert "in.mlir:2" not in err
