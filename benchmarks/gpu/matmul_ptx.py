"""The matmul step of a dry run: one shape's space and its default candidate as sm_90 PTX.

    python benchmarks/gpu/matmul_ptx.py 1000x999x1001 --out /tmp/mm.json

What `benchmarks/matmul.py` compiles first on a GPU, without the GPU: the candidates of
``C[M, N] = A[M, K] @ B[K, N]`` (their count), and the one the compiler uses untuned,
compiled to PTX for sm_90 with NVRTC (or nvcc) and checked to hold its kernel; with
``--dtype f16`` (``bf16``), the tensor-core template's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from common import write_json

from tmlir.backends.ptx import compile_ptx, ptx_kernel_names
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.tuning import TunableKernel, candidate_program


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", help="MxNxK")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--dtype", choices=("f32", "f16", "bf16"), default="f32")
    args = parser.parse_args()
    try:
        m, n, k = (int(p) for p in args.shape.lower().split("x"))
    except ValueError:
        sys.exit(f"matmul_ptx: bad shape {args.shape!r}; expected MxNxK")
    problem = MatmulProblem.plain(m, n, k)
    kernel = TunableKernel("matmul_simt", problem) if args.dtype == "f32" else \
        TunableKernel("matmul_tc", problem, args.dtype)
    candidates = kernel.candidates()
    default = next(c for c in candidates if c.default)
    start = time.perf_counter()
    ptx = compile_ptx(candidate_program(kernel, [default]).source, args.arch)
    seconds = round(time.perf_counter() - start, 2)
    if ptx_kernel_names(ptx) != [default.kernel_name]:
        sys.exit(f"matmul_ptx: PTX holds {ptx_kernel_names(ptx)}, expected [{default.kernel_name}]")
    result = {"shape": args.shape, "dtype": args.dtype, "template": kernel.template,
              "candidates": len(candidates), "arch": args.arch,
              "default": default.params.describe(), "ptx_seconds": seconds, "ptx_bytes": len(ptx)}
    write_json(args.out, result)
    print(result)


if __name__ == "__main__":
    main()
