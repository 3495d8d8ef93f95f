"""``tm-tune --dry-run`` on full-size ResNet-50: the whole space of every unique kernel
compiled and ptxas-filtered on this machine's CPUs (no GPU needed).

    make full-models                       # build/models/resnet50.onnx
    .venv/bin/python benchmarks/tune.py    # or name another .onnx file

Runs `tmlir.tuning.tune_model(..., dry_run=True)` twice with the artifact cache pointed at
an empty folder: **cold** (everything built and compiled: xDSL lowering, NVRTC, ptxas) and
**warm** (the same space again, from the cache). Reports the unique kernels and their
occurrences, candidates total / kept / rejected by reason, the wall time, the CPU time of
this process and its workers, and candidates compiled per second. The machine may be
shared: the JSON records the 1-minute load average before and after each run. Writes
benchmarks/results/tune_dry_run.json with machine, date and versions.
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


def run(model: Path, arch: str, jobs: int | None) -> dict:
    from tmlir.tuning import TuningTarget, tune_model

    load, cpu = os.getloadavg()[0], cpu_seconds()
    report = tune_model(model, TuningTarget("", arch), dry_run=True, jobs=jobs, progress=True)
    result = report.to_json()
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
    parser.add_argument("model", nargs="?", type=Path, default=MODEL)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--jobs", type=int, default=None, help="default: the CPU count")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    result = {**header(), "model": str(args.model), "arch": args.arch,
              "jobs": args.jobs or os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="tmlir-tune-bench-") as cache:
        os.environ["TMLIR_CACHE_DIR"] = cache
        print("cold (empty artifact cache):")
        result["cold"] = run(args.model, args.arch, args.jobs)
        print("warm (the same space again):")
        result["warm"] = run(args.model, args.arch, args.jobs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
