"""The small random-weight Hugging Face models of examples/models/ (made by
examples/make_hf_models.py: ResNet, MobileNetV2, BERT, GPT-2 and ViT as torch 2.13
exports them at opset 18) compile, run on emu and match onnxruntime within 1e-4 relative
(max |tmlir - onnxruntime| / max |onnxruntime|), on the inputs their manifest describes
(token ids in the vocabulary, an all-ones attention mask); every kernel compiles to PTX.
Each model runs fused and unfused (``fusion=False``); fusion leaves at most the kernels
listed in `FUSED_KERNELS` (one per anchor: convolutions, matmuls, reductions, gathers,
one attention kernel per layer (``graph-fuse-attention``), and the attention mask's
elementwise kernel).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from models import manifest_feed, run_onnxruntime

import tmlir
from tmlir.backends import ptx
from tmlir.runtime.runners import EmuRunner

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
MANIFEST = json.loads((MODELS / "models.json").read_text())["models"]
RTOL = 1e-4
#: Kernels per model with fusion (without: 36, 99, 78, 62 and 73).
FUSED_KERNELS = {"resnet": 19, "mobilenet_v2": 54, "bert": 20, "gpt2": 19, "vit": 18}


def feed(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    return manifest_feed(MANIFEST[name]["inputs"], seed)


def assert_plan_keeps_outputs(session, inputs, outputs):
    """The memory plan reuses memory (peak below the no-reuse sum), and a run whose
    arena starts as 0xFF bytes (NaN floats) gives the same outputs bit for bit: no kernel
    reads an intermediate it did not write."""
    runner = session._current.runner
    report = session.memory_report()
    assert report["live_peak_bytes"] <= report["peak_bytes"] < report["no_reuse_bytes"], report
    poisoned = EmuRunner(runner.program, runner.weights, runner.module, runner.plan, fill=0xFF)
    again = poisoned.run({i: np.ascontiguousarray(inputs[b.source]).reshape(b.shape)
                          for i, b in enumerate(runner.program.buffers) if b.kind == "input"})
    by_name = dict(zip([o.name for o in session.get_outputs()], outputs))
    for i, b in enumerate(runner.program.buffers):
        if b.kind == "output":
            np.testing.assert_array_equal(again[i], by_name[b.source])


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_model_matches_onnxruntime(name, fusion):
    path = MODELS / MANIFEST[name]["file"]
    session = tmlir.InferenceSession(path, device="emu", fusion=fusion)
    if fusion:
        assert len(session.program.launches) == FUSED_KERNELS[name]
    inputs = feed(name)
    got = session.run(None, inputs)
    want = run_onnxruntime(path.read_bytes(), inputs)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        error = float(np.abs(g - w).max() / np.abs(w).max())
        assert error < RTOL, f"{name}: relative error {error:.2e}"
    if fusion:
        assert_plan_keeps_outputs(session, inputs, got)
    if ptx.nvrtc_version() is not None:
        text = ptx.compile_ptx(session.program.source, "sm_90")
        kernels = sorted(k.signature.name for k in session.program.kernels)
        assert sorted(ptx.ptx_kernel_names(text)) == kernels


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_model_built_at_the_users_optimization_level(name, monkeypatch):
    """The suite builds emu kernels at -O0 (tests/conftest.py) to compile faster; users get
    -O2 (`TMLIR_EMU_OPT` unset). Each model, fused, also runs built at -O2 and must give
    the -O0 outputs bit for bit: the optimizer changes no result (and exposes no undefined
    behaviour in the emitted CUDA C or the emu header)."""
    path = MODELS / MANIFEST[name]["file"]
    inputs = feed(name)
    outputs = []
    for level in ("0", "2"):
        monkeypatch.setenv("TMLIR_EMU_OPT", level)
        outputs.append(tmlir.InferenceSession(path, device="emu").run(None, inputs))
    for at_o0, at_o2 in zip(*outputs, strict=True):
        np.testing.assert_array_equal(at_o2, at_o0)
