"""The tunable kernels of a model: one per signature, counted, built from the problems
the templates use."""

from __future__ import annotations

from tuning_models import conv_net

from tmlir.schedules.conv2d import Conv2dProblem
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.tuning import TunableKernel, model_kernels


def test_dedup_by_signature():
    kernels = model_kernels(conv_net())
    assert [(k.kernel.template, k.occurrences) for k in kernels] == [
        ("conv2d_implicit_gemm", 1), ("conv2d_implicit_gemm", 2), ("matmul_gemv", 1)]
    first, second, head = (k.kernel.problem for k in kernels)
    assert first == Conv2dProblem((1, 8, 8, 8), (16, 8, 3, 3), pads=(1, 1, 1, 1), bias=True)
    assert second == Conv2dProblem((1, 16, 8, 8), (16, 16, 3, 3), pads=(1, 1, 1, 1), bias=True)
    assert head == MatmulProblem((1, 16), (10, 16), (1, 10), (10,), transpose_rhs=True)
    assert len({k.kernel.signature for k in kernels}) == 3


def test_unfused_model_has_the_same_kernels():
    fused, unfused = model_kernels(conv_net()), model_kernels(conv_net(), fusion=False)
    assert [(k.kernel, k.occurrences) for k in fused] == [(k.kernel, k.occurrences) for k in unfused]


def test_signature_is_the_whole_problem():
    kernel = TunableKernel("conv2d_implicit_gemm", Conv2dProblem(
        (1, 64, 56, 56), (64, 64, 3, 3), pads=(1, 1, 1, 1)))
    assert kernel.signature == (
        "conv2d_implicit_gemm(input_shape=1x64x56x56, weight_shape=64x64x3x3, strides=1x1, "
        "pads=1x1x1x1, dilations=1x1, groups=1, bias=false; f32)")
    strided = TunableKernel("conv2d_implicit_gemm", Conv2dProblem(
        (1, 64, 56, 56), (64, 64, 3, 3), strides=(2, 2), pads=(1, 1, 1, 1)))
    assert strided.signature != kernel.signature and strided.gemm.n != kernel.gemm.n
    matmul = TunableKernel("matmul_simt", MatmulProblem.plain(4, 8, 16, batch=2))
    assert matmul.signature == (
        "matmul_simt(lhs_shape=2x4x16, rhs_shape=2x16x8, out_shape=2x4x8, bias_shape=none, "
        "transpose_lhs=false, transpose_rhs=false, alpha=1.0, beta=1.0; f32)")


def test_candidates_mark_the_default():
    kernel = model_kernels(conv_net())[1].kernel
    candidates = kernel.candidates()
    assert [c.default for c in candidates].count(True) == 1
    default = next(c for c in candidates if c.default)
    assert default.params == kernel.default_params() and kernel.is_valid(default.params)
    assert default.kernel_name == f"conv2d_c{default.index:03d}"
