"""The tunable kernels and their candidates: what a tuner compiles, filters and times.

A *tunable kernel* is a schedule template and the problem it is built for: a
``graph.matmul`` on the SIMT matmul template, or a 2-D convolution on its implicit GEMM
(`tmlir.schedules.templates.tunable_problem` says which ops are tunable and builds their
problems). Both take `MatmulSimtParams`, so both have the space ``MATMUL_SIMT_SPACE`` of
the implied GEMM. Its **signature** is a canonical text of the template, every field of
the problem (shapes, strides, pads, bias, transposes, alpha, beta) and the element type:
two ops with the same signature get the same kernel, so a model is tuned once per
signature, and a tuning record is looked up by it::

    conv2d_implicit_gemm(input_shape=1x64x56x56, weight_shape=64x64x3x3, strides=1x1,
        pads=1x1x1x1, dilations=1x1, groups=1, bias=true; f32)

A `Candidate` is one point of the space, numbered in the space's order; the one the
compiler uses untuned is marked ``default``; ``programs.py`` builds candidates as the
kernels of one CUDA C program.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tmlir.dialects import tm
from tmlir.schedules.conv2d import Conv2dProblem, conv2d_implicit_gemm_kernel
from tmlir.schedules.matmul_simt import (
    MATMUL_SIMT_SPACE,
    MatmulProblem,
    MatmulSimtParams,
    matmul_simt_kernel,
)

#: Templates whose kernels take `MatmulSimtParams`, with the short prefix of their
#: candidate kernels' names.
TEMPLATES = {"matmul_simt": "matmul", "conv2d_implicit_gemm": "conv2d"}


@dataclass(frozen=True)
class Candidate:
    """One point of the space, numbered in the space's order."""

    index: int
    params: MatmulSimtParams
    default: bool
    prefix: str = "matmul"

    @property
    def kernel_name(self) -> str:
        return f"{self.prefix}_c{self.index:03d}"


def _text(value: object) -> str:
    if isinstance(value, tuple):
        return "x".join(map(str, value)) if value else "scalar"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    return repr(value) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class TunableKernel:
    """A template and the problem it builds a kernel for (fp32)."""

    template: str
    problem: MatmulProblem | Conv2dProblem

    def __post_init__(self) -> None:
        expected = MatmulProblem if self.template == "matmul_simt" else Conv2dProblem
        if self.template not in TEMPLATES or not isinstance(self.problem, expected):
            raise ValueError(f"not a tunable kernel: template '{self.template}' with a "
                             f"{type(self.problem).__name__}")

    @property
    def signature(self) -> str:
        """The canonical text of the template, the problem and the element type."""
        fields = ", ".join(f"{f.name}={_text(getattr(self.problem, f.name))}"
                           for f in dataclasses.fields(self.problem))
        return f"{self.template}({fields}; f32)"

    @property
    def gemm(self) -> MatmulProblem:
        """The GEMM whose space the parameters come from."""
        return self.problem.gemm if isinstance(self.problem, Conv2dProblem) else self.problem

    @property
    def arg_shapes(self) -> list[tuple[int, ...]]:
        """The kernel's arguments: two inputs, the bias if any, the output."""
        p = self.problem
        if isinstance(p, Conv2dProblem):
            return p.arg_shapes
        return [p.lhs_shape, p.rhs_shape, *([p.bias_shape] if p.bias_shape else []), p.out_shape]

    def default_params(self) -> MatmulSimtParams:
        return MatmulSimtParams.default_for(self.gemm)

    def is_valid(self, params: MatmulSimtParams) -> bool:
        """Whether `params` is a point of the space that is valid for this problem."""
        return params in MATMUL_SIMT_SPACE.all_points() and \
            MATMUL_SIMT_SPACE.first_violation(params, self.gemm) is None

    def candidates(self) -> list[Candidate]:
        """The valid candidates; the one the compiler uses untuned is marked."""
        default = self.default_params()
        prefix = TEMPLATES[self.template]
        return [Candidate(i, p, p == default, prefix)
                for i, p in enumerate(MATMUL_SIMT_SPACE.candidates(self.gemm))]

    def kernel(self, name: str, params: MatmulSimtParams) -> tm.KernelOp:
        """The template's kernel for `params` (as the compiler builds it, before fusion)."""
        if isinstance(self.problem, Conv2dProblem):
            return conv2d_implicit_gemm_kernel(name, self.problem, params)
        return matmul_simt_kernel(name, self.problem, params)

    def launch_shape(self, params: MatmulSimtParams) -> tuple[int, int]:
        """(blocks, threads per block) of the kernel for `params`."""
        return params.blocks(self.gemm), params.threads


def matmul_candidates(problem: MatmulProblem) -> list[Candidate]:
    """The valid candidates of a matmul `problem`; the default one is marked."""
    return TunableKernel("matmul_simt", problem).candidates()
