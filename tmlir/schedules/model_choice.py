"""Schedules chosen by the latency model: every candidate of a space estimated, fastest first.

A tunable template's default candidate (`default_of`) is the one `tmlir.latency` estimates
fastest on the target GPU (`gpu_for`: the named device, else the arch's reference part:
sm_90 an H100, sm_80 an A100) -- the template's own rule (`rule_default`) where it is
within `MARGIN` of that --, and the tuner times the space in the model's order, best
first. `legacy_default` keeps the choice made before the model, which the model was
calibrated on (``schedule-defaults=legacy``). A candidate
is estimated without building its kernel: its header (`header`: the template's parameters,
as the kernel's ``tm.params`` will list them, and the problem's ``M``, ``N``, ``K``) gives
its k-loop (``kloops.py``); its blocks, threads and shared memory come from the parameter
object, its registers from the template's estimate, its compulsory bytes from the problem's
tensors. Of equal estimates (two candidates at the same roofline) the one with more slack
under it wins, then the earlier candidate of the space, so the choice is deterministic.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from tmlir.gpu_limits import MAX_REGISTERS_PER_THREAD
from tmlir.gpus import DEFAULT_GPU, Gpu, gpu
from tmlir.latency import Estimate, Launch, estimate
from tmlir.schedules.conv2d import Conv2dProblem
from tmlir.schedules.kloops import TC_ELEMENTS, kloop, register_estimate
from tmlir.schedules.matmul_gemv_params import MATMUL_GEMV_SPACE, MatmulGemvParams
from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams, matmul_simt_space
from tmlir.schedules.matmul_tc import default_params, tc_space
from tmlir.schedules.space import Space

#: The GPU each compute capability's defaults are chosen for when no device is named.
ARCH_GPUS = {"sm_80": "A100", "sm_86": "A100", "sm_89": "A100", "sm_90": "H100"}


def gpu_for(arch: str, device: str = "") -> Gpu:
    """The GPU to choose schedules for: `device` when it is a known one (a name
    ``cuDeviceGetName`` gives), else the reference part of `arch`, else the H100."""
    if device:
        try:
            return gpu(device)
        except ValueError:
            pass
    return gpu(ARCH_GPUS.get(arch, DEFAULT_GPU))


def _gemm(problem: MatmulProblem | Conv2dProblem) -> MatmulProblem:
    return problem.gemm if isinstance(problem, Conv2dProblem) else problem


def header(template: str, problem: MatmulProblem | Conv2dProblem, params: Any, element: str = "f32"
           ) -> dict[str, int | str]:
    """The ``tm.params`` a kernel of `template` with `params` for `problem` lists (what the
    latency model reads of it)."""
    gemm = _gemm(problem)
    # the small-M template's header depends on the problem (its rows, B's layout, the k-step)
    described = params.describe(gemm) if isinstance(params, MatmulGemvParams) else params.describe()
    values: dict[str, int | str] = {**described, "M": gemm.m, "N": gemm.n, "K": gemm.k}
    if template.endswith("_tc"):
        values["dtype"] = element
        if isinstance(problem, Conv2dProblem):  # a 1x1 convolution's input travels by cp.async
            chunk = 16 // TC_ELEMENTS[element][0]  # as conv2d_tc.dense_input
            values["copy_b"] = "cp16" if problem.dense_pixels(chunk) else "gather"
    elif isinstance(params, MatmulSimtParams):  # the SIMT engine's: how its operands travel
        copy_a, copy_b = params.copy_kinds(gemm, im2col=isinstance(problem, Conv2dProblem) and not problem.dense_b)
        values.update({"copy_a": copy_a, "copy_b": copy_b})
    return values


def _compulsory_bytes(problem: MatmulProblem | Conv2dProblem, element: str) -> int:
    """Bytes of the problem's operands (in `element`) and f32 result, each moved once."""
    size = TC_ELEMENTS.get(element, (4, 0))[0]
    if isinstance(problem, Conv2dProblem):
        operands, result = math.prod(problem.input_shape) + math.prod(problem.weight_shape), \
            math.prod(problem.out_shape)
    else:
        operands, result = math.prod(problem.lhs_shape) + math.prod(problem.rhs_shape), \
            math.prod(problem.out_shape)
    return operands * size + result * 4


def candidate_launch(template: str, problem: MatmulProblem | Conv2dProblem, params: Any,
                     element: str = "f32") -> Launch:
    """What the latency model needs of `template`'s kernel with `params` for `problem`."""
    gemm = _gemm(problem)
    values = header(template, problem, params, element)
    loop = kloop(template, values)
    blocks = params.blocks(gemm)
    split = int(values.get("split_k", 1))
    tile = int(values["block_m"]) * int(values["block_n"])
    padded = 2 * (blocks // split) * tile * gemm.k
    shared = params.shared_bytes(gemm) if not template.endswith("_tc") else _tc_shared(params, gemm, element)
    tensor = {element: padded} if template.endswith("_tc") else None
    # split-K: every block writes its partial tile; the last of each tile reads them all
    workspace = 2 * split * (blocks // split) * tile * 4 if split > 1 else 0
    return Launch(blocks, params.threads, register_estimate(template, values) or 32, shared,
                  0 if tensor else padded, _compulsory_bytes(problem, element) + workspace, tensor, loop)


def _tc_shared(params: Any, gemm: MatmulProblem, element: str) -> int:
    from tmlir.schedules.tc_gemm import TC_BF16, TC_F16, TC_TF32

    return params.shared_bytes(gemm, {"f16": TC_F16, "bf16": TC_BF16, "tf32": TC_TF32}[element])


def ranked(template: str, problem: MatmulProblem | Conv2dProblem, candidates: Sequence[Any],
           on: Gpu, element: str = "f32") -> list[tuple[Any, Estimate]]:
    """`candidates` of `template` for `problem` with their estimates on `on`, fastest
    first; of equals (a bandwidth-bound GEMV's, say) the one with the shortest rounds under
    its roofline -- the most slack --, then the candidates' order."""
    scored = [(params, estimate(candidate_launch(template, problem, params, element), on))
              for params in candidates]
    return sorted(scored, key=lambda pair: (pair[1].seconds, pair[1].latency_seconds))


def fastest(template: str, problem: MatmulProblem | Conv2dProblem, candidates: Sequence[Any],
            on: Gpu, element: str = "f32") -> Any:
    """The candidate the model estimates fastest (the first of equals); ValueError for none."""
    if not candidates:
        raise ValueError(f"{template}: no valid candidate for this problem")
    return ranked(template, problem, candidates, on, element)[0][0]


# ---- the defaults of the tunable templates ----------------------------------------------

def _mma_type(element: str) -> str:
    """A tensor-core template's mma operand type: f32 operands run as tf32."""
    return "tf32" if element == "f32" else element


SIMT_TEMPLATES = ("matmul_simt", "conv2d_implicit_gemm")
"""The SIMT GEMM engine's templates, whose space depends on the target arch."""
TENSOR_CORE_TEMPLATES = ("matmul_tc", "conv2d_tc")
"""The tensor-core templates, whose space and default depend on the operands' element type."""
MARGIN = 0.03
"""A candidate the model estimates faster than its template's rule default by less than
this fraction does not replace it: closer than that, the model cannot tell them apart."""
REFERENCE_ARCH = "sm_90"
"""The architecture assumed where none is named."""


def template_space(template: str, element: str = "f16", arch: str | None = None) -> Space:
    """The space of `template` for operands of `element` (``f16``, ``bf16``, ``f32`` or
    ``tf32``) on `arch` (None: sm_80's limits): both engines' shared memory per block is
    the arch's (a tensor-core template's f32 (TF32) tiles take twice the bytes,
    `tc_space`), and the SIMT pipeline needs sm_80 (`matmul_simt_space`)."""
    if template in TENSOR_CORE_TEMPLATES:
        return tc_space(element, arch)
    if template in SIMT_TEMPLATES:
        return matmul_simt_space(arch)
    if template == "matmul_gemv":
        return MATMUL_GEMV_SPACE
    raise ValueError(f"'{template}' is not a tunable template")


def rule_default(template: str, problem: MatmulProblem | Conv2dProblem, element: str = "f16",
                 arch: str | None = None) -> Any:
    """The template's own rule for an untuned candidate (documented beside each template):
    the tensor-core preference list, the small-M rule, the SIMT pipelined preference list."""
    gemm = _gemm(problem)
    if template in TENSOR_CORE_TEMPLATES:
        return default_params(gemm, element)
    if template == "matmul_gemv":
        return MatmulGemvParams.default_for(gemm)
    return MatmulSimtParams.default_for(gemm, arch)


def legacy_default(template: str, problem: MatmulProblem | Conv2dProblem, element: str = "f16") -> Any:
    """The candidate the template used untuned before the latency model chose (the
    register-path preference list for the SIMT GEMM, whose kernels the model is calibrated
    on; the tensor-core preference list); ValueError for the small-M template, which did
    not exist then."""
    if template in TENSOR_CORE_TEMPLATES:
        return default_params(_gemm(problem), element)
    if template in SIMT_TEMPLATES:
        return MatmulSimtParams.legacy_default(_gemm(problem))
    raise ValueError(f"'{template}' has no legacy default")


@functools.lru_cache(maxsize=4096)
def default_of(template: str, problem: MatmulProblem | Conv2dProblem, element: str = "f16",
               arch: str | None = None, device: str = "") -> Any:
    """The candidate `template` uses untuned for `problem` (operands of `element`) on
    `arch`: of its space's valid candidates, the one the latency model estimates fastest on
    `device` (`gpu_for`), unless the template's rule default is within `MARGIN` of it (then
    the rule's). A template computing in f32 on CUDA cores is estimated as such. Of the SIMT
    engine's, those whose registers, counted for the problem
    (`MatmulSimtParams.register_estimate`: a single k-step's hoisted fragments), pass 255 are
    left out."""
    gemm = _gemm(problem)
    rule = rule_default(template, problem, element, arch)
    candidates = template_space(template, element, arch).candidates(gemm)
    if template in SIMT_TEMPLATES:  # not those whose one k-step ptxas would spill
        candidates = [c for c in candidates if c.register_estimate(gemm) <= MAX_REGISTERS_PER_THREAD] \
            or candidates
    if not candidates:
        return rule
    on = gpu_for(arch or REFERENCE_ARCH, device)
    computed = _mma_type(element) if template in TENSOR_CORE_TEMPLATES else "f32"
    order = ranked(template, problem, candidates, on, computed)
    best, best_estimate = order[0]
    rule_estimate = next((e for params, e in order if params == rule), None)
    if rule_estimate is not None and rule_estimate.seconds <= best_estimate.seconds * (1 + MARGIN):
        return rule
    return best
