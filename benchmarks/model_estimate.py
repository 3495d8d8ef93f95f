"""The latency model's estimate of the full-size models as an untuned compile builds them.

    make full-models                                   # build/models/{resnet50,bert_base,gpt2_124m}.onnx
    .venv/bin/python benchmarks/model_estimate.py      # H200; --gpu H100 / A100
    .venv/bin/python benchmarks/model_estimate.py --precision fp16   # tensor cores, f16 operands

What a GPU-free machine can say about speed: each model is compiled as `InferenceSession`
does for the GPU (``lower-to-cuda`` with ``target-device`` the GPU's name: every tunable
kernel on the latency model's default, no tuning records), its kernels compiled by NVRTC
for the GPU's arch to take their registers from ptxas, then `tmlir.backends.cost` estimates
every launch on that GPU (`tmlir/latency.py`, calibrated on committed H200 measurements:
``benchmarks/latency_model.py``). Reports per model the estimate, the roofline minimum, the
launches, the time by template, and every launch above 5 µs estimated at more than 4x its
roofline minimum; then the small-M (GEMV) 1 x 4096 x 4096 kernel's estimate. Also compiles
each model with ``schedule-defaults=legacy`` (the choices before the model, which the
committed H200 run measured) for the before/after table. Writes
benchmarks/results/model_estimate.json with machine, date and versions.

``--precision fp16`` (``bf16``, ``tf32``) compiles with ``lower-to-cuda{precision=...}``
(the f32 matmuls and convolutions on tensor cores) and reports, instead of the GEMV, the
tensor-core 4096^3 matmul: the model's fastest candidate against the GPU's dense
tensor-core peak (``peak_fraction``: the peak-bound time over the estimate). Writes
benchmarks/results/model_estimate_<precision>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("bert_base", "gpt2_124m", "resnet50")
RESULT = ROOT / "benchmarks" / "results" / "model_estimate.json"
SLOW_US, FACTOR = 5.0, 4.0  # a launch above SLOW_US estimated at more than FACTOR x its roofline


def versions() -> dict[str, str]:
    out = {}
    for p in ("xdsl", "onnx", "numpy", "nvidia-cuda-nvrtc"):
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = "not installed"
    return out


def estimate_model(path: Path, gpu_name: str, defaults: str, precision: str = "fp32") -> dict:
    from tmlir.backends.cost import cost_report, ptxas_registers
    from tmlir.frontends.onnx import import_onnx
    from tmlir.gpus import gpu
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context

    g = gpu(gpu_name)
    start = time.perf_counter()
    imported = import_onnx(str(path), source=path.name)
    LowerToCuda(target_device=g.name, target_arch=g.arch, schedule_defaults=defaults, precision=precision).apply(
        make_context(weights=imported.weights), imported.module)
    report = cost_report(imported.module, g.name, ptxas_registers(imported.module, g.arch))
    by_template: dict[str, float] = defaultdict(float)
    for k in report.launches:
        by_template[k.template] += k.estimate_seconds * 1e6
    slow = Counter((k.kernel, k.template, k.grid, k.block, round(k.seconds * 1e6, 2),
                    round(k.estimate_seconds * 1e6, 1), k.limit)
                   for k in report.launches
                   if k.estimate_seconds * 1e6 > SLOW_US and k.estimate_seconds > FACTOR * k.seconds)
    return {
        "estimate_us": round(report.estimate_seconds * 1e6, 1),
        "roofline_us": round(report.seconds * 1e6, 1),
        "launches": len(report.launches),
        "by_template_us": {t: round(v, 1) for t, v in sorted(by_template.items(), key=lambda x: -x[1])},
        "slow_launches": [
            {"kernel": k, "template": t, "grid": gr, "block": b, "roofline_us": r, "estimate_us": e,
             "limit": lim, "count": n}
            for (k, t, gr, b, r, e, lim), n in sorted(slow.items(), key=lambda x: -x[0][5] * x[1])],
        "compile_and_estimate_seconds": round(time.perf_counter() - start, 1),
    }


def gemv(gpu_name: str) -> dict:
    from tmlir.gpus import gpu
    from tmlir.latency import estimate
    from tmlir.schedules.matmul_simt import MatmulProblem
    from tmlir.schedules.model_choice import candidate_launch, default_of

    g = gpu(gpu_name)
    problem = MatmulProblem((1, 4096), (4096, 4096), (1, 4096))
    params = default_of("matmul_gemv", problem, "f32", g.arch, g.name)
    e = estimate(candidate_launch("matmul_gemv", problem, params, "f32"), g)
    return {"problem": "1x4096x4096 (B K x N)", "params": params.describe(problem),
            "estimate_us": round(e.seconds * 1e6, 1), "bound": e.bound}


def tensor_core_gemm(gpu_name: str, precision: str) -> dict:
    """The model's fastest tensor-core candidate for a 4096^3 matmul against the dense peak."""
    from tmlir.gpus import gpu
    from tmlir.latency import estimate
    from tmlir.schedules.matmul_simt import MatmulProblem
    from tmlir.schedules.model_choice import candidate_launch, default_of

    g = gpu(gpu_name)
    element = {"fp16": "f16", "bf16": "bf16", "tf32": "f32"}[precision]
    mma = "tf32" if element == "f32" else element
    problem = MatmulProblem.plain(4096, 4096, 4096)
    params = default_of("matmul_tc", problem, element, g.arch, g.name)
    e = estimate(candidate_launch("matmul_tc", problem, params, mma), g)
    peak_us = 2 * 4096**3 / g.tensor_flops[mma] * 1e6
    return {"problem": "4096x4096x4096", "dtype": mma, "params": params.describe(),
            "estimate_us": round(e.seconds * 1e6, 1), "peak_bound_us": round(peak_us, 1),
            "peak_fraction": round(peak_us / (e.seconds * 1e6), 3), "bound": e.bound}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS), help="names under build/models/")
    parser.add_argument("--gpu", default="H200")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "fp16", "bf16", "tf32"),
                        help="lower-to-cuda's precision (default fp32)")
    parser.add_argument("--out", type=Path, default=None,
                        help="default benchmarks/results/model_estimate[_<precision>].json")
    args = parser.parse_args()
    if args.out is None:
        args.out = RESULT if args.precision == "fp32" else RESULT.with_name(f"model_estimate_{args.precision}.json")
    os.environ.setdefault("TMLIR_TUNING_RECORDS", os.devnull)  # untuned: no records
    result: dict = {"benchmark": "model_estimate", "date": datetime.now(UTC).isoformat(timespec="seconds"),
                    "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                "python": platform.python_version()},
                    "versions": versions(), "gpu": args.gpu, "precision": args.precision, "models": {}}
    for name in args.models:
        path = ROOT / "build" / "models" / f"{name}.onnx"
        entry = {"model": str(path.relative_to(ROOT))}
        for defaults in ("model", "legacy"):
            entry[defaults] = estimate_model(path, args.gpu, defaults, args.precision)
        result["models"][name] = entry
        now, before = entry["model"], entry["legacy"]
        print(f"{name}: {now['estimate_us'] / 1e3:.3f} ms estimated (legacy defaults "
              f"{before['estimate_us'] / 1e3:.3f} ms), roofline {now['roofline_us']:.0f} µs, "
              f"{now['launches']} launches; {sum(s['count'] for s in now['slow_launches'])} launches "
              f"> {SLOW_US:g} µs at > {FACTOR:g}x roofline")
        for s in now["slow_launches"]:
            print(f"    {s['count']:3d} x {s['kernel']:20s} {s['template']:22s} {s['grid']:5d} x {s['block']:<4d} "
                  f"{s['estimate_us']:7.1f} µs (roofline {s['roofline_us']:.2f}, {s['limit']})")
    if args.precision == "fp32":
        result["gemv"] = gemv(args.gpu)
        print(f"GEMV {result['gemv']['problem']}: {result['gemv']['estimate_us']} µs ({result['gemv']['bound']})")
    else:
        gemm = result["tensor_core_gemm"] = tensor_core_gemm(args.gpu, args.precision)
        print(f"matmul {gemm['problem']} {gemm['dtype']}: {gemm['estimate_us']} µs, peak-bound "
              f"{gemm['peak_bound_us']} µs ({gemm['peak_fraction']:.2f} of the peak; {gemm['params']})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
