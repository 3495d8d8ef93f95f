"""The tunable kernels and their candidates: what a tuner compiles, filters and times.

A *tunable kernel* is a schedule template, the problem it is built for and the element
type of its operands: a ``graph.matmul`` on the SIMT matmul template (f32), on the small-M
one (``matmul_gemv``: at most 16 rows, f32) or on the
tensor-core template (``matmul_tc``: f16 or bf16 operands, or f32 ones with TF32 mma:
``tf32``), or a 2-D convolution on its
implicit GEMM (f32). `tmlir.schedules.templates.tunable_problem` says which ops are
tunable and builds their problems; `TEMPLATES` holds, per template, its space, default,
kernel builder and element types (the SIMT templates take `MatmulSimtParams` on the
implied GEMM, ``matmul_gemv`` `MatmulGemvParams`, ``matmul_tc`` `MatmulTcParams`). Its **signature** is a canonical text of
the template, every field of the problem (shapes, strides, pads, bias, transposes, alpha,
beta) and the element type: two ops with the same signature get the same kernel, so a
model is tuned once per signature, and a tuning record is looked up by it::

    conv2d_implicit_gemm(input_shape=1x64x56x56, weight_shape=64x64x3x3, strides=1x1,
        pads=1x1x1x1, dilations=1x1, groups=1, bias=true; f32)
    matmul_tc(lhs_shape=64x64, rhs_shape=64x64, out_shape=64x64, bias_shape=none,
        transpose_lhs=false, transpose_rhs=false, alpha=1.0, beta=1.0; f16)

A `Candidate` is one point of the space, numbered in the space's order; the one the
compiler uses untuned is marked ``default``; ``programs.py`` builds candidates as the
kernels of one CUDA C program.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tmlir import dtypes
from tmlir.dialects import tm
from tmlir.gpus import Gpu
from tmlir.schedules import conv2d_tc
from tmlir.schedules.conv2d import Conv2dProblem, conv2d_implicit_gemm_kernel
from tmlir.schedules.matmul_gemv import MatmulGemvParams, matmul_gemv_kernel
from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams, matmul_simt_kernel
from tmlir.schedules.matmul_tc import matmul_tc_kernel
from tmlir.schedules.model_choice import default_of, ranked
from tmlir.schedules.pinned import space_of
from tmlir.schedules.space import Space
from tmlir.schedules.tc_gemm import MatmulTcParams
from tmlir.schedules.templates import DEFAULT_ARCH, TemplateParams, TunableProblem

#: The element types a tunable kernel's operands may have, by signature name.
ELEMENTS: dict[str, dtypes.DType] = {"f32": dtypes.FLOAT32, "f16": dtypes.FLOAT16,
                                     "bf16": dtypes.BFLOAT16, "tf32": dtypes.FLOAT32}
#: Relative error (against the reference's largest magnitude) a correct candidate stays in,
#: by element type: a candidate only reorders f32 sums, but half-precision inputs make
#: larger sums, so a half kernel gets its element's precision.
RTOLS = {"f32": 1e-4, "f16": 2e-3, "bf16": 1.6e-2, "tf32": 2e-3}


@dataclass(frozen=True)
class Template:
    """What the tuner needs of one tunable template."""

    prefix: str  # of its candidate kernels' names
    problem: type  # MatmulProblem or Conv2dProblem
    params: type  # MatmulSimtParams, MatmulGemvParams or MatmulTcParams
    elements: tuple[str, ...]  # operand element types; the first is the default
    #: (name, problem, params, element) -> the kernel as the compiler builds it, before fusion
    build: Callable[[str, TunableProblem, TemplateParams, str], tm.KernelOp]
    #: how many leading kernel arguments have the element type (the rest are f32)
    element_args: int = 0


#: Every tunable template, by name.
TEMPLATES: dict[str, Template] = {
    "matmul_simt": Template("matmul", MatmulProblem, MatmulSimtParams, ("f32",),
                            lambda name, problem, params, element:
                            matmul_simt_kernel(name, problem, params)),  # type: ignore[arg-type]
    "matmul_gemv": Template("gemv", MatmulProblem, MatmulGemvParams, ("f32",),
                            lambda name, problem, params, element:
                            matmul_gemv_kernel(name, problem, params)),  # type: ignore[arg-type]
    "conv2d_implicit_gemm": Template("conv2d", Conv2dProblem, MatmulSimtParams, ("f32",),
                                     lambda name, problem, params, element:
                                     conv2d_implicit_gemm_kernel(name, problem, params)),  # type: ignore[arg-type]
    "matmul_tc": Template("matmul_tc", MatmulProblem, MatmulTcParams, ("f16", "bf16", "tf32"),
                          lambda name, problem, params, element: matmul_tc_kernel(
                              name, problem, params, ELEMENTS[element].ir),  # type: ignore[arg-type]
                          element_args=2),
    "conv2d_tc": Template("conv2d_tc", Conv2dProblem, MatmulTcParams, ("f16", "bf16", "tf32"),
                          lambda name, problem, params, element: conv2d_tc.conv2d_tc_kernel(
                              name, problem, params, ELEMENTS[element].ir),  # type: ignore[arg-type]
                          element_args=2),
}


@dataclass(frozen=True)
class Candidate:
    """One point of the space, numbered in the space's order."""

    index: int
    params: TemplateParams
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


def _either(names: tuple[str, ...]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return " or ".join(filter(None, [", ".join(names[:-1]), names[-1]]))


@dataclass(frozen=True)
class TunableKernel:
    """A template, the problem it builds a kernel for, its operands' element type
    (``f32``, ``f16``, ``bf16`` or ``tf32``: f32 operands on TF32 mma; default: the
    template's first, `Template.elements`) and the architecture it is built for (the SIMT
    template's space and default depend on it: shared memory, the cp.async pipeline)."""

    template: str
    problem: MatmulProblem | Conv2dProblem
    element: str = ""
    arch: str = DEFAULT_ARCH

    def __post_init__(self) -> None:
        info = TEMPLATES.get(self.template)
        if info is None or not isinstance(self.problem, info.problem):
            raise ValueError(f"not a tunable kernel: template '{self.template}' with a "
                             f"{type(self.problem).__name__}")
        if not self.element:
            object.__setattr__(self, "element", info.elements[0])
        if self.element not in info.elements:
            raise ValueError(f"not a tunable kernel: template '{self.template}' takes "
                             f"{_either(info.elements)} operands, not {self.element}")

    @property
    def info(self) -> Template:
        return TEMPLATES[self.template]

    @property
    def space(self) -> Space:
        return space_of(self.template, self.element, self.arch)

    @property
    def signature(self) -> str:
        """The canonical text of the template, the problem and the element type."""
        fields = ", ".join(f"{f.name}={_text(getattr(self.problem, f.name))}"
                           for f in dataclasses.fields(self.problem))
        return f"{self.template}({fields}; {self.element})"

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

    @property
    def arg_dtypes(self) -> list[np.dtype]:
        """The numpy dtype of each kernel argument (`arg_shapes`)."""
        n = len(self.arg_shapes)
        half = ELEMENTS[self.element].numpy
        return [half if i < self.info.element_args else np.dtype(np.float32) for i in range(n)]

    @property
    def rtol(self) -> float:
        """How far a correct candidate's output may be from the default's (`RTOLS`)."""
        return RTOLS[self.element]

    def default_params(self) -> TemplateParams:
        return default_of(self.template, self.problem, self.element, self.arch)

    def is_valid(self, params: object) -> bool:
        """Whether `params` is a point of the space that is valid for this problem."""
        return isinstance(params, self.info.params) and params in self.space.all_points() \
            and self.space.first_violation(params, self.gemm) is None

    def candidates(self) -> list[Candidate]:
        """The valid candidates; the one the compiler uses untuned is marked."""
        default = self.default_params()
        prefix = self.info.prefix
        return [Candidate(i, p, p == default, prefix)
                for i, p in enumerate(self.space.candidates(self.gemm))]

    def ranked_candidates(self, on: Gpu) -> list[Candidate]:
        """The valid candidates in the latency model's order on the GPU `on`, the one it
        estimates fastest first (``schedules/model_choice.py``); indices stay the space's."""
        candidates = self.candidates()
        by_params = {c.params: c for c in candidates}
        element = self.element if self.template.endswith("_tc") else "f32"
        return [by_params[params] for params, _ in ranked(self.template, self.problem,
                                                          [c.params for c in candidates], on, element)]

    def kernel(self, name: str, params: TemplateParams) -> tm.KernelOp:
        """The template's kernel for `params` (as the compiler builds it, before fusion)."""
        return self.info.build(name, self.problem, params, self.element)

    def launch_shape(self, params: TemplateParams) -> tuple[int, int]:
        """(blocks, threads per block) of the kernel for `params`."""
        return params.blocks(self.gemm), params.threads

    def scratch(self, params: TemplateParams) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        """(kind, shape, dtype) of each scratch argument the kernel for `params` takes after
        its tensors (a split-K workspace, then counters that must start at zero); none for
        the small-M template, which does not split K."""
        if isinstance(params, MatmulGemvParams):
            return []
        return [(kind, tuple(t.get_shape()), dtypes.of_ir(t.element_type).numpy)
                for kind, t in params.scratch(self.gemm)]


def matmul_candidates(problem: MatmulProblem, arch: str = DEFAULT_ARCH) -> list[Candidate]:
    """The valid candidates of a matmul `problem` on `arch`; the default one is marked."""
    return TunableKernel("matmul_simt", problem, arch=arch).candidates()
