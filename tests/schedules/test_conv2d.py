"""The conv2d templates (implicit GEMM on the SIMT matmul template, and the direct kernel):
run on emu against a float64 numpy convolution, relative error < 1e-5; problem validation;
registers and spills from ptxas."""

from __future__ import annotations

import random
import shutil
import time

import numpy as np
import pytest
from gemm_runs import conv_errors
from models import reference_conv
from xdsl.dialects.builtin import ModuleOp

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import ptxas_stats, with_dynamic_shared
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.conv2d import (
    Conv2dDirectParams,
    Conv2dProblem,
    conv2d_default_params,
    conv2d_implicit_gemm_kernel,
    conv2d_kernel,
)
from tmlir.schedules.matmul_simt import MATMUL_SIMT_SPACE, MatmulSimtParams, matmul_simt_space

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
RTOL = 1e-5


def run_conv(problem: Conv2dProblem, params: MatmulSimtParams | Conv2dDirectParams | None = None,
             seed: int = 0) -> tuple[float, float]:
    """Run the kernel on emu; (max |y - reference| / max |reference|, launch seconds)."""
    kernel = conv2d_kernel("conv", problem, params)
    module = ModuleOp([kernel])
    module.verify()
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(problem.input_shape).astype(np.float32)
    w = rng.standard_normal(problem.weight_shape).astype(np.float32)
    bias = rng.standard_normal(problem.bias_shape).astype(np.float32) if problem.bias else None
    y = np.full(problem.out_shape, np.nan, np.float32)  # every element must be written
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        start = time.perf_counter()
        emu.launch("conv", kernel.grid.data, kernel.block.data,
                   [x, w, *([bias] if bias is not None else []), y])
        seconds = time.perf_counter() - start
    want = reference_conv(problem, x, w, bias)
    return float(np.abs(y - want).max() / np.abs(want).max()), seconds


CASES = {
    "3x3_pad1": Conv2dProblem((1, 3, 8, 8), (4, 3, 3, 3), pads=(1, 1, 1, 1), bias=True),
    "stride2": Conv2dProblem((1, 3, 9, 9), (5, 3, 3, 3), strides=(2, 2), pads=(1, 1, 1, 1)),
    "dilation2": Conv2dProblem((1, 4, 10, 11), (6, 4, 3, 3), dilations=(2, 2),
                               pads=(2, 2, 2, 2), bias=True),
    "asymmetric_pads": Conv2dProblem((1, 3, 8, 7), (4, 3, 3, 2), strides=(1, 2),
                                     pads=(0, 1, 2, 0)),
    "1x1": Conv2dProblem((1, 16, 7, 7), (24, 16, 1, 1), bias=True),
    "groups2": Conv2dProblem((1, 16, 8, 8), (20, 8, 3, 3), pads=(1, 1, 1, 1), groups=2,
                             bias=True),
    "groups2_small": Conv2dProblem((1, 8, 8, 8), (12, 4, 3, 3), pads=(1, 1, 1, 1), groups=2),
    "depthwise": Conv2dProblem((1, 8, 9, 9), (8, 1, 3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                               groups=8, bias=True),
    "depthwise_multiplier2": Conv2dProblem((2, 4, 7, 6), (8, 1, 3, 3), pads=(1, 0, 1, 2),
                                           groups=4),
    "batch2": Conv2dProblem((2, 3, 8, 8), (4, 3, 3, 3), pads=(1, 1, 1, 1), bias=True),
    "stem_7x7_stride2": Conv2dProblem((2, 3, 32, 30), (16, 3, 7, 7), strides=(2, 2),
                                      pads=(3, 3, 3, 3), bias=True),
}


@pytest.mark.parametrize("problem", CASES.values(), ids=CASES.keys())
def test_default_schedule_matches_numpy(problem):
    assert run_conv(problem)[0] < RTOL


def test_resnet_layer_matches_numpy():
    """1x64x56x56, 3x3, pad 1: GEMM 64 x 3136 x 576 (a fraction of a second on emu)."""
    problem = Conv2dProblem((1, 64, 56, 56), (64, 64, 3, 3), pads=(1, 1, 1, 1), bias=True)
    assert isinstance(conv2d_default_params(problem), MatmulSimtParams)
    error, seconds = run_conv(problem)
    assert error < RTOL
    assert seconds < 10


def test_either_schedule_computes_any_convolution():
    """The direct kernel is not only for depthwise convolutions, and the GEMM handles
    one input channel per group (K = KH * KW, shorter than a k-step)."""
    grouped = CASES["groups2"]
    depthwise = CASES["depthwise"]
    assert run_conv(grouped, Conv2dDirectParams(block=64))[0] < RTOL
    assert run_conv(depthwise, MatmulSimtParams.default_for(depthwise.gemm))[0] < RTOL


SAMPLE_PROBLEMS = {  # partial tiles along M, N and K; one grouped with partial M
    "2x16x13x11_3x3": Conv2dProblem((2, 16, 13, 11), (24, 16, 3, 3), pads=(1, 1, 1, 1),
                                    bias=True),
    "groups3_stride2": Conv2dProblem((1, 30, 12, 12), (36, 10, 3, 3), strides=(2, 2),
                                     pads=(1, 1, 0, 0), groups=3, bias=True),
}


SPACE = matmul_simt_space("sm_90")


def sample(problem: Conv2dProblem, count: int, seed: int) -> list[MatmulSimtParams]:
    """`count` candidates of the sm_90 space drawn with a fixed seed (every pipeline depth
    among them), plus the default one."""
    candidates = SPACE.candidates(problem.gemm)
    picked = random.Random(seed).sample(candidates, min(count, len(candidates)))
    default = MatmulSimtParams.default_for(problem.gemm, "sm_90")
    return picked + ([default] if default not in picked else [])


SAMPLED = {name: sample(problem, 8 if seed == 0 else 4, seed)
           for seed, (name, problem) in enumerate(SAMPLE_PROBLEMS.items())}


@pytest.mark.parametrize("name", SAMPLED)
def test_sampled_candidates_match_numpy(name):
    problem, params = SAMPLE_PROBLEMS[name], SAMPLED[name]
    errors = conv_errors(problem, params)
    assert max(errors) < RTOL, [P for P, e in zip(params, errors) if e >= RTOL]


def test_the_sample_has_partial_tiles_and_every_depth():
    """The sampled candidates cover tiles that overhang M, N and K, and every pipeline
    depth (stages 1 to 4)."""
    def partial(p: Conv2dProblem, P: MatmulSimtParams) -> tuple[bool, bool, bool]:
        g = p.gemm
        return (g.m % P.block_m != 0, g.n % P.block_n != 0, g.k % P.block_k != 0)
    pairs = [(SAMPLE_PROBLEMS[name], P) for name, params in SAMPLED.items() for P in params]
    flags = [partial(p, P) for p, P in pairs]
    assert all(any(f[i] for f in flags) for i in range(3))
    assert any(f[0] and p.groups > 1 for f, (p, _) in zip(flags, pairs))
    assert {P.stages for _, P in pairs} == {1, 2, 3, 4}


def test_prologue_operands_and_a_missing_wait():
    """Either operand gathered (a fused prologue computes it: tm.load, staged through
    registers) is as right as copied; without its waits the pipeline reads tiles before
    they land."""
    problem = SAMPLE_PROBLEMS["groups3_stride2"]
    params = MatmulSimtParams((1, 1), (1, 1), (4, 8), (4, 4), 16, 3)
    assert max(conv_errors(problem, [params], gathered=(0,)) + conv_errors(problem, [params], gathered=(1,))) < RTOL
    assert conv_errors(problem, [params], wait=False)[0] > 0.5


@pytest.mark.slow
def test_whole_space_on_one_shape():
    """Padding, a stride, groups and partial tiles in M, N and K: every candidate."""
    problem = SAMPLE_PROBLEMS["groups3_stride2"]
    candidates = SPACE.candidates(problem.gemm)
    errors = conv_errors(problem, candidates)
    assert not [P for P, e in zip(candidates, errors) if e >= RTOL]


def test_shapes_and_implied_gemm():
    p = Conv2dProblem((2, 32, 15, 16), (64, 8, 3, 5), strides=(2, 1), pads=(1, 2, 0, 2),
                      dilations=(1, 2), groups=4, bias=True)
    assert p.out_shape == (2, 64, 7, 12)  # (15 + 1 - 3) // 2 + 1, (16 + 4 - 9) // 1 + 1
    assert (p.group_in, p.group_out) == (8, 16)
    gemm = p.gemm
    assert (gemm.batch, gemm.m, gemm.n, gemm.k) == (4, 16, 2 * 7 * 12, 8 * 3 * 5)
    assert p.arg_shapes == [(2, 32, 15, 16), (64, 8, 3, 5), (64,), (2, 64, 7, 12)]


def test_default_params():
    assert isinstance(conv2d_default_params(CASES["depthwise"]), Conv2dDirectParams)
    assert isinstance(conv2d_default_params(CASES["groups2_small"]), Conv2dDirectParams)
    regular = CASES["groups2"]
    default = conv2d_default_params(regular)
    assert default in MATMUL_SIMT_SPACE.candidates(regular.gemm)
    assert conv2d_default_params(regular, "sm_75") == MatmulSimtParams.legacy_default(regular.gemm)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"input_shape": (1, 3, 8)}, "input_shape .* must have 4 values"),
    ({"weight_shape": (4, 2, 3, 3)}, "has 2 input channels per group, expected C_in / groups = 3"),
    ({"groups": 2}, "groups 2 must divide the input channels \\(3\\)"),
    ({"strides": (0, 1)}, "strides \\(0, 1\\) and dilations .* must be >= 1"),
    ({"pads": (-1, 0, 0, 0)}, "pads \\(-1, 0, 0, 0\\) >= 0"),
    ({"dilations": (5, 1)}, "kernel's height \\(11\\) exceeds the padded input's \\(8\\)"),
])
def test_impossible_problems_are_one_line_errors(kwargs, message):
    args = {"input_shape": (1, 3, 8, 8), "weight_shape": (4, 3, 3, 3), **kwargs}
    with pytest.raises(ValueError, match=message) as info:
        Conv2dProblem(**args)
    assert str(info.value).startswith("conv2d: ") and "\n" not in str(info.value)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("problem", [
    Conv2dProblem((1, 64, 56, 56), (64, 64, 3, 3), pads=(1, 1, 1, 1), bias=True),
    Conv2dProblem((8, 3, 224, 224), (64, 3, 7, 7), strides=(2, 2), pads=(3, 3, 3, 3)),
    Conv2dProblem((1, 256, 14, 14), (512, 256, 1, 1), strides=(2, 2)),
    Conv2dProblem((1, 256, 14, 14), (256, 256, 3, 3), pads=(1, 1, 1, 1)),
    Conv2dProblem((1, 32, 112, 112), (32, 1, 3, 3), pads=(1, 1, 1, 1), groups=32, bias=True),
], ids=["resnet_3x3", "stem_7x7", "downsample_1x1", "resnet50_stage3_3x3", "depthwise"])
def test_default_candidate_does_not_spill(problem, arch):
    module = ModuleOp([conv2d_kernel("conv", problem, arch=arch)])
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    dynamic = {k.signature.name: k.dynamic_shared_bytes for k in program.kernels}
    stats = with_dynamic_shared(ptxas_stats(program.source, arch), dynamic)["conv"]
    assert stats.spill_bytes == 0 and stats.local_bytes == 0
    assert 0 < stats.registers <= 255
    params = conv2d_default_params(problem, arch)
    if isinstance(params, MatmulSimtParams):
        assert stats.shared_bytes == params.shared_bytes(problem.gemm)


DENSE_1X1 = {  # 1x1, stride 1, no padding, H * W a multiple of 4: B is the input itself
    "batch2_bias": Conv2dProblem((2, 16, 6, 6), (24, 16, 1, 1), bias=True),
    "groups2_partial": Conv2dProblem((1, 32, 4, 5), (40, 16, 1, 1), groups=2, bias=True),
}


@pytest.mark.parametrize("name", DENSE_1X1)
def test_dense_1x1_convolution_copies_b_in_16_byte_chunks(name):
    """A 1x1 convolution's B is copied 16 bytes at a time (``cp16``, no im2col unravelling
    per element) in the pipeline; chunks never cross an image (batch 2) or a group, and
    partial tiles (N = 72 or 20 on any tile) stay correct: sampled candidates on emu."""
    problem = DENSE_1X1[name]
    assert problem.dense_b
    candidates = SPACE.candidates(problem.gemm)
    params = random.Random(0).sample(candidates, 10)
    params += [next(P for P in candidates if P.stages == stages) for stages in (1, 2, 3, 4)
               if stages not in {P.stages for P in params}]
    errors = conv_errors(problem, params)
    assert max(errors) < RTOL, [P for P, e in zip(params, errors) if e >= RTOL]
    pipelined = next(P for P in params if P.stages > 1)
    kinds = conv2d_implicit_gemm_kernel("c", problem, pipelined).attributes["tm.params"].data
    assert (kinds["copy_a"].data, kinds["copy_b"].data) == ("cp4", "cp16")


def test_other_convolutions_keep_the_im2col_copies():
    """7 x 7 pixels (49 is no multiple of 4), a stride or a pad: B stays element by element."""
    for problem in (CASES["1x1"], Conv2dProblem((1, 8, 8, 8), (8, 8, 1, 1), strides=(2, 2)),
                    Conv2dProblem((1, 8, 8, 8), (8, 8, 1, 1), pads=(1, 1, 1, 1)), CASES["3x3_pad1"]):
        assert not problem.dense_b
        params = MatmulSimtParams.default_for(problem.gemm, "sm_90")
        assert conv2d_implicit_gemm_kernel("c", problem, params).attributes["tm.params"].data["copy_b"].data == "cp4"


@pytest.mark.slow
def test_whole_space_on_a_dense_1x1_shape():
    """Every candidate of a 1x1 convolution whose B travels in 16-byte chunks (two images,
    two groups, partial tiles)."""
    problem = Conv2dProblem((2, 32, 4, 5), (40, 16, 1, 1), groups=2, bias=True)
    assert problem.dense_b
    candidates = SPACE.candidates(problem.gemm)
    errors = conv_errors(problem, candidates)
    assert not [P for P, e in zip(candidates, errors) if e >= RTOL]
