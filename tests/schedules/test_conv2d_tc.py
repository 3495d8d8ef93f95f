"""The tensor-core convolution (implicit GEMM on the tensor-core engine): f16/bf16 input and
weights on emu against a float64 numpy convolution of the same half-precision values, with
the weights copied by cp.async (K a multiple of 8) or gathered (a 3-channel stem), grouped,
strided, dilated, padded; PTX for sm_80/sm_90 without spills; what it does not take."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from models import reference_conv
from xdsl.dialects.builtin import Attribute, BFloat16Type, Float16Type, Float32Type, ModuleOp

from tmlir.backends.cuda_c import CudaProgram, emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import kernel_stats, nvrtc_version
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.conv2d import Conv2dProblem
from tmlir.dialects import tm
from tmlir.schedules.conv2d_tc import conv2d_tc_kernel, dense_input, dense_weights
from tmlir.schedules.matmul_tc import MATMUL_TC_SPACE, MatmulTcParams, default_params
from tmlir.schedules.registry import NoTemplate

needs_nvrtc = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC (cuda.bindings) not available")


def lowered(problem: Conv2dProblem, params: MatmulTcParams, element: Attribute) -> CudaProgram:
    module = ModuleOp([conv2d_tc_kernel("conv_tc", problem, params, element)])
    module.verify()
    LowerToCuda().apply(make_context(), module)
    return emit_cuda(module)


def run_conv(problem: Conv2dProblem, params: MatmulTcParams, element: Attribute = Float16Type()) -> None:
    """The emu result within half-precision tolerance of float64 on the same inputs (for
    f32 operands, which the mma rounds to TF32: within 2e-3 of the output's scale)."""
    program = lowered(problem, params, element)
    rng = np.random.default_rng(0)
    half = {Float16Type(): np.float16, BFloat16Type(): ml_dtypes.bfloat16, Float32Type(): np.float32}[element]
    x = rng.standard_normal(problem.input_shape).astype(half)
    w = rng.standard_normal(problem.weight_shape).astype(half)
    bias = rng.standard_normal(problem.bias_shape).astype(np.float32) if problem.bias else None
    y = np.full(problem.out_shape, np.nan, np.float32)  # every element must be written
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        emu.launch("conv_tc", params.blocks(problem.gemm), params.threads,
                   [x, w, *([bias] if bias is not None else []), y])
    want = reference_conv(problem, x.astype(np.float64), w.astype(np.float64), bias)
    if isinstance(element, Float32Type):
        assert float(np.abs(y - want).max() / np.abs(want).max()) < 2e-3
    else:
        np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3 * math.sqrt(problem.gemm.k))


CASES = {  # (problem, params): weights dense unless K % 8
    "3x3_pad1_bias": (Conv2dProblem((2, 16, 9, 10), (24, 16, 3, 3), pads=(1, 1, 1, 1), bias=True),
                      MatmulTcParams(64, 64, 32, (2, 2), 3)),
    "stem_7x7_stride2_gathered": (Conv2dProblem((1, 3, 20, 18), (16, 3, 7, 7), strides=(2, 2),
                                                pads=(3, 3, 3, 3), bias=True), MatmulTcParams(64, 64, 32, (2, 2), 2)),
    "groups2_dilation2": (Conv2dProblem((1, 16, 10, 11), (32, 8, 3, 3), dilations=(2, 2), pads=(2, 2, 2, 2),
                                        groups=2), MatmulTcParams(64, 64, 16, (2, 2), 4)),
    "1x1_stride2_partial": (Conv2dProblem((1, 32, 11, 11), (40, 32, 1, 1), strides=(2, 2)),
                            MatmulTcParams(64, 128, 32, (2, 2), 3)),
}


@pytest.mark.parametrize(("problem", "params"), CASES.values(), ids=CASES.keys())
def test_candidates_match_numpy(problem: Conv2dProblem, params: MatmulTcParams) -> None:
    run_conv(problem, params)


def test_bf16_and_the_default_candidate() -> None:
    problem = Conv2dProblem((1, 8, 8, 8), (16, 8, 3, 3), pads=(1, 1, 1, 1), bias=True)
    params = default_params(problem.gemm)
    assert MATMUL_TC_SPACE.first_violation(params, problem.gemm) is None
    run_conv(problem, params, BFloat16Type())


def lowered_gathered(problem: Conv2dProblem, params: MatmulTcParams) -> CudaProgram:
    module = ModuleOp([conv2d_tc_kernel("conv_tc", problem, params, gathered=(1,))])
    LowerToCuda().apply(make_context(), module)
    return emit_cuda(module)


def test_weights_are_copied_only_when_rows_split_into_16_byte_chunks_and_have_no_prologue() -> None:
    dense = Conv2dProblem((1, 16, 8, 8), (16, 16, 3, 3))
    stem = Conv2dProblem((1, 3, 8, 8), (16, 3, 3, 3))
    assert dense_weights(dense) and not dense_weights(stem)
    params = MatmulTcParams(64, 64, 32, (2, 2), 3)
    assert lowered(dense, params, Float16Type()).source.count("cp.async.cg") > 0
    assert "cp.async.cg" not in lowered(stem, params, Float16Type()).source
    assert "cp.async.cg" not in lowered_gathered(dense, params).source  # weights with a prologue


DENSE_INPUT = {  # 1x1, stride 1, no padding, H * W a multiple of the chunk: B copied by cp.async
    "f16_batch2_groups2_partial": (Conv2dProblem((2, 48, 4, 6), (40, 24, 1, 1), groups=2, bias=True),
                                   MatmulTcParams(64, 64, 32, (2, 2), 3), Float16Type()),
    "bf16_deep_stages": (Conv2dProblem((1, 64, 8, 8), (128, 64, 1, 1), bias=True),
                         MatmulTcParams(128, 64, 32, (4, 2), 4), BFloat16Type()),
    "tf32_4_float_chunks": (Conv2dProblem((2, 20, 2, 6), (24, 20, 1, 1)),
                            MatmulTcParams(64, 64, 16, (2, 2), 3), Float32Type()),
}


@pytest.mark.parametrize(("problem", "params", "element"), DENSE_INPUT.values(), ids=DENSE_INPUT.keys())
def test_a_1x1_convolution_copies_its_input(problem: Conv2dProblem, params: MatmulTcParams,
                                           element: Attribute) -> None:
    """The im2col matrix of a 1x1 stride-1 convolution is the input: copied 16 bytes at a
    time (partial tiles along pixels and channels zero-filled), exact like the gathered one."""
    assert dense_input(problem, element)
    kernel = conv2d_tc_kernel("conv_tc", problem, params, element)
    assert kernel.attributes["tm.params"].data["copy_b"].data == "cp16"
    copies = [op for op in kernel.walk() if isinstance(op, tm.CpAsyncOp)]
    assert {op.src for op in copies} == {kernel.args[0], kernel.args[1]}  # x and w
    run_conv(problem, params, element)


def test_the_input_is_gathered_past_a_chunk_a_tap_or_under_a_prologue() -> None:
    params = MatmulTcParams(64, 64, 32, (2, 2), 3)
    seven = Conv2dProblem((1, 16, 7, 7), (16, 16, 1, 1))  # 49 pixels: a chunk would cross images
    assert not dense_input(seven) and dense_input(seven, Float32Type()) is False
    assert dense_input(Conv2dProblem((1, 16, 14, 14), (16, 16, 1, 1)), Float32Type())  # 196 = 49 x 4
    assert not dense_input(Conv2dProblem((1, 16, 14, 14), (16, 16, 1, 1)))  # not 8 halves
    assert not dense_input(Conv2dProblem((1, 16, 8, 8), (16, 16, 1, 1), strides=(2, 2)))
    square = Conv2dProblem((1, 16, 8, 8), (16, 16, 1, 1))
    header = conv2d_tc_kernel("c", square, params, gathered=(0,)).attributes["tm.params"].data
    assert header["copy_b"].data == "gather"  # a prologue computes the input
    assert conv2d_tc_kernel("c", seven, params).attributes["tm.params"].data["copy_b"].data == "gather"


@pytest.mark.parametrize("case", ["3x3_pad1_bias", "stem_7x7_stride2_gathered"])
def test_tf32_candidates_match_numpy(case: str) -> None:
    """f32 operands on TF32 mma: weights copied 4 floats at a time (K = 144) or gathered
    (K = 147), B from a K x N tile by shared loads; the TF32 space's default tiles."""
    problem = CASES[case][0]
    assert dense_weights(problem, Float32Type()) == (case == "3x3_pad1_bias")
    run_conv(problem, default_params(problem.gemm, Float32Type()), Float32Type())


def test_depthwise_f64_and_f32_tiles_past_shared_memory_are_refused() -> None:
    with pytest.raises(NoTemplate, match="direct kernel"):
        conv2d_tc_kernel("c", Conv2dProblem((1, 8, 8, 8), (8, 1, 3, 3), groups=8), MatmulTcParams())
    from xdsl.dialects.builtin import Float64Type
    with pytest.raises(NoTemplate, match="f16, bf16 or f32"):
        conv2d_tc_kernel("c", Conv2dProblem((1, 8, 8, 8), (8, 8, 3, 3)), MatmulTcParams(), Float64Type())
    deep = MatmulTcParams(128, 256, 64, (2, 4), 4)  # 192 KiB for f16, 392 KiB for f32
    conv2d_tc_kernel("c", Conv2dProblem((1, 64, 16, 16), (128, 64, 3, 3)), deep)
    with pytest.raises(ValueError, match="401408 bytes of shared memory for f32 operands"):
        conv2d_tc_kernel("c", Conv2dProblem((1, 64, 16, 16), (128, 64, 3, 3)), deep, Float32Type())


@needs_nvrtc
def test_ptx_for_sm80_and_sm90_without_spills() -> None:
    problem, params = CASES["3x3_pad1_bias"]
    source = lowered(problem, params, Float16Type()).source
    for arch in ("sm_80", "sm_90"):
        stats = kernel_stats(source, arch, compiler="nvrtc")["conv_tc"]
        assert stats.spill_bytes == 0 and stats.local_bytes == 0, (arch, stats)


def test_a_random_candidate_matches_numpy() -> None:
    import random

    problem = CASES["3x3_pad1_bias"][0]
    params = random.Random(7).choice(MATMUL_TC_SPACE.candidates(problem.gemm))
    run_conv(problem, params)


@pytest.mark.slow
def test_whole_space_on_one_shape() -> None:
    """Every candidate of a grouped, padded 3x3 convolution with partial tiles, on emu and
    (with NVRTC) as sm_80 and sm_90 PTX without spills."""
    problem = Conv2dProblem((2, 16, 9, 10), (48, 8, 3, 3), pads=(1, 1, 1, 1), groups=2, bias=True)
    for params in MATMUL_TC_SPACE.candidates(problem.gemm):
        run_conv(problem, params)
        if nvrtc_version() is not None:
            source = lowered(problem, params, Float16Type()).source
            assert all(kernel_stats(source, arch, compiler="nvrtc")["conv_tc"].spill_bytes == 0
                       for arch in ("sm_80", "sm_90")), params
