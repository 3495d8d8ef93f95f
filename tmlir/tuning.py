"""Candidates of a schedule space as compiled kernels: CUDA C, ptxas statistics, timings.

The SIMT matmul's space (``tmlir.schedules.matmul_simt.MATMUL_SIMT_SPACE``) is small
enough to compile every candidate. :func:`matmul_program` builds the candidates of one
problem as kernels of one CUDA C program; :func:`ptxas_report` compiles them with
``ptxas -v`` (in chunks, over worker processes; no GPU needed) and reports registers,
spills and shared memory per candidate; :func:`tune` times them with a caller-given
timer (on a GPU, see ``benchmarks/matmul.py``) and returns the fastest.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from tmlir.backends.cuda_c import CudaProgram, emit_cuda
from tmlir.backends.ptx import KernelStats, ptxas_stats
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.matmul_simt import (
    MATMUL_SIMT_SPACE,
    MatmulProblem,
    MatmulSimtParams,
    matmul_simt_kernel,
)


@dataclass(frozen=True)
class Candidate:
    """One point of the space, numbered in the space's order."""

    index: int
    params: MatmulSimtParams
    default: bool

    @property
    def kernel_name(self) -> str:
        return f"matmul_c{self.index:03d}"


def matmul_candidates(problem: MatmulProblem) -> list[Candidate]:
    """The valid candidates of `problem`; the one the compiler uses untuned is marked."""
    default = MatmulSimtParams.default_for(problem)
    return [Candidate(i, p, p == default)
            for i, p in enumerate(MATMUL_SIMT_SPACE.candidates(problem))]


def matmul_program(problem: MatmulProblem, candidates: Sequence[Candidate]) -> CudaProgram:
    """One CUDA C program with a kernel ``matmul_cNNN`` per candidate."""
    module = ModuleOp([matmul_simt_kernel(c.kernel_name, problem, c.params) for c in candidates])
    LowerToCuda().apply(make_context(), module)
    return emit_cuda(module)


def _chunk_stats(problem: MatmulProblem, chunk: Sequence[Candidate], arch: str
                 ) -> dict[str, KernelStats]:
    return ptxas_stats(matmul_program(problem, chunk).source, arch)


def ptxas_report(problem: MatmulProblem, candidates: Sequence[Candidate], arch: str = "sm_90",
                 jobs: int | None = None) -> dict[int, KernelStats]:
    """``ptxas -v`` statistics of each candidate (by index), compiled for `arch`.

    The candidates are compiled in chunks of about ten kernels, `jobs` processes at a time
    (default: the CPU count); ptxas results are cached on disk.
    """
    jobs = jobs or os.cpu_count() or 1
    size = max(1, min(10, math.ceil(len(candidates) / jobs)))
    chunks = [list(candidates[i:i + size]) for i in range(0, len(candidates), size)]
    stats: dict[str, KernelStats] = {}
    if jobs == 1 or len(chunks) == 1:
        for chunk in chunks:
            stats.update(_chunk_stats(problem, chunk, arch))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for result in pool.map(_chunk_stats, [problem] * len(chunks), chunks,
                                   [arch] * len(chunks)):
                stats.update(result)
    return {c.index: stats[c.kernel_name] for c in candidates}


def tune(candidates: Sequence[Candidate], time_candidate: Callable[[Candidate], float]
         ) -> tuple[Candidate, dict[int, float]]:
    """Time every candidate with `time_candidate` (seconds per run; ``math.inf`` when it
    cannot run) and return the fastest with all timings by index."""
    times = {c.index: time_candidate(c) for c in candidates}
    best = min(candidates, key=lambda c: times[c.index])
    if math.isinf(times[best.index]):
        raise RuntimeError("no candidate could be timed")
    return best, times
