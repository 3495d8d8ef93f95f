"""The SIMT matmul template and its space: candidates run on emu against numpy (float64),
the space's size and constraints, the default candidate's resources from ptxas."""

from __future__ import annotations

import random
import shutil

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import ptxas_stats
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.matmul_simt import (
    MATMUL_SIMT_SPACE,
    MatmulProblem,
    MatmulSimtParams,
    matmul_simt_kernel,
)

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
RTOL = 1e-5

SHAPES = {  # name: (m, n, k, batch)
    "128x128x64": (128, 128, 64, 1),
    "257x131x75": (257, 131, 75, 1),
    "1x1000x512": (1, 1000, 512, 1),
    "4x64x96x32": (64, 96, 32, 4),
}
PER_SHAPE = 9  # 4 shapes x (9 sampled + the default) = 40 candidates


def sample(problem: MatmulProblem, count: int, seed: int) -> list[MatmulSimtParams]:
    """`count` candidates drawn with a fixed seed, plus the default one."""
    candidates = MATMUL_SIMT_SPACE.candidates(problem)
    picked = random.Random(seed).sample(candidates, min(count, len(candidates)))
    default = MatmulSimtParams.default_for(problem)
    return picked + ([default] if default not in picked else [])


def relative_error(problem: MatmulProblem, params: MatmulSimtParams, seed: int = 0) -> float:
    """Run the kernel on emu; max |C - reference| / max |reference|, reference in float64."""
    kernel = matmul_simt_kernel("mm", problem, params)
    module = ModuleOp([kernel])
    module.verify()
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(problem.lhs_shape).astype(np.float32)
    b = rng.standard_normal(problem.rhs_shape).astype(np.float32)
    bias = (rng.standard_normal(problem.bias_shape).astype(np.float32)
            if problem.bias_shape else None)
    c = np.full(problem.out_shape, np.nan, np.float32)  # every element must be written
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        emu.launch("mm", kernel.grid.data, kernel.block.data,
                   [a, b, *([bias] if bias is not None else []), c])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if problem.transpose_lhs:
        a64 = np.swapaxes(a64, -1, -2)
    if problem.transpose_rhs:
        b64 = np.swapaxes(b64, -1, -2)
    want = problem.alpha * (a64 @ b64)
    if bias is not None:
        want = want + problem.beta * bias.astype(np.float64)
    return float(np.abs(c - want).max() / np.abs(want).max())


SAMPLED = [
    pytest.param(MatmulProblem.plain(m, n, k, batch), params, id=f"{name}-{params.describe()}")
    for seed, (name, (m, n, k, batch)) in enumerate(SHAPES.items())
    for params in sample(MatmulProblem.plain(m, n, k, batch), PER_SHAPE, seed)
]


def test_the_sample_is_large_enough():
    assert len(SAMPLED) >= 30


@pytest.mark.parametrize(("problem", "params"), SAMPLED)
def test_sampled_candidates_match_numpy(problem, params):
    assert relative_error(problem, params) < RTOL


GEMMS = [  # transposed operands (the padded shared tiles), bias broadcasts, alpha and beta
    MatmulProblem((40, 70), (40, 50), (70, 50), (50,), transpose_lhs=True, alpha=0.5),
    MatmulProblem((70, 40), (50, 40), (70, 50), (70, 1), transpose_rhs=True, beta=2.0),
    MatmulProblem((3, 40, 70), (3, 50, 40), (3, 70, 50), (3, 70, 50), True, True, 1.5, 0.25),
]


@pytest.mark.parametrize("problem", GEMMS, ids=["trans_a", "trans_b", "batched_trans_ab"])
def test_gemm_variants_match_numpy(problem):
    for params in sample(problem, 2, seed=7):
        assert relative_error(problem, params) < RTOL, params


@pytest.mark.slow
def test_whole_space_on_one_shape():
    problem = MatmulProblem.plain(257, 131, 75)
    failures = [p for p in MATMUL_SIMT_SPACE.candidates(problem) if relative_error(problem, p) >= RTOL]
    assert not failures


def test_space_size_and_constraints():
    problem = MatmulProblem.plain(1024, 1024, 1024)
    candidates = MATMUL_SIMT_SPACE.candidates(problem)
    assert 150 <= len(candidates) <= 250  # Hidet's space for this problem: ~215
    assert len(set(candidates)) == len(candidates)
    for p in candidates:
        assert p.threads <= 1024 and p.shared_bytes(problem) <= 48 * 1024
        assert p.register_estimate() <= 255
        assert (p.block_m * p.block_k) % p.threads == 0
    rejected = MATMUL_SIMT_SPACE.rejections(problem)
    assert sum(rejected.values()) + len(candidates) == MATMUL_SIMT_SPACE.size
    assert set(rejected) <= {c.name for c in MATMUL_SIMT_SPACE.constraints}


def test_small_problems_get_small_tiles():
    problem = MatmulProblem.plain(1, 1000, 512)
    candidates = MATMUL_SIMT_SPACE.candidates(problem)
    assert candidates and max(p.block_m for p in candidates) <= 64
    assert MATMUL_SIMT_SPACE.rejections(problem)["tile fits the problem"] > 0


@pytest.mark.parametrize(("m", "n", "k", "expected"), [
    (4096, 4096, 4096, (128, 128)),  # enough blocks for every SM with the largest tile
    (1024, 1024, 1024, (64, 64)),  # 128 x 128 would leave half of the 132 SMs idle
    (1, 10, 5, (16, 32)),  # nothing fills the GPU: the tile with the most blocks
])
def test_default_choice(m, n, k, expected):
    problem = MatmulProblem.plain(m, n, k)
    default = MatmulSimtParams.default_for(problem)
    assert (default.block_m, default.block_n) == expected
    assert default in MATMUL_SIMT_SPACE.candidates(problem)


@needs_nvcc
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (257, 131, 75), (1, 1000, 512)])
def test_default_candidate_does_not_spill(shape):
    problem = MatmulProblem.plain(*shape)
    module = ModuleOp([matmul_simt_kernel("mm", problem, MatmulSimtParams.default_for(problem))])
    LowerToCuda().apply(make_context(), module)
    stats = ptxas_stats(emit_cuda(module).source, "sm_90")["mm"]
    assert stats.spill_bytes == 0 and stats.local_bytes == 0
    assert 0 < stats.registers <= 255
    assert stats.shared_bytes == MatmulSimtParams.default_for(problem).shared_bytes(problem)


def test_lanes_must_make_a_warp():
    with pytest.raises(ValueError, match="32 lanes"):
        MatmulSimtParams(lanes=(4, 4))


def test_tiles_agree_with_the_thread_mapping():
    """block_m x block_n and the thread count are those of the composed thread mapping, and
    each thread's tasks are its thread_m x thread_n register tile."""
    for p in MATMUL_SIMT_SPACE.all_points():
        mapping = p.thread_mapping
        assert mapping.task_shape == (p.block_m, p.block_n)
        assert mapping.num_workers == p.threads
        assert len(mapping.worker_tasks(p.threads - 1)) == p.thread_m * p.thread_n
