"""The tensor-core matmul on f32 operands (TF32 mma m16n8k8): candidates run on emu (mma,
ldmatrix and cp.async emulated) against float64 numpy of the f32 inputs at TF32 tolerance,
and against float64 numpy of the inputs rounded to TF32 (cvt.rna) at f32 summation
tolerance; both B layouts (``K x N`` by scalar shared loads, ``N x K`` by ldmatrix), bias,
batch, alpha and beta; a kernel without its cp.async waits is wrong; NVRTC compiles them
for sm_80 and sm_90 without spills; the space accounts for 4-byte elements."""

from __future__ import annotations

import numpy as np
import pytest
from test_matmul_tc import lowered, reference  # tests/schedules is on sys.path
from xdsl.dialects.builtin import Float32Type, Float64Type

from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import kernel_stats, nvrtc_version
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.matmul_tc import (
    MATMUL_TC_SPACE,
    MATMUL_TC_TF32_SPACE,
    MatmulTcParams,
    default_params,
    matmul_tc_kernel,
)
from tmlir.schedules.registry import NoTemplate
from tmlir.schedules.tc_gemm import TC_TF32

needs_nvrtc = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC (cuda.bindings) not available")
F32 = Float32Type()
#: TF32 keeps 10 mantissa bits (unit roundoff 2^-11): the output's error, relative to its
#: largest magnitude, stays well inside this for unit-scale inputs and K <= 256.
TF32_RTOL = 2e-3


def tf32(x: np.ndarray) -> np.ndarray:
    """`x` rounded as ``cvt.rna.tf32.f32`` does (nearest, ties away from zero)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def run_on_emu(prob: MatmulProblem, params: MatmulTcParams, wait: bool = True,
               seed: int = 0) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """(C from the emu, the inputs) for random unit-scale f32 inputs."""
    program = lowered(prob, params, F32, wait)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(prob.lhs_shape).astype(np.float32)
    b = rng.standard_normal(prob.rhs_shape).astype(np.float32)
    bias = rng.standard_normal(prob.bias_shape).astype(np.float32) if prob.bias_shape else None
    c = np.full(prob.out_shape, np.nan, np.float32)  # every element must be written
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        emu.launch("mm_tc", params.blocks(prob), params.threads, [a, b, *([bias] if bias is not None else []), c])
    return c, (a, b, bias)


def assert_tf32_matches(prob: MatmulProblem, c: np.ndarray, a: np.ndarray, b: np.ndarray,
                        bias: np.ndarray | None) -> None:
    """Within TF32 of the f32 inputs' product; within f32 sums of the TF32-rounded inputs'."""
    want = reference(prob, a, b, bias)
    scale = np.abs(want).max()
    assert np.abs(c - want).max() <= TF32_RTOL * scale
    exact = reference(prob, tf32(a), tf32(b), bias)
    assert np.abs(c - exact).max() <= 1e-5 * scale


CASES = [  # the B tile K x N (scalar loads) and N x K (ldmatrix), partial tiles, bias, batch
    pytest.param(MatmulProblem((64, 64), (64, 64), (64, 64)), MatmulTcParams(64, 64, 32, (2, 2), 2),
                 id="64x64x64-64x64x32-2x2-s2"),
    pytest.param(MatmulProblem((2, 3, 40, 60), (3, 60, 44), (2, 3, 40, 44), (44,)),
                 MatmulTcParams(64, 64, 16, (2, 2), 4), id="batch-2x3-rhs-broadcast-K60-N44"),
    pytest.param(MatmulProblem((2, 50, 36), (1, 44, 36), (2, 50, 44), (50, 1), transpose_rhs=True,
                               alpha=0.5, beta=2.0),
                 MatmulTcParams(64, 64, 16, (2, 2), 2), id="rhs-NxK-K36-alpha-beta"),
    pytest.param(MatmulProblem((96, 64), (72, 64), (96, 72), (96, 72), transpose_rhs=True),
                 MatmulTcParams(128, 64, 16, (4, 2), 3), id="gemm-transB-full-bias"),
]


@pytest.mark.parametrize(("prob", "params"), CASES)
def test_tf32_candidates_match_numpy(prob: MatmulProblem, params: MatmulTcParams) -> None:
    assert MATMUL_TC_TF32_SPACE.first_violation(params, prob) is None
    c, inputs = run_on_emu(prob, params, seed=3)
    assert_tf32_matches(prob, c, *inputs)


def test_the_kernel_is_tf32_not_f32() -> None:
    """The error is TF32's, not f32's: the mma rounds its operands."""
    prob, params = MatmulProblem.plain(64, 64, 64), MatmulTcParams(64, 64, 16, (2, 2), 3)
    c, (a, b, _) = run_on_emu(prob, params)
    want = reference(prob, a, b, None)
    assert np.abs(c - want).max() > 1e-5 * np.abs(want).max()


def test_missing_cp_async_wait_gives_a_wrong_result() -> None:
    prob, params = MatmulProblem.plain(64, 64, 64), MatmulTcParams(64, 64, 16, (2, 2), 3)
    c, (a, b, _) = run_on_emu(prob, params, wait=False)
    want = reference(prob, a, b, None)
    assert not np.abs(c - want).max() <= TF32_RTOL * np.abs(want).max()


@needs_nvrtc
@pytest.mark.parametrize(("prob", "params"), [CASES[0], CASES[3]])
def test_tf32_candidates_compile_for_sm80_and_sm90_without_spills(prob: MatmulProblem,
                                                                  params: MatmulTcParams) -> None:
    source = lowered(prob, params, F32).source
    assert "tmlir_mma_m16n8k8_tf32" in source
    for arch in ("sm_80", "sm_90"):
        stats = kernel_stats(source, arch, compiler="nvrtc")["mm_tc"]
        assert stats.spill_bytes == 0 and stats.local_bytes == 0, (arch, stats)
        assert stats.shared_bytes == params.shared_bytes(prob, TC_TF32)
        assert stats.registers <= 255


def test_f32_shapes_need_multiples_of_4_and_other_types_are_refused() -> None:
    matmul_tc_kernel("mm_tc", MatmulProblem.plain(64, 36, 44), MatmulTcParams(64, 64, 16, (2, 2), 2), F32)
    with pytest.raises(NoTemplate, match=r"K and N multiples of 4 \(16-byte copies of f32\), got 64x36x42"):
        matmul_tc_kernel("mm_tc", MatmulProblem.plain(64, 36, 42), MatmulTcParams(), F32)
    with pytest.raises(NoTemplate, match="f16, bf16 or f32"):
        matmul_tc_kernel("mm_tc", MatmulProblem.plain(64, 64, 64), MatmulTcParams(), Float64Type())


def test_params_over_shared_memory_are_refused() -> None:
    params = MatmulTcParams(128, 256, 64, (2, 4), 4)  # 192 KiB for f16; 392 KiB for f32: no GPU has it
    matmul_tc_kernel("mm_tc", MatmulProblem.plain(256, 256, 64), params)
    with pytest.raises(ValueError, match="401408 bytes of shared memory for f32 operands, over the 232448"):
        matmul_tc_kernel("mm_tc", MatmulProblem.plain(256, 256, 64), params, F32)


def test_the_tf32_space_counts_4_byte_elements() -> None:
    prob = MatmulProblem.plain(1024, 1024, 1024)
    single = MATMUL_TC_TF32_SPACE.candidates(prob)
    over = "shared memory <= 163 KiB (the block's opt-in maximum on sm_80 (no arch given))"
    assert single and MATMUL_TC_TF32_SPACE.rejections(prob)[over] > MATMUL_TC_SPACE.rejections(prob)[over]
    assert all(p.shared_bytes(prob, TC_TF32) <= 163 * 1024 for p in single)
    # 2 stages of A 64 x 16 (swizzled) and B (K x N, read by scalar loads) 16 x (64 + 8) floats
    assert MatmulTcParams(64, 64, 16, (2, 2), 2).shared_bytes(prob, TC_TF32) == 2 * (64 * 16 + 16 * 72) * 4
    for shape in [(16, 16, 16), (64, 64, 64), (512, 512, 512), (4096, 4096, 4096)]:
        prob = MatmulProblem.plain(*shape)
        assert MATMUL_TC_TF32_SPACE.first_violation(default_params(prob, F32), prob) is None, shape
        assert default_params(prob, "tf32") == default_params(prob, F32)


@pytest.mark.slow
def test_whole_tf32_space_on_one_shape() -> None:
    prob = MatmulProblem((96, 48), (48, 80), (96, 80), (80,))
    for params in MATMUL_TC_TF32_SPACE.candidates(prob):
        c, inputs = run_on_emu(prob, params)
        assert_tf32_matches(prob, c, *inputs)
