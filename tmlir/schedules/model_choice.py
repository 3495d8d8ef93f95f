"""Schedules chosen by the latency model: every candidate of a space estimated, fastest first.

A tunable template's default candidate is the one `tmlir.latency` estimates fastest on the
target GPU (`gpu_for`: the named device, else the arch's reference part: sm_90 an H100,
sm_80 an A100), and the tuner times the space in the model's order, best first. A candidate
is estimated without building its kernel: its header (`header`: the template's parameters,
as the kernel's ``tm.params`` will list them, and the problem's ``M``, ``N``, ``K``) gives
its k-loop (``kloops.py``); its blocks, threads and shared memory come from the parameter
object, its registers from the template's estimate, its compulsory bytes from the problem's
tensors. Of equal estimates (two candidates at the same roofline) the one with more slack
under it wins, then the earlier candidate of the space, so the choice is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tmlir.gpus import DEFAULT_GPU, Gpu, gpu
from tmlir.latency import Estimate, Launch, estimate
from tmlir.schedules.conv2d import Conv2dProblem
from tmlir.schedules.kloops import TC_ELEMENTS, kloop, register_estimate
from tmlir.schedules.matmul_gemv_params import MatmulGemvParams
from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams

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
    elif isinstance(params, MatmulSimtParams):  # the SIMT engine's: how its operands travel
        copy_a, copy_b = params.copy_kinds(gemm, im2col=isinstance(problem, Conv2dProblem))
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
    # split-K: every block writes its partial tile; the last of each tile reads the others
    workspace = (2 * split - 1) * (blocks // split) * tile * 4 if split > 1 else 0
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
