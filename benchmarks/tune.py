"""``tm-tune --dry-run`` on full-size models: the space of every unique kernel compiled and
ptxas-filtered on this machine's CPUs (no GPU needed).

    make full-models                              # build/models/{resnet50,bert_base}.onnx
    .venv/bin/python benchmarks/tune.py           # ResNet-50, the whole spaces
    .venv/bin/python benchmarks/tune.py build/models/resnet50.onnx build/models/bert_base.onnx --limit 8

Runs `tmlir.tuning.tune_model(..., dry_run=True)` twice per model with the artifact cache
pointed at an empty folder: **cold** (everything built and compiled: xDSL lowering, NVRTC,
ptxas) and **warm** (the same space again, from the cache). `--limit N` takes what a tuning
run with ``tm-tune --limit N`` compiles: the latency model's N best candidates of each space
(and the default). Reports the unique kernels and their occurrences, candidates total / kept
/ rejected by reason, the wall time, the CPU time of this process and its workers, and
candidates compiled per second. The machine may be shared: the JSON records the 1-minute
load average before and after each run. Writes benchmarks/results/tune_dry_run.json (with
`--limit`: tune_dry_run_limit<N>.json) with machine, date and versions; model paths relative
to the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import tempfile
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "build" / "models" / "resnet50.onnx"
RESULT = ROOT / "benchmarks" / "results" / "tune_dry_run.json"
PACKAGES = ("xdsl", "onnx", "numpy", "nvidia-cuda-nvrtc", "cuda-python", "distributed")


def header() -> dict:
    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = version(p)
        except PackageNotFoundError:
            versions[p] = "not installed"
    return {
        "benchmark": "tune_dry_run",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "versions": versions,
    }


def cpu_seconds() -> float:
    own, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def relative(path: Path) -> str:
    """`path` relative to the repository when it is inside it (results carry no machine paths)."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return path.name


def run(model: Path, arch: str, jobs: int | None, limit: int | None) -> dict:
    from tmlir.tuning import TuningTarget, tune_model

    load, cpu = os.getloadavg()[0], cpu_seconds()
    report = tune_model(model, TuningTarget("", arch), dry_run=True, jobs=jobs, progress=True, limit=limit)
    result = report.to_json()
    result["model"] = relative(model)
    result["cpu_seconds"] = round(cpu_seconds() - cpu, 1)
    result["load_average"] = {"before": load, "after": os.getloadavg()[0]}
    print(f"{result['unique_kernels']} unique kernels ({result['occurrences']} ops), "
          f"{result['candidates']} candidates, {result['kept']} kept, rejected "
          f"{result['rejected'] or 'none'}; compile {result['compile_seconds']:.1f} s, wall "
          f"{result['wall_seconds']:.1f} s, {result['candidates_per_second']:.2f} candidates/s, "
          f"CPU {result['cpu_seconds']:.0f} s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path, default=[MODEL])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--jobs", type=int, default=None, help="default: the CPU count")
    parser.add_argument("--limit", type=int, default=None,
                        help="the latency model's N best candidates of each space (and the default)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or (RESULT if args.limit is None else RESULT.with_name(f"tune_dry_run_limit{args.limit}.json"))
    result = {**header(), "arch": args.arch, "jobs": args.jobs or os.cpu_count(), "limit": args.limit,
              "models": []}
    for model in args.models:
        entry: dict = {"model": relative(model)}
        with tempfile.TemporaryDirectory(prefix="tmlir-tune-bench-") as cache:
            os.environ["TMLIR_CACHE_DIR"] = cache
            print(f"{relative(model)}: cold (empty artifact cache):")
            entry["cold"] = run(model, args.arch, args.jobs, args.limit)
            print(f"{relative(model)}: warm (the same space again):")
            entry["warm"] = run(model, args.arch, args.jobs, args.limit)
        result["models"].append(entry)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {relative(out)}")


if __name__ == "__main__":
    main()
