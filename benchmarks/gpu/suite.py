"""The GPU suite: tmlir's GPU tests, full-model latency against torch, per-kernel times and
the matmul benchmark in one run.

    benchmarks/gpu/run.sh --out DIR              # on a GPU machine, within one 10-minute call
    benchmarks/gpu/run.sh --out DIR --dry-run    # anywhere: every step that needs no GPU

Two lanes run at once (docs/gpu.md):

- the **GPU lane** runs the steps that use the GPU one after another, the most telling
  first: ``pytest`` (``pytest -m gpu tests``), ``latency MODEL fp32`` for each model
  (`model_latency.py`: tmlir against torch eager and torch.compile's default,
  reduce-overhead and max-autotune modes, TF32 off on both sides, then tmlir's per-kernel
  profile beside the latency model), ``latency MODEL fp16`` (f16 matmuls and convolutions
  on both sides: tmlir's ``precision="fp16"`` against torch's autocast), ``attention fp16``
  (`benchmarks/attention.py`: the fused attention kernel against torch's
  ``scaled_dot_product_attention`` at seq 128, 512 and 2048, CUDA graphs on both sides), ``matmul SHAPE``
  (`benchmarks/matmul.py`: every candidate against torch.matmul), then ``latency MODEL
  tf32`` (TF32 on on both sides);
- the **preparation lane** does the CPU work ahead of them: it exports the models
  (``export NAME``, `examples/make_hf_models.py`) and, on a GPU, compiles what each GPU
  step will load into tmlir's caches (``warm ...``), in the GPU lane's order.

Every step is a process with a deadline (killed at it: "timeout"; a failing step is
recorded and the next one runs). A GPU step gets at most its cap (`CAPS`) and what is left
of --budget; one that cannot start with `MIN_STEP_SECONDS` left is recorded as "skipped:
budget", never dropped. In a dry run the GPU lane runs each step's GPU-free part: the GPU
tests' emu side, every matmul candidate compiled to sm_90 PTX, each model compiled, run on
emu against onnxruntime, compiled to PTX and costed. DIR gets ``results.json``,
``results.md`` (`report.py`), ``logs/`` and ``steps/``; on a GPU also
``torch-cache.tar.gz`` (the inductor and triton caches, for a later call) when small enough.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import BUDGET_SKIP, DRY_RUN_SKIP, read_json, repo_path, write_json
from environment import environment
from kernel_costs import cost_gpu
from report import junit_summary, write_markdown
from torch_cache import pack_cache, unpack_cache

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DEFAULT_SHAPES = ("1024x1024x1024", "1000x999x1001", "1x4096x4096", "2048x2048x2048",
                  "4096x4096x4096", "4096x4096x4096:f16", "1000x1000x1024:f16")
#: The headline model first.
DEFAULT_MODELS = ("bert_base", "gpt2_124m", "resnet50")
#: Full-size models (their ONNX in --model-dir); others are the small ones of examples/models/.
FULL_MODELS = DEFAULT_MODELS
STEPS = ("pytest", "models", "fp16", "attention", "matmul", "tf32")
#: A step is not started with fewer seconds than this left.
MIN_STEP_SECONDS = 15
#: Of a GPU run's budget, what the steps leave for the end: a killed step's grace period
#: (`_kill`: up to 20 s) and packing torch's caches.
FINISH_SECONDS = 25
#: The most seconds a GPU step may take on a GPU, by kind (``latency`` is per model and
#: precision; tuning adds --tune-seconds to the fp32 one).
CAPS = {"pytest": 120, "latency": 200, "matmul": 60, "attention": 90}


@dataclass
class Step:
    """One step's record: what ran, how it ended, how long it took, where its log is."""

    name: str
    status: str = "not run"
    seconds: float = 0.0
    log: str | None = None
    command: list[str] | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Suite:
    """The run's options and its steps, in the order they started."""

    out: Path
    dry_run: bool
    start: float
    deadline: float
    python: str
    export_python: str
    model_dir: Path
    jobs: int
    torch_cache: Path
    environment: dict[str, Any] = field(default_factory=dict)
    date: str = ""
    budget: float = 0.0
    steps: list[Step] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    running: dict[str, subprocess.Popen] = field(default_factory=dict)

    def left(self) -> float:
        return self.deadline - time.time()

    def add(self, step: Step) -> Step:
        with self.lock:
            self.steps.append(step)
        return step

    def save(self) -> dict[str, Any]:
        """Write results.json and results.md as they stand (after every step, so that a
        run cut short still leaves its report); return the result."""
        with self.lock:
            result = {"suite": "tmlir GPU suite", "dry_run": self.dry_run, "date": self.date,
                      "budget_seconds": self.budget, "wall_seconds": round(time.time() - self.start, 1),
                      "environment": self.environment, **self.extra, "steps": [vars(s) for s in self.steps]}
            write_json(self.out / "results.json", result)
            try:
                write_markdown(self.out / "results.md", result)
            except Exception as exc:  # noqa: BLE001 -- results.json is written; the report says why not it
                (self.out / "results.md").write_text(f"# tmlir GPU suite\n\nThe report failed: "
                                                     f"{type(exc).__name__}: {exc}; see results.json.\n")
        return result

    def shown(self, value: Any) -> str:
        """A command argument as results record it (`repo_path` for paths)."""
        if isinstance(value, Path) or (isinstance(value, str) and os.path.isabs(value)):
            return repo_path(value, self.out)
        return str(value)

    def run(self, step: Step, command: list[Any], budget: float, env: dict[str, str] | None = None
            ) -> int | None:
        """Run `command` for `step` (log in logs/), killed after `budget` seconds; its exit
        status, or None if it was killed or did not start. Sets the step's status."""
        step.command = [self.shown(c) for c in command]
        if self.stopping.is_set():
            step.status = "not run: the GPU lane was done"
            return None
        if budget < MIN_STEP_SECONDS:
            step.status = BUDGET_SKIP
            return None
        log = self.out / "logs" / f"{_file(step.name)}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        step.log = str(log.relative_to(self.out))
        start = time.perf_counter()
        print(f"[suite] {step.name}: start, {budget:.0f} s budget", flush=True)
        with open(log, "w") as handle:
            handle.write(f"$ {' '.join(step.command)}\n")
            handle.flush()
            try:
                process = subprocess.Popen([str(c) for c in command], cwd=ROOT, stdout=handle,
                                           stderr=subprocess.STDOUT, start_new_session=True,
                                           env={**os.environ, **self.process_env(), **(env or {})})
            except OSError as exc:
                step.status = f"error: {exc}"
                return None
            with self.lock:
                self.running[step.name] = process
            try:
                code = process.wait(timeout=budget)
            except subprocess.TimeoutExpired:
                _kill(process)
                code = None
            finally:
                with self.lock:
                    self.running.pop(step.name, None)
        step.seconds = round(time.perf_counter() - start, 2)
        step.status = ("timeout" if code is None else "ok" if code == 0 else f"failed (exit {code})")
        if code != 0 and self.stopping.is_set():
            step.status = "stopped: not needed (the GPU lane was done)"
        print(f"[suite] {step.name}: {step.status} in {step.seconds} s", flush=True)
        return code

    def process_env(self) -> dict[str, str]:
        """What every step's process sees: torch's compile caches in --torch-cache."""
        return {"TORCHINDUCTOR_CACHE_DIR": str(self.torch_cache / "inductor"),
                "TRITON_CACHE_DIR": str(self.torch_cache / "triton")}


def _kill(process: subprocess.Popen) -> None:
    """Stop `process` and its children (its own session): INT (pytest then still writes
    its junit report), TERM after 10 s, KILL after 5 more."""
    for sig, wait in ((signal.SIGINT, 10), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


# ----------------------------------------------------------------------------- the plan


@dataclass
class Job:
    """A step of the GPU lane: its kind (``pytest``, ``latency``, ``matmul``), its subject
    (model and precision, or matmul shape) and, for a model, the export it waits for."""

    kind: str
    name: str
    model: str = ""
    precision: str = ""
    shape: str = ""


def plan(steps: list[str], models: list[str], shapes: list[str]) -> list[Job]:
    """The GPU lane's jobs, the most telling first: the GPU tests (which the model exports
    overlap), every model in fp32, every model in fp16 (tensor cores, against torch's
    autocast), the matmul shapes, every model in tf32."""
    jobs = [Job("pytest", "pytest")] if "pytest" in steps else []
    if "models" in steps:
        jobs += [Job("latency", f"latency {m} fp32", m, "fp32") for m in models]
    if "fp16" in steps:
        jobs += [Job("latency", f"latency {m} fp16", m, "fp16") for m in models]
    if "attention" in steps:
        jobs += [Job("attention", "attention fp16", precision="fp16")]
    if "matmul" in steps:
        jobs += [Job("matmul", f"matmul {s}", shape=s) for s in shapes]
    if "tf32" in steps:
        jobs += [Job("latency", f"latency {m} tf32", m, "tf32") for m in models]
    return jobs


def model_source(suite: Suite, name: str) -> Path:
    if name in FULL_MODELS:
        return suite.model_dir / f"{name}.onnx"
    return ROOT / "examples" / "models" / f"{name}.onnx"


def latency_command(suite: Suite, job: Job, deadline: float, mode: list[str], out: Path,
                    tune_seconds: float = 0.0, runs: int = 30) -> list[Any]:
    return [suite.python, HERE / "model_latency.py", model_source(suite, job.model), "--name", job.model,
            "--precision", job.precision, "--out", out, "--deadline", f"{deadline - 5:.1f}",
            "--runs", str(runs), "--tune-seconds", str(tune_seconds), "--jobs", str(suite.jobs), *mode]


def matmul_command(suite: Suite, job: Job, out: Path, compile_only: bool, jobs: int | None = None) -> list[Any]:
    shape, _, dtype = job.shape.partition(":")
    command = [suite.python, ROOT / "benchmarks" / "matmul.py", "--shapes", shape, "--dtype", dtype or "f32",
               "--jobs", str(jobs or suite.jobs), "--gpu", cost_gpu(suite.environment.get("device")), "--out", out]
    if compile_only:
        arch = suite.environment.get("capability", "sm_90") if not suite.dry_run else "sm_90"
        return [*command, "--compile-only", "--arch", arch]
    return [*command, "--min-seconds", "0.05"]


# ----------------------------------------------------------------------------- lanes


def prepare(suite: Suite, jobs: list[Job], exported: dict[str, threading.Event]) -> None:
    """The preparation lane: each model's export (set its event when done), then, on a
    GPU, a warm compile of each GPU step, all in the GPU lane's order."""
    cores = max(2, suite.jobs - 4)  # leave cores to the GPU lane's timings
    prep_env = {"TMLIR_JOBS": str(cores)}
    for job in jobs:
        if suite.stopping.is_set():
            break
        if job.model and not exported[job.model].is_set():
            export(suite, job.model)
            exported[job.model].set()
        if suite.dry_run or job.kind in ("pytest", "attention"):
            continue
        step = suite.add(Step(f"warm {job.name.removeprefix('latency ')}"))
        out = suite.out / "steps" / f"warm_{_file(job.name)}.json"
        if job.kind == "latency":
            if not model_source(suite, job.model).exists():
                step.status = "not run: no ONNX file"
                continue
            command = latency_command(suite, job, suite.deadline, ["--warm"], out)
        else:
            command = matmul_command(suite, job, out, compile_only=True, jobs=cores)
        suite.run(step, command, suite.left(), prep_env)
        suite.save()
    for event in exported.values():  # a stopped lane leaves nobody waiting
        event.set()


def export(suite: Suite, name: str) -> None:
    path = model_source(suite, name)
    step = suite.add(Step(f"export {name}"))
    if path.exists():
        step.status = f"ok (reused {repo_path(path, suite.out)})"
        return
    command = [suite.export_python, ROOT / "examples" / "make_hf_models.py", "--full", "--out", path.parent, name]
    suite.run(step, command, suite.left())
    suite.save()


def run_gpu_lane(suite: Suite, jobs: list[Job], exported: dict[str, threading.Event], args: argparse.Namespace
                 ) -> None:
    for job in jobs:
        step = suite.add(Step(job.name))
        if job.model:
            exported[job.model].wait(timeout=max(0.0, suite.left()))
            if not model_source(suite, job.model).exists():
                step.status = "not run: no ONNX file" if suite.left() > MIN_STEP_SECONDS else BUDGET_SKIP
                suite.save()
                continue
        cap = CAPS[job.kind] + (args.tune_seconds if job.precision == "fp32" else 0)
        budget = suite.left() if suite.dry_run else min(cap, suite.left())
        deadline = time.time() + budget
        out = suite.out / "steps" / f"{_file(job.name)}.json"
        if job.kind == "pytest":
            run_pytest(suite, step, args.tests, budget)
        elif job.kind == "attention":
            command = [suite.python, ROOT / "benchmarks" / "attention.py", "--precision", job.precision,
                       "--out", out, *(["--dry-run"] if suite.dry_run else [])]
            suite.run(step, command, budget)
            step.detail = read_json(out) or {}
        elif job.kind == "latency":
            mode = (["--dry-run"] + (["--emu-profile"] if job.model not in FULL_MODELS else [])
                    if suite.dry_run else [])
            tune = args.tune_seconds if job.precision == "fp32" else 0.0
            suite.run(step, latency_command(suite, job, deadline, mode, out, tune, args.runs), budget)
            step.detail = read_json(out) or {}
        else:
            suite.run(step, matmul_command(suite, job, out, compile_only=suite.dry_run), budget)
            result = read_json(out) or {}
            step.detail = dict(result["sizes"][0]) if result.get("sizes") else {}
            step.detail.update({key: result.get(key) for key in ("device", "template", "dtype", "arch",
                                                                 "estimates_for")})
            if suite.dry_run:
                step.detail["gpu"] = DRY_RUN_SKIP
        suite.save()


def run_pytest(suite: Suite, step: Step, selection: str | None, budget: float) -> None:
    junit = suite.out / "pytest.xml"
    command = [suite.python, "-m", "pytest", "-m", "gpu", "tests", "-q", "-rfEs",
               f"--junitxml={junit}", "-p", "no:cacheprovider", "--continue-on-collection-errors"]
    if selection:
        command += ["-k", selection]
    workers = min(6, suite.jobs // 2)
    if workers >= 2 and _has_module(suite.python, "xdist"):
        command += ["-n", str(workers)]
    env = {"TMLIR_GPU_DRY_RUN": "1"} if suite.dry_run else {}
    code = suite.run(step, command, budget, env)
    step.command = [c.replace(str(junit), "$OUT/pytest.xml") for c in step.command]
    if junit.exists():
        step.detail = junit_summary(junit)
        step.detail["junit"] = junit.name
    if code == 5:  # nothing selected
        step.status = "ok (no tests selected)"


def _file(name: str) -> str:
    return name.replace(" ", "_").replace(":", "_")


def _has_module(python: str, module: str) -> bool:
    probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False)
    return probe.returncode == 0


# ----------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="results folder (e.g. $OUT)")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: run what needs none")
    parser.add_argument("--budget", type=float, default=480.0,
                        help="seconds for the whole suite (default 480: 8 minutes of a 10-minute call)")
    parser.add_argument("--steps", default=",".join(STEPS),
                        help=f"comma-separated steps to run (default: {','.join(STEPS)}): the GPU tests, "
                             "the models in fp32, the models in fp16, attention against SDPA, the matmul "
                             "shapes, the models in tf32")
    parser.add_argument("--tests", default=None, metavar="EXPR",
                        help="pytest -k expression selecting GPU tests (default: all)")
    parser.add_argument("--matmul-shapes", nargs="*", default=list(DEFAULT_SHAPES), metavar="MxNxK[:f16]",
                        help="matmul shapes; a :f16 or :bf16 suffix times the tensor-core template")
    parser.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS), metavar="NAME",
                        help="models to time, in order: full-size ones from --model-dir "
                             f"({', '.join(FULL_MODELS)}) or small ones of examples/models/")
    parser.add_argument("--model-dir", type=Path, default=ROOT / "build" / "models",
                        help="where the full-size ONNX files are, or are made (default build/models)")
    parser.add_argument("--export-python", default=os.environ.get("TMLIR_EXPORT_PYTHON", sys.executable),
                        help="Python with torch and transformers to export missing models "
                             "(default $TMLIR_EXPORT_PYTHON, else this one)")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per model latency")
    parser.add_argument("--tune-seconds", type=float, default=0.0,
                        help="tm-tune time per model before a tuned fp32 latency (default 0: none)")
    parser.add_argument("--torch-cache", type=Path, default=ROOT / "build" / "torch-cache",
                        help="the inductor and triton caches (default build/torch-cache)")
    parser.add_argument("--torch-cache-archive", type=Path, default=None,
                        help="a torch-cache.tar.gz of an earlier call, unpacked into --torch-cache first")
    parser.add_argument("--pack-cache-mib", type=float, default=24.0,
                        help="write DIR/torch-cache.tar.gz when it is at most this many MiB (default 24)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    args.steps = [s for s in args.steps.split(",") if s]
    unknown = set(args.steps) - set(STEPS)
    if unknown:
        parser.error(f"unknown step {min(unknown)!r}; choose from {', '.join(STEPS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    reserve = 0.0 if args.dry_run else FINISH_SECONDS  # the caches packed and a killed step's grace
    suite = Suite(args.out.resolve(), args.dry_run, start, start + args.budget - reserve, sys.executable,
                  args.export_python, args.model_dir.resolve(), args.jobs, args.torch_cache.resolve(),
                  budget=args.budget, date=datetime.now(UTC).isoformat(timespec="seconds"))
    suite.environment = environment(suite.python, args.dry_run)
    if args.torch_cache_archive:
        suite.extra["torch_cache_unpacked"] = unpack_cache(args.torch_cache_archive, suite.torch_cache)
    print(f"[suite] {suite.environment.get('device', 'no GPU')}; budget {args.budget:.0f} s", flush=True)
    jobs = plan(args.steps, args.models, args.matmul_shapes)
    exported = {job.model: threading.Event() for job in jobs if job.model}
    preparation = threading.Thread(target=prepare, name="preparation", args=(suite, jobs, exported))
    preparation.start()
    run_gpu_lane(suite, jobs, exported, args)
    suite.stopping.set()  # what the preparation lane has not done, nothing needs now
    with suite.lock:
        waiting = list(suite.running.values())
    for process in waiting:
        _kill(process)
    preparation.join()
    if not args.dry_run:
        suite.extra["torch_cache"] = pack_cache(suite.torch_cache, suite.out / "torch-cache.tar.gz",
                                                args.pack_cache_mib)
    result = suite.save()
    print(f"[suite] wrote {suite.out / 'results.json'} and results.md in {result['wall_seconds']} s", flush=True)
    failed = [s.name for s in suite.steps if s.status.startswith(("failed", "error", "timeout"))]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
