"""Batch-1 latency of one model at one precision: tmlir against torch eager and torch.compile.

    python benchmarks/gpu/model_latency.py build/models/bert_base.onnx --name bert_base \
        --precision fp32 --out /tmp/bert_base_fp32.json [--deadline EPOCH] [--dry-run | --cpu | --warm]

`--name` is a model of `examples/make_hf_models.py` (`FULL_MODELS` or `MODELS`); the ONNX
file is its export, and the manifest beside it (`models.json`) says what its inputs hold.

**The comparison is fair by construction.** Both sides run the same batch-1 inputs at the
same precision: ``fp32`` is TF32 off for both (torch: ``allow_tf32`` False for matmul and
cuDNN, ``set_float32_matmul_precision("highest")``; tmlir: ``precision="fp32"``); ``tf32``
is TF32 on for both (torch: ``"high"`` and ``allow_tf32`` True; tmlir: ``precision="tf32"``);
``fp16`` is matmuls and convolutions on f16 operands with f32 accumulation, the rest in
f32, on both (torch: ``torch.autocast(dtype=float16)``, whose op lists are the same split;
tmlir: ``precision="fp16"``, `graph-mixed-precision`).
Both replay CUDA graphs where the mode has them (tmlir's session, torch.compile's
``reduce-overhead`` and ``max-autotune``), and every latency is timed the same way
(`common.latency`: wall time between ``torch.cuda.synchronize()`` calls after warm-up,
the median of --runs runs). On a GPU, in this order (the most telling first; each stage
is recorded whatever happens in the ones before, and one with too little time left
before --deadline is recorded as "skipped: budget"):

1. ``reference``: the same Hugging Face model, rebuilt with the exported weights (seed 0),
   on ``cuda`` in fp32 with TF32 off, on the inputs the export used.
2. ``tmlir``: ``InferenceSession(device="cuda", precision=...)`` with fusion, the memory
   plan and CUDA graphs; its logits against the reference (max abs and relative error),
   its memory report, then its latency on torch CUDA tensors with ``device_outputs=True``.
3. ``torch_eager``.
4. ``tmlir_profile``: per-kernel times of tmlir's program (`InferenceSession.profile`,
   CUDA events, no graph) beside the cost report's estimate and roofline for each launch
   (`kernel_costs.py`): a few seconds, before the compiles that may overrun the deadline.
5. ``torch_max_autotune``, 6. ``torch_reduce_overhead`` and 7. ``torch_compile`` (the
   default mode): ``torch.compile`` in that mode: compile time (the first call, autotuning
   included), error against the reference, latency. Each compile starts from
   ``torch._dynamo.reset()``; the inductor and triton caches are where the suite points
   ``TORCHINDUCTOR_CACHE_DIR`` and ``TRITON_CACHE_DIR``.
8. ``tmlir_tuned`` (fp32, with --tune-seconds): ``tm-tune`` on the model for what is left
   of --tune-seconds (it keeps the records of the kernels it finished), then a session
   compiled with those records.

With --dry-run (no GPU, no torch needed) the model is compiled for emu, run on seeded
inputs against onnxruntime (fp32), each of its kernels compiled to PTX for sm_90, its cost
report (estimates for --gpu) taken, and, with --emu-profile, its launches profiled on emu
(times that mean nothing, a check of the code path); the GPU stages are recorded as
"dry-run: skipped (no GPU)". With --warm it only compiles what the GPU stages will load
(the program and its PTX for GPU 0, into tmlir's caches), for the suite's preparation
lane. With --cpu (torch needed, no GPU) the GPU stages run with torch on the CPU and tmlir
on emu: a check of this script, whose times mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
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
from common import BUDGET_SKIP, DRY_RUN_SKIP, latency, relative_error, repo_path, write_json
from kernel_costs import profile_record

ROOT = Path(__file__).resolve().parents[2]
PRECISIONS = ("fp32", "tf32", "fp16")
#: Agreement of tmlir's logits with the fp32 reference: relative error (max |diff| / max |ref|).
AGREE_RTOL = {"fp32": 1e-3, "tf32": 2e-2, "fp16": 2e-2}
#: torch.compile's modes, in the order they run (the most telling first), by stage name.
TORCH_MODES = {"torch_max_autotune": "max-autotune", "torch_reduce_overhead": "reduce-overhead",
               "torch_compile": "default"}
#: Modes that replay CUDA graphs (cudagraph trees: each call starts a new step).
GRAPH_MODES = ("max-autotune", "reduce-overhead")
#: Least seconds a stage needs before the deadline to start.
STAGE_SECONDS = {"tmlir": 30, "torch_eager": 10, "torch_max_autotune": 90, "torch_reduce_overhead": 40,
                 "torch_compile": 30, "tmlir_profile": 25, "tmlir_tuned": 45}
GPU_STAGES = ("tmlir", "torch_eager", *TORCH_MODES, "tmlir_profile", "tmlir_tuned")


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
        self.result[name] = {"status": "timeout: killed at the step's deadline before it finished"}
        self.save()  # what a killed process leaves
        try:
            self.result[name] = {"status": "ok", **stage()}
        except Exception as exc:  # noqa: BLE001 -- recorded, and the next stage still runs
            traceback.print_exc()
            first = str(exc).splitlines()[0] if str(exc) else ""
            self.result[name] = {"status": f"error: {type(exc).__name__}: {first}"}
        self.result[name]["stage_seconds"] = round(time.perf_counter() - start, 2)
        print(f"[{name}] {_brief(self.result[name])}", flush=True)
        self.save()
        return self.result[name]["status"] == "ok"


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    """A stage's result without its long lists, for the log."""
    return {k: v for k, v in result.items() if k not in ("launches", "kernel_params", "memory")}


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


# ----------------------------------------------------------------------------- no GPU


def warm(path: Path, stages: Stages, precision: str) -> None:
    """Compile the program a cuda session of this model will load, and its PTX for GPU 0,
    into tmlir's caches (no kernel runs)."""
    from tmlir.backends.cuda_runtime import device_arch, device_name
    from tmlir.backends.ptx import compile_kernels_ptx
    from tmlir.runtime.session import compile_model

    def compile_for_gpu() -> dict[str, Any]:
        start = time.perf_counter()
        arch = device_arch()
        program, _ = compile_model(path, target_device=device_name(), target_arch=arch, precision=precision)
        compile_kernels_ptx(program, arch)
        return {"seconds": round(time.perf_counter() - start, 2), "kernels": len(program.kernels)}

    stages.run("warm", compile_for_gpu, need=5)


def dry_run(path: Path, stages: Stages, spec: dict[str, Any], precision: str, gpu: str,
            emu_profile: bool) -> None:
    import tmlir
    from tmlir.backends.ptx import compile_kernels_ptx, ptx_kernel_names

    feed = numpy_feed(spec)
    holder: dict[str, Any] = {}

    def compile_emu() -> dict[str, Any]:
        start = time.perf_counter()
        session = tmlir.InferenceSession(path, device="emu", precision=precision)
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
        return {"emu_run_seconds": round(seconds, 2), **worst, "agree": worst["max_rel"] < AGREE_RTOL[precision]}

    def ptx_sm90() -> dict[str, Any]:
        program = holder["session"].program
        start = time.perf_counter()
        ptx = compile_kernels_ptx(program, "sm_90")
        names = sorted(name for text in ptx.values() for name in ptx_kernel_names(text))
        want = sorted(k.signature.name for k in program.kernels)
        if names != want:
            raise RuntimeError(f"PTX has {len(names)} kernels, the program {len(want)}")
        return {"seconds": round(time.perf_counter() - start, 2), "kernels": len(names),
                "ptx_bytes": sum(len(text) for text in ptx.values())}

    def cost() -> dict[str, Any]:
        return profile_record(holder["session"], gpu, None)

    def profile_emu() -> dict[str, Any]:
        session = holder["session"]
        times = session.profile(feed, runs=2, warmup=1)
        return {"device": "emu (host times: they say nothing of a GPU)",
                **profile_record(session, gpu, times)}

    if stages.run("compile", compile_emu, need=5):
        if precision == "fp32":
            stages.run("emu_vs_onnxruntime", emu_vs_onnxruntime, need=5)
        stages.run("ptx_sm_90", ptx_sm90, need=5)
        stages.run("cost", cost, need=5)
        if emu_profile:
            stages.run("emu_profile", profile_emu, need=5)
    for name in GPU_STAGES:
        stages.result[name] = {"status": DRY_RUN_SKIP}
    stages.save()


# ----------------------------------------------------------------------------- GPU


def set_precision(torch: Any, precision: str) -> None:
    """TF32 off (fp32) or on (tf32) for torch's matmuls and cuDNN convolutions."""
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")


def gpu_run(path: Path, name: str, stages: Stages, spec: dict[str, Any], precision: str, gpu: str,
            runs: int, profile_runs: int, tune_seconds: float, jobs: int, device: str = "cuda") -> None:
    """The GPU stages; `device` "cpu" runs them with torch on the CPU and tmlir on emu."""
    import torch

    sys.path.insert(0, str(ROOT / "examples"))
    import make_hf_models

    import tmlir

    set_precision(torch, "fp32")
    models = make_hf_models.FULL_MODELS if name in make_hf_models.FULL_MODELS else make_hf_models.MODELS
    model = make_hf_models.build_model(name, models).to(device)
    inputs = {k: v.to(device) for k, v in zip(spec, make_hf_models.example_inputs(spec), strict=True)}
    session_device = "cuda" if device == "cuda" else "emu"
    state: dict[str, Any] = {}

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    def timed(run: Callable[[], Any]) -> dict[str, Any]:
        result = latency(run, sync, runs, deadline=stages.deadline - 5)
        result["load_1min"] = round(os.getloadavg()[0], 2)  # a busy host makes wall times noisy
        return result

    def logits(output: Any) -> torch.Tensor:
        return output.logits if hasattr(output, "logits") else output[0]

    def reference() -> dict[str, Any]:
        with torch.no_grad():
            state["reference"] = logits(model(**inputs)).float().clone()
        sync()
        set_precision(torch, precision)  # every stage after the reference runs at `precision`
        return {"output_shape": list(state["reference"].shape),
                "parameters": sum(p.numel() for p in model.parameters())}

    def tmlir_session(**extra: Any) -> dict[str, Any]:
        start = time.perf_counter()
        session = tmlir.InferenceSession(path, device=session_device, fusion=True, memory_plan=True,
                                         cuda_graphs=True, precision=precision, **extra)
        compile_seconds = time.perf_counter() - start
        feed = {i.name: inputs[i.name] for i in session.get_inputs()}
        first = session.run(None, feed, device_outputs=True)
        sync()
        got = torch.from_dlpack(first[0]) if device == "cuda" else torch.from_numpy(first[0])
        result = {"compile_seconds": round(compile_seconds, 2), "precision": precision,
                  "launches": len(session.program.launches), "memory": memory_report(session),
                  **relative_error(got, state["reference"])}
        result["agree"] = result["max_rel"] < AGREE_RTOL[precision]
        result.update(timed(lambda: session.run(None, feed, device_outputs=True)))
        state["session"], state["feed"] = session, feed
        return result

    def autocast() -> Any:
        """fp16: torch's mixed precision (f16 matmuls and convolutions, f32 elsewhere); a
        no-op context at fp32 and tf32. On the CPU (--cpu) bf16, which it supports."""
        if precision != "fp16":
            return contextlib.nullcontext()
        return torch.autocast(device, dtype=torch.float16 if device == "cuda" else torch.bfloat16)

    def torch_eager() -> dict[str, Any]:
        def run() -> None:
            with torch.no_grad(), autocast():
                model(**inputs)

        return timed(run)

    def torch_compiled(mode: str) -> dict[str, Any]:
        torch._dynamo.reset()  # a fresh compile: nothing kept from another mode
        compiled = torch.compile(model, mode=mode)
        graphs = mode in GRAPH_MODES and device == "cuda"

        def run() -> Any:
            if graphs:
                torch.compiler.cudagraph_mark_step_begin()
            with torch.no_grad(), autocast():
                return compiled(**inputs)

        start = time.perf_counter()
        out = logits(run()).float().clone()  # a graph's outputs are overwritten by its next replay
        sync()
        result = {"mode": mode, "cuda_graphs": graphs, "compile_seconds": round(time.perf_counter() - start, 2),
                  "vs_reference": relative_error(out, state["reference"])}
        result.update(timed(run))
        return result

    def tmlir_profile() -> dict[str, Any]:
        session = state["session"]
        times = session.profile(state["feed"], runs=profile_runs)
        graph_ms = stages.result.get("tmlir", {}).get("median_ms")
        where = "cuda" if device == "cuda" else "emu (host times: they say nothing of a GPU)"
        return {"device": where, "runs": profile_runs, **profile_record(session, gpu, times, graph_ms)}

    def tmlir_tuned() -> dict[str, Any]:
        records = stages.out.with_name(f"{stages.out.stem}.tuning_records.jsonl")
        kwargs = {"tuning_records": str(records)}  # on cuda: the records of GPU 0
        budget = min(tune_seconds, stages.left() - STAGE_SECONDS["tmlir"] - 10)
        report = stages.out.with_name(f"{stages.out.stem}.tuning.json")
        log = stages.out.with_name(f"{stages.out.stem}.tuning.log")
        command = [sys.executable, "-m", "tmlir.tools.tm_tune", str(path), "--records", str(records),
                   "--json", str(report), "--jobs", str(jobs), "--quiet"]
        start = time.perf_counter()
        with open(log, "w") as handle:
            tuning = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
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
    stages.run("tmlir", tmlir_session)
    stages.run("torch_eager", torch_eager)
    if "session" in state:  # cheap, and kept should max-autotune overrun the step's deadline
        stages.run("tmlir_profile", tmlir_profile)
    else:
        stages.result["tmlir_profile"] = {"status": "not run: no tmlir session"}
    for stage, mode in TORCH_MODES.items():
        stages.run(stage, lambda mode=mode: torch_compiled(mode))
    if precision != "fp32" or tune_seconds <= 0:
        why = "--tune-seconds 0" if tune_seconds <= 0 else "tuning runs with the fp32 model only"
        stages.result["tmlir_tuned"] = {"status": f"not run: {why}"}
    else:
        state.pop("session", None)  # its GPU memory goes before tuning's
        stages.run("tmlir_tuned", tmlir_tuned)
    stages.save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="the ONNX file")
    parser.add_argument("--name", required=True, help="its name in examples/make_hf_models.py")
    parser.add_argument("--out", type=Path, required=True, help="the result JSON")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="fp32: TF32 off on both sides; tf32: TF32 on on both sides; fp16: f16 "
                             "matmuls and convolutions on both sides (torch autocast)")
    parser.add_argument("--gpu", default=None,
                        help="the latency model's GPU for the estimates (default: GPU 0's, else H200)")
    parser.add_argument("--deadline", type=float, default=None,
                        help="time.time() by which to be done (default: in 10 minutes)")
    parser.add_argument("--runs", type=int, default=30, help="timed runs (median; default 30)")
    parser.add_argument("--profile-runs", type=int, default=20, help="runs of the per-kernel profile")
    parser.add_argument("--tune-seconds", type=float, default=0.0,
                        help="time for tm-tune on a GPU (default 0: do not tune)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="no GPU: emu, PTX and cost report only")
    mode.add_argument("--warm", action="store_true", help="compile what the GPU stages load, run nothing")
    mode.add_argument("--cpu", action="store_true",
                      help="check this script without a GPU: torch on the CPU, tmlir on emu")
    parser.add_argument("--emu-profile", action="store_true", help="--dry-run: profile the launches on emu")
    args = parser.parse_args()
    entry = manifest_entry(args.model, args.name)
    deadline = args.deadline or time.time() + 600
    device = "cpu (check)" if args.cpu else "cuda"
    gpu = args.gpu or _gpu_of_device(args.dry_run or args.cpu)
    header = {"model": args.name, "file": repo_path(args.model), "class": entry.get("class"),
              "parameters": entry.get("parameters"), "inputs": entry["inputs"], "precision": args.precision,
              "dry_run": args.dry_run, "device": device, "runs": args.runs, "estimates_for": gpu}
    stages = Stages(args.out, deadline, header)
    if args.warm:
        warm(args.model, stages, args.precision)
    elif args.dry_run:
        dry_run(args.model, stages, entry["inputs"], args.precision, gpu, args.emu_profile)
    else:
        gpu_run(args.model, args.name, stages, entry["inputs"], args.precision, gpu, args.runs,
                args.profile_runs, args.tune_seconds, args.jobs, "cpu" if args.cpu else "cuda")


def _gpu_of_device(no_gpu: bool) -> str:
    """The latency model's name for GPU 0 (`kernel_costs.cost_gpu`), H200 without one."""
    from kernel_costs import cost_gpu

    if no_gpu:
        return cost_gpu(None)
    from tmlir.backends.cuda_runtime import device_name

    return cost_gpu(device_name())


if __name__ == "__main__":
    main()
