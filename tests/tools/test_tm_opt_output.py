"""``tm-opt -o``: the output is written whole, through symlinks, keeping the file's mode;
a device such as /dev/null is written to, never replaced by a regular file."""

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
