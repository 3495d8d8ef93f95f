"""The tensor-core matmul template and its space: candidates run on emu (mma, ldmatrix and
cp.async emulated) against float64 numpy at half-precision tolerance, compile with NVRTC
for sm_80 and sm_90 without spills; a kernel without its cp.async waits gives a wrong
result; shapes the 16-byte copies cannot cover are refused."""

from __future__ import annotations

import math
import random

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import Attribute, BFloat16Type, Float16Type, ModuleOp

from tmlir.backends.cuda_c import CudaProgram, emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import kernel_stats, nvrtc_version
from tmlir.passes.arith_simplify import ArithSimplify
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.tm_lower_mappings import TmLowerMappings
from tmlir.registry import make_context
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.matmul_tc import MATMUL_TC_SPACE, MatmulTcParams, matmul_tc_kernel, tc_space
from tmlir.schedules.registry import NoTemplate

needs_nvrtc = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC (cuda.bindings) not available")


def problem(m: int, n: int, k: int, bias: bool = False) -> MatmulProblem:
    return MatmulProblem((m, k), (k, n), (m, n), (n,) if bias else None)


def lowered(prob: MatmulProblem, params: MatmulTcParams, element: Attribute = Float16Type(),
            wait: bool = True, gathered: tuple[int, ...] = ()) -> CudaProgram:
    """The kernel through tm-lower-mappings, convert-tm-to-gpu and arith-simplify, as CUDA C."""
    module = ModuleOp([matmul_tc_kernel("mm_tc", prob, params, element, wait=wait, gathered=gathered)])
    module.verify()
    ctx = make_context()
    for p in (TmLowerMappings(), ConvertTmToGpu(), ArithSimplify()):
        p.apply(ctx, module)
    return emit_cuda(module)


def run_on_emu(prob: MatmulProblem, params: MatmulTcParams, element: Attribute = Float16Type(),
               wait: bool = True, seed: int = 0, gathered: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """(C from the emu, the float64 reference) for random unit-scale inputs."""
    program = lowered(prob, params, element, wait, gathered)
    rng = np.random.default_rng(seed)
    half = np.float16 if isinstance(element, Float16Type) else ml_dtypes.bfloat16
    a = rng.standard_normal(prob.lhs_shape).astype(half)
    b = rng.standard_normal(prob.rhs_shape).astype(half)
    bias = rng.standard_normal(prob.bias_shape).astype(np.float32) if prob.bias_shape else None
    c = np.full(prob.out_shape, np.nan, np.float32)  # every element must be written
    grid, block = params.blocks(prob), params.threads
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        emu.launch("mm_tc", grid, block, [a, b, *([bias] if bias is not None else []), c],
                   program.kernels[0].dynamic_shared_bytes)
    return c, reference(prob, a, b, bias)


def reference(prob: MatmulProblem, a: np.ndarray, b: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """``alpha * a @ op(b) + beta * bias`` in float64."""
    rhs = b.astype(np.float64)
    want = prob.alpha * (a.astype(np.float64) @ (rhs.swapaxes(-1, -2) if prob.transpose_rhs else rhs))
    return want + prob.beta * bias if bias is not None else want


def assert_matches(c: np.ndarray, want: np.ndarray, k: int) -> None:
    """Exact half-precision products, f32 sums: rtol 1e-3, atol 1e-3 at the sqrt(K) scale."""
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3 * math.sqrt(k))


SAMPLED = [  # 4 candidates in the normal suite, from each shape's valid space
    pytest.param(problem(64, 64, 64), MatmulTcParams(64, 64, 32, (2, 2), 4), id="64x64x64-64x64x32-2x2-s4"),
    pytest.param(problem(96, 80, 48, True), MatmulTcParams(64, 64, 16, (2, 2), 3), id="96x80x48-64x64x16-2x2-s3"),
    pytest.param(problem(96, 80, 48, True), MatmulTcParams(128, 64, 32, (4, 2), 3), id="96x80x48-128x64x32-4x2-s3"),
    pytest.param(problem(128, 128, 256, True), MatmulTcParams(128, 128, 32, (2, 2), 2),
                 id="128x128x256-128x128x32-2x2-s2"),
]


@pytest.mark.parametrize(("prob", "params"), SAMPLED)
def test_sampled_candidates_match_numpy(prob: MatmulProblem, params: MatmulTcParams) -> None:
    assert MATMUL_TC_SPACE.first_violation(params, prob) is None
    assert_matches(*run_on_emu(prob, params), prob.k)


DEEP = [  # past 48 KiB of shared memory (dynamic): sm_90's space, up to 128 x 256 tiles in 4 stages
    pytest.param(problem(160, 272, 192, True), MatmulTcParams(128, 256, 64, (2, 4), 4), id="128x256x64-2x4-s4"),
    pytest.param(MatmulProblem((200, 96), (136, 96), (200, 136), (136,), transpose_rhs=True),
                 MatmulTcParams(256, 128, 32, (4, 2), 3), id="NxK-256x128x32-4x2-s3"),
]


@pytest.mark.parametrize(("prob", "params"), DEEP)
def test_deep_pipelines_past_48_kib_match_numpy(prob: MatmulProblem, params: MatmulTcParams) -> None:
    assert tc_space("f16", "sm_90").first_violation(params, prob) is None
    assert params.shared_bytes(prob) > 48 * 1024
    program = lowered(prob, params)
    assert program.kernels[0].dynamic_shared_bytes == params.shared_bytes(prob)
    assert_matches(*run_on_emu(prob, params, seed=5), prob.k)


def test_bf16_operands_match_numpy() -> None:
    prob = problem(64, 72, 40, bias=True)
    assert_matches(*run_on_emu(prob, MatmulTcParams(64, 64, 16, (2, 2), 3), BFloat16Type()), prob.k)


GENERAL = [  # batch broadcasting, B stored N x K, bias broadcasting, alpha and beta
    pytest.param(MatmulProblem((2, 3, 40, 64), (3, 64, 48), (2, 3, 40, 48), (48,)),
                 MatmulTcParams(64, 64, 32, (2, 2), 3), id="batch-2x3-rhs-broadcast"),
    pytest.param(MatmulProblem((2, 50, 32), (1, 44, 32), (2, 50, 44), (50, 1), transpose_rhs=True,
                               alpha=0.5, beta=2.0),
                 MatmulTcParams(64, 64, 16, (2, 2), 2), id="rhs-NxK-N44-alpha-beta"),
    pytest.param(MatmulProblem((96, 64), (72, 64), (96, 72), (96, 72), transpose_rhs=True),
                 MatmulTcParams(64, 64, 32, (2, 2), 4), id="gemm-transB-full-bias"),
]


@pytest.mark.parametrize(("prob", "params"), GENERAL)
def test_batched_transposed_and_scaled_problems_match_numpy(prob: MatmulProblem, params: MatmulTcParams) -> None:
    assert MATMUL_TC_SPACE.first_violation(params, prob) is None
    assert_matches(*run_on_emu(prob, params, seed=3), prob.k)


@pytest.mark.parametrize("gathered", [(0,), (1,), (0, 1)], ids=["A", "B", "A-and-B"])
def test_gathered_operands_match_numpy(gathered: tuple[int, ...]) -> None:
    """Operands read with tm.load (as a fused prologue needs), partial tiles zero-filled."""
    for prob, params in (GENERAL[1].values, SAMPLED[1].values):
        program = lowered(prob, params, gathered=gathered)
        copied = "tmlir_cp_async<16>(" in program.source or "tmlir_cp_async_zfill<16>(" in program.source
        assert copied == (gathered != (0, 1))  # the other is copied
        assert_matches(*run_on_emu(prob, params, seed=4, gathered=gathered), prob.k)


def test_missing_cp_async_wait_gives_a_wrong_result() -> None:
    prob, params = problem(64, 64, 64), MatmulTcParams(64, 64, 16, (2, 2), 3)
    c, want = run_on_emu(prob, params, wait=False)
    assert not np.allclose(c, want, rtol=1e-2, atol=1e-2)


@needs_nvrtc
@pytest.mark.parametrize(("prob", "params"), SAMPLED)
def test_candidates_compile_for_sm80_and_sm90_without_spills(prob: MatmulProblem, params: MatmulTcParams) -> None:
    source = lowered(prob, params).source
    for arch in ("sm_80", "sm_90"):
        stats = kernel_stats(source, arch, compiler="nvrtc")["mm_tc"]
        assert stats.spill_bytes == 0 and stats.local_bytes == 0, (arch, stats)
        assert stats.shared_bytes == params.shared_bytes(prob)
        assert stats.registers <= 255


@pytest.mark.parametrize(("shape", "message"), [
    ((64, 64, 60), "K and N multiples of 8"),
    ((64, 36, 64), "K and N multiples of 8"),
])
def test_shapes_the_copies_cannot_cover_are_refused(shape: tuple[int, int, int], message: str) -> None:
    with pytest.raises(NoTemplate, match=message) as info:
        matmul_tc_kernel("mm_tc", problem(*shape), MatmulTcParams())
    assert "x".join(map(str, shape)) in str(info.value)


def test_transposed_b_needs_only_k_a_multiple_of_8_and_transposed_a_is_refused() -> None:
    matmul_tc_kernel("mm_tc", MatmulProblem((64, 64), (36, 64), (64, 36), transpose_rhs=True), MatmulTcParams())
    with pytest.raises(NoTemplate, match="needs K multiples of 8"):
        matmul_tc_kernel("mm_tc", MatmulProblem((64, 60), (36, 60), (64, 36), transpose_rhs=True),
                         MatmulTcParams())
    with pytest.raises(NoTemplate, match="not transposed"):
        matmul_tc_kernel("mm_tc", MatmulProblem((64, 64), (64, 64), (64, 64), transpose_lhs=True),
                         MatmulTcParams())


def test_default_params_are_valid_and_grow_with_the_problem() -> None:
    from tmlir.schedules.matmul_tc import default_params
    for shape in [(16, 16, 16), (64, 64, 64), (512, 512, 512), (4096, 4096, 4096), (8, 4096, 4096)]:
        prob = problem(*shape)
        chosen = default_params(prob)
        assert MATMUL_TC_SPACE.first_violation(chosen, prob) is None, (shape, chosen)
    assert default_params(problem(4096, 4096, 4096)).block_m * default_params(problem(4096, 4096, 4096)).block_n \
        > default_params(problem(256, 256, 256)).block_m * default_params(problem(256, 256, 256)).block_n


def test_float64_operands_are_refused() -> None:  # f32 operands take TF32: test_matmul_tc_tf32.py
    from xdsl.dialects.builtin import Float64Type
    with pytest.raises(NoTemplate, match="f16, bf16 or f32"):
        matmul_tc_kernel("mm_tc", problem(64, 64, 64), MatmulTcParams(), Float64Type())


def test_params_are_checked() -> None:
    with pytest.raises(ValueError, match="multiple of 16"):
        MatmulTcParams(block_k=24)
    with pytest.raises(ValueError, match="stages"):
        MatmulTcParams(stages=5)


def test_space_constraints() -> None:
    prob = problem(1024, 1024, 1024)
    candidates = MATMUL_TC_SPACE.candidates(prob)
    unsplit = [p for p in candidates if p.split_k == 1]
    assert 150 <= len(unsplit) <= 220
    # 64 tiles of 128 x 128 split 2 or 3 ways (a 4th would not idle an SM), 32 of 128 x 256
    # up to 4 ways, 128 x 64 2 ways
    assert {(p.block_m * p.block_n, p.split_k) for p in candidates if p.split_k > 1} == {
        (128 * 64, 2), (128 * 128, 2), (128 * 128, 3), (128 * 256, 2), (128 * 256, 3), (128 * 256, 4)}
    for p in candidates:
        assert p.shared_bytes() <= 163 * 1024 and p.register_estimate() <= 255
        assert 2 <= p.stages <= 4 and p.block_k % 16 == 0 and p.block_m * p.block_n <= 128 * 256
    assert max(p.shared_bytes() for p in candidates) > 48 * 1024  # dynamic shared memory
    rejected = MATMUL_TC_SPACE.rejections(prob)
    assert rejected["registers <= 255 (estimate)"] > 0  # 64 x 128 warp tiles: 128 x 256 on 2 x 2 warps
    assert sum(rejected.values()) + len(candidates) == MATMUL_TC_SPACE.size
    small = MATMUL_TC_SPACE.candidates(problem(64, 64, 16))
    assert small and all(p.block_m == p.block_n == 64 and p.block_k == 16 for p in small)


def test_space_follows_the_arch_shared_memory() -> None:
    """Each arch's space keeps to its opt-in shared memory per block: sm_86's 99 KiB
    refuses deep 128 x 256 pipelines that sm_80 (163 KiB) and sm_90 (227 KiB) take."""
    prob = problem(1024, 1024, 1024)
    sizes = {arch: {p: p.shared_bytes(prob) for p in tc_space("f16", arch).candidates(prob)}
             for arch in ("sm_86", "sm_80", "sm_90")}
    assert max(sizes["sm_86"].values()) <= 99 * 1024 < max(sizes["sm_80"].values()) <= 163 * 1024
    assert max(sizes["sm_90"].values()) > 163 * 1024
    assert set(sizes["sm_86"]) < set(sizes["sm_80"]) < set(sizes["sm_90"])
    assert tc_space("f16", "sm_90") is tc_space(Float16Type(), "sm_90")  # one object per geometry and arch
    deep = MatmulTcParams(128, 256, 64, (2, 4), 4)
    assert "99 KiB" in str(tc_space("f16", "sm_86").first_violation(deep, prob))
    assert tc_space("f16", "sm_90").first_violation(deep, prob) is None


@pytest.mark.slow
def test_whole_space_on_one_shape() -> None:
    prob = problem(96, 80, 48, bias=True)
    for params in MATMUL_TC_SPACE.candidates(prob):
        assert_matches(*run_on_emu(prob, params), prob.k)
        if nvrtc_version() is not None:
            source = lowered(prob, params).source
            assert all(kernel_stats(source, arch, compiler="nvrtc")["mm_tc"].spill_bytes == 0
                       for arch in ("sm_80", "sm_90")), params


def test_a_random_candidate_matches_numpy() -> None:
    prob = problem(128, 64, 96, bias=True)
    params = random.Random(3).choice(MATMUL_TC_SPACE.candidates(prob))
    assert_matches(*run_on_emu(prob, params, seed=3), prob.k)
