"""Schedules chosen by the latency model (tmlir.schedules.model_choice) and the tuner's order."""

from __future__ import annotations

import pytest

from tmlir.gpus import gpu
from tmlir.latency import estimate
from tmlir.schedules.conv2d import Conv2dProblem
from tmlir.schedules.matmul_simt import MATMUL_SIMT_SPACE, MatmulProblem, MatmulSimtParams, matmul_simt_space
from tmlir.schedules.model_choice import candidate_launch, fastest, gpu_for, header, ranked
from tmlir.tuning.space import TunableKernel

H200 = gpu("H200")


def test_gpu_for_a_device_or_an_arch() -> None:
    assert gpu_for("sm_90", "NVIDIA H200").name == "H200"
    assert gpu_for("sm_90").name == "H100" and gpu_for("sm_80").name == "A100"
    assert gpu_for("sm_75", "Some Future GPU").name == "H100"


def test_header_is_what_the_kernel_lists() -> None:
    from tmlir.schedules.matmul_simt import matmul_simt_kernel

    for stages, problem in ((1, MatmulProblem.plain(96, 80, 200)), (3, MatmulProblem.plain(96, 80, 200)),
                            (3, MatmulProblem((96, 200), (80, 200), (96, 80), transpose_rhs=True))):
        params = MatmulSimtParams((2, 2), (1, 2), (8, 4), (4, 4), 16, stages)
        kernel = matmul_simt_kernel("mm", problem, params)
        listed = {k: getattr(v, "value", v).data for k, v in kernel.attributes["tm.params"].data.items()}
        assert header("matmul_simt", problem, params) == listed


def test_ranked_is_sorted_and_fastest_is_its_first() -> None:
    problem = MatmulProblem.plain(128, 3072, 768)
    candidates = MATMUL_SIMT_SPACE.candidates(problem)
    order = ranked("matmul_simt", problem, candidates, H200)
    assert sorted(map(repr, (p for p, _ in order))) == sorted(map(repr, candidates))
    times = [e.seconds for _, e in order]
    assert times == sorted(times)
    best = fastest("matmul_simt", problem, candidates, H200)
    assert best == order[0][0]
    assert estimate(candidate_launch("matmul_simt", problem, best), H200).seconds == times[0]
    with pytest.raises(ValueError, match="no valid candidate"):
        fastest("matmul_simt", problem, [], H200)


def test_a_deep_k_loop_prefers_fewer_longer_steps() -> None:
    """BERT's FFN down-projection (K = 3072): on the register path (sm_75's space) one k-tile
    is in flight and every step is a round trip, so the model picks block_k = 16 (half the
    steps of 8); given the cp.async pipeline (sm_90's space) it keeps more k in flight."""
    problem = MatmulProblem.plain(128, 768, 3072)
    best = fastest("matmul_simt", problem, matmul_simt_space("sm_75").candidates(problem), H200)
    assert best.block_k == 16 and best.stages == 1
    deep = fastest("matmul_simt", problem, matmul_simt_space("sm_90").candidates(problem), H200)
    assert deep.stages > 1 and (deep.stages - 1) * deep.block_k > best.block_k
    assert estimate(candidate_launch("matmul_simt", problem, deep), H200).seconds < \
        estimate(candidate_launch("matmul_simt", problem, best), H200).seconds


def test_tuner_takes_the_space_in_the_model_order() -> None:
    kernel = TunableKernel("conv2d_implicit_gemm", Conv2dProblem((1, 64, 14, 14), (64, 64, 3, 3), pads=(1, 1, 1, 1)))
    order = kernel.ranked_candidates(H200)
    assert sorted(c.index for c in order) == [c.index for c in kernel.candidates()]
    first = order[0].params
    assert first == fastest("conv2d_implicit_gemm", kernel.problem, [c.params for c in kernel.candidates()], H200)
