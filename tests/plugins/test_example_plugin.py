"""The example plugin (examples/plugin), installed as a user would and loaded both ways.

Each check runs in a subprocess: loading a plugin changes the process's registries, which
the rest of the suite must not see. The package is installed once per module with
``pip install --no-deps --no-build-isolation --no-index --target`` (offline: it builds the
wheel with the environment's setuptools and ``wheel``, both in the test extras).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "examples" / "plugin"
BIN = Path(sys.executable).parent
SWISH_IR = """\
func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = graph.sigmoid %x : tensor<2x3xf32>
  %y = graph.mul %s, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""


def run(args: list[str], pythonpath: Path | str, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(pythonpath), **env}
    return subprocess.run(args, input=stdin, capture_output=True, text=True, env=environment, timeout=120)


def tm_opt(*args: str, pythonpath: Path | str, stdin: str = SWISH_IR, **env: str) -> subprocess.CompletedProcess:
    return run([str(BIN / "tm-opt"), "-", *args], pythonpath, stdin, **env)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / "plugin"  # pip builds in the source folder: not in the repo
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build"))
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(target), str(source)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert list(target.glob("tmlir_example_plugin-*.dist-info/entry_points.txt"))
    return target


def test_installed_plugin_adds_its_pass_to_tm_opt(installed: Path):
    result = tm_opt("-p", "example-fuse-swish", pythonpath=installed)
    assert result.returncode == 0, result.stderr
    assert "%y = example.swish %x : tensor<2x3xf32>" in result.stdout
    assert "graph.sigmoid" not in result.stdout and "graph.mul" not in result.stdout


def test_tmlir_plugins_0_disables_entry_points(installed: Path):
    result = tm_opt("-p", "example-fuse-swish", pythonpath=installed, TMLIR_PLUGINS="0")
    assert result.returncode == 1
    assert "example-fuse-swish" in result.stderr and "Traceback" not in result.stderr


def test_load_plugin_without_installing_compiles_the_op_to_cuda():
    result = tm_opt("--load-plugin", "tmlir_example_plugin", "-p", "example-fuse-swish,lower-to-cuda",
                    "-t", "cuda", pythonpath=PLUGIN)
    assert result.returncode == 0, result.stderr
    assert "schedule template 'elementwise' (block=32, expr=swish(x0))" in result.stdout
    assert "x / (1.0f + expf(-x))" in result.stdout


def test_onnx_model_with_the_custom_op_runs_on_emu(installed: Path, tmp_path: Path):
    script = textwrap.dedent("""
        import numpy as np
        from onnx import TensorProto, helper
        import tmlir

        swish = helper.make_node("Swish", ["x"], ["s"], domain="com.example", name="swish")
        add = helper.make_node("Add", ["s", "x"], ["y"])
        graph = helper.make_graph([swish, add], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 37])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 37])])
        model = helper.make_model(graph, ir_version=10, opset_imports=[
            helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
        x = np.random.default_rng(0).standard_normal((2, 37)).astype(np.float32) * 4
        (y,) = tmlir.InferenceSession(model, device="emu").run(None, {"x": x})
        want = x / (1 + np.exp(-x.astype(np.float64))) + x
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
        print("ok", y.shape)
    """)
    result = run([sys.executable, "-c", script], installed, TMLIR_CACHE_DIR=str(tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    assert "ok (2, 37)" in result.stdout


def test_a_plugin_that_fails_to_import_is_one_warning(tmp_path: Path):
    info = tmp_path / "broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tmlir.plugins]\nbroken = no_such_module_anywhere\n")
    result = tm_opt("-p", "graph-canonicalize", pythonpath=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == (
        "tm-opt: warning: plugin 'broken' (no_such_module_anywhere): cannot import it: "
        "ModuleNotFoundError: No module named 'no_such_module_anywhere'; plugin skipped")


def test_a_pass_named_like_a_built_in_one_is_one_error(tmp_path: Path):
    plugin = tmp_path / "clash.py"
    plugin.write_text(textwrap.dedent("""
        from dataclasses import dataclass
        from xdsl.passes import ModulePass

        @dataclass(frozen=True)
        class Mine(ModulePass):
            name = "graph-canonicalize"

            def apply(self, ctx, op):
                pass

        def register(api):
            api.add_pass(Mine)
    """))
    result = tm_opt("--load-plugin", str(plugin), pythonpath=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"tm-opt: error: plugin '{plugin}': pass 'graph-canonicalize' clashes with a built-in pass")
