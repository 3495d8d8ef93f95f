"""Candidates as CUDA C: the kernels of a chunk of candidates, lowered by the compiler's own
pipeline into one program (a chunk compiles as one translation unit)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp

from tmlir.backends.cuda_c import CudaProgram, emit_cuda
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.tuning.space import Candidate, TunableKernel


def candidate_program(kernel: TunableKernel, candidates: Sequence[Candidate]) -> CudaProgram:
    """One CUDA C program with a kernel per candidate, named ``Candidate.kernel_name``,
    lowered by the compiler's own pipeline."""
    module = ModuleOp([kernel.kernel(c.kernel_name, c.params) for c in candidates])
    LowerToCuda().apply(make_context(), module)
    return emit_cuda(module)


def matmul_program(problem: MatmulProblem, candidates: Sequence[Candidate]) -> CudaProgram:
    """One CUDA C program with a kernel ``matmul_cNNN`` per candidate."""
    return candidate_program(TunableKernel("matmul_simt", problem), candidates)
