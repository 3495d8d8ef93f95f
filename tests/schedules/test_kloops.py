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
