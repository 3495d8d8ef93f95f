"""The GPU suite: tmlir's GPU tests, the matmul benchmark and full-model latency in one run.

    benchmarks/gpu/run.sh --out DIR              # on a GPU machine, within one 10-minute call
    benchmarks/gpu/run.sh --out DIR --dry-run    # anywhere: every step that needs no GPU

Steps, each a process of its own with a deadline (killed at it, recorded as "timeout"; a
step that fails is recorded and the next one still runs):

- ``pytest``: ``pytest -m gpu tests`` (junit XML and log in DIR). In a dry run the GPU
  model tests (`tests/e2e/test_gpu_models.py`) do their emu and onnxruntime side and compile
  PTX for sm_90, then skip; the other GPU tests skip.
- ``matmul MxNxK``: `benchmarks/matmul.py` for one shape (default and tuned candidates
  against ``torch.matmul``, TF32 off); ``MxNxK:f16`` (or ``:bf16``) times the tensor-core
  template against ``torch.matmul`` on f16 (bf16) tensors. In a dry run, the shape's
  default candidate is compiled to PTX for sm_90 instead.
- ``export NAME`` and ``latency NAME``: the model's ONNX (reused from --model-dir when it
  is there, else made by `examples/make_hf_models.py` with --export-python) and
  `model_latency.py` on it.

The tests and the matmul shapes run one after the other in the main thread while the
models are exported, compiled and timed in a second one; every section that times the
GPU holds one lock (`common.gpu_lock`), so timings never overlap. The main thread's steps
share the first --gpu-share of the budget, the models all of it. DIR gets
``results.json``, ``results.md`` (`report.py`), ``logs/`` and ``steps/``.
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

from common import BUDGET_SKIP, DRY_RUN_SKIP, gpu_lock, read_json, write_json
from environment import environment
from report import junit_summary, write_markdown

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DEFAULT_SHAPES = ("1024x1024x1024", "1000x999x1001", "1x4096x4096", "2048x2048x2048",
                  "4096x4096x4096", "4096x4096x4096:f16", "1000x1000x1024:f16")
DEFAULT_MODELS = ("resnet50", "bert_base", "gpt2_124m")
#: Full-size models (their ONNX in --model-dir); others are the small ones of examples/models/.
FULL_MODELS = DEFAULT_MODELS
#: A step is not started with fewer seconds than this left.
MIN_STEP_SECONDS = 15


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
    """The run's options and its steps, in the order they are reported."""

    out: Path
    dry_run: bool
    start: float
    deadline: float
    gpu_deadline: float
    python: str
    export_python: str
    model_dir: Path
    jobs: int
    environment: dict[str, Any] = field(default_factory=dict)
    date: str = ""
    budget: float = 0.0
    steps: list[Step] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def left(self, deadline: float | None = None) -> float:
        return (deadline or self.deadline) - time.time()

    def add(self, step: Step) -> Step:
        with self.lock:
            self.steps.append(step)
        return step

    def save(self) -> dict[str, Any]:
        """Write results.json and results.md as they stand (after every step, so that a
        run cut short still leaves its report); return the result."""
        order = {"pytest": 0, "matmul": 1, "export": 2, "latency": 2}  # the sort is stable
        with self.lock:
            steps = sorted(self.steps, key=lambda s: order.get(s.name.split()[0], 3))
            result = {"suite": "tmlir GPU suite", "dry_run": self.dry_run, "date": self.date,
                      "budget_seconds": self.budget, "wall_seconds": round(time.time() - self.start, 1),
                      "environment": self.environment, "steps": [vars(s) for s in steps]}
            write_json(self.out / "results.json", result)
            write_markdown(self.out / "results.md", result)
        return result

    @property
    def gpu_lock_path(self) -> Path:
        return self.out / "gpu.lock"

    def run(self, step: Step, command: list[str], budget: float, env: dict[str, str] | None = None
            ) -> int | None:
        """Run `command` for `step` (log in logs/), killed after `budget` seconds; its exit
        status, or None if it was killed or did not start. Sets the step's status."""
        step.command = [str(c) for c in command]
        if budget < MIN_STEP_SECONDS:
            step.status = BUDGET_SKIP
            return None
        log = self.out / "logs" / f"{step.name.replace(' ', '_')}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        step.log = str(log.relative_to(self.out))
        start = time.perf_counter()
        print(f"[suite] {step.name}: start, {budget:.0f} s budget", flush=True)
        with open(log, "w") as handle:
            handle.write(f"$ {' '.join(step.command)}\n")
            handle.flush()
            try:
                process = subprocess.Popen(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT,
                                           env={**os.environ, **(env or {})}, start_new_session=True)
            except OSError as exc:
                step.status = f"error: {exc}"
                return None
            try:
                code = process.wait(timeout=budget)
            except subprocess.TimeoutExpired:
                _kill(process)
                code = None
        step.seconds = round(time.perf_counter() - start, 2)
        step.status = ("timeout" if code is None else "ok" if code == 0 else f"failed (exit {code})")
        print(f"[suite] {step.name}: {step.status} in {step.seconds} s", flush=True)
        return code


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


# ----------------------------------------------------------------------------- steps


def run_pytest(suite: Suite, selection: str | None) -> None:
    step = suite.add(Step("pytest"))
    junit = suite.out / "pytest.xml"
    command = [suite.python, "-m", "pytest", "-m", "gpu", "tests", "-q", "-rfEs",
               f"--junitxml={junit}", "-p", "no:cacheprovider", "--continue-on-collection-errors"]
    if selection:
        command += ["-k", selection]
    workers = min(6, suite.jobs // 2)
    if workers >= 2 and _has_module(suite.python, "xdist"):
        command += ["-n", str(workers)]
    env = {"TMLIR_GPU_DRY_RUN": "1"} if suite.dry_run else {}
    with gpu_lock(suite.gpu_lock_path):
        code = suite.run(step, command, min(suite.left(suite.gpu_deadline), 0.45 * suite.left()), env)
    if junit.exists():
        step.detail = junit_summary(junit)
        step.detail["junit"] = junit.name
    if code == 5:  # nothing selected
        step.status = "ok (no tests selected)"
    suite.save()


def run_matmul(suite: Suite, shapes: list[str]) -> None:
    for i, spec in enumerate(shapes):
        shape, _, dtype = spec.partition(":")
        dtype = dtype or "f32"
        step = suite.add(Step(f"matmul {spec}"))
        out = suite.out / "steps" / f"matmul_{spec.replace(':', '_')}.json"
        budget = suite.left(suite.gpu_deadline) / (len(shapes) - i)
        if suite.dry_run:
            command = [suite.python, HERE / "matmul_ptx.py", shape, "--dtype", dtype, "--out", out]
            suite.run(step, command, budget)
            step.detail = {"gpu": DRY_RUN_SKIP, **(read_json(out) or {})}
            suite.save()
            continue
        command = [suite.python, ROOT / "benchmarks" / "matmul.py", "--shapes", shape, "--dtype", dtype,
                   "--min-seconds", "0.05", "--jobs", str(suite.jobs), "--out", out]
        with gpu_lock(suite.gpu_lock_path):
            suite.run(step, command, budget)
        result = read_json(out)
        if result and result.get("sizes"):
            step.detail = result["sizes"][0]
            step.detail["device"] = result.get("device")
        suite.save()


def model_source(suite: Suite, name: str) -> Path:
    if name in FULL_MODELS:
        return suite.model_dir / f"{name}.onnx"
    return ROOT / "examples" / "models" / f"{name}.onnx"


def run_models(suite: Suite, names: list[str], runs: int, tune_seconds: float) -> None:
    for i, name in enumerate(names):
        path = model_source(suite, name)
        deadline = time.time() + suite.left() / (len(names) - i)
        export = suite.add(Step(f"export {name}"))
        if path.exists():
            export.status = f"ok (reused {path})"
        else:
            command = [suite.export_python, ROOT / "examples" / "make_hf_models.py", "--full",
                       "--out", path.parent, name]
            if suite.run(export, command, 0.5 * (deadline - time.time())) != 0:
                suite.add(Step(f"latency {name}", status="not run: no ONNX file"))
                suite.save()
                continue
        step = suite.add(Step(f"latency {name}"))
        out = suite.out / "steps" / f"latency_{name}.json"
        command = [suite.python, HERE / "model_latency.py", path, "--name", name, "--out", out,
                   "--deadline", f"{deadline - 5:.1f}", "--lock", suite.gpu_lock_path,
                   "--runs", str(runs), "--tune-seconds", str(tune_seconds),
                   "--jobs", str(suite.jobs)]
        if suite.dry_run:
            command.append("--dry-run")
        suite.run(step, command, deadline - time.time())
        step.detail = read_json(out) or {}
        suite.save()


def _has_module(python: str, module: str) -> bool:
    probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False)
    return probe.returncode == 0


# ----------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="results folder (e.g. $OUT)")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: run what needs none")
    parser.add_argument("--budget", type=float, default=520.0,
                        help="seconds for the whole suite (default 520: a 10-minute call less "
                             "the install and a margin)")
    parser.add_argument("--gpu-share", type=float, default=0.55,
                        help="fraction of the budget for the tests and matmul (default 0.55)")
    parser.add_argument("--steps", default="pytest,matmul,models",
                        help="comma-separated steps to run (default: pytest,matmul,models)")
    parser.add_argument("--tests", default=None, metavar="EXPR",
                        help="pytest -k expression selecting GPU tests (default: all)")
    parser.add_argument("--matmul-shapes", nargs="*", default=list(DEFAULT_SHAPES), metavar="MxNxK[:f16]",
                        help="matmul shapes; a :f16 or :bf16 suffix times the tensor-core template")
    parser.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS), metavar="NAME",
                        help="models to time: full-size ones from --model-dir "
                             f"({', '.join(FULL_MODELS)}) or small ones of examples/models/")
    parser.add_argument("--model-dir", type=Path, default=ROOT / "build" / "models",
                        help="where the full-size ONNX files are, or are made (default build/models)")
    parser.add_argument("--export-python", default=os.environ.get("TMLIR_EXPORT_PYTHON", sys.executable),
                        help="Python with torch and transformers to export missing models "
                             "(default $TMLIR_EXPORT_PYTHON, else this one)")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per model latency")
    parser.add_argument("--tune-seconds", type=float, default=60.0,
                        help="tm-tune time per model before the tuned latency (0: none)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    args.steps = [s for s in args.steps.split(",") if s]
    unknown = set(args.steps) - {"pytest", "matmul", "models"}
    if unknown:
        parser.error(f"unknown step {min(unknown)!r}; choose from pytest, matmul, models")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    suite = Suite(args.out.resolve(), args.dry_run, start, start + args.budget,
                  start + args.gpu_share * args.budget, sys.executable, args.export_python,
                  args.model_dir.resolve(), args.jobs, budget=args.budget,
                  date=datetime.now(UTC).isoformat(timespec="seconds"))
    suite.environment = environment(suite.python, args.dry_run)
    print(f"[suite] {suite.environment.get('device', 'no GPU')}; budget {args.budget:.0f} s", flush=True)
    models = threading.Thread(target=run_models, name="models",
                              args=(suite, args.models, args.runs, args.tune_seconds))
    if "models" in args.steps:
        models.start()
    if "pytest" in args.steps:
        run_pytest(suite, args.tests)
    if "matmul" in args.steps:
        run_matmul(suite, args.matmul_shapes)
    if models.is_alive():
        models.join()
    result = suite.save()
    print(f"[suite] wrote {suite.out / 'results.json'} and results.md "
          f"in {result['wall_seconds']} s", flush=True)
    failed = [s.name for s in suite.steps if s.status.startswith(("failed", "error", "timeout"))]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
