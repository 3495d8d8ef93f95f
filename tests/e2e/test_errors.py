"""Errors a user can cause get one clear line, never a traceback, and no partial output."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from models import make_model, mlp
from onnx import helper

import tmlir
from tmlir.frontends.onnx import FrontendError
from tmlir.runtime.session import SessionError


def tm_opt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tmlir.tools.tm_opt", *args], input=stdin,
                          capture_output=True, text=True)


def assert_one_clear_line(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("tm-opt: error: ")
    for needle in needles:
        assert needle in result.stderr


def test_unsupported_op(tmp_path):
    model = make_model([helper.make_node("Det", ["x"], ["y"], name="act")], {"x": (2, 3, 3)},
                       {"y": (2,)})
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    result = tm_opt(str(path), "-p", "lower-to-cuda", "-t", "cuda")
    assert_one_clear_line(result, "Det", "act", "supported")
    assert result.stdout == ""
    with pytest.raises(FrontendError, match="Det"):
        tmlir.InferenceSession(model)


def test_malformed_ir_and_bad_options(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  %x = tm.barrier\n")
    assert_one_clear_line(tm_opt(str(bad)))
    good = tmp_path / "good.mlir"
    good.write_text("func.func @f() {\n  func.return\n}\n")
    assert_one_clear_line(tm_opt(str(good), "-p", "no-such-pass"), "no-such-pass")
    assert_one_clear_line(tm_opt(str(good), "-p", "tm-lower-mappings{bogus=1}"))
    assert_one_clear_line(tm_opt(str(tmp_path / "missing.mlir")), "missing.mlir")
    assert_one_clear_line(tm_opt(str(good), "-t", "nonsense"), "nonsense")


def test_garbage_onnx(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\x00\x01not a model")
    assert_one_clear_line(tm_opt(str(path)), "garbage.onnx")


def test_output_file_not_written_on_error(tmp_path):
    model = make_model([helper.make_node("Det", ["x"], ["y"])], {"x": (2, 2)}, {"y": ()})
    path, out = tmp_path / "m.onnx", tmp_path / "out.cu"
    onnx.save(model, path)
    out.write_text("previous content\n")
    assert_one_clear_line(tm_opt(str(path), "-o", str(out), "-p", "lower-to-cuda", "-t", "cuda"))
    assert out.read_text() == "previous content\n"


def test_session_argument_errors():
    model = mlp(2, (3, 4))
    with pytest.raises(SessionError, match="device"):
        tmlir.InferenceSession(model, device="tpu")
    session = tmlir.InferenceSession(model)
    good = np.ones((2, 3), np.float32)
    with pytest.raises(SessionError, match="missing input 'x'"):
        session.run(None, {})
    with pytest.raises(SessionError, match="unknown input 'z'"):
        session.run(None, {"x": good, "z": good})
    with pytest.raises(SessionError, match=r"expected shape \[2, 3\]"):
        session.run(None, {"x": np.ones((3, 2), np.float32)})
    with pytest.raises(SessionError, match="float32"):
        session.run(None, {"x": good.astype(np.float64)})
    with pytest.raises(SessionError, match="unknown output"):
        session.run(["nope"], {"x": good})
    assert [i.name for i in session.get_inputs()] == ["x"]
    assert session.get_outputs()[0].shape == (2, 4)
