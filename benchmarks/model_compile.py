"""Whole-model compile benchmark: time per stage from ONNX to CUDA C and PTX (no GPU needed).

    make full-models                                   # exports build/models/{resnet50,bert_base}.onnx
    .venv/bin/python benchmarks/model_compile.py       # those two; or name .onnx files
    .venv/bin/python benchmarks/model_compile.py examples/models/resnet.onnx --no-ptxas
    .venv/bin/python benchmarks/model_compile.py --profile convert-graph-to-tm   # cProfile one stage
    .venv/bin/python benchmarks/model_compile.py --fusion on     # only with fusion (default: both)

Stages, each timed once (wall clock): ONNX load, import (shape inference, constant folding,
graph IR), every pass of the `lower-to-cuda` pipeline on its own plus its final verify, the cost
report (FLOPs, global bytes and H100 roofline time per launch, `tmlir.backends.cost`), CUDA C
emission, NVRTC PTX for sm_90 (per kernel, in parallel: `compile_kernels_ptx`) and (unless
--no-ptxas) `nvcc -cubin -Xptxas -v` for the register and spill report. The artifact cache is
bypassed (a fresh `TMLIR_CACHE_DIR` per model). Then the whole compile, ONNX file to PTX as a
session does it, end to end: cold (empty cache), then warm (the same compile again). Reports
graph ops, kernels (by schedule template), launches, the cost totals and the 10 launches with the
longest roofline time, CUDA C lines and PTX bytes. A model that fails is one line naming the stage
and the error; the others still run. Each model is compiled with fusion and without
(`lower-to-cuda{fusion=false}`) unless `--fusion on|off` says otherwise, and a last table sets
the two side by side (kernels, global bytes, roofline time, compile time). Writes
benchmarks/results/model_compile.json with machine, date and versions.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import resource
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODELS = (ROOT / "build" / "models" / "resnet50.onnx", ROOT / "build" / "models" / "bert_base.onnx")
RESULT = ROOT / "benchmarks" / "results" / "model_compile.json"
ARCH = "sm_90"
PACKAGES = ("xdsl", "onnx", "numpy", "nvidia-cuda-nvrtc", "cuda-python")
LOAD, IMPORT, VERIFY, EMIT = "onnx load", "import (fold + shapes + graph)", "verify", "emit CUDA C"
COST = "cost report"
TOP_KERNELS = 10
PTX, PTXAS = f"NVRTC PTX {ARCH}", f"ptxas -v {ARCH} (nvcc -cubin)"


class StageFailed(Exception):
    """A stage raised: `stage` names it, `message` is the error in one line."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.message = message


def one_line(exc: BaseException) -> str:
    """The error as one line: its type and the first line of a compiler's summary or message."""
    text = getattr(exc, "summary", None) or str(exc)
    return f"{type(exc).__name__}: {' '.join(text.split()) or '(no message)'}"


@dataclass
class StageTimer:
    """Runs and times the stages of one model; `profile` names stages to run under cProfile."""

    profile: frozenset[str] = frozenset()
    top: int = 25
    seconds: list[tuple[str, float]] = field(default_factory=list)

    def run(self, stage: str, fn: Callable[[], Any]) -> Any:
        """Run `fn` as `stage`, record its wall time; a failure becomes StageFailed."""
        profiler = cProfile.Profile() if stage in self.profile else None
        start = time.perf_counter()
        try:
            with profiler or contextlib.nullcontext():
                result = fn()
        except Exception as exc:
            self.seconds.append((stage, time.perf_counter() - start))
            raise StageFailed(stage, one_line(exc)) from exc
        elapsed = time.perf_counter() - start
        self.seconds.append((stage, elapsed))
        print(f"  {stage:<32} {elapsed:9.2f} s", flush=True)
        if profiler is not None:
            print_profile(profiler, stage, self.top)
        return result


def print_profile(profiler: cProfile.Profile, stage: str, top: int) -> None:
    """The `top` functions of a profiled stage by cumulative time."""
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    print(f"--- cProfile of {stage} (times inflated by the profiler) ---")
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip()))


def stage_names(pipeline: tuple) -> list[str]:
    """Unique stage names of the pipeline's passes (`canonicalize`, `canonicalize#2`, ...)."""
    seen: Counter[str] = Counter()
    names = []
    for p in pipeline:
        seen[p.name] += 1
        names.append(p.name if seen[p.name] == 1 else f"{p.name}#{seen[p.name]}")
    return names


def all_stages() -> list[str]:
    """Every stage name, in order (the pipeline's passes read from `lower-to-cuda`)."""
    from tmlir.passes.lower_to_cuda import PIPELINE

    return [LOAD, IMPORT, *stage_names(PIPELINE), VERIFY, COST, EMIT, PTX, PTXAS]


FUSION_MODES = {"on": (True,), "off": (False,), "both": (True, False)}


def count_ops(module: Any) -> tuple[int, int]:
    """(graph operators, weights) of an imported module."""
    ops = [op.name for op in module.walk() if op.dialect_name() == "graph"]
    weights = ops.count("graph.weight")
    return len(ops) - weights, weights


def count_all(module: Any) -> int:
    """Every operation in `module`, nested ones included."""
    return sum(1 for _ in module.walk())


def cost_summary(cost: Any) -> dict[str, Any]:
    """The totals of a `ModelCost` and its TOP_KERNELS launches by roofline time."""
    return {
        "launches": len(cost.launches),
        "kernels": cost.kernels,
        "flops": cost.flops,
        "bytes_read": cost.bytes_read,
        "bytes_written": cost.bytes_written,
        "roofline_us": round(cost.seconds * 1e6, 3),
        "compute_bound": cost.bound_count("compute"),
        "memory_bound": cost.bound_count("memory"),
        "top_kernels": [
            {"kernel": k.kernel, "template": k.template, "grid": k.grid, "block": k.block,
             "flops": k.flops, "bytes_read": k.bytes_read, "bytes_written": k.bytes_written,
             "roofline_us": round(k.seconds * 1e6, 3), "bound": k.bound}
            for k in cost.top(TOP_KERNELS)
        ],
    }


def ptxas_summary(stats: dict) -> dict[str, Any]:
    """Registers, spills and shared memory over all kernels of a `ptxas_stats` report."""
    spilling = sorted(name for name, s in stats.items() if s.spill_bytes)
    return {
        "kernels": len(stats),
        "registers_max": max((s.registers for s in stats.values()), default=0),
        "shared_bytes_max": max((s.shared_bytes for s in stats.values()), default=0),
        "spilling_kernels": len(spilling),
        "spill_bytes_total": sum(s.spill_bytes for s in stats.values()),
        "spilling": spilling,
    }


@contextlib.contextmanager
def cold_cache() -> Iterator[None]:
    """Point TMLIR_CACHE_DIR at an empty folder for the duration (real compiles, no hits)."""
    saved = os.environ.get("TMLIR_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="tmlir-model-compile-") as tmp:
        os.environ["TMLIR_CACHE_DIR"] = tmp
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("TMLIR_CACHE_DIR", None)
            else:
                os.environ["TMLIR_CACHE_DIR"] = saved


def compile_stages(path: Path, timer: StageTimer, with_ptxas: bool, fusion: bool,
                   report: dict[str, Any]) -> None:
    """Run every stage on `path`, filling `report` as they finish (so a failure keeps the rest)."""
    from tmlir.backends.cost import cost_report, totals_line
    from tmlir.backends.cuda_c import emit_cuda
    from tmlir.backends.ptx import compile_kernels_ptx, ptx_kernel_names, ptxas_stats
    from tmlir.frontends.onnx import import_onnx, load_model
    from tmlir.passes.lower_to_cuda import pipeline
    from tmlir.registry import make_context

    passes = pipeline(fusion)
    proto = timer.run(LOAD, lambda: load_model(str(path)))
    report["onnx_nodes"] = len(proto.graph.node)
    imported = timer.run(IMPORT, lambda: import_onnx(proto, source=str(path)))
    report["graph_ops"], report["weights"] = count_ops(imported.module)
    module = imported.module
    ctx = make_context(weights=imported.weights)
    report["ir_ops_after"] = {"import": count_all(module)}
    for name, p in zip(stage_names(passes), passes):
        timer.run(name, lambda p=p: p.apply(ctx, module))
        report["ir_ops_after"][name] = count_all(module)  # not timed
    timer.run(VERIFY, module.verify)
    report["gpu_level_ops"] = count_all(module)
    cost = timer.run(COST, lambda: cost_report(module))
    report["cost"] = cost_summary(cost)
    print(f"    {totals_line(cost)}", flush=True)
    program = timer.run(EMIT, lambda: emit_cuda(module))
    report["kernels"] = len(program.kernels)
    report["launches"] = len(program.launches)
    report["kernels_by_template"] = dict(Counter(k.template for k in program.kernels).most_common())
    report["cuda_c_lines"] = program.source.count("\n")
    report["cuda_c_bytes"] = len(program.source.encode())
    ptx = timer.run(PTX, lambda: compile_kernels_ptx(program, ARCH, compiler="nvrtc"))
    report["ptx_bytes"] = sum(len(text.encode()) for text in ptx.values())
    report["ptx_entries"] = sum(len(ptx_kernel_names(text)) for text in ptx.values())
    if with_ptxas:
        stats = timer.run(PTXAS, lambda: ptxas_stats(program.source, ARCH))
        report["ptxas"] = ptxas_summary(stats)


def end_to_end(path: Path, fusion: bool) -> dict[str, float]:
    """Wall seconds of the whole compile, ONNX file to per-kernel PTX, as a session does it
    (`compile_model`, then `compile_kernels_ptx`): cold (an empty artifact cache), then warm
    (the same again: the whole-compile and PTX caches hit)."""
    from tmlir.backends.ptx import compile_kernels_ptx
    from tmlir.runtime.session import compile_model

    def once() -> float:
        start = time.perf_counter()
        program, _ = compile_model(str(path), fusion=fusion)
        compile_kernels_ptx(program, ARCH, compiler="nvrtc")
        return round(time.perf_counter() - start, 3)

    with cold_cache():
        cold = once()
        warm = once()
    print(f"  {'end to end, cold cache':<32} {cold:9.2f} s\n  {'end to end, warm cache':<32} {warm:9.2f} s",
          flush=True)
    return {"cold_seconds": cold, "warm_seconds": warm}


def benchmark_model(path: Path, profile: frozenset[str], with_ptxas: bool,
                    fusion: bool) -> dict[str, Any]:
    """The report of one model: stage times, sizes, counts, or the stage that failed."""
    print(f"{display_path(path)} ({'fused' if fusion else 'unfused'}):", flush=True)
    report: dict[str, Any] = {"model": display_path(path), "fusion": fusion}
    timer = StageTimer(profile)
    start = time.perf_counter()
    try:
        if not path.exists():
            raise StageFailed(LOAD, f"no such file: {display_path(path)} (run `make full-models`)")
        with cold_cache():
            compile_stages(path, timer, with_ptxas, fusion, report)
        report["total_seconds"] = time.perf_counter() - start
        report["end_to_end"] = end_to_end(path, fusion)
        report["status"] = "ok"
    except StageFailed as failure:
        report["status"] = "failed"
        report["failed_stage"], report["error"] = failure.stage, failure.message
        print(f"  FAILED in {failure.stage}: {failure.message}", flush=True)
    report.setdefault("total_seconds", time.perf_counter() - start)
    report["seconds"] = [{"stage": stage, "seconds": round(s, 4)} for stage, s in timer.seconds]
    report["peak_rss_mib_so_far"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return report


def display_path(path: Path) -> str:
    """`path` relative to the repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def print_table(reports: list[dict[str, Any]]) -> None:
    """Stage times side by side, then IR sizes and counts; a failed model shows its one-line error."""
    names = [column_name(r) for r in reports]
    width = max(12, *(len(n) for n in names))
    print(f"\n{'stage':<32}" + "".join(f"{n:>{width}}" for n in names))
    for stage in dict.fromkeys(s["stage"] for r in reports for s in r["seconds"]):
        times = [next((s["seconds"] for s in r["seconds"] if s["stage"] == stage), None) for r in reports]
        print(f"{stage:<32}" + "".join(f"{t:>{width - 2}.2f} s" if t is not None else f"{'-':>{width}}"
                                       for t in times))
    print(f"{'total':<32}" + "".join(f"{r['total_seconds']:>{width - 2}.2f} s" for r in reports))
    for label, key in (("end to end, cold", "cold_seconds"), ("end to end, warm", "warm_seconds")):
        print_row(label, [r.get("end_to_end", {}) for r in reports], key, width)
    print("IR ops after")
    for stage in dict.fromkeys(k for r in reports for k in r.get("ir_ops_after", {})):
        print_row(f"  {stage}", [r.get("ir_ops_after", {}) for r in reports], stage, width)
    for label, key in COUNT_ROWS:
        print_row(label, reports, key, width)
    for label, key in PTXAS_ROWS:
        print_row(label, [r.get("ptxas", {}) for r in reports], key, width)
    for label, key in COST_ROWS:
        print_row(label, [r.get("cost", {}) for r in reports], key, width)
    for name, r in zip(names, reports):
        if r["status"] != "ok":
            print(f"{name}: FAILED in {r['failed_stage']}: {r['error']}")
        elif r.get("kernels_by_template"):
            print(f"{name} kernels by template: " + ", ".join(f"{t} {n}" for t, n in r["kernels_by_template"].items()))


COUNT_ROWS = (("onnx nodes", "onnx_nodes"), ("graph ops", "graph_ops"), ("weights", "weights"),
              ("gpu-level ops", "gpu_level_ops"), ("kernels", "kernels"), ("launches", "launches"),
              ("CUDA C lines", "cuda_c_lines"), ("PTX bytes", "ptx_bytes"),
              ("peak RSS MiB (so far)", "peak_rss_mib_so_far"))
PTXAS_ROWS = (("registers max", "registers_max"), ("spilling kernels", "spilling_kernels"))
COST_ROWS = (("FLOPs (cost)", "flops"), ("bytes read (cost)", "bytes_read"),
             ("bytes written (cost)", "bytes_written"), ("roofline us H100 (cost)", "roofline_us"))


def column_name(report: dict[str, Any]) -> str:
    """The model's name, marked when it was compiled without fusion."""
    return Path(report["model"]).stem + ("" if report.get("fusion", True) else "/unfused")


def fusion_comparison(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per model compiled both ways: kernels, global bytes, roofline and compile time, fused
    against unfused (ratios fused / unfused)."""
    rows = []
    for fused in (r for r in reports if r.get("fusion") and r["status"] == "ok"):
        unfused = next((r for r in reports if r["model"] == fused["model"]
                        and not r.get("fusion") and r["status"] == "ok"), None)
        if unfused is None:
            continue

        def moved(r: dict[str, Any]) -> int:
            return r["cost"]["bytes_read"] + r["cost"]["bytes_written"]

        rows.append({
            "model": fused["model"],
            "kernels": [fused["kernels"], unfused["kernels"]],
            "global_bytes": [moved(fused), moved(unfused)],
            "global_bytes_ratio": round(moved(fused) / moved(unfused), 4),
            "roofline_us": [fused["cost"]["roofline_us"], unfused["cost"]["roofline_us"]],
            "compile_seconds": [round(fused["total_seconds"], 2),
                                round(unfused["total_seconds"], 2)],
        })
    return rows


def print_comparison(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    print("\nfusion (fused vs unfused)")
    for row in rows:
        (kf, ku), (bf, bu), (rf, ru), (cf, cu) = (row["kernels"], row["global_bytes"],
                                                  row["roofline_us"], row["compile_seconds"])
        print(f"  {Path(row['model']).stem}: kernels {kf} vs {ku}, global bytes {bf / 1e6:.1f} MB "
              f"vs {bu / 1e6:.1f} MB ({100 * (1 - bf / bu):.1f}% less), roofline {rf:.1f} us vs "
              f"{ru:.1f} us, compile {cf:.1f} s vs {cu:.1f} s")


def print_row(label: str, columns: list[dict[str, Any]], key: str, width: int) -> None:
    """One table row: `key` of each column's dict, `-` where it is missing."""
    print(f"{label:<32}" + "".join(f"{c.get(key, '-'):>{width}}" for c in columns))


def package_versions() -> dict[str, str]:
    """Versions of the packages that set the timings, and of nvcc."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "not installed"
    try:
        out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=True).stdout
        versions["nvcc"] = out.strip().splitlines()[-1]
    except (OSError, subprocess.CalledProcessError):
        versions["nvcc"] = "not found"
    return versions


def tmlir_revision() -> str:
    """The checkout's commit, with `+dirty` when tmlir/ has uncommitted changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], check=False, cwd=ROOT, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+dirty" if git("status", "--porcelain", "--", "tmlir") else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path, default=list(DEFAULT_MODELS),
                        help="ONNX files (default: build/models/resnet50.onnx and bert_base.onnx)")
    parser.add_argument("--no-ptxas", action="store_true", help="skip the nvcc -Xptxas -v report")
    parser.add_argument("--profile", action="append", default=[], metavar="STAGE",
                        help="run STAGE (a name from the table) under cProfile and print its hotspots")
    parser.add_argument("--out", type=Path, default=RESULT, help=f"JSON result (default: {display_path(RESULT)})")
    parser.add_argument("--fusion", choices=sorted(FUSION_MODES), default="both",
                        help="compile with fusion, without, or both (default)")
    args = parser.parse_args()
    unknown = [stage for stage in args.profile if stage not in all_stages()]
    if unknown:
        parser.error(f"--profile: no stage {unknown[0]!r}; stages: {', '.join(all_stages())}")

    load_before = os.getloadavg()
    reports = [benchmark_model(path, frozenset(args.profile), not args.no_ptxas, fusion)
               for path in args.models for fusion in FUSION_MODES[args.fusion]]
    print_table(reports)
    comparison = fusion_comparison(reports)
    print_comparison(comparison)
    result = {
        "benchmark": "model_compile",
        "arch": ARCH,
        "models": reports,
        "fusion_comparison": comparison,
        "profiled_stages": args.profile,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average_1min": {"before": load_before[0], "after": os.getloadavg()[0]}},
        "versions": package_versions(),
        "tmlir_revision": tmlir_revision(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {display_path(args.out)}")


if __name__ == "__main__":
    main()
