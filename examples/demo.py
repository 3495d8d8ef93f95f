"""The main job end to end: ONNX MLP -> CUDA C -> PTX, run on emu, checked against onnxruntime.

    python examples/demo.py examples/mlp.onnx [--out out/]

Writes the CUDA C (`mlp.cu`) and PTX (`mlp.sm_90.ptx`) to the output folder, lists the
kernels with their schedule templates and PTX sizes, runs the model on the emu backend
(the same CUDA C compiled for the CPU) and prints the max error against onnxruntime.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--out", type=Path, default=Path("out"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.model.stem

    # 1. The command-line path: tm-opt takes the ONNX file to CUDA C.
    cu = args.out / f"{stem}.cu"
    start = time.perf_counter()
    subprocess.run(["tm-opt", str(args.model), "-p", "lower-to-cuda", "-t", "cuda", "-o", str(cu)],
                   check=True)
    print(f"tm-opt {args.model} -p lower-to-cuda -t cuda -o {cu}: "
          f"{time.perf_counter() - start:.2f} s (process start included)")

    # 2. The Python path: the same compilation in process, then PTX per kernel.
    import onnxruntime

    import tmlir
    from tmlir.backends.ptx import compile_ptx, nvrtc_version

    start = time.perf_counter()
    session = tmlir.InferenceSession(str(args.model), device="emu")
    print(f"InferenceSession(device='emu'): {time.perf_counter() - start:.2f} s "
          "(import, lower, emit, g++ for the CPU; cached after the first run)")
    program = session.program
    start = time.perf_counter()
    ptx = compile_ptx(program.source, "sm_90")
    ptx_time = time.perf_counter() - start
    (args.out / f"{stem}.sm_90.ptx").write_text(ptx)
    version = nvrtc_version()
    print(f"PTX for sm_90: {len(ptx) / 1024:.1f} KiB in {ptx_time:.2f} s "
          f"(NVRTC {'.'.join(map(str, version)) if version else 'unavailable: nvcc'})\n")

    print(f"{'kernel':<14} {'template':<12} {'grid':>6} {'block':>6} {'PTX KiB':>8}  parameters")
    for launch in program.launches:
        info = program.kernel(launch.kernel)
        alone = compile_ptx(_single_kernel(program.source, launch.kernel), "sm_90")
        params = ", ".join(f"{k}={v}" for k, v in info.params.items())
        print(f"{launch.kernel:<14} {info.template:<12} {launch.grid:>6} {launch.block:>6} "
              f"{len(alone) / 1024:>8.1f}  {params}")

    feed = {i.name: np.random.default_rng(0).standard_normal(i.shape).astype(np.float32)
            for i in session.get_inputs()}
    start = time.perf_counter()
    outputs = session.run(None, feed)
    run_time = time.perf_counter() - start
    reference = onnxruntime.InferenceSession(str(args.model)).run(None, feed)
    print(f"\nemu run: {run_time * 1e3:.1f} ms")
    for info, got, want in zip(session.get_outputs(), outputs, reference):
        error = float(np.abs(got - want).max())
        print(f"output '{info.name}' {list(got.shape)}: max |tmlir - onnxruntime| = {error:.3e}")
        if error > 1e-4 * max(1.0, float(np.abs(want).max())):
            print("MISMATCH", file=sys.stderr)
            return 1
    print(f"\nCUDA C: {cu}\nPTX:    {args.out / f'{stem}.sm_90.ptx'}")
    return 0


def _single_kernel(source: str, name: str) -> str:
    """The source with only kernel `name` (for a per-kernel PTX size)."""
    chunks = source.split("\n// Kernel ")
    kept = [c for c in chunks[1:] if c.startswith(f"{name}:")]
    return "// Kernel " + kept[0].split("#if defined(__CUDACC__)")[0]


if __name__ == "__main__":
    sys.exit(main())
