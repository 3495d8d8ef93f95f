"""The example Hugging Face models of examples/models/ converted to float16 as an
exporter's ``model.half()`` would give them (`models.to_float16`: every float tensor,
input and output float16, masks overflowing to -inf), run natively in float16: their
MatMul/Gemm/Conv on the tensor-core templates (but the two of each attention, which
``graph-fuse-attention`` makes one kernel: ``attention_tc``, on tensor cores too),
everything else read widened and stored rounded. Outputs within float16 error of onnxruntime's float32 ones; as many launches as
the float32 model. GPT-2 runs in the normal suite, the others under ``-m slow``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from models import manifest_feed, run_onnxruntime, to_float16

import tmlir

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
MANIFEST = json.loads((MODELS / "models.json").read_text())["models"]
#: Launches of the float32 models (tests/e2e/test_hf_models.py) and tensor-core kernels.
LAUNCHES = {"resnet": 19, "bert": 20, "gpt2": 19, "vit": 18}
TC_KERNELS = {"resnet": 17, "bert": 7, "gpt2": 6, "vit": 7}
RTOL = 3e-3  # of the output's scale: float16 operands and stored intermediates


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n == "gpt2" else [pytest.mark.slow])
                                  for n in sorted(LAUNCHES)])
def test_float16_model_matches_onnxruntime(name: str) -> None:
    path = MODELS / MANIFEST[name]["file"]
    half = to_float16(onnx.load(path))
    session = tmlir.InferenceSession(half.SerializeToString(), device="emu")
    assert len(session.program.launches) == LAUNCHES[name]
    assert sum(k.template.endswith("_tc") for k in session.program.kernels) == TC_KERNELS[name]
    inputs = manifest_feed(MANIFEST[name]["inputs"], 0)
    got = session.run(None, {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in inputs.items()})
    want = run_onnxruntime(path.read_bytes(), inputs)
    for g, w in zip(got, want):
        assert g.dtype == np.float16
        error = float(np.abs(g.astype(np.float64) - w).max() / np.abs(w).max())
        assert error < RTOL, (name, error)
