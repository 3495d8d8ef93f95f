"""``tm-opt`` output: ``-o`` writes whole, through symlinks, keeping the file's mode; a
device such as /dev/null is written to, never replaced by a regular file; a warning is one
``tm-opt: warning:`` line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

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
