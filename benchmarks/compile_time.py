"""Compile-time benchmark: how long each stage takes for the demo MLP (no GPU needed).

    python benchmarks/compile_time.py [--repeat 5]

Stages: ONNX import, lower-to-cuda (all passes), CUDA C emission, NVRTC PTX for sm_90
(cache bypassed), and the `tm-opt model.onnx -p lower-to-cuda -t cuda` process end to end.
Writes benchmarks/results/compile_time.json with machine, date and versions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import onnx
    from make_mlp import build

    from tmlir.backends.cuda_c import emit_cuda
    from tmlir.frontends.onnx import import_onnx
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context

    model = build()
    tmp = Path(tempfile.mkdtemp())
    path = tmp / "mlp.onnx"
    onnx.save(model, path)
    os.environ["TMLIR_CACHE_DIR"] = str(tmp / "cache")  # measure real compiles, not cache hits

    t_import, imported = timed(lambda: import_onnx(model), args.repeat)

    def lower():
        module = import_onnx(model).module
        start = time.perf_counter()
        LowerToCuda().apply(make_context(), module)
        return time.perf_counter() - start, module

    lower_times = [lower() for _ in range(args.repeat)]
    t_lower = statistics.median(t for t, _ in lower_times)
    module = lower_times[-1][1]
    t_emit, program = timed(lambda: emit_cuda(module), args.repeat)

    from tmlir.backends.ptx import compile_ptx

    def nvrtc():
        os.environ["TMLIR_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp)  # a cold cache each time
        return compile_ptx(program.source, "sm_90", compiler="nvrtc")

    t_ptx, _ = timed(nvrtc, args.repeat)
    t_cli, _ = timed(lambda: subprocess.run(
        [sys.executable, "-m", "tmlir.tools.tm_opt", str(path), "-p", "lower-to-cuda", "-t", "cuda"],
        check=True, capture_output=True), args.repeat)

    result = {
        "benchmark": "compile_time",
        "model": "examples/make_mlp.py (784-256-128-10, batch 16)",
        "kernels": len(program.kernels),
        "cuda_c_lines": program.source.count("\n"),
        "seconds": {"onnx_import": t_import, "lower_to_cuda": t_lower, "emit_cuda_c": t_emit,
                    "nvrtc_ptx_sm_90": t_ptx, "tm_opt_process": t_cli},
        "repeat": args.repeat,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "versions": {p: version(p) for p in ("xdsl", "onnx", "numpy", "nvidia-cuda-nvrtc")},
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    out = ROOT / "benchmarks" / "results" / "compile_time.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for stage, seconds in result["seconds"].items():
        print(f"{stage:<18} {seconds * 1e3:8.1f} ms")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
