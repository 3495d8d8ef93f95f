"""Full-size models on emu against onnxruntime, fused and unfused (no GPU needed).

    make full-models                                   # exports build/models/{resnet50,bert_base}.onnx
    .venv/bin/python benchmarks/model_emu.py           # those two; or name .onnx files

Each model gets random inputs (seed 0: float inputs standard normal, token ids in [0, 1000),
attention masks all ones), runs once through onnxruntime's CPU provider and once through
`tmlir.InferenceSession(device="emu")` with fusion and without, and reports the relative
error (max |tmlir - onnxruntime| / max |onnxruntime| over every output), the compile time and
the emu run time. The emu runs the exact CUDA C on the CPU: its times say nothing about a GPU.

The fused run also reports the memory plan (`tmlir.runtime.memory_plan`): peak intermediate
bytes (the arena) against the sum of all intermediate buffers, and checks that the outputs
are bit-for-bit those of a run without reuse (every temp its own memory) and of a run whose
arena starts filled with 0xFF bytes (NaN in every float: a kernel reading a temp it did not
write would show).
Writes benchmarks/results/model_emu.json with machine, date and versions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODELS = (ROOT / "build" / "models" / "resnet50.onnx",
                  ROOT / "build" / "models" / "bert_base.onnx")
RESULT = ROOT / "benchmarks" / "results" / "model_emu.json"


def random_feed(session: Any, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for an onnxruntime session: dynamic dims as 1, ids in [0, 1000), masks ones."""
    rng = np.random.default_rng(seed)
    feed = {}
    for arg in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in arg.shape]
        if arg.type == "tensor(int64)":
            values = np.ones(shape) if "mask" in arg.name else rng.integers(0, 1000, shape)
            feed[arg.name] = values.astype(np.int64)
        else:
            feed[arg.name] = rng.standard_normal(shape).astype(np.float32)
    return feed


def check_model(path: Path) -> dict[str, Any]:
    import onnxruntime

    import tmlir

    print(f"{path}:", flush=True)
    reference = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed = random_feed(reference)
    want = reference.run(None, feed)
    report: dict[str, Any] = {"model": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT)
                              else str(path)}
    for fusion in (True, False):
        start = time.perf_counter()
        session = tmlir.InferenceSession(path, device="emu", fusion=fusion)
        compiled = time.perf_counter()
        got = session.run(None, feed)
        ran = time.perf_counter()
        error = max(float(np.abs(g - w).max() / np.abs(w).max()) for g, w in zip(got, want))
        key = "fused" if fusion else "unfused"
        report[key] = {"kernels": len(session.program.kernels), "relative_error": error,
                       "compile_seconds": round(compiled - start, 2),
                       "emu_run_seconds": round(ran - compiled, 2)}
        if fusion:
            report[key]["memory_plan"] = plan_check(session, feed, got)
        print(f"  {key}: {report[key]}", flush=True)
    return report


def plan_check(session: Any, feed: dict[str, np.ndarray], planned: list[np.ndarray]
               ) -> dict[str, Any]:
    """The session's memory plan report, and whether runs without reuse and with a
    poisoned arena give the planned run's outputs exactly."""
    from tmlir.runtime.memory_plan import plan_memory
    from tmlir.runtime.runners import EmuRunner

    runner = session._current.runner  # the variant just run
    same = {}
    for label, plan, fill in (("no_reuse", plan_memory(runner.program, reuse=False), None),
                              ("poisoned_arena", runner.plan, 0xFF)):
        other = EmuRunner(runner.program, runner.weights, runner.module, plan, fill=fill)
        inputs = {i: np.ascontiguousarray(feed[b.source]).reshape(b.shape)
                  for i, b in enumerate(runner.program.buffers) if b.kind == "input"}
        outputs = other.run(inputs)
        by_name = dict(zip([o.name for o in session.get_outputs()], planned))
        same[f"identical_to_{label}"] = all(
            np.array_equal(outputs[i], by_name[b.source])
            for i, b in enumerate(runner.program.buffers) if b.kind == "output")
    return {**session.memory_report(), **same}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path, default=list(DEFAULT_MODELS))
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    missing = [m for m in args.models if not m.exists()]
    if missing:
        raise SystemExit(f"model_emu: no such file: {missing[0]} (run `make full-models`)")
    reports = [check_model(m.resolve()) for m in args.models]
    result = {
        "benchmark": "model_emu",
        "models": reports,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "versions": {name: version(name) for name in ("xdsl", "onnx", "onnxruntime", "numpy")},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
