"""Batch-1 latency of one model: tmlir (default and tuned) against torch eager and torch.compile.

    python benchmarks/gpu/model_latency.py build/models/bert_base.onnx --name bert_base \
        --out /tmp/bert_base.json [--deadline EPOCH] [--lock FILE] [--dry-run]

`--name` is a model of `examples/make_hf_models.py` (`FULL_MODELS` or `MODELS`); the ONNX
file is its export, and the manifest beside it (`models.json`) says what its inputs hold.
On a GPU, in this order, each stage recorded whatever happens in the ones before:

1. torch: the same Hugging Face model, rebuilt with the exported weights (seed 0), on
   ``cuda`` in fp32 with TF32 off, run on the inputs the export used: the reference.
2. ``tmlir_default``: ``InferenceSession(device="cuda")`` with fusion, the memory plan and
   CUDA graphs; its first output (the logits) against the reference (max abs and relative
   error), its memory report, then its latency on torch CUDA tensors with
   ``device_outputs=True``.
3. ``torch_eager`` and 4. ``torch_compile`` (``torch.compile``, default mode): compile
   time, error against eager, latency.
5. ``tmlir_tuned``: ``tm-tune`` on the model for what is left of --tune-seconds (it keeps
   the records of the kernels it finished), then a session compiled with those records.

Latency: wall time between ``torch.cuda.synchronize()`` calls after warm-up, the median of
--runs runs (see `common.latency`); every timed section holds the suite's GPU lock.
A stage that has too little time left before --deadline is recorded as "skipped: budget",
one that fails as "error: ..."; the result file is rewritten after every stage.

With --dry-run (no GPU, no torch needed) the model runs on emu instead, on seeded random
inputs, against onnxruntime, and its CUDA C is compiled to PTX for sm_90; the GPU stages
are recorded as "dry-run: skipped (no GPU)". With --cpu (torch needed, no GPU) the GPU
stages run as they would on a GPU but with torch on the CPU and tmlir on emu: a check of
this script, whose times mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import BUDGET_SKIP, DRY_RUN_SKIP, gpu_lock, latency, relative_error, write_json

ROOT = Path(__file__).resolve().parents[2]
#: Agreement of tmlir's logits with torch eager's: relative error (max |diff| / max |ref|).
AGREE_RTOL = 1e-3
#: Least seconds a stage needs before the deadline to start.
STAGE_SECONDS = {"tmlir_default": 30, "torch_eager": 10, "torch_compile": 60, "tmlir_tuned": 45}


class Stages:
    """The result of one model, written to `out` after every stage."""

    def __init__(self, out: Path, deadline: float, header: dict[str, Any]) -> None:
        self.out, self.deadline, self.result = out, deadline, dict(header)
        self.save()

    def save(self) -> None:
        write_json(self.out, self.result)

    def left(self) -> float:
        return self.deadline - time.time()

    def run(self, name: str, stage: Callable[[], dict[str, Any]], need: float | None = None) -> bool:
        """Run `stage` unless time is short; record its result or its error. True if it ran."""
        need = STAGE_SECONDS.get(name, 10) if need is None else need
        if self.left() < need:
            self.result[name] = {"status": BUDGET_SKIP, "seconds_left": round(self.left(), 1)}
            self.save()
            return False
        start = time.perf_counter()
        print(f"[{name}] start ({self.left():.0f} s left)", flush=True)
        try:
            self.result[name] = {"status": "ok", **stage()}
        except Exception as exc:  # noqa: BLE001 -- recorded, and the next stage still runs
            traceback.print_exc()
            self.result[name] = {"status": f"error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
        self.result[name]["stage_seconds"] = round(time.perf_counter() - start, 2)
        print(f"[{name}] {self.result[name]}", flush=True)
        self.save()
        return self.result[name]["status"] == "ok"


def manifest_entry(onnx_path: Path, name: str) -> dict[str, Any]:
    manifest = onnx_path.with_name("models.json")
    try:
        return json.loads(manifest.read_text())["models"][name]
    except (OSError, ValueError, KeyError):
        raise SystemExit(f"model_latency: no entry '{name}' in {manifest}") from None


def numpy_feed(spec: dict[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs as the manifest describes them (as `tests/e2e/test_hf_models.py` makes them)."""
    rng = np.random.default_rng(seed)
    feed = {}
    for name, entry in spec.items():
        if entry["dtype"] == "float32":
            feed[name] = rng.standard_normal(entry["shape"]).astype(np.float32)
        else:
            low, high = entry["range"]
            feed[name] = rng.integers(low, high, entry["shape"]).astype(entry["dtype"])
    return feed


def memory_report(session: Any) -> dict[str, Any] | str:
    try:
        return dict(session.memory_report())
    except Exception as exc:  # noqa: BLE001 -- a report without it is still a report
        return f"unavailable: {type(exc).__name__}: {exc}"


# ----------------------------------------------------------------------------- dry run


def dry_run(path: Path, stages: Stages, spec: dict[str, Any]) -> None:
    import tmlir
    from tmlir.backends import ptx

    feed = numpy_feed(spec)
    holder: dict[str, Any] = {}

    def compile_emu() -> dict[str, Any]:
        start = time.perf_counter()
        session = tmlir.InferenceSession(path, device="emu")
        holder["session"] = session
        return {"compile_seconds": round(time.perf_counter() - start, 2),
                "kernels": len(session.program.kernels), "launches": len(session.program.launches),
                "memory": memory_report(session)}

    def emu_vs_onnxruntime() -> dict[str, Any]:
        import onnxruntime

        session = holder["session"]
        start = time.perf_counter()
        got = session.run(None, feed)
        seconds = time.perf_counter() - start
        reference = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        want = reference.run(None, feed)
        errors = [relative_error(g, w) for g, w in zip(got, want, strict=True)]
        worst = max(errors, key=lambda e: e["max_rel"])
        return {"emu_run_seconds": round(seconds, 2), **worst, "agree": worst["max_rel"] < AGREE_RTOL}

    def ptx_sm90() -> dict[str, Any]:
        session = holder["session"]
        start = time.perf_counter()
        text = ptx.compile_ptx(session.program.source, "sm_90")
        names = sorted(ptx.ptx_kernel_names(text))
        want = sorted(k.signature.name for k in session.program.kernels)
        if names != want:
            raise RuntimeError(f"PTX has {len(names)} kernels, the program {len(want)}")
        return {"seconds": round(time.perf_counter() - start, 2), "kernels": len(names),
                "ptx_bytes": len(text)}

    if stages.run("compile", compile_emu, need=5):
        stages.run("emu_vs_onnxruntime", emu_vs_onnxruntime, need=5)
        stages.run("ptx_sm_90", ptx_sm90, need=5)
    for name in ("tmlir_default", "torch_eager", "torch_compile", "tmlir_tuned"):
        stages.result[name] = {"status": DRY_RUN_SKIP}
    stages.save()


# ----------------------------------------------------------------------------- GPU


def gpu_run(path: Path, name: str, stages: Stages, spec: dict[str, Any], lock: Path | None,
            runs: int, tune_seconds: float, jobs: int, device: str = "cuda") -> None:
    """The GPU stages; `device` "cpu" runs them with torch on the CPU and tmlir on emu."""
    import torch

    sys.path.insert(0, str(ROOT / "examples"))
    import make_hf_models

    import tmlir

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    models = make_hf_models.FULL_MODELS if name in make_hf_models.FULL_MODELS else make_hf_models.MODELS
    model = make_hf_models.build_model(name, models).to(device)
    inputs = {k: v.to(device) for k, v in zip(spec, make_hf_models.example_inputs(spec), strict=True)}
    session_device = "cuda" if device == "cuda" else "emu"

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    state: dict[str, Any] = {}

    def logits(output: Any) -> torch.Tensor:
        return output.logits if hasattr(output, "logits") else output[0]

    def reference() -> dict[str, Any]:
        with torch.no_grad():
            state["reference"] = logits(model(**inputs)).float()
        sync()
        return {"output_shape": list(state["reference"].shape),
                "parameters": sum(p.numel() for p in model.parameters())}

    def tmlir_session(**extra: Any) -> dict[str, Any]:
        start = time.perf_counter()
        session = tmlir.InferenceSession(path, device=session_device, fusion=True,
                                         memory_plan=True, cuda_graphs=True, **extra)
        compile_seconds = time.perf_counter() - start
        feed = {i.name: inputs[i.name] for i in session.get_inputs()}
        first = session.run(None, feed, device_outputs=True)
        sync()
        got = torch.from_dlpack(first[0]) if device == "cuda" else torch.from_numpy(first[0])
        result = {"compile_seconds": round(compile_seconds, 2),
                  "launches": len(session.program.launches), "memory": memory_report(session),
                  **relative_error(got, state["reference"])}
        result["agree"] = result["max_rel"] < AGREE_RTOL
        with gpu_lock(lock):
            result.update(latency(lambda: session.run(None, feed, device_outputs=True), sync,
                                  runs, deadline=stages.deadline - 5))
        return result  # the session and its GPU memory go with this frame

    def torch_eager() -> dict[str, Any]:
        def run() -> None:
            with torch.no_grad():
                model(**inputs)

        with gpu_lock(lock):
            return latency(run, sync, runs, deadline=stages.deadline - 5)

    def torch_compile() -> dict[str, Any]:
        compiled = torch.compile(model)
        start = time.perf_counter()
        with torch.no_grad():
            out = logits(compiled(**inputs)).float()
        sync()
        result = {"compile_seconds": round(time.perf_counter() - start, 2),
                  "vs_eager": relative_error(out, state["reference"])}

        def run() -> None:
            with torch.no_grad():
                compiled(**inputs)

        with gpu_lock(lock):
            result.update(latency(run, sync, runs, deadline=stages.deadline - 5))
        return result

    def tmlir_tuned() -> dict[str, Any]:
        records = stages.out.with_name(f"{stages.out.stem}.tuning_records.jsonl")
        kwargs = {"tuning_records": str(records)}  # on cuda: the records of GPU 0
        budget = min(tune_seconds, stages.left() - STAGE_SECONDS["tmlir_default"] - 10)
        report = stages.out.with_name(f"{stages.out.stem}.tuning.json")
        log = stages.out.with_name(f"{stages.out.stem}.tuning.log")
        command = [sys.executable, "-m", "tmlir.tools.tm_tune", str(path), "--records", str(records),
                   "--json", str(report), "--jobs", str(jobs), "--quiet"]
        start = time.perf_counter()
        with gpu_lock(lock), open(log, "w") as handle:
            tuning = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT,
                                      start_new_session=True)
            try:
                status = f"exit {tuning.wait(timeout=max(1.0, budget))}"
            except subprocess.TimeoutExpired:
                os.killpg(tuning.pid, signal.SIGKILL)
                tuning.wait()
                status = f"stopped after {budget:.0f} s (the records of finished kernels are kept)"
        kept = len(records.read_text().splitlines()) if records.exists() else 0
        result = {"tuning": status, "tuning_seconds": round(time.perf_counter() - start, 2),
                  "records": kept, "tuning_log": log.name}
        if kept == 0:
            result["status"] = "not run: tuning produced no records in its budget"
            return result
        return {**result, **tmlir_session(**kwargs)}

    if not stages.run("reference", reference, need=10):
        return
    stages.run("tmlir_default", tmlir_session)
    stages.run("torch_eager", torch_eager)
    stages.run("torch_compile", torch_compile)
    if tune_seconds <= 0:
        stages.result["tmlir_tuned"] = {"status": "not run: --tune-seconds 0"}
    else:
        stages.run("tmlir_tuned", tmlir_tuned)
    stages.save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="the ONNX file")
    parser.add_argument("--name", required=True, help="its name in examples/make_hf_models.py")
    parser.add_argument("--out", type=Path, required=True, help="the result JSON")
    parser.add_argument("--deadline", type=float, default=None,
                        help="time.time() by which to be done (default: in 10 minutes)")
    parser.add_argument("--lock", type=Path, default=None, help="the suite's GPU lock file")
    parser.add_argument("--runs", type=int, default=30, help="timed runs (median; default 30)")
    parser.add_argument("--tune-seconds", type=float, default=60.0,
                        help="time for tm-tune on a GPU (0: do not tune)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--dry-run", action="store_true", help="no GPU: emu and PTX only")
    parser.add_argument("--cpu", action="store_true",
                        help="check this script without a GPU: torch on the CPU, tmlir on emu")
    args = parser.parse_args()
    entry = manifest_entry(args.model, args.name)
    deadline = args.deadline or time.time() + 600
    header = {"model": args.name, "file": str(args.model), "class": entry.get("class"),
              "parameters": entry.get("parameters"), "inputs": entry["inputs"],
              "dry_run": args.dry_run, "device": "cpu (check)" if args.cpu else "cuda",
              "runs": args.runs}
    stages = Stages(args.out, deadline, header)
    if args.dry_run:
        dry_run(args.model, stages, entry["inputs"])
    else:
        gpu_run(args.model, args.name, stages, entry["inputs"], args.lock, args.runs,
                args.tune_seconds, args.jobs, "cpu" if args.cpu else "cuda")


if __name__ == "__main__":
    main()
