"""The models of examples/models/ and the demo MLP on a GPU, against emu and onnxruntime.

Every model of `examples/models/models.json` (ResNet, MobileNetV2, BERT, GPT-2, ViT: small
random-weight Hugging Face exports) and the demo MLP (`examples/make_mlp.py`) runs with
``device="cuda"``, fusion and the memory plan on, with CUDA graphs on and off. Each run's
outputs must match the emu's and onnxruntime's within 1e-4 relative (max |got - want| /
max |want|, as `tests/e2e/test_hf_models.py` compares). The session runs three times: on the
inputs of seed 0, on those of seed 1 (a replayed CUDA graph must read the new inputs),
and with ``device_outputs=True`` on torch CUDA tensors where torch is installed.

Marked ``gpu``; skipped without a GPU. With ``TMLIR_GPU_DRY_RUN=1`` (the GPU suite's
``--dry-run``, `benchmarks/gpu/`) each test does all that needs no GPU -- the emu run
against onnxruntime and the program compiled to PTX for sm_90 -- and then skips.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from models import manifest_feed, run_onnxruntime

import tmlir
from tmlir.backends import ptx
from tmlir.backends.cuda_runtime import cuda_available

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "examples" / "models"
MANIFEST = json.loads((MODELS / "models.json").read_text())["models"]
NAMES = [*sorted(MANIFEST), "mlp"]
RTOL = 1e-4
SEEDS = (0, 1)
HAVE_GPU = cuda_available()
DRY_RUN = os.environ.get("TMLIR_GPU_DRY_RUN") == "1"



def gpu_model_test(fn: Any) -> Any:
    """Mark `fn` as a GPU test, skipped without a GPU unless in the suite's dry run."""
    skip = pytest.mark.skipif(not HAVE_GPU and not DRY_RUN,
                              reason="no CUDA GPU (TMLIR_GPU_DRY_RUN=1 runs the emu side)")
    return pytest.mark.gpu(skip(fn))


def _make_mlp() -> Any:
    spec = importlib.util.spec_from_file_location("make_mlp", ROOT / "examples" / "make_mlp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build()


def feed(name: str, seed: int) -> dict[str, np.ndarray]:
    """Inputs as the manifest describes them (token ids in range); the MLP's are normal."""
    if name == "mlp":
        rng = np.random.default_rng(seed)
        return {"input": rng.standard_normal((16, 784)).astype(np.float32)}
    return manifest_feed(MANIFEST[name]["inputs"], seed)


@dataclass(frozen=True)
class Reference:
    """A model, its inputs per seed, and what onnxruntime and emu give for them."""

    model: Any  # a path, or the MLP's ModelProto
    feeds: dict[int, dict[str, np.ndarray]]
    onnxruntime: dict[int, list[np.ndarray]]
    emu: dict[int, list[np.ndarray]]


def assert_close(got: list[np.ndarray], want: list[np.ndarray], what: str) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (
            f"{what}: output {i} is {g.dtype}{list(g.shape)}, expected {w.dtype}{list(w.shape)}")
        error = float(np.abs(g.astype(np.float64) - w).max() / max(np.abs(w).max(), 1e-30))
        assert error < RTOL, f"{what}: output {i} relative error {error:.2e}"


@functools.cache
def reference(name: str) -> Reference:
    """The emu side of every comparison, checked against onnxruntime; PTX for sm_90."""
    model = _make_mlp() if name == "mlp" else MODELS / MANIFEST[name]["file"]
    data = model.SerializeToString() if name == "mlp" else model.read_bytes()
    session = tmlir.InferenceSession(model, device="emu", memory_plan=True)
    feeds = {seed: feed(name, seed) for seed in SEEDS}
    want = {seed: run_onnxruntime(data, feeds[seed]) for seed in SEEDS}
    emu = {seed: session.run(None, feeds[seed]) for seed in SEEDS}
    for seed in SEEDS:
        assert_close(emu[seed], want[seed], f"{name} emu vs onnxruntime (seed {seed})")
    if ptx.nvrtc_version() is not None or shutil.which("nvcc"):
        text = ptx.compile_ptx(session.program.source, "sm_90")
        kernels = sorted(k.signature.name for k in session.program.kernels)
        assert sorted(ptx.ptx_kernel_names(text)) == kernels
    return Reference(model, feeds, want, emu)


@gpu_model_test
@pytest.mark.parametrize("cuda_graphs", [True, False], ids=["graphs", "no_graphs"])
@pytest.mark.parametrize("name", NAMES)
def test_cuda_matches_emu_and_onnxruntime(name: str, cuda_graphs: bool) -> None:
    ref = reference(name)
    if not HAVE_GPU:
        pytest.skip("dry-run: no GPU (emu matches onnxruntime, PTX for sm_90 compiled)")
    session = tmlir.InferenceSession(ref.model, device="cuda", memory_plan=True,
                                     cuda_graphs=cuda_graphs)
    for seed in SEEDS:
        got = session.run(None, ref.feeds[seed])
        assert_close(got, ref.emu[seed], f"{name} cuda vs emu (seed {seed})")
        assert_close(got, ref.onnxruntime[seed], f"{name} cuda vs onnxruntime (seed {seed})")
    try:
        import torch
    except ImportError:  # the DLPack path is checked where torch is installed (the GPU suite's machine)
        return
    on_device = {k: torch.from_numpy(v).cuda() for k, v in ref.feeds[0].items()}
    outputs = session.run(None, on_device, device_outputs=True)
    host = [torch.from_dlpack(o).cpu().numpy() for o in outputs]
    assert_close(host, ref.emu[0], f"{name} cuda device_outputs vs emu")
    assert_close([o.numpy() for o in outputs], ref.emu[0], f"{name} DeviceArray.numpy() vs emu")
