"""The latency model's error on every committed GPU measurement (no GPU needed).

    make full-models                                  # build/models/{resnet50,bert_base,gpt2_124m}.onnx
    .venv/bin/python benchmarks/latency_model.py      # error table -> results/latency_model.json
    .venv/bin/python benchmarks/latency_model.py --fit   # also search the constants that fit best

The data points are the H200 measurements of ``benchmarks/results/gpu/<run>/`` (``--run``):
each matmul shape's default and tuned SIMT candidate (``matmul_*.json``), the tuning records a
GPU run wrote (``*.tuning_records.jsonl``: a kernel's best time) and the three full models'
latency (``latency_*.json``, tmlir's default session replayed as a CUDA graph). Every kernel
is rebuilt here exactly as it was measured -- the same template, parameters and, for the
models, the schedule defaults of that run (``schedule-defaults=preference``, the preference
list of the register-prefetch template) -- lowered, and estimated by ``tmlir.latency`` with the
registers ptxas gives it for sm_90. A model's estimate is the sum over its launches (each
with its launch cost inside a CUDA graph).

``--fit`` searches a grid of the model's calibrated constants (DRAM and L2 round trips, issue
efficiency and its half point, launch cost) for the smallest largest error and prints the
best; the constants in ``tmlir/latency.py`` are set by hand from it. Writes
results/latency_model.json (every point: measured, estimated, error, the bound that set the
estimate) with machine, date and versions.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from tmlir import latency
from tmlir.gpus import Gpu, gpu
from tmlir.latency import Launch, estimate

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "gpu" / "2026-11-26-h200"
MODELS = ROOT / "build" / "models"
RESULT = ROOT / "benchmarks" / "results" / "latency_model.json"
ARCH = "sm_90"
PACKAGES = ("xdsl", "onnx", "numpy", "nvidia-cuda-nvrtc")
CONSTANTS = ("DRAM_LATENCY_S", "L2_LATENCY_S", "ISSUE_EFFICIENCY", "ISSUE_HALF_WARPS", "LAUNCH_S")


@dataclass
class Point:
    """One measurement: its name, what was measured (µs) and the launches that make it."""

    name: str
    kind: str  # kernel or model
    measured_us: float
    launches: list[Launch]

    def estimate_us(self, on: Gpu) -> float:
        return sum(estimate(launch, on).seconds for launch in self.launches) * 1e6


def _pair(text: str) -> tuple[int, int]:
    a, b = text.split("x")
    return int(a), int(b)


def _kernel_launches(kernel) -> list[Launch]:  # type: ignore[no-untyped-def]
    """The launch of one tm kernel alone, as the cost report sees it (ptxas registers)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp

    from tmlir.backends.cost import cost_report, ptxas_registers
    from tmlir.dialects import tm
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context

    host = func.FuncOp("host", ([arg.type for arg in kernel.args], []))
    host.body.block.add_op(tm.LaunchOp(kernel.sym_name.data, list(host.args)))
    host.body.block.add_op(func.ReturnOp())
    module = ModuleOp([kernel, host])
    LowerToCuda().apply(make_context(), module)
    cost = cost_report(module, "H200", ptxas_registers(module, ARCH))
    return [k.launch for k in cost.launches if k.launch is not None]


def matmul_points(run: Path) -> list[Point]:
    """The default and tuned candidate of every matmul shape of the run."""
    from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams, matmul_simt_kernel

    points = []
    for path in sorted(run.glob("matmul_*.json")):
        for size in json.loads(path.read_text())["sizes"]:
            if size.get("dtype", "f32") != "f32":
                continue
            problem = MatmulProblem.plain(size["m"], size["n"], size["k"])
            for kind in ("default", "tuned"):
                q = size[kind]["params"]
                params = MatmulSimtParams(_pair(q["block_warps"]), _pair(q["warp_outer"]), _pair(q["lanes"]),
                                          _pair(q["thread_inner"]), q["block_k"])
                points.append(Point(f"matmul {size['shape']} {kind}", "kernel", size[kind]["ms"] * 1e3,
                                    _kernel_launches(matmul_simt_kernel("mm", problem, params))))
    return points


def record_points(run: Path) -> list[Point]:
    """Every tuning record of the run: the kernel's best time, rebuilt from its signature."""
    from tmlir.tuning.space import TEMPLATES

    points = []
    for path in sorted(run.glob("*.tuning_records.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            template = TEMPLATES[record["template"]]
            problem = _problem(template.problem, record["signature"])
            params = template.params(**{k: tuple(v) if isinstance(v, list) else v
                                        for k, v in record["params"].items()})
            element = record["signature"].rsplit("; ", 1)[-1].rstrip(")")
            kernel = template.build("k", problem, params, element)
            points.append(Point(f"record {record['signature'].split('(')[0]} "
                                f"{'x'.join(map(str, problem.out_shape))} K={problem.k}", "kernel",
                                record["seconds"] * 1e6, _kernel_launches(kernel)))
    return points


def _problem(kind: type, signature: str):  # type: ignore[no-untyped-def]
    """The problem a tuning record's signature names: ``template(field=value, ...; element)``."""
    fields = {}
    for item in signature.split("(", 1)[1].rsplit(";", 1)[0].split(", "):
        name, text = item.split("=")
        value: object
        if text == "none":
            value = None
        elif text in ("true", "false"):
            value = text == "true"
        elif "." in text:
            value = float(text)
        else:
            value = tuple(int(v) for v in text.split("x")) if "x" in text or name.endswith("shape") else int(text)
        fields[name] = value
    return kind(**fields)


def model_points(run: Path, models: Path) -> list[Point]:
    """Every model latency of the run whose ONNX file is in `models`."""
    from tmlir.backends.cost import cost_report, ptxas_registers
    from tmlir.frontends.onnx import import_onnx
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context

    points = []
    for path in sorted(run.glob("latency_*.json")):
        result = json.loads(path.read_text())
        onnx = models / f"{result['model']}.onnx"
        measured = result.get("tmlir_default", {}).get("median_ms")
        if measured is None or not onnx.exists():
            print(f"skipped {result['model']}: {'no ONNX file in ' + str(models) if measured else 'not measured'}")
            continue
        imported = import_onnx(str(onnx), source=str(onnx))
        LowerToCuda(**_legacy_defaults()).apply(make_context(weights=imported.weights), imported.module)
        cost = cost_report(imported.module, "H200", ptxas_registers(imported.module, ARCH))
        points.append(Point(f"model {result['model']}", "model", measured * 1e3,
                            [k.launch for k in cost.launches if k.launch is not None]))
    return points


def _legacy_defaults() -> dict[str, str]:
    """lower-to-cuda's options that give the schedules the measured run used."""
    from tmlir.passes.lower_to_cuda import LowerToCuda

    fields = LowerToCuda.__dataclass_fields__  # type: ignore[attr-defined]
    return {"schedule_defaults": "legacy"} if "schedule_defaults" in fields else {}


def errors(points: list[Point], on: Gpu) -> list[float]:
    return [p.estimate_us(on) / p.measured_us - 1 for p in points]


def fit(points: list[Point], on: Gpu) -> dict[str, float]:
    """The grid point of the constants with the smallest largest |error| plus the |mean
    error| of the kernels and of the models (a model that errs on one side flatters or
    maligns every new kernel alike)."""
    grid = {
        "DRAM_LATENCY_S": [x * 1e-6 for x in (0.65, 0.70, 0.75, 0.80, 0.85)],
        "L2_LATENCY_S": [x * 1e-6 for x in (0.44, 0.48, 0.52, 0.56, 0.60)],
        "ISSUE_EFFICIENCY": [0.80, 0.84, 0.88, 0.92, 0.96],
        "ISSUE_HALF_WARPS": [0.3, 0.4, 0.5, 0.66, 0.8],
        "LAUNCH_S": [x * 1e-6 for x in (1.0, 1.5, 2.0, 2.5, 3.0)],
    }
    saved = {name: getattr(latency, name) for name in CONSTANTS}
    best: tuple[float, float, dict[str, float]] | None = None
    try:
        for values in itertools.product(*grid.values()):
            for name, value in zip(grid, values):
                setattr(latency, name, value)
            errs = errors(points, on)
            kinds = {p.kind for p in points}
            biases = [sum(e for e, p in zip(errs, points) if p.kind == kind)
                      / sum(p.kind == kind for p in points) for kind in kinds]
            bias = sum(errs) / len(errs)
            score = (max(abs(e) for e in errs) + sum(abs(b) for b in biases), bias)
            if best is None or score[0] < best[0]:
                best = (*score, dict(zip(grid, values)))
    finally:
        for name, value in saved.items():
            setattr(latency, name, value)
    assert best is not None
    print(f"best fit: worst + |bias| {best[0] * 100:.1f} %, bias {best[1] * 100:+.1f} %: "
          + ", ".join(f"{k} = {v:.3g}" for k, v in best[2].items()))
    return best[2]


def _versions() -> dict[str, str]:
    found = {}
    for package in PACKAGES:
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "not installed"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=Path, default=RUN, help="a GPU run's results folder")
    parser.add_argument("--models", type=Path, default=MODELS, help="folder of the full-size ONNX models")
    parser.add_argument("--fit", action="store_true", help="search the constants that fit best")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    on = gpu(json.loads((args.run / "results.json").read_text())["environment"]["device"]) \
        if (args.run / "results.json").exists() else gpu("H200")
    points = matmul_points(args.run) + record_points(args.run) + model_points(args.run, args.models)
    rows = []
    print(f"{'point':48s} {'measured µs':>12s} {'estimate µs':>12s} {'error':>8s}")
    for point in points:
        est = point.estimate_us(on)
        rows.append({"point": point.name, "kind": point.kind, "measured_us": round(point.measured_us, 2),
                     "estimate_us": round(est, 2), "error": round(est / point.measured_us - 1, 4),
                     "launches": len(point.launches)})
        print(f"{point.name:48s} {point.measured_us:12.1f} {est:12.1f} {(est / point.measured_us - 1) * 100:+7.1f}%")
    worst = max(abs(r["error"]) for r in rows)
    print(f"largest error {worst * 100:.1f} % over {len(rows)} points on {on.name}")
    result = {
        "benchmark": "latency_model", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "versions": _versions(), "gpu": on.name, "run": str(args.run.relative_to(ROOT)) if args.run.is_relative_to(ROOT)
        else args.run.name, "constants": {name: getattr(latency, name) for name in CONSTANTS},
        "largest_error": worst, "points": rows,
    }
    if args.fit:
        result["fit"] = fit(points, on)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
