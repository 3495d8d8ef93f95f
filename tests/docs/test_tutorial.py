"""docs/tutorial.md followed end to end, so that it stays true.

Fenced blocks tagged ``file=NAME`` (```python file=pass.py, ```mlir file=test.mlir) are
written into an empty directory, in order; then each line of every ```sh block runs there,
with the project's ``.venv/bin`` first on PATH, and must succeed. Blocks tagged ```text are
shown only. The tutorial's own checks (its lit test's CHECK lines) make the run fail when
the pass does not do what the text says; the model step is checked here as well.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_doc_examples import extract_blocks  # tests/docs is on sys.path (rootdir-relative import)

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"


def _blocks() -> list:
    return extract_blocks(TUTORIAL.read_text(), "docs/tutorial.md")


def test_tutorial_blocks_are_files_or_commands():
    """Every block is a file, a command or shown text: none is silently skipped."""
    for block in _blocks():
        kind, *tags = block.lang.split()
        assert kind in ("python", "mlir", "sh", "text"), f"{block.where}: untested block ```{block.lang}"
        assert kind in ("sh", "text") or (len(tags) == 1 and tags[0].startswith("file=")), (
            f"{block.where}: a ```{kind} block needs file=NAME")


def test_tutorial_runs(tmp_path: Path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "TMLIR_CACHE_DIR": str(tmp_path / ".cache")}
    outputs = []
    for block in _blocks():
        kind, *tags = block.lang.split()
        if tags:
            (tmp_path / tags[0].removeprefix("file=")).write_text(block.text)
        elif kind == "sh":
            for command in [line for line in block.text.splitlines() if line.strip()]:
                result = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True,
                                        text=True, timeout=120)
                if result.returncode != 0:
                    pytest.fail(f"{block.where}: `{command}` failed ({result.returncode}):\n"
                                f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
                outputs.append((command, result.stdout))
    by_command = dict(outputs)
    folded = next(out for command, out in by_command.items() if command.startswith("tm-opt relu_relu.mlir"))
    assert folded.count("graph.relu") == 3  # @twice keeps one of its two, @apart both
    assert "PASS: my-passes :: relu_relu.mlir" in by_command["lit -v relu_relu.mlir"]
    kernels = by_command['grep "// Kernel" model.cu'].strip().splitlines()
    assert len(kernels) == 1 and "expr=relu(x0)" in kernels[0], kernels
    assert "fused prologue" not in (tmp_path / "model.cu").read_text()
