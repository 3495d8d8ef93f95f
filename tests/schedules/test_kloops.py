"""The k-loops the latency model reads from GEMM-like kernels' headers (tmlir.schedules.kloops)."""

from __future__ import annotations

import dataclasses
import math

from tmlir.schedules.conv2d import Conv2dProblem, conv2d_implicit_gemm_kernel
from tmlir.schedules.kloops import GATHER_INSTRUCTIONS, STEP_OVERHEAD, kloop, register_estimate
from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams, matmul_simt_kernel


def _header(kernel) -> dict[str, int | str]:  # type: ignore[no-untyped-def]
    return {k: getattr(v, "value", v).data for k, v in kernel.attributes["tm.params"].data.items()}


def test_simt_matmul_k_loop_from_its_header() -> None:
    problem = MatmulProblem.plain(100, 200, 1000)
    params = MatmulSimtParams((2, 2), (1, 2), (8, 4), (4, 4), 8)  # 64 x 64 x 8, 4 x 8 per thread
    loop = kloop("matmul_simt", _header(matmul_simt_kernel("mm", problem, params)))
    assert loop is not None
    assert loop.steps == math.ceil(1000 / 8) and loop.depth == 1
    loads = (64 + 64) * 8 // 128
    assert loop.warp_instructions == 4 * 8 * 8 + 8 * (4 + 8) // 4 + 2 * loads + STEP_OVERHEAD
    assert loop.tile_bytes == (64 + 64) * 8 * 4
    assert register_estimate("matmul_simt", _header(matmul_simt_kernel("mm", problem, params))) \
        == params.register_estimate()


def test_simt_split_register_estimate_matches_the_template() -> None:
    """The latency model's estimate (capped at 255) is the template's, which the space caps:
    split-K adds one split's partial sums in flight (the last block sums the splits one at
    a time into its accumulators), in the pipeline as on the register path."""
    problem = MatmulProblem.plain(128, 768, 3072)
    for params in (MatmulSimtParams((2, 4), (1, 1), (4, 8), (4, 4), 64, 2, 4),
                   MatmulSimtParams((2, 2), (1, 2), (8, 4), (4, 4), 32, 3, 4),
                   MatmulSimtParams((2, 2), (1, 2), (8, 4), (4, 4), 16, 1, 3)):
        header = _header(matmul_simt_kernel("mm", problem, params))
        assert header["split_k"] == params.split_k
        assert register_estimate("matmul_simt", header) == params.register_estimate()
        one = dataclasses.replace(params, split_k=1)
        assert params.register_estimate() - one.register_estimate() == params.thread_m * params.thread_n


def test_gemv_loads_only_the_rows_it_has() -> None:
    problem = MatmulProblem.plain(1, 4096, 4096)
    params = MatmulSimtParams((1, 1), (1, 1), (4, 8), (4, 4), 8)  # 16 x 32 tiles, one row used
    loop = kloop("matmul_simt", _header(matmul_simt_kernel("mm", problem, params)))
    assert loop is not None and loop.tile_bytes == (1 + 32) * 8 * 4


def test_implicit_gemm_convolution_pays_for_its_gather() -> None:
    problem = Conv2dProblem((1, 64, 14, 14), (64, 64, 3, 3), pads=(1, 1, 1, 1))
    params = MatmulSimtParams((1, 1), (1, 1), (2, 16), (4, 4), 8)  # 8 x 64 tiles
    header = _header(conv2d_implicit_gemm_kernel("cv", problem, params))
    conv, gemm = kloop("conv2d_implicit_gemm", header), kloop("matmul_simt", header)
    assert conv is not None and gemm is not None
    assert conv.steps == math.ceil(64 * 9 / 8)
    assert conv.warp_instructions - gemm.warp_instructions == GATHER_INSTRUCTIONS * 64 * 8 // 32


def test_split_k_divides_the_steps_and_unknown_headers_have_no_loop() -> None:
    header = {"M": 128, "N": 768, "K": 3072, "block_m": 64, "block_n": 64, "block_k": 16, "threads": 128,
              "thread_m": 4, "thread_n": 8}
    one, four = kloop("matmul_simt", header), kloop("matmul_simt", {**header, "split_k": 4})
    assert one is not None and four is not None and (one.steps, four.steps) == (192, 48)
    assert (one.tail_round_trips, four.tail_round_trips) == (0, 2)
    assert kloop("reduce", header) is None and register_estimate("reduce", header) is None
    assert kloop("matmul_simt", {"M": 1}) is None  # an older kernel's header: no k-loop known


def test_tensor_core_k_loop_keeps_stages_minus_one_steps_in_flight() -> None:
    from tmlir.dtypes import FLOAT16
    from tmlir.schedules.matmul_tc import matmul_tc_kernel
    from tmlir.schedules.tc_gemm import MatmulTcParams

    problem = MatmulProblem.plain(256, 256, 512)
    params = MatmulTcParams(128, 128, 32, (2, 2), 3)
    header = _header(matmul_tc_kernel("tc", problem, params, FLOAT16.ir))
    loop = kloop("matmul_tc", header)
    assert loop is not None
    assert (loop.steps, loop.depth, loop.tensor) == (512 // 32, 2, "f16")
    assert loop.tensor_flops == 2 * 128 * 128 * 32
    assert loop.tile_bytes == (128 + 128) * 32 * 2
    assert register_estimate("matmul_tc", header) == params.register_estimate()


def test_split_k_register_estimate_counts_one_split_in_flight() -> None:
    header = {"M": 128, "N": 768, "K": 3072, "block_m": 64, "block_n": 64, "block_k": 32, "threads": 128,
              "warps": "2x2", "stages": 3, "dtype": "f16"}
    one = register_estimate("matmul_tc", header)
    four = register_estimate("matmul_tc", {**header, "split_k": 4})
    assert one is not None and four is not None
    assert four - one == 4 * 2 * 4  # one split's partials (a 64x64 / 4 warps tile) in flight
    assert register_estimate("matmul_tc", {**header, "split_k": 8}) == four  # whatever the splits
    assert register_estimate("matmul_tc", {**header, "warps": "1x1", "block_n": 256}) == 255  # capped


def test_small_m_k_loop_and_registers_from_its_header() -> None:
    from tmlir.schedules.matmul_gemv import MatmulGemvParams, matmul_gemv_kernel

    problem = MatmulProblem((1, 4096), (4096, 4096), (1, 4096), transpose_rhs=True)  # nk
    params = MatmulGemvParams.default_for(problem)
    header = _header(matmul_gemv_kernel("gemv", problem, params))
    loop = kloop("matmul_gemv", header)
    assert loop is not None and loop.steps == header["k_steps"] and loop.depth == 1
    assert loop.tile_bytes == params.threads * params.unroll * params.vector * 4
    assert register_estimate("matmul_gemv", header) == params.register_estimate(problem)
    kn = MatmulProblem.plain(3, 4096, 4096)
    kn_params = MatmulGemvParams.default_for(kn)
    kn_header = _header(matmul_gemv_kernel("gemv", kn, kn_params))
    assert register_estimate("matmul_gemv", kn_header) == kn_params.register_estimate(kn)


def test_simt_attention_key_loop_from_its_header() -> None:
    """The SIMT attention's key loop: one step per key tile (causal: the tiles a block walks,
    averaged), the copies, the scores' D loop, the softmax and ``P V`` per step, one step in
    flight; its registers from the header (checked against ptxas below)."""
    from tmlir.schedules.attention import AttentionParams, AttentionProblem, attention_kernel
    from tmlir.schedules.kloops import (
        ATTENTION_BIAS_INSTRUCTIONS,
        ATTENTION_COPY_INSTRUCTIONS,
        ATTENTION_ROW_INSTRUCTIONS,
        ATTENTION_SCORE_INSTRUCTIONS,
    )

    shape = (1, 12, 2048, 64)
    problem = AttentionProblem(shape, shape, shape, (1, 1, 1, 2048), 0.125)
    params = AttentionParams(64, 32, 8, 4)  # 4 rows x 4 keys, 8 columns of Dv per thread
    header = _header(attention_kernel("attn", problem, params))
    loop = kloop("attention", header)
    assert loop is not None and (loop.steps, loop.depth, loop.tensor_flops) == (2048 // 32, 1, 0)
    copies = (64 * 32 + 32 * 64) // 128
    assert loop.warp_instructions == (64 * (4 + 4 + 16) + 32 * (4 + 8 + 32) + ATTENTION_COPY_INSTRUCTIONS * copies
                                      + 16 * (ATTENTION_SCORE_INSTRUCTIONS + ATTENTION_BIAS_INSTRUCTIONS)
                                      + 4 * (ATTENTION_ROW_INSTRUCTIONS + 8) + STEP_OVERHEAD)
    assert loop.tile_bytes == 32 * (64 + 64) * 4 + 64 * 32 * 4  # the key, value and bias tiles
    causal = _header(attention_kernel("attn", dataclasses.replace(problem, causal=True), params))
    causal_loop = kloop("attention", causal)
    assert causal_loop is not None
    assert causal_loop.steps == math.ceil(params.causal_tiles(dataclasses.replace(problem, causal=True)) / 32)
    assert causal_loop.steps < loop.steps / 2 + 2
    assert register_estimate("attention", header) == 4 * 8 + 4 * 4 + 8 * (4 + 4) + 32


def test_attention_register_estimates_follow_ptxas() -> None:
    """Both attention templates' register estimates against ptxas (sm_90) on BERT's and a
    long sequence's heads: within 24 of what ptxas uses, and never below the pressure at
    which it spills."""
    import pytest
    from xdsl.dialects.builtin import Float16Type, ModuleOp

    from tmlir.backends.cuda_c import emit_cuda
    from tmlir.backends.ptx import kernel_stats, nvrtc_version
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context
    from tmlir.schedules.attention import AttentionProblem, attention_kernel
    from tmlir.schedules.attention_tc import attention_tc_kernel

    if nvrtc_version() is None:
        pytest.skip("NVRTC (cuda.bindings) not available")
    bert = AttentionProblem((1, 12, 128, 64), (1, 12, 128, 64), (1, 12, 128, 64), (1, 1, 128, 128), 0.125)
    long = AttentionProblem((1, 12, 2048, 64), (1, 12, 64, 2048), (1, 12, 2048, 64), None, 0.125, k_transposed=True)
    kernels = [attention_kernel("simt_bert", bert), attention_kernel("simt_long", long),
               attention_tc_kernel("tc_bert", bert, Float16Type(), gathered=(0, 1, 2)),
               attention_tc_kernel("tc_long", long, Float16Type())]
    headers = {k.sym_name.data: (str(k.attributes["tm.template"].data), _header(k)) for k in kernels}
    module = ModuleOp(kernels)
    LowerToCuda().apply(make_context(), module)
    for name, stats in kernel_stats(emit_cuda(module).source, "sm_90").items():
        template, header = headers[name]
        estimate = register_estimate(template, header)
        assert estimate is not None and abs(estimate - stats.registers) <= 24, (name, estimate, stats)


def test_attention_tc_key_loop_counts_mmas_and_copies() -> None:
    """``attention_tc``'s key loop: per step and warp the mmas and ldmatrix of Q Kᵀ and
    P V, the softmax on the lane's block_k / 2 scores, the copies; its tensor FLOPs; stages -
    1 steps in flight when k and v are copied, one when a prologue computes them."""
    from xdsl.dialects.builtin import Float16Type

    from tmlir.schedules.attention import AttentionProblem
    from tmlir.schedules.attention_tc import AttentionTcParams, attention_tc_kernel
    from tmlir.schedules.kloops import (
        ATTENTION_TC_GATHER_INSTRUCTIONS,
        ATTENTION_TC_ROW_INSTRUCTIONS,
        ATTENTION_TC_SCORE_INSTRUCTIONS,
        CP_ASYNC_INSTRUCTIONS,
        TC_STEP_OVERHEAD,
    )

    shape = (1, 12, 1024, 64)
    problem = AttentionProblem(shape, shape, shape, None, 0.125)
    params = AttentionTcParams(64, 64, 3)
    header = _header(attention_tc_kernel("attn", problem, Float16Type(), params))
    loop = kloop("attention_tc", header)
    assert loop is not None
    assert (loop.steps, loop.depth, loop.tensor) == (1024 // 64, 2, "f16")
    assert loop.tensor_flops == 2 * 64 * 64 * (64 + 64)
    mmas = 8 * 4 + 8 * 4  # Q Kᵀ: 8 n-tiles x 4 k-slices of D; P V: 8 n-tiles of Dv x 4 of the keys
    chunks = 64 * (64 + 64) * 2 // 16 // 128
    assert loop.warp_instructions == (2 * mmas + 32 * ATTENTION_TC_SCORE_INSTRUCTIONS
                                      + 2 * ATTENTION_TC_ROW_INSTRUCTIONS + 32
                                      + CP_ASYNC_INSTRUCTIONS * chunks + TC_STEP_OVERHEAD)
    assert loop.tile_bytes == 64 * (64 + 64) * 2
    gathered = _header(attention_tc_kernel("attn", problem, Float16Type(), AttentionTcParams(64, 32, 2),
                                           gathered=(1, 2)))
    gathered_loop = kloop("attention_tc", gathered)
    assert gathered_loop is not None and gathered_loop.depth == 1
    assert (gathered["copy_q"], gathered["copy_k"], gathered["copy_v"]) == ("cp16", "gather", "gather")
    elements = 32 * (64 + 64) // 128
    assert gathered_loop.warp_instructions == (2 * (4 * 4 + 8 * 2) + 16 * ATTENTION_TC_SCORE_INSTRUCTIONS
                                               + 2 * ATTENTION_TC_ROW_INSTRUCTIONS + 32
                                               + ATTENTION_TC_GATHER_INSTRUCTIONS * elements + TC_STEP_OVERHEAD)
