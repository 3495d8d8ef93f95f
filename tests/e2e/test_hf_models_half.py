"""The example Hugging Face models (examples/models/, float32) opting in to half precision
(``precision="fp16"`` / ``"bf16"``): their matmuls, convolutions and attentions run on the
tensor-core templates (on emu, the exact CUDA C with mma, ldmatrix and cp.async emulated) and the
outputs stay within half-precision error of onnxruntime's float32 ones (max |tmlir -
onnxruntime| / max |onnxruntime|). GPT-2 in fp16 runs in the normal suite; the other
nine (model, precision) pairs take about a minute and are marked slow.

MobileNetV2's random weights shrink its activations to about 1e-25 at the output, far
below float16's smallest subnormal (6e-8): in fp16 its convolutions' operands round to 0
and so does the output -- the documented limit of the opt-in (bfloat16 keeps float32's
range and matches)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from models import manifest_feed, run_onnxruntime

import tmlir

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
MANIFEST = json.loads((MODELS / "models.json").read_text())["models"]
#: Relative error per precision: operands rounded to 11 (fp16) or 8 (bf16) significant bits.
RTOL = {"fp16": 3e-3, "bf16": 2.5e-2}
#: Tensor-core kernels per model: its matmuls but those of the attention, which
#: graph-fuse-attention makes one kernel -- ``attention_tc``, on f16/bf16 q, k, v --, and
#: non-depthwise convolutions.
TC_KERNELS = {"resnet": 17, "mobilenet_v2": 30, "bert": 7, "gpt2": 6, "vit": 7}
TC_TEMPLATES = ("matmul_tc", "conv2d_tc", "attention_tc")

CASES = [pytest.param(name, precision, id=f"{name}-{precision}",
                      marks=[] if (name, precision) == ("gpt2", "fp16") else [pytest.mark.slow])
         for name in sorted(MANIFEST) for precision in ("fp16", "bf16")]


@pytest.mark.parametrize(("name", "precision"), CASES)
def test_model_in_half_precision_matches_onnxruntime(name: str, precision: str) -> None:
    path = MODELS / MANIFEST[name]["file"]
    session = tmlir.InferenceSession(path, device="emu", precision=precision)
    templates = [k.template for k in session.program.kernels]
    assert sum(t in TC_TEMPLATES for t in templates) == TC_KERNELS[name], templates
    assert "attention" not in templates, templates  # every attention on tensor cores
    inputs = manifest_feed(MANIFEST[name]["inputs"], 0)
    got = session.run(None, inputs)
    want = run_onnxruntime(path.read_bytes(), inputs)
    if (name, precision) == ("mobilenet_v2", "fp16"):
        assert all(np.abs(w).max() < np.finfo(np.float16).smallest_subnormal for w in want)
        assert all(not g.any() for g in got)
        return
    for g, w in zip(got, want):
        error = float(np.abs(g.astype(np.float64) - w).max() / np.abs(w).max())
        assert error < RTOL[precision], (name, precision, error)
