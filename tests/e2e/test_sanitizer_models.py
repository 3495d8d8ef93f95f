"""Every model test passes under the emu sanitizer (slow): the example models of
examples/models/ run under ``check=True`` and match onnxruntime, and the whole normal e2e
suite passes with ``TMLIR_EMU_CHECK=1`` (every kernel launch bounds- and race-checked).
A violation in a kernel tmlir generates is a compiler bug: the failure names the kernel,
block, thread, buffer and index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from models import manifest_feed, run_onnxruntime

import tmlir
from tmlir.backends.emu.check import CheckedEmuModule

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "examples" / "models"
MANIFEST = json.loads((MODELS / "models.json").read_text())["models"]
RTOL = 1e-4
#: Tests that show what a planted bug does without the sanitizer (it flags them instead:
#: tests/backends/test_emu_check.py).
UNCHECKED_ONLY = ["tests/e2e/test_planted_race.py::test_missing_barrier_is_a_visible_race"]


@pytest.mark.slow
@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_example_model_under_sanitizer(name: str, fusion: bool) -> None:
    path = MODELS / MANIFEST[name]["file"]
    session = tmlir.InferenceSession(path, device="emu", fusion=fusion, check=True)
    assert isinstance(session._current.runner.module, CheckedEmuModule)
    inputs = manifest_feed(MANIFEST[name]["inputs"], 0)
    got = session.run(None, inputs)
    want = run_onnxruntime(path.read_bytes(), inputs)
    for g, w in zip(got, want, strict=True):
        error = float(np.abs(g - w).max() / np.abs(w).max())
        assert error < RTOL, f"{name}: relative error {error:.2e}"


@pytest.mark.slow
def test_e2e_suite_under_sanitizer() -> None:
    """The normal e2e suite in a subprocess with TMLIR_EMU_CHECK=1 (about half an hour on
    two cores)."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/e2e",
               "-m", "not slow and not gpu", *(f"--deselect={t}" for t in UNCHECKED_ONLY)]
    env = {**os.environ, "TMLIR_EMU_CHECK": "1"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0, "\n".join(lines[-60:])
