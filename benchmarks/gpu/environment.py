"""The machine a suite ran on: GPU, driver, CUDA, package versions, tmlir commit.

Everything is read from outside the suite's own process (``nvidia-smi``, ``nvcc``, a
child Python that imports torch), so the suite never initializes CUDA itself; whatever
cannot be read is recorded as such rather than failing the run.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("torch", "triton", "cupy-cuda13x", "cupy-cuda12x", "cuda-bindings", "cuda-core",
            "nvidia-cuda-nvrtc", "onnx", "onnxruntime", "numpy", "xdsl", "transformers",
            "onnxscript", "onnx-ir", "pytest")
#: Run by the suite's Python: torch's view of the GPU (without initializing it in the suite).
TORCH_PROBE = """
import json, torch
info = {"torch_cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available()}
if info["cuda_available"]:
    p = torch.cuda.get_device_properties(0)
    info.update(device=p.name, capability=f"sm_{p.major}{p.minor}", sms=p.multi_processor_count,
                memory_gib=round(p.total_memory / 2**30, 1))
print(json.dumps(info))
"""
NVRTC_PROBE = """
from tmlir.backends.ptx import nvrtc_version
print(".".join(map(str, nvrtc_version() or ())) or "unavailable")
"""


def _output(command: list[str], timeout: float = 60) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=False, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def environment(python: str, dry_run: bool) -> dict[str, Any]:
    """What the results depend on, as a flat-ish dict for results.json and the report."""
    env: dict[str, Any] = {
        "python": platform.python_version(), "platform": platform.platform(),
        "cpus": os.cpu_count(), "versions": _versions(),
    }
    if shutil.which("nvidia-smi"):
        smi = _output(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                       "--format=csv,noheader"])
        if smi:
            name, driver, memory = (part.strip() for part in smi.splitlines()[0].split(","))
            env.update(device=name, driver=driver, device_memory=memory)
        cuda = _output(["nvidia-smi"])
        if cuda and "CUDA Version:" in cuda:
            env["driver_cuda"] = cuda.split("CUDA Version:")[1].split()[0]
    nvcc = _output(["nvcc", "--version"]) if shutil.which("nvcc") else None
    env["nvcc"] = nvcc.splitlines()[-1] if nvcc else "not found"
    env["nvrtc"] = _output([python, "-c", NVRTC_PROBE]) or "unavailable"
    torch = _output([python, "-c", TORCH_PROBE], timeout=120)
    if torch:
        info = json.loads(torch.splitlines()[-1])
        env["torch_cuda"] = info.pop("torch_cuda")
        env.update({k: v for k, v in info.items() if k not in env})
    else:
        env["torch_cuda"] = "torch not importable"
    env["tmlir_commit"] = _output(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = _output(["git", "status", "--porcelain", "--untracked-files=no"])
    if dirty:
        env["tmlir_commit"] += " (modified)"
    if dry_run:
        env.setdefault("device", "none (dry run)")
    return env
