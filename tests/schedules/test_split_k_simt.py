"""Split-K on the SIMT GEMM engine (``simt_gemm.py`` with ``tmlir/schedules/split_k.py``):
the fp32 matmul and the implicit-GEMM convolution with S = 2, 3, 4 blocks per tile, on the
register path (``stages = 1``) and the cp.async pipeline (2-4 stages), with uneven k ranges,
partial tiles, bias, alpha/beta, batches, transposed and gathered operands, dynamic shared
memory and f64 accumulators, against float64 on emu; every result bit for bit the same with
1 and 8 emu workers (blocks in order, or any order), counters back at zero after each
launch; a fused prologue and epilogue through the whole pipeline (pinned ``split_k`` on a
matmul and a convolution, each kernel launched twice per run, the program run twice, the
emu sanitizer clean); NVRTC for sm_80 and sm_90 without spills for BERT FFN candidates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gemm_runs import conv_errors, launch_twice, matmul_errors, matmul_inputs, program_of, scratch_buffers
from models import reference_conv
from xdsl.dialects.builtin import Float64Type

from tmlir.backends.ptx import kernel_stats, nvrtc_version, with_dynamic_shared
from tmlir.gpu_limits import MAX_STATIC_SHARED_BYTES
from tmlir.runtime.ir_program import ProgramRunner, compile_ir, parse_ir
from tmlir.schedules.conv2d import Conv2dProblem, conv2d_implicit_gemm_kernel
from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams, matmul_simt_kernel, matmul_simt_space
from tmlir.tuning.space import TunableKernel

needs_nvrtc = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC (cuda.bindings) not available")
#: f32 sums in another order than float64's: relative to the output's largest magnitude.
RTOL = 1e-5


def run_matmul(problem: MatmulProblem, params: MatmulSimtParams, seed: int = 0, **options) -> tuple[np.ndarray, np.ndarray]:
    """(C from the emu, launched twice, the float64 reference) for random unit-scale inputs
    (`options`: `gathered` of `matmul_simt_kernel`)."""
    kernel = matmul_simt_kernel("mm", problem, params, **options)
    program = program_of([kernel])
    inputs, want = matmul_inputs(problem, seed)
    c = launch_twice(program, "mm", params.blocks(problem), params.threads, inputs, scratch_buffers(params, problem),
                     problem.out_shape, program.kernels[0].dynamic_shared_bytes)
    return c, want


def error(c: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(c - want).max() / np.abs(want).max())


def simt(warps: tuple[int, int], outer: tuple[int, int], lanes: tuple[int, int], block_k: int, stages: int,
         split_k: int) -> MatmulSimtParams:
    """Parameters with 4 x 4 thread_inner."""
    return MatmulSimtParams(warps, outer, lanes, (4, 4), block_k, stages, split_k)


MATMULS = {  # the k-tiles split unevenly unless noted
    # register path: 25 k-tiles of 8, 12 + 13; partial tiles along M and N; a row bias
    "reg-S2-partial-bias": (MatmulProblem((70, 200), (200, 50), (70, 50), (50,)),
                            simt((1, 2), (1, 1), (4, 8), 8, 1, 2), ()),
    # register path: 13 k-tiles of 16, 4 + 4 + 5; batch 2 with B broadcast and stored N x K,
    # alpha, beta, a column bias
    "reg-S3-batch-transB-alpha-beta": (MatmulProblem((2, 50, 208), (1, 44, 208), (2, 50, 44), (50, 1),
                                                     transpose_rhs=True, alpha=0.5, beta=2.0),
                                       simt((2, 1), (1, 1), (4, 8), 16, 1, 3), ()),
    # 4 stages: 9 k-tiles of 16, 2 + 2 + 2 + 3, the prologue's third tile only in the last split
    "cp-S4-4stages": (MatmulProblem((40, 144), (144, 72), (40, 72), (40, 72)),
                      simt((2, 2), (1, 1), (8, 4), 16, 4, 4), ()),
    # 2 stages of 64, A stored K x M (16-byte copies of A and B): 8 k-tiles, 4 + 4 (even)
    "cp-S2-even-transA-cp16": (MatmulProblem((512, 64), (512, 96), (64, 96), transpose_lhs=True),
                               simt((2, 2), (1, 2), (8, 4), 64, 2, 2), ()),
    # 3 stages of 32, A gathered (a fused prologue's operand): 10 k-tiles, 3 + 3 + 4
    "cp-S3-gather-a": (MatmulProblem((33, 300), (300, 64), (33, 64), (64,)),
                       simt((2, 2), (1, 1), (4, 8), 32, 3, 3), (0,)),
    # 3 stages of 32 past 48 KiB (dynamic shared memory, the arrival flag in it): 9 k-tiles, 3 each
    "cp-S3-dynamic-shared": (MatmulProblem.plain(150, 136, 288), simt((2, 4), (2, 2), (8, 4), 32, 3, 3), ()),
}


@pytest.mark.parametrize(("problem", "params", "gathered"), MATMULS.values(), ids=MATMULS.keys())
def test_split_matmuls_match_float64_bit_for_bit_twice(problem: MatmulProblem, params: MatmulSimtParams,
                                                      gathered: tuple[int, ...]) -> None:
    c, want = run_matmul(problem, params, seed=1, gathered=gathered)
    assert error(c, want) < RTOL


def test_the_cases_cover_both_paths_and_the_pipeline_depths() -> None:
    cases = list(MATMULS.values())
    assert {P.stages for _, P, _ in cases} == {1, 2, 3, 4} and {P.split_k for _, P, _ in cases} == {2, 3, 4}
    assert any(P.split(p).uneven for p, P, _ in cases) and any(not P.split(p).uneven for p, P, _ in cases)
    problem, params, _ = MATMULS["cp-S3-dynamic-shared"]
    assert params.shared_bytes(problem) > MAX_STATIC_SHARED_BYTES
    kernel = program_of([matmul_simt_kernel("mm", problem, params)]).kernels[0]
    assert kernel.dynamic_shared_bytes == params.shared_bytes(problem)  # the tiles and the flag


@pytest.mark.parametrize("stages", [1, 3], ids=["register-path", "pipeline"])
def test_the_splits_change_only_the_rounding(stages: int) -> None:
    problem = MatmulProblem.plain(70, 50, 400)
    block_k = 8 if stages == 1 else 32
    one, want = run_matmul(problem, simt((1, 2), (1, 1), (4, 8), block_k, stages, 1))
    for splits in (2, 3, 4):
        c, _ = run_matmul(problem, simt((1, 2), (1, 1), (4, 8), block_k, stages, splits))
        assert error(c, want) < RTOL
        assert 0 < np.abs(c - one).max() < 1e-5 * np.abs(want).max()  # another order of the same sums


@pytest.mark.parametrize("stages", [1, 2], ids=["register-path", "pipeline"])
def test_f64_split_accumulates_in_double(stages: int) -> None:
    """An f64 matmul's workspace is f64 (``tm.load_cg`` reads doubles): exact in double."""
    problem = MatmulProblem.plain(37, 29, 450)
    params = simt((1, 2), (1, 1), (8, 4), 16, stages, 3)
    kernel = matmul_simt_kernel("mm", problem, params, Float64Type())
    assert [str(a.type) for a in kernel.scratch_args] == ["memref<3x2x16x64xf64>", "memref<2xi32>"]
    program = program_of([kernel])
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((37, 450)), rng.standard_normal((450, 29))
    c = launch_twice(program, "mm", params.blocks(problem), params.threads, [a, b],
                     scratch_buffers(params, problem, np.float64), (37, 29), dtype=np.float64)
    np.testing.assert_allclose(c, a @ b, rtol=1e-12, atol=1e-12)


CONVS = {
    # register path: K = 4 * 9 = 36, 5 k-tiles of 8, 2 + 3; groups, a stride, padding, bias
    "reg-S2-groups-stride-pad": (Conv2dProblem((2, 8, 9, 11), (16, 4, 3, 3), (2, 1), (1, 1, 1, 0), (1, 1), 2, True),
                                 simt((1, 1), (1, 1), (4, 8), 8, 1, 2), ()),
    # pipeline: K = 16 * 9 = 144, 9 k-tiles of 16, 2 + 2 + 2 + 3; padding, bias
    "cp-S4-3x3-pad-bias": (Conv2dProblem((2, 16, 9, 10), (24, 16, 3, 3), pads=(1, 1, 1, 1), bias=True),
                           simt((2, 1), (1, 1), (4, 8), 16, 2, 4), ()),
    # pipeline, the input gathered (a prologue's): K = 3 * 49 = 147, 5 k-tiles of 32, 1 + 2 + 2
    "cp-S3-stem-gathered": (Conv2dProblem((1, 3, 20, 18), (16, 3, 7, 7), strides=(2, 2), pads=(3, 3, 3, 3),
                                          bias=True), simt((1, 2), (1, 1), (4, 8), 32, 3, 3), (0,)),
}


@pytest.mark.parametrize(("problem", "params", "gathered"), CONVS.values(), ids=CONVS.keys())
def test_split_convolutions_match_float64_bit_for_bit_twice(problem: Conv2dProblem, params: MatmulSimtParams,
                                                           gathered: tuple[int, ...]) -> None:
    program = program_of([conv2d_implicit_gemm_kernel("conv", problem, params, gathered=gathered)])
    rng = np.random.default_rng(2)
    x = rng.standard_normal(problem.input_shape).astype(np.float32)
    w = rng.standard_normal(problem.weight_shape).astype(np.float32)
    bias = rng.standard_normal(problem.bias_shape).astype(np.float32)
    y = launch_twice(program, "conv", params.blocks(problem.gemm), params.threads, [x, w, bias],
                     scratch_buffers(params, problem.gemm), problem.out_shape, program.kernels[0].dynamic_shared_bytes)
    want = reference_conv(problem, x, w, bias)
    assert error(y, want) < RTOL


SPLIT_SPACES = {  # long K, few tiles: every split the sm_90 space has for them
    "matmul-partial-bias": MatmulProblem((100, 1000), (1000, 72), (100, 72), (72,)),
    "batched-broadcast": MatmulProblem((2, 60, 600), (1, 600, 40), (2, 60, 40), (40,)),
    "conv-3x3-pad": Conv2dProblem((1, 96, 6, 6), (32, 96, 3, 3), pads=(1, 1, 1, 1), bias=True),
}


@pytest.mark.slow
@pytest.mark.parametrize("problem", SPLIT_SPACES.values(), ids=SPLIT_SPACES.keys())
def test_every_split_candidate_of_the_space(problem: MatmulProblem | Conv2dProblem) -> None:
    """Every candidate with split_k > 1 (216, 84 and 108 of them) within 1e-5 of float64,
    counters back at 0."""
    gemm = problem.gemm if isinstance(problem, Conv2dProblem) else problem
    candidates = [P for P in matmul_simt_space("sm_90").candidates(gemm) if P.split_k > 1]
    assert {P.split_k for P in candidates} >= {2, 3, 4}
    errors = conv_errors(problem, candidates) if isinstance(problem, Conv2dProblem) else \
        matmul_errors(problem, candidates)
    assert not [P for P, e in zip(candidates, errors) if e >= RTOL]


# ---- through the pipeline: pinned split_k, a fused prologue and epilogue --------------------

#: 64 x 32 tiles, 3 stages of 32 (the deepest k-steps split-K takes), 3 splits of 13 k-tiles: 4 + 4 + 5.
MATMUL_PIN = ("{schedule = {block_warps = array<i64: 2, 2>, warp_outer = array<i64: 1, 1>, lanes = array<i64: 8, 4>, "
              "block_k = 32, stages = 3, split_k = 3}}")
#: 16 x 64 tiles, 3 stages of 32, 2 splits of the 9 k-tiles of K = 32 * 3 * 3: 4 + 5.
CONV_PIN = ("{block_warps = array<i64: 1, 2>, warp_outer = array<i64: 1, 1>, lanes = array<i64: 4, 8>, "
            "block_k = 32, stages = 3, split_k = 2}")
FUSED = f"""
func.func @main(%x1: tensor<96x416xf32>, %x2: tensor<96x416xf32>, %w: tensor<416x80xf32>, %b: tensor<80xf32>,
                %r: tensor<96x80xf32>, %i: tensor<1x32x12x12xf32>, %f: tensor<16x32x3x3xf32>, %fb: tensor<16xf32>)
    -> (tensor<96x80xf32>, tensor<96x80xf32>, tensor<1x16x12x12xf32>) {{
  %h1 = graph.relu %x1 : tensor<96x416xf32>
  %m1 = graph.matmul %h1, %w, %b {MATMUL_PIN} : (tensor<96x416xf32>, tensor<416x80xf32>, tensor<80xf32>) -> tensor<96x80xf32>
  %a1 = graph.relu %m1 : tensor<96x80xf32>
  %y1 = graph.add %a1, %r : (tensor<96x80xf32>, tensor<96x80xf32>) -> tensor<96x80xf32>
  %h2 = graph.relu %x2 : tensor<96x416xf32>
  %m2 = graph.matmul %h2, %w, %b {MATMUL_PIN} : (tensor<96x416xf32>, tensor<416x80xf32>, tensor<80xf32>) -> tensor<96x80xf32>
  %a2 = graph.relu %m2 : tensor<96x80xf32>
  %y2 = graph.add %a2, %r : (tensor<96x80xf32>, tensor<96x80xf32>) -> tensor<96x80xf32>
  %c = graph.conv %i, %f, %fb {{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
         dilations = array<i64: 1, 1>, group = 1 : i64, schedule = {CONV_PIN}}}
       : (tensor<1x32x12x12xf32>, tensor<16x32x3x3xf32>, tensor<16xf32>) -> tensor<1x16x12x12xf32>
  %y3 = graph.relu %c : tensor<1x16x12x12xf32>
  func.return %y1, %y2, %y3 : tensor<96x80xf32>, tensor<96x80xf32>, tensor<1x16x12x12xf32>
}}
"""


def test_pinned_split_kernels_take_scratch_of_their_own_per_launch() -> None:
    program, _ = compile_ir(parse_ir(FUSED))
    kernels = {k.template: k for k in program.kernels}
    matmul, conv = kernels["matmul_simt"], kernels["conv2d_implicit_gemm"]
    assert (matmul.params["split_k"], conv.params["split_k"]) == (3, 2)
    for kernel in (matmul, conv):
        assert [p.name for p in kernel.signature.params][-2:] == ["workspace", "counters"]
    launches = [launch for launch in program.launches if launch.kernel == matmul.signature.name]
    assert len(launches) == 2
    kinds = [[program.buffers[i].kind for i in launch.args[-2:]] for launch in launches]
    assert kinds == [["temp", "zeroed"]] * 2
    assert launches[0].args[-1] != launches[1].args[-1]  # counters of its own, per launch
    assert "prologue: relu; epilogue: relu, add" in program.source
    assert "epilogue: relu" in conv.source


@pytest.mark.parametrize("check", [False, True], ids=["emu", "emu-sanitizer"])
def test_fused_split_kernels_match_float64_run_after_run(check: bool) -> None:
    program, weights = compile_ir(parse_ir(FUSED))
    runner = ProgramRunner(program, weights, "emu", check=check)
    rng = np.random.default_rng(3)
    shapes = {"x1": (96, 416), "x2": (96, 416), "w": (416, 80), "b": (80,), "r": (96, 80),
              "i": (1, 32, 12, 12), "f": (16, 32, 3, 3), "fb": (16,)}
    feed = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    first = runner.run(feed)
    again = runner.run(feed)
    w = feed["w"].astype(np.float64)
    for name, x in (("y1", feed["x1"]), ("y2", feed["x2"])):
        want = np.maximum(np.maximum(x.astype(np.float64), 0) @ w + feed["b"], 0) + feed["r"]
        assert error(first[name], want) < RTOL
    problem = Conv2dProblem((1, 32, 12, 12), (16, 32, 3, 3), pads=(1, 1, 1, 1), bias=True)
    want = np.maximum(reference_conv(problem, feed["i"], feed["f"], feed["fb"]), 0)
    assert error(first["y3"], want) < RTOL
    for name in ("y1", "y2", "y3"):
        assert first[name].tobytes() == again[name].tobytes()


# ---- PTX: BERT's FFN projections ------------------------------------------------------------

BERT_FFN_DOWN = MatmulProblem((128, 3072), (3072, 768), (128, 768), (768,))
COMPILED = {  # the latency model's favourites for the 128 x 768 x 3072 projection, and a register-path split
    "32x128x64-s2-S4": simt((2, 4), (1, 1), (4, 8), 64, 2, 4),
    "64x64x32-s3-S4": simt((2, 4), (1, 1), (8, 4), 32, 3, 4),
    "64x64x32-s3-S6": simt((2, 4), (1, 1), (8, 4), 32, 3, 6),
    "64x64x32-s3-S4-4x8": simt((2, 2), (1, 2), (8, 4), 32, 3, 4),
    "64x64x16-reg-S3": simt((2, 2), (1, 2), (8, 4), 16, 1, 3),
}


@needs_nvrtc
@pytest.mark.parametrize("params", COMPILED.values(), ids=COMPILED.keys())
def test_split_candidates_compile_for_sm80_and_sm90_without_spills(params: MatmulSimtParams) -> None:
    if params.stages > 1:
        assert matmul_simt_space("sm_90").first_violation(params, BERT_FFN_DOWN) is None
    program = program_of([matmul_simt_kernel("mm", BERT_FFN_DOWN, params)])
    for arch in ("sm_80", "sm_90"):
        stats = with_dynamic_shared(kernel_stats(program.source, arch, compiler="nvrtc"),
                                    {"mm": program.kernels[0].dynamic_shared_bytes})["mm"]
        assert stats.spill_bytes == 0 and stats.local_bytes == 0, (arch, stats)
        assert stats.shared_bytes == params.shared_bytes(BERT_FFN_DOWN)
        assert stats.registers <= 255


def test_blocks_and_scratch_of_a_split() -> None:
    params = simt((2, 4), (1, 1), (4, 8), 64, 2, 4)  # 32 x 128 tiles: 4 x 6 = 24 of them
    assert (params.tile_count(BERT_FFN_DOWN), params.blocks(BERT_FFN_DOWN), params.k_tiles(BERT_FFN_DOWN)) \
        == (24, 96, 48)
    (_, workspace), (_, counters) = params.scratch(BERT_FFN_DOWN)
    assert workspace.get_shape() == (4, 24, 16, 256) and counters.get_shape() == (24,)
    assert params.register_estimate() - simt((2, 4), (1, 1), (4, 8), 64, 2, 1).register_estimate() == 16  # one split in flight
    assert math.prod(workspace.get_shape()) == 4 * 128 * 768  # S x the output
    with pytest.raises(ValueError, match="split_k must be >= 1"):
        simt((1, 1), (1, 1), (4, 8), 8, 1, 0)
    with pytest.raises(ValueError, match="split_k=8 is more than the 4 k-tiles"):
        simt((1, 1), (1, 1), (4, 8), 8, 1, 8).split(MatmulProblem.plain(16, 32, 32))


def test_the_tuner_gives_split_candidates_their_scratch() -> None:
    params = simt((2, 4), (1, 1), (4, 8), 64, 2, 4)
    matmul = TunableKernel("matmul_simt", BERT_FFN_DOWN)
    assert params in [c.params for c in matmul.candidates()]
    assert matmul.scratch(params) == [("workspace", (4, 24, 16, 256), np.dtype(np.float32)),
                                      ("counters", (24,), np.dtype(np.int32))]
    assert matmul.scratch(simt((2, 4), (1, 1), (4, 8), 64, 2, 1)) == []
    conv = TunableKernel("conv2d_implicit_gemm", CONVS["cp-S4-3x3-pad-bias"][0])
    assert [kind for kind, *_ in conv.scratch(CONVS["cp-S4-3x3-pad-bias"][1])] == ["workspace", "counters"]
