"""The SIMT matmul template and its space: candidates run on emu against numpy (float64) --
a sample covering every pipeline depth and copy kind in the normal suite, whole spaces under
``-m slow`` --, the space's size and constraints per architecture, the defaults (the
pipeline's, and the register path's legacy one, whose CUDA is what the template always
generated), a planted missing wait, and the defaults' resources from ptxas."""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from gemm_runs import matmul_errors, program_of
from xdsl.dialects.builtin import Float64Type

from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import ptxas_stats, with_dynamic_shared
from tmlir.gpu_limits import MAX_STATIC_SHARED_BYTES
from tmlir.schedules.conv2d import Conv2dProblem, conv2d_implicit_gemm_kernel
from tmlir.schedules.matmul_simt import (
    DEFAULT_PREFERENCES,
    MATMUL_SIMT_SPACE,
    MatmulProblem,
    MatmulSimtParams,
    matmul_simt_kernel,
    matmul_simt_space,
)

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
RTOL = 1e-5
SPACE = matmul_simt_space("sm_90")
GOLDEN = Path(__file__).with_name("simt_register_path")

SHAPES = {  # name: (m, n, k, batch)
    "128x128x64": (128, 128, 64, 1),
    "257x131x75": (257, 131, 75, 1),
    "1x1000x512": (1, 1000, 512, 1),
    "4x64x96x32": (64, 96, 32, 4),
}
PER_SHAPE = 5  # 4 shapes x (5 sampled + the default), each shape's compiled as one program


def sample(problem: MatmulProblem, count: int, seed: int) -> list[MatmulSimtParams]:
    """`count` candidates of the sm_90 space drawn with a fixed seed, plus the default one."""
    picked = random.Random(seed).sample(SPACE.candidates(problem), count)
    default = MatmulSimtParams.default_for(problem, "sm_90")
    return picked + ([default] if default not in picked else [])


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_sampled_candidates_match_numpy(shape):
    problem = MatmulProblem.plain(*shape)
    params = sample(problem, PER_SHAPE, seed=list(SHAPES.values()).index(shape))
    errors = matmul_errors(problem, params)
    assert max(errors) < RTOL, [P for P, e in zip(params, errors) if e >= RTOL]


#: Every depth and every way an operand travels: (problem, params, gathered operands).
REPRESENTATIVES = {
    "register_path": (MatmulProblem.plain(70, 50, 40), MatmulSimtParams((1, 2), (1, 1), (4, 8), (4, 4), 8, 1), ()),
    "cp4_2x32": (MatmulProblem.plain(257, 131, 75), MatmulSimtParams((2, 2), (1, 2), (8, 4), (4, 4), 32, 2), ()),
    "cp4_cp16_3x16": (MatmulProblem.plain(130, 96, 40), MatmulSimtParams((2, 1), (2, 2), (4, 8), (4, 4), 16, 3), ()),
    "cp16_cp4_trans_4x16": (MatmulProblem((40, 72), (50, 40), (72, 50), (50,), True, True, 0.5, 2.0),
                            MatmulSimtParams((1, 2), (1, 1), (8, 4), (4, 4), 16, 4), ()),
    "gather_a_2x64": (MatmulProblem.plain(33, 64, 130), MatmulSimtParams((2, 2), (1, 1), (4, 8), (4, 4), 64, 2), (0,)),
    "gather_b_broadcast": (MatmulProblem((3, 40, 70), (1, 70, 36), (3, 40, 36), (36,)),
                           MatmulSimtParams((1, 2), (2, 1), (8, 4), (4, 4), 32, 3), (1,)),
    "dynamic_shared": (MatmulProblem.plain(150, 136, 72), MatmulSimtParams((2, 4), (2, 2), (8, 4), (4, 4), 32, 3), ()),
}


def copy_kinds(problem: MatmulProblem, params: MatmulSimtParams, gathered=()) -> tuple[str, str, int]:
    """(copy_a, copy_b, stages) of the kernel's tm.params."""
    values = matmul_simt_kernel("mm", problem, params, gathered=gathered).attributes["tm.params"].data
    return values["copy_a"].data, values["copy_b"].data, values["stages"].value.data


def test_representatives_cover_every_depth_and_copy():
    kinds = [copy_kinds(*case) for case in REPRESENTATIVES.values()]
    assert {stages for *_, stages in kinds} == {1, 2, 3, 4}
    assert {k for a, b, _ in kinds for k in (a, b)} == {"ldg", "cp4", "cp16", "gather"}
    problem, params, _ = REPRESENTATIVES["dynamic_shared"]
    assert params.shared_bytes(problem) > MAX_STATIC_SHARED_BYTES
    assert all(params in SPACE.candidates(problem) for problem, params, _ in REPRESENTATIVES.values())


@pytest.mark.parametrize("case", REPRESENTATIVES.values(), ids=REPRESENTATIVES.keys())
def test_representatives_match_numpy(case):
    problem, params, gathered = case
    assert matmul_errors(problem, [params], gathered=gathered)[0] < RTOL


def test_missing_wait_is_a_visible_race():
    """Without its cp_async_waits the pipeline reads tiles before their copies land: the
    emu (copies land at the covering wait) gives a wrong result."""
    problem, params, _ = REPRESENTATIVES["cp4_cp16_3x16"]
    assert matmul_errors(problem, [params], wait=False)[0] > 0.5


def test_f64_pipeline_gathers_its_operands():
    """An f64 matmul (pinned in the pipeline) reads its operands with tm.load, staged through
    registers: cp.async copies are for f32 tiles. Exact in double against numpy."""
    problem = MatmulProblem.plain(37, 29, 45)
    params = MatmulSimtParams((1, 2), (1, 1), (8, 4), (4, 4), 16, 3)
    kernel = matmul_simt_kernel("mm", problem, params, Float64Type())
    values = kernel.attributes["tm.params"].data
    assert (values["copy_a"].data, values["copy_b"].data) == ("gather", "gather")
    program = program_of([kernel])
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((37, 45)), rng.standard_normal((45, 29))
    c = np.full((37, 29), np.nan)
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        emu.launch("mm", kernel.grid.data, kernel.block.data, [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-12, atol=1e-12)


GEMMS = [  # transposed operands, bias broadcasts, alpha and beta, batch broadcast
    MatmulProblem((40, 70), (40, 50), (70, 50), (50,), transpose_lhs=True, alpha=0.5),
    MatmulProblem((70, 40), (50, 40), (70, 50), (70, 1), transpose_rhs=True, beta=2.0),
    MatmulProblem((3, 40, 70), (1, 50, 40), (3, 70, 50), (3, 70, 50), True, True, 1.5, 0.25),
]


@pytest.mark.parametrize("problem", GEMMS, ids=["trans_a", "trans_b", "batched_broadcast_trans_ab"])
def test_gemm_variants_match_numpy(problem):
    params = sample(problem, 2, seed=7)
    assert max(matmul_errors(problem, params)) < RTOL


SLOW_PROBLEMS = {
    "partial_tiles": MatmulProblem.plain(257, 131, 75),  # partial in M, N and K
    "gemm_trans_b": MatmulProblem((70, 40), (50, 40), (70, 50), (70, 1), transpose_rhs=True, beta=2.0),
    "batched_broadcast": MatmulProblem((3, 40, 70), (1, 70, 36), (3, 40, 36), (36,)),
}


@pytest.mark.slow
@pytest.mark.parametrize("problem", SLOW_PROBLEMS.values(), ids=SLOW_PROBLEMS.keys())
def test_whole_space(problem):
    candidates = SPACE.candidates(problem)
    errors = matmul_errors(problem, candidates)
    assert not [P for P, e in zip(candidates, errors) if e >= RTOL]


def test_space_size_and_constraints():
    """A few hundred candidates on sm_90; split-K (``split_k.py``) adds a few tens where
    tiles are few and K long, only with the pipeline's deepest k-steps (64 k in flight)."""
    problem = MatmulProblem.plain(1024, 1024, 1024)
    candidates = SPACE.candidates(problem)
    assert len(candidates) == 396 and len(set(candidates)) == len(candidates)
    assert sum(P.split_k == 1 for P in candidates) == 370  # the space before split-K
    assert {P.split_k for P in candidates} == {1, 2, 3}  # 64 tiles of 128 x 128: up to two more splits
    assert {(P.stages, P.block_k) for P in candidates} == {(1, 8), (2, 32), (2, 64), (3, 16), (3, 32), (4, 16)}
    assert {(P.stages, P.block_k) for P in candidates if P.split_k > 1} == {(2, 64), (3, 32)}
    bert_up, bert_down = (SPACE.candidates(MatmulProblem.plain(128, *nk)) for nk in ((3072, 768), (768, 3072)))
    assert (len(bert_up), len(bert_down)) == (418, 578)  # the BERT FFN's two matmuls
    assert {P.split_k for P in bert_down} == {1, 2, 3, 4, 6, 8}
    assert all(P.k_tiles(MatmulProblem.plain(128, 768, 3072)) // P.split_k >= 4 for P in bert_down)
    assert {P.split_k for P in SPACE.candidates(MatmulProblem.plain(4096, 4096, 4096))} == {1}
    for p in candidates:
        assert p.threads <= 1024 and p.shared_bytes(problem) <= 227 * 1024
        assert p.register_estimate() <= 255
        assert p.stages > 1 or p.shared_bytes(problem) <= MAX_STATIC_SHARED_BYTES
    assert max(p.thread_m * p.thread_n for p in candidates) == 128  # 8 x 16 threads tiles
    rejected = SPACE.rejections(problem)
    assert sum(rejected.values()) + len(candidates) == SPACE.size
    assert set(rejected) <= {c.name for c in SPACE.constraints}


def test_space_depends_on_the_arch():
    """Before sm_80 only the register path (the space it always had: 184 candidates at
    1024^3, and 16 that split K in steps of 16); sm_86's shared memory (99 KiB) drops the
    largest pipelines sm_90 (227 KiB) takes; unnamed, sm_80's limits."""
    problem = MatmulProblem.plain(1024, 1024, 1024)
    old = matmul_simt_space("sm_75").candidates(problem)
    assert len(old) == 202 and {P.stages for P in old} == {1} and {P.block_k for P in old} == {8, 16}
    assert sum(P.split_k == 1 for P in old) == 184 and {P.block_k for P in old if P.split_k > 1} == {16}
    sm86, sm90 = matmul_simt_space("sm_86").candidates(problem), SPACE.candidates(problem)
    assert set(sm86) < set(sm90) and max(P.shared_bytes(problem) for P in sm86) <= 99 * 1024
    assert MATMUL_SIMT_SPACE is matmul_simt_space(None)
    assert "sm_75" in str(matmul_simt_space("sm_75").first_violation(
        MatmulSimtParams(block_k=16, stages=3), problem))


def test_small_problems_get_small_tiles():
    problem = MatmulProblem.plain(1, 1000, 512)
    candidates = SPACE.candidates(problem)
    assert candidates and max(p.block_m for p in candidates) <= 64
    assert SPACE.rejections(problem)["tile fits the problem"] > 0


@pytest.mark.parametrize(("m", "n", "k", "expected"), [
    (4096, 4096, 4096, (128, 128)),  # enough blocks for every SM with the largest tile
    (1024, 1024, 1024, (64, 64)),  # 128 x 128 would leave half of the 132 SMs idle
    (1, 10, 5, (16, 32)),  # nothing fills the GPU: the tile with the most blocks
])
def test_default_choice(m, n, k, expected):
    """The legacy choice (register path, block_k 8) as before; from sm_80 its tile in 3
    stages of 16."""
    problem = MatmulProblem.plain(m, n, k)
    legacy = MatmulSimtParams.legacy_default(problem)
    assert (legacy.block_m, legacy.block_n, legacy.block_k, legacy.stages) == (*expected, 8, 1)
    assert legacy in DEFAULT_PREFERENCES
    assert MatmulSimtParams.default_for(problem, "sm_75") == legacy
    default = MatmulSimtParams.default_for(problem, "sm_90")
    assert (default.block_m, default.block_n) == expected
    assert (default.stages, default.block_k) == (3, 16)
    assert default in SPACE.candidates(problem)
    assert default.split_k == legacy.split_k == 1  # split-K is the space's, not the rule's


#: The register-path kernels whose CUDA the template generated before the pipeline existed
#: (commit 50f56d3; GOLDEN holds it): a matmul with partial tiles, a Gemm with B transposed
#: and a bias, a convolution with padding, a stride and groups.
REGISTER_PATH_KERNELS = {
    "matmul_257x131x75": lambda: matmul_simt_kernel(
        "mm", MatmulProblem.plain(257, 131, 75), MatmulSimtParams((2, 2), (1, 2), (8, 4), (4, 4), 8)),
    "gemm_trans_b_bias": lambda: matmul_simt_kernel(
        "mm", MatmulProblem((70, 40), (50, 40), (70, 50), (70, 1), transpose_rhs=True, beta=2.0),
        MatmulSimtParams((1, 2), (1, 1), (4, 8), (4, 4), 16)),
    "conv_3x3_pad_stride_groups": lambda: conv2d_implicit_gemm_kernel(
        "conv", Conv2dProblem((2, 8, 9, 11), (16, 4, 3, 3), (2, 1), (1, 1, 1, 0), (1, 1), 2, True),
        MatmulSimtParams((1, 1), (1, 1), (4, 8), (4, 4), 8)),
}


@pytest.mark.parametrize("name", REGISTER_PATH_KERNELS)
def test_register_path_generates_the_cuda_it_always_did(name):
    """``stages = 1`` kernels are the template's CUDA before the pipeline existed, byte for
    byte but for the header comment, which now lists stages, split_k and the copy kinds."""
    got = program_of([REGISTER_PATH_KERNELS[name]()]).source
    want = (GOLDEN / f"{name}.cu").read_text()
    header = re.compile(r"^// Kernel .*\n", re.M)
    assert header.sub("", got) == header.sub("", want)
    assert "stages=1, split_k=1, copy_a=ldg, copy_b=ldg" in got


def test_lanes_must_make_a_warp():
    with pytest.raises(ValueError, match="32 lanes"):
        MatmulSimtParams(lanes=(4, 4))
    with pytest.raises(ValueError, match="stages must be 1"):
        MatmulSimtParams(stages=5)


def test_tiles_agree_with_the_thread_mapping():
    """block_m x block_n and the thread count are those of the composed thread mapping, and
    each thread's tasks are its thread_m x thread_n register tile."""
    for p in SPACE.all_points()[::7]:
        mapping = p.thread_mapping
        assert mapping.task_shape == (p.block_m, p.block_n)
        assert mapping.num_workers == p.threads
        assert len(mapping.worker_tasks(p.threads - 1)) == p.thread_m * p.thread_n


BIG_SHAPES = {  # name: problem
    "1024^3": MatmulProblem.plain(1024, 1024, 1024),
    "4096^3": MatmulProblem.plain(4096, 4096, 4096),
    "bert_ffn_up": MatmulProblem.plain(128, 3072, 768),
    "bert_ffn_down": MatmulProblem.plain(128, 768, 3072),
    "257x131x75": MatmulProblem.plain(257, 131, 75),
    "1x1000x512": MatmulProblem.plain(1, 1000, 512),
}


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("problem", BIG_SHAPES.values(), ids=BIG_SHAPES.keys())
def test_default_candidate_does_not_spill(problem, arch):
    params = MatmulSimtParams.default_for(problem, arch)
    program = program_of([matmul_simt_kernel("mm", problem, params)])
    (info,) = program.kernels
    stats = with_dynamic_shared(ptxas_stats(program.source, arch), {"mm": info.dynamic_shared_bytes})["mm"]
    assert stats.spill_bytes == 0 and stats.local_bytes == 0
    assert 0 < stats.registers <= 255
    assert stats.shared_bytes == params.shared_bytes(problem)
    assert info.dynamic_shared_bytes == (stats.shared_bytes if stats.shared_bytes > MAX_STATIC_SHARED_BYTES else 0)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("problem", [BIG_SHAPES["bert_ffn_up"], BIG_SHAPES["bert_ffn_down"],
                                     BIG_SHAPES["257x131x75"]], ids=["bert_ffn_up", "bert_ffn_down", "257x131x75"])
def test_model_default_does_not_spill(problem, arch):
    """The latency model's default (what an untuned compile takes), split or not."""
    from tmlir.schedules.model_choice import default_of

    params = default_of("matmul_simt", problem, "f32", arch)
    program = program_of([matmul_simt_kernel("mm", problem, params)])
    (info,) = program.kernels
    stats = ptxas_stats(program.source, arch)["mm"]
    assert stats.spill_bytes == 0 and stats.local_bytes == 0, params


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_model_default_of_one_k_step_with_an_epilogue_does_not_spill(tmp_path, arch):
    """ViT's 17 x 32 x 64 projection with its bias and residual: a k-loop of one k-tile is
    straight-line code in which ptxas hoists the tile's shared loads; at block_k 64 it
    spilled 560 bytes on sm_80 (`MatmulSimtParams.register_estimate(problem)`), which the
    model's default now leaves out."""
    import subprocess
    import sys

    source = tmp_path / "vit_proj.mlir"
    source.write_text(
        "func.func @f(%a: tensor<1x17x64xf32>, %b: tensor<64x32xf32>, %bias: tensor<32xf32>, "
        "%r: tensor<1x17x32xf32>) -> tensor<1x17x32xf32> {\n"
        "  %c = graph.matmul %a, %b : (tensor<1x17x64xf32>, tensor<64x32xf32>) -> tensor<1x17x32xf32>\n"
        "  %d = graph.add %c, %bias : (tensor<1x17x32xf32>, tensor<32xf32>) -> tensor<1x17x32xf32>\n"
        "  %e = graph.add %d, %r : (tensor<1x17x32xf32>, tensor<1x17x32xf32>) -> tensor<1x17x32xf32>\n"
        "  func.return %e : tensor<1x17x32xf32>\n}\n")
    report = subprocess.run([sys.executable, "-m", "tmlir.tools.tm_opt", str(source), "--arch", arch,
                             "-p", f"lower-to-cuda{{target-arch={arch}}}", "-t", "report"],
                            capture_output=True, text=True, check=True).stdout
    total = report.strip().splitlines()[-1]
    assert " 0 B spilled" in total and " 0 B stack" in total, report
