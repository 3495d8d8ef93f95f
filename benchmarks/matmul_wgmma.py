"""The Hopper matmul (``matmul_wgmma``) without a GPU: registers, spills and estimates.

    python benchmarks/matmul_wgmma.py                  # all problems, ptxas on every candidate
    python benchmarks/matmul_wgmma.py --no-ptxas       # the latency model only (seconds)

For each problem (f16 operands: 4096^3 with B stored K x N, BERT-base's projections at 128
tokens with B stored N x K as exporters give Gemm weights), every candidate of the
template's space is estimated by the latency model (``tmlir/schedules/wgmma_kloop.py``)
on an H100 and an H200, and the fastest is compared with the dense f16 peak-bound time
(``2 M N K / peak``), the bandwidth-bound time (the operands and C once at the HBM
bandwidth) and ``matmul_tc``'s default (mma.sync) estimated the same way. With --ptxas (the
default when nvcc is on the PATH) every unsplit candidate is compiled for sm_90a and
ptxas' registers, spill bytes and stack frame are recorded. Writes --out (default
benchmarks/results/matmul_wgmma_dry_run.json) with the machine, the date and the versions.
No GPU timing yet: the estimates' constants for wgmma are assumed (see wgmma_kloop.py) until
a GPU measures them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import Float16Type, ModuleOp

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.ptx import ptxas_stats
from tmlir.gpus import gpu
from tmlir.latency import estimate
from tmlir.passes.arith_simplify import ArithSimplify
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.tm_lower_mappings import TmLowerMappings
from tmlir.registry import make_context
from tmlir.schedules.gemm import MatmulProblem
from tmlir.schedules.matmul_wgmma import matmul_wgmma_kernel
from tmlir.schedules.matmul_wgmma_params import MatmulWgmmaParams, wgmma_space
from tmlir.schedules.model_choice import candidate_launch, default_of
from tmlir.schedules.wgmma_kloop import WGMMA_TENSOR_EFFICIENCY, wgmma_launch

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = {  # name: (M, N, K, B stored N x K)
    "4096^3": (4096, 4096, 4096, False),
    "4096^3 NxK": (4096, 4096, 4096, True),
    "BERT 128x768x3072": (128, 768, 3072, True),
    "BERT 128x3072x768": (128, 3072, 768, True),
    "BERT 128x768x768": (128, 768, 768, True),
}


def problem(m: int, n: int, k: int, nk: bool) -> MatmulProblem:
    return MatmulProblem((m, k), (n, k) if nk else (k, n), (m, n), transpose_rhs=nk)


def registers(prob: MatmulProblem, params: MatmulWgmmaParams) -> dict[str, int]:
    module = ModuleOp([matmul_wgmma_kernel("mm_wgmma", prob, params, Float16Type())])
    ctx = make_context()
    for p in (TmLowerMappings(), ConvertTmToGpu(), ArithSimplify()):
        p.apply(ctx, module)
    stats = ptxas_stats(emit_cuda(module, "sm_90a").source, "sm_90a")["mm_wgmma"]
    return {"registers": stats.registers, "spill_bytes": stats.spill_bytes, "stack_bytes": stats.local_bytes}


def study(name: str, ptxas: bool) -> dict[str, Any]:
    m, n, k, nk = PROBLEMS[name]
    prob = problem(m, n, k, nk)
    candidates = wgmma_space().candidates(prob)
    out: dict[str, Any] = {"M": m, "N": n, "K": k, "B": "NxK" if nk else "KxN", "candidates": len(candidates)}
    for gpu_name in ("H100", "H200"):
        g = gpu(gpu_name)
        ranked = sorted(((estimate(wgmma_launch(prob, P), g), i, P) for i, P in enumerate(candidates)),
                        key=lambda x: (x[0].seconds, x[1]))
        best, _, P = ranked[0]
        peak = 2 * m * n * k / g.tensor_flops["f16"]
        moved = (m * k + n * k) * 2 + m * n * 4
        tc = default_of("matmul_tc", prob, "f16", "sm_90", gpu_name)
        tc_estimate = estimate(candidate_launch("matmul_tc", prob, tc, "f16"), g)
        out[gpu_name] = {
            "best": P.describe(), "estimate_us": round(best.us, 2), "bound": best.bound,
            "estimate_without_launch_us": round(estimate(wgmma_launch(prob, P), g, launch_overhead=False).us, 2),
            "peak_bound_us": round(peak * 1e6, 2), "peak_over_estimate": round(peak / best.seconds, 3),
            "bandwidth_bound_us": round(moved / g.hbm_bytes_per_s * 1e6, 2),
            "matmul_tc_default": tc.describe(), "matmul_tc_estimate_us": round(tc_estimate.us, 2),
            "next": [{"params": Q.describe(), "estimate_us": round(e.us, 2)} for e, _, Q in ranked[1:4]],
        }
        print(f"{name} on {gpu_name}: {P.describe()} {best.us:.1f} µs ({best.bound}; "
              f"{out[gpu_name]['estimate_without_launch_us']} µs without the launch), peak-bound {peak * 1e6:.1f} µs "
              f"= {peak / best.seconds:.3f} of it, bandwidth-bound {out[gpu_name]['bandwidth_bound_us']} µs; "
              f"matmul_tc {tc_estimate.us:.1f} µs")
    if ptxas:
        rows = []
        for P in candidates:
            if P.split_k == 1:
                rows.append({**P.describe(), **registers(prob, P), "estimate": P.register_estimate(),
                             "cap": P.register_cap})
        out["ptxas"] = rows
        worst = max(rows, key=lambda r: r["registers"])
        print(f"    ptxas, {len(rows)} unsplit candidates: registers {min(r['registers'] for r in rows)}-"
              f"{worst['registers']}, spills {sum(r['spill_bytes'] for r in rows)} B, "
              f"stack {sum(r['stack_bytes'] for r in rows)} B")
    return out


def versions() -> dict[str, str]:
    out = {}
    for name in ("xdsl", "numpy"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="*", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--ptxas", action=argparse.BooleanOptionalAction, default=shutil.which("nvcc") is not None)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "matmul_wgmma_dry_run.json")
    args = parser.parse_args()
    result = {"benchmark": "matmul_wgmma", "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "python": platform.python_version()},
              "versions": versions(), "dtype": "f16", "wgmma_tensor_efficiency": WGMMA_TENSOR_EFFICIENCY,
              "dry_run": True, "problems": {name: study(name, args.ptxas) for name in args.problems}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
