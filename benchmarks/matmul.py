"""The matmul templates: default and tuned candidates against torch.matmul.

    python benchmarks/matmul.py                  # GPU if there is one, else the CPU report
    python benchmarks/matmul.py --cpu            # the CPU report even on a GPU machine
    python benchmarks/matmul.py --shapes 1000x999x1001 1x4096x4096 --out /tmp/mm.json
    python benchmarks/matmul.py --dtype f16 --sizes 4096   # the tensor-core template

``--dtype f32`` (the default) times the SIMT template against ``torch.matmul`` with TF32
off; ``--dtype f16`` or ``bf16`` times the tensor-core template (``matmul_tc``: f16/bf16
A and B, f32 accumulators) against ``torch.matmul`` on f16/bf16 tensors (cuBLAS on tensor
cores). The tensor-core candidates write C in f32, torch writes f16/bf16: tmlir moves 2x
the output bytes, which favours torch by a few percent at 4096^3.

On a GPU (the cuda runtime path), for each size N in --sizes (default 1024 2048 4096) it
times C = A @ B (fp32, N x N x N; or M x N x K for each --shapes MxNxK: A is M x K, B is
K x N) with the candidate the compiler uses untuned, with every candidate of the space
(tuning: the fastest is "tuned"), and with ``torch.matmul`` with TF32 off, checks each
result against torch, and prints the ratios. Each timing is the median of 5 batches of at
least --min-seconds / 5 each. Writes benchmarks/results/matmul_gpu.json (or --out).

Without a GPU it reports what can be known on a CPU: the space for each size (candidate
count, how many spill, from ``ptxas -v`` for --arch), the default candidate's registers,
shared memory and spills, and the emu run time and error of the default candidate at
--emu-sizes (default 128 256). Writes benchmarks/results/matmul_cpu.json (or --out).

With ``--compile-only`` it compiles, for each shape, every candidate to PTX for --arch
exactly as the GPU benchmark loads them (the same chunks, so a later GPU run finds them in
tmlir's cache) and writes each candidate's cost-report figures (roofline and, from the
latency model, estimated time for --gpu): the GPU suite's preparation and dry run.

On a GPU every timed candidate is kept, compactly (``timings``: a column list and one row
per candidate: index, median ms, the latency model's estimated ms for --gpu, roofline ms,
parameters), for calibrating the latency model.

Every result file records the machine, the date and the versions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tmlir.backends.cuda_c import CudaProgram
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.tuning import Candidate, TunableKernel, candidate_program, ptxas_report, tune
from tmlir.tuning.measure import candidate_inputs

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

#: The template each --dtype times.
TEMPLATES = {"f32": "matmul_simt", "f16": "matmul_tc", "bf16": "matmul_tc"}

RESULTS = Path(__file__).resolve().parent / "results"
#: (M, N, K) of C[M, N] = A[M, K] @ B[K, N].
Shape = tuple[int, int, int]


def parse_shape(text: str) -> Shape:
    """ "MxNxK" -> (M, N, K); argparse type."""
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"bad shape {text!r}; expected MxNxK, e.g. 1000x999x1001")
    m, n, k = (int(p) for p in parts)
    return m, n, k


def describe(shape: Shape) -> dict:
    m, n, k = shape
    return {"shape": f"{m}x{n}x{k}", "m": m, "n": n, "k": k}


def versions(*packages: str) -> dict[str, str]:
    out = {}
    for p in packages:
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = "not installed"
    return out


def header(benchmark: str) -> dict:
    return {
        "benchmark": benchmark,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "versions": versions("xdsl", "onnx", "numpy", "nvidia-cuda-nvrtc", "cuda-python",
                             "torch"),
    }


def write(name: str, result: dict, out: Path | None = None) -> None:
    path = out or RESULTS / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")


# ----------------------------------------------------------------------------- GPU


def seconds_per_run(run: Callable[[], None], sync: Callable[[], None],
                    min_seconds: float = 0.2, warmup: int = 2) -> float:
    """Median over 5 batches of the wall time per run, each batch >= min_seconds / 5."""
    for _ in range(warmup):
        run()
    sync()
    start = time.perf_counter()
    run()
    sync()
    once = max(time.perf_counter() - start, 1e-6)
    per_batch = max(1, math.ceil(min_seconds / 5 / once))
    batches = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(per_batch):
            run()
        sync()
        batches.append((time.perf_counter() - start) / per_batch)
    return statistics.median(batches)


def tunable(shape: Shape, dtype: str) -> TunableKernel:
    """The tunable kernel `benchmarks/matmul.py` times for `shape` and `dtype`."""
    m, n, k = shape
    template = TEMPLATES[dtype]
    return TunableKernel(template, MatmulProblem.plain(m, n, k), dtype if template == "matmul_tc" else "")


def gpu_benchmark(shapes: list[Shape], do_tune: bool, jobs: int, min_seconds: float = 0.2,
                  dtype: str = "f32", gpu: str = "H200") -> dict:
    import torch

    from tmlir.backends.cuda_runtime import CudaModule, DeviceBuffer, device_arch
    from tmlir.backends.ptx import compile_ptx

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    arch = device_arch()
    arch = arch if arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120") else "sm_90"
    result = {**header("matmul_gpu"), "device": torch.cuda.get_device_name(0), "arch": arch,
              "tf32": False, "dtype": dtype, "template": TEMPLATES[dtype], "sizes": []}
    for m, n, k in shapes:
        kernel = tunable((m, n, k), dtype)
        candidates = kernel.candidates()
        default = next(c for c in candidates if c.default)
        to_time = candidates if do_tune else [default]
        modules, costs = _load_candidates(kernel, to_time, arch, jobs, compile_ptx, CudaModule, gpu)
        a, b, (out_shape, out_dtype) = candidate_inputs(kernel)
        torch_dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
        ta = torch.from_numpy(a.astype(np.float32)).cuda().to(torch_dtype)
        tb = torch.from_numpy(b.astype(np.float32)).cuda().to(torch_dtype)
        want = torch.matmul(ta, tb).float()
        da, db, dc = DeviceBuffer.from_array(a), DeviceBuffer.from_array(b), DeviceBuffer.empty(out_shape, out_dtype)
        sync = torch.cuda.synchronize

        def time_candidate(c: Candidate) -> float:
            module, grid, block = modules[c.index]

            def run() -> None:
                module.launch(c.kernel_name, grid, block, [da, db, dc])

            seconds = seconds_per_run(run, lambda: module.synchronize(), min_seconds)
            got = torch.from_numpy(dc.to_host().astype(np.float32)).cuda()
            err = float((got - want).abs().max() / want.abs().max())
            if err > kernel.rtol:
                print(f"  candidate {c.index} is wrong (relative error {err:.2e}); excluded")
                return math.inf
            return seconds

        best, times = tune(to_time, time_candidate)
        t_torch = seconds_per_run(lambda: torch.matmul(ta, tb), sync, min_seconds)
        flops = 2.0 * m * n * k
        entry = {
            **describe((m, n, k)), "candidates": len(candidates), "timed": len(to_time),
            "default": {"index": default.index, "params": default.params.describe(), "ms": times[default.index] * 1e3},
            "tuned": {"index": best.index, "params": best.params.describe(), "ms": times[best.index] * 1e3},
            "torch_ms": t_torch * 1e3,
            "tflops": {"default": flops / times[default.index] / 1e12,
                       "tuned": flops / times[best.index] / 1e12, "torch": flops / t_torch / 1e12},
            "ratio_default_over_torch": times[default.index] / t_torch,
            "ratio_tuned_over_torch": times[best.index] / t_torch,
            "estimates_for": gpu, "timings": candidate_table(to_time, costs, times),
        }
        result["sizes"].append(entry)
        print(f"{entry['shape']}: default {entry['default']['ms']:.3f} ms, tuned {entry['tuned']['ms']:.3f} ms"
              f", torch {entry['torch_ms']:.3f} ms; default/torch "
              f"{entry['ratio_default_over_torch']:.2f}x, tuned/torch "
              f"{entry['ratio_tuned_over_torch']:.2f}x")
        for d in (da, db, dc):
            d.free()
    return result


#: Candidates per chunk: one program, one PTX, one module each (a fixed size, so that a
#: compile with any number of jobs finds the PTX another compiled).
CHUNK = 16


def candidate_chunks(candidates: list[Candidate]) -> list[list[Candidate]]:
    """The chunks the candidates are compiled in, `CHUNK` each."""
    return [candidates[i:i + CHUNK] for i in range(0, len(candidates), CHUNK)]


def _load_candidates(kernel, candidates, arch, jobs, compile_ptx, CudaModule, gpu):
    """Compile the candidates in chunks (NVRTC, in parallel) and load each chunk; also the
    cost report's figures of each candidate (`candidate_costs`)."""
    from concurrent.futures import ProcessPoolExecutor

    problem = kernel.problem
    chunks = candidate_chunks(candidates)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        lowered = list(pool.map(lower_chunk, [kernel] * len(chunks), chunks, [gpu] * len(chunks)))
        ptxs = list(pool.map(compile_ptx, [p.source for p, _ in lowered], [arch] * len(chunks)))
    modules, costs = {}, {}
    for chunk, (program, chunk_costs), ptx in zip(chunks, lowered, ptxs):
        module = CudaModule(ptx, [k.signature for k in program.kernels])
        costs.update(chunk_costs)
        for c in chunk:
            modules[c.index] = (module, c.params.blocks(problem), c.params.threads)
    return modules, costs


def lower_chunk(kernel: TunableKernel, chunk: list[Candidate], gpu: str
                ) -> tuple[CudaProgram, dict[int, dict[str, float | None]]]:
    """A chunk's program (as `candidate_program` makes it) and each candidate's cost-report
    figures (`candidate_costs`), from one lowering."""
    from xdsl.dialects.builtin import ModuleOp

    from tmlir.backends.cuda_c import emit_cuda
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context

    module = ModuleOp([kernel.kernel(c.kernel_name, c.params) for c in chunk])
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    return program, candidate_costs(module, kernel, chunk, gpu)


def candidate_costs(module: ModuleOp, kernel: TunableKernel, chunk: list[Candidate], gpu: str
                    ) -> dict[int, dict[str, float | None]]:
    """Each candidate's roofline and estimated seconds on `gpu` from the cost report of
    `module` (the chunk's lowered kernels, no launch), to which a host function launching
    each candidate once is added. Registers are the template's estimate, as the tuner's
    model-ordered space has them (`tmlir.schedules.model_choice`)."""
    from xdsl.dialects import func

    from tmlir.backends import cost
    from tmlir.dialects import tmgpu

    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, tmgpu.KernelOp)}
    for c in chunk:
        types = [arg.type for arg in kernels[c.kernel_name].body.block.args]
        host = func.FuncOp(f"launch_{c.kernel_name}", (types, []))
        blocks, threads = kernel.launch_shape(c.params)
        host.body.block.add_ops([tmgpu.LaunchOp(c.kernel_name, list(host.body.block.args), blocks, threads),
                                 func.ReturnOp()])
        module.body.block.add_op(host)
    report = cost.cost_report(module, gpu)
    if len(report.launches) != len(chunk):
        raise AssertionError(f"{len(chunk)} candidates but {len(report.launches)} launches in their cost report")
    return {c.index: {"roofline": launch.seconds, "estimate": launch.estimate_seconds}
            for c, launch in zip(chunk, report.launches)}


def candidate_table(candidates: list[Candidate], costs: dict[int, dict[str, float | None]],
                    times: dict[int, float] | None = None) -> dict[str, Any]:
    """The candidates compactly: column names and one row per candidate (index, median ms
    when timed -- null when it was wrong --, estimated and roofline ms, then its
    parameters)."""
    names: list[str] = []
    for c in candidates:
        names += [k for k in c.params.describe() if k not in names]

    def ms(seconds: float | None) -> float | None:
        return None if seconds is None or not math.isfinite(seconds) else float(f"{seconds * 1e3:.4g}")

    columns = ["index", *(["ms"] if times is not None else []), "estimate_ms", "roofline_ms", *names]
    rows = []
    for c in candidates:
        params = c.params.describe()
        measured = [ms(times.get(c.index))] if times is not None else []
        figures = costs.get(c.index, {})
        rows.append([c.index, *measured, ms(figures.get("estimate")), ms(figures.get("roofline")),
                     *(params.get(k) for k in names)])
    return {"columns": columns, "rows": rows}


def compile_only(shapes: list[Shape], arch: str, jobs: int, dtype: str, gpu: str) -> dict:
    """Every candidate of each shape compiled to PTX for `arch` in the GPU benchmark's
    chunks (into tmlir's cache), with its cost-report figures; no GPU needed."""
    from concurrent.futures import ProcessPoolExecutor

    from tmlir.backends.ptx import compile_ptx, ptx_kernel_names

    result = {**header("matmul_compile"), "arch": arch, "dtype": dtype, "template": TEMPLATES[dtype],
              "estimates_for": gpu, "sizes": []}
    for shape in shapes:
        kernel = tunable(shape, dtype)
        candidates = kernel.candidates()
        default = next(c for c in candidates if c.default)
        chunks = candidate_chunks(candidates)
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            lowered = list(pool.map(lower_chunk, [kernel] * len(chunks), chunks, [gpu] * len(chunks)))
            ptxs = list(pool.map(compile_ptx, [p.source for p, _ in lowered], [arch] * len(chunks)))
        seconds = time.perf_counter() - start
        costs = {}
        for chunk, (_, chunk_costs), ptx in zip(chunks, lowered, ptxs):
            costs.update(chunk_costs)
            if sorted(ptx_kernel_names(ptx)) != sorted(c.kernel_name for c in chunk):
                raise SystemExit(f"matmul: the PTX of a chunk of {describe(shape)['shape']} lacks kernels")
        entry = {**describe(shape), "candidates": len(candidates), "compiled": len(candidates),
                 "default": {"index": default.index, "params": default.params.describe(),
                             **{f"{k}_ms": v * 1e3 if v is not None else None for k, v in costs[default.index].items()}},
                 "ptx_seconds": round(seconds, 2), "ptx_bytes": sum(len(p) for p in ptxs),
                 "estimates": candidate_table(candidates, costs)}
        result["sizes"].append(entry)
        print(f"{entry['shape']}: {len(candidates)} candidates compiled to {arch} PTX in {seconds:.1f} s")
    return result


# ----------------------------------------------------------------------------- CPU


def cpu_benchmark(shapes: list[Shape], emu_sizes: list[int], arch: str, jobs: int,
                  dtype: str = "f32") -> dict:
    from tmlir.backends.emu import compile_emu

    result = {**header("matmul_cpu"), "arch": arch, "dtype": dtype, "template": TEMPLATES[dtype],
              "spaces": [], "emu": []}
    for shape in shapes:
        kernel = tunable(shape, dtype)
        candidates = kernel.candidates()
        start = time.perf_counter()
        stats = ptxas_report(kernel, candidates, arch, jobs)
        seconds = time.perf_counter() - start
        default = next(c for c in candidates if c.default)
        spilling = [c.index for c in candidates if stats[c.index].spill_bytes > 0]
        entry = {
            **describe(shape), "candidates": len(candidates), "spilling": len(spilling),
            "spilling_indices": spilling, "compile_seconds": seconds,
            "registers": {"min": min(s.registers for s in stats.values()),
                          "max": max(s.registers for s in stats.values())},
            "default": {"index": default.index, "params": default.params.describe(),
                        **vars(stats[default.index])},
        }
        result["spaces"].append(entry)
        print(f"{entry['shape']}: {len(candidates)} candidates, {len(spilling)} spill; default "
              f"{default.params.describe()} uses {stats[default.index].registers} registers, "
              f"{stats[default.index].shared_bytes} B shared, "
              f"{stats[default.index].spill_bytes} B spilled ({seconds:.1f} s to compile)")
    for n in emu_sizes:
        kernel = tunable((n, n, n), dtype)
        default = next(c for c in kernel.candidates() if c.default)
        program: CudaProgram = candidate_program(kernel, [default])
        a, b, (out_shape, out_dtype) = candidate_inputs(kernel)
        c = np.zeros(out_shape, out_dtype)
        grid, block = kernel.launch_shape(default.params)
        with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
            start = time.perf_counter()
            emu.launch(default.kernel_name, grid, block, [a, b, c])
            seconds = time.perf_counter() - start
        want = a.astype(np.float64) @ b.astype(np.float64)
        err = float(np.abs(c - want).max() / np.abs(want).max())
        result["emu"].append({"n": n, "params": default.params.describe(), "seconds": seconds,
                              "relative_error": err})
        print(f"emu N={n}: {seconds * 1e3:.1f} ms, relative error {err:.1e}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096],
                        help="cubic sizes N (N x N x N)")
    parser.add_argument("--shapes", type=parse_shape, nargs="+", metavar="MxNxK",
                        help="M x N x K shapes (A is M x K); replace --sizes")
    parser.add_argument("--emu-sizes", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--arch", default="sm_90", help="ptxas target of the CPU report")
    parser.add_argument("--cpu", action="store_true", help="the CPU report even with a GPU")
    parser.add_argument("--no-tune", action="store_true", help="GPU: time only the default")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--min-seconds", type=float, default=0.2,
                        help="GPU: least time spent timing each candidate (default 0.2)")
    parser.add_argument("--dtype", choices=sorted(TEMPLATES), default="f32",
                        help="f32: the SIMT template (TF32 off); f16/bf16: the tensor-core template")
    parser.add_argument("--compile-only", action="store_true",
                        help="compile every candidate to --arch PTX as the GPU run loads them; time nothing")
    parser.add_argument("--gpu", default="H200", help="the latency model's GPU for the estimates (default H200)")
    parser.add_argument("--out", type=Path, help="result file (default: results/matmul_<gpu|cpu>[_DTYPE].json)")
    args = parser.parse_args()
    shapes = args.shapes or [(n, n, n) for n in args.sizes]
    suffix = "" if args.dtype == "f32" else f"_{args.dtype}"

    from tmlir.backends.cuda_runtime import cuda_available

    if args.compile_only:
        write(f"matmul_compile{suffix}.json", compile_only(shapes, args.arch, args.jobs, args.dtype, args.gpu),
              args.out)
    elif not args.cpu and cuda_available():
        write(f"matmul_gpu{suffix}.json",
              gpu_benchmark(shapes, not args.no_tune, args.jobs, args.min_seconds, args.dtype, args.gpu),
              args.out)
    else:
        write(f"matmul_cpu{suffix}.json", cpu_benchmark(shapes, args.emu_sizes, args.arch, args.jobs, args.dtype),
              args.out)


if __name__ == "__main__":
    main()
