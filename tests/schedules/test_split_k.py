"""Split-K on the tensor-core engine (``tmlir/schedules/split_k.py``): matmuls and
convolutions with S = 2, 3, 4 blocks per tile (uneven k ranges, partial tiles, bias,
alpha/beta, batches, a transposed B, TF32) against float64 on emu; every result bit for bit
the same from launch to launch whatever the order blocks arrive in, counters back at zero
after each launch; a fused prologue and epilogue through the whole pipeline, with one
kernel launched twice in a program and the program run twice; the emu sanitizer clean;
NVRTC for sm_80 and sm_90 without spills; the cost report's workspace traffic."""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from gemm_runs import launch_twice, program_of, scratch_buffers
from models import reference_conv
from xdsl.dialects import func
from xdsl.dialects.builtin import Attribute, BFloat16Type, Float16Type, Float32Type, FunctionType, ModuleOp
from xdsl.ir import Block, Region

from tmlir.backends.cost import cost_report
from tmlir.backends.ptx import kernel_stats, nvrtc_version
from tmlir.dialects import tm
from tmlir.ir.builder import IRBuilder
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.runtime.ir_program import ProgramRunner, compile_ir, parse_ir
from tmlir.schedules.conv2d import Conv2dProblem
from tmlir.schedules.conv2d_tc import conv2d_tc_kernel
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.matmul_tc import MATMUL_TC_SPACE, matmul_tc_kernel
from tmlir.schedules.split_k import SplitK
from tmlir.schedules.tc_gemm import MatmulTcParams, tc_element

needs_nvrtc = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC (cuda.bindings) not available")
HALF = {Float16Type(): np.float16, BFloat16Type(): ml_dtypes.bfloat16, Float32Type(): np.float32}


F16 = Float16Type()


def run_matmul(prob: MatmulProblem, params: MatmulTcParams, element: Attribute = F16,
               seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(C from the emu, the float64 reference) for random unit-scale inputs."""
    program = program_of([matmul_tc_kernel("mm_tc", prob, params, element)])
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(prob.lhs_shape).astype(HALF[element])
    b = rng.standard_normal(prob.rhs_shape).astype(HALF[element])
    bias = rng.standard_normal(prob.bias_shape).astype(np.float32) if prob.bias_shape else None
    c = launch_twice(program, "mm_tc", params.blocks(prob), params.threads,
                     [a, b, *([bias] if bias is not None else [])], scratch_buffers(params, prob), prob.out_shape)
    rhs = b.astype(np.float64)
    want = prob.alpha * (a.astype(np.float64) @ (rhs.swapaxes(-1, -2) if prob.transpose_rhs else rhs))
    return c, want + prob.beta * bias if bias is not None else want


def assert_close(c: np.ndarray, want: np.ndarray, k: int, element: Attribute = F16) -> None:
    """Exact half-precision products, f32 sums: rtol 1e-3, atol 1e-3 at the sqrt(K) scale
    (TF32 rounds the operands: 2e-3 of the output's scale)."""
    if isinstance(element, Float32Type):
        assert float(np.abs(c - want).max() / np.abs(want).max()) < 2e-3
    else:
        np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3 * math.sqrt(k))


MATMULS = {  # K's k-tiles split unevenly unless noted
    # 13 k-tiles: 6 + 7; partial tiles along M and N; bias
    "S2-partial-bias": (MatmulProblem((96, 200), (200, 80), (96, 80), (80,)),
                        MatmulTcParams(64, 64, 16, (2, 2), 3, 2), Float16Type()),
    # 13 k-tiles: 4 + 4 + 5; batch 2 with B broadcast and stored N x K, alpha, beta, a column bias
    "S3-batch-transB-alpha-beta": (MatmulProblem((2, 50, 208), (1, 44, 208), (2, 50, 44), (50, 1),
                                                 transpose_rhs=True, alpha=0.5, beta=2.0),
                                   MatmulTcParams(64, 64, 16, (2, 2), 2, 3), Float16Type()),
    # 9 k-tiles: 2 + 2 + 2 + 3 with 4 stages: the third prologue tile only for the last split
    "S4-4stages-bf16": (MatmulProblem((64, 144), (144, 72), (64, 72), (64, 72)),
                        MatmulTcParams(64, 64, 16, (2, 2), 4, 4), BFloat16Type()),
    # 8 k-tiles: 2 each (even); 128 x 64 tiles of 4 x 2 warps
    "S4-even-128x64": (MatmulProblem((128, 256), (256, 64), (128, 64)),
                       MatmulTcParams(128, 64, 32, (4, 2), 3, 4), Float16Type()),
    # TF32 (f32 operands), 10 k-tiles: 3 + 3 + 4
    "S3-tf32": (MatmulProblem((72, 160), (160, 48), (72, 48), (48,)),
                MatmulTcParams(64, 64, 16, (2, 2), 3, 3), Float32Type()),
}


@pytest.mark.parametrize(("prob", "params", "element"), MATMULS.values(), ids=MATMULS.keys())
def test_split_matmuls_match_float64_bit_for_bit_twice(prob: MatmulProblem, params: MatmulTcParams,
                                                      element: Attribute) -> None:
    c, want = run_matmul(prob, params, element, seed=1)
    assert_close(c, want, prob.k, element)


def test_the_splits_change_only_the_rounding() -> None:
    prob = MATMULS["S2-partial-bias"][0]
    one, want = run_matmul(prob, MatmulTcParams(64, 64, 16, (2, 2), 3, 1))
    for splits in (2, 3, 4):
        c, _ = run_matmul(prob, MatmulTcParams(64, 64, 16, (2, 2), 3, splits))
        assert_close(c, want, prob.k)
        assert np.abs(c - one).max() < 1e-4 * np.abs(want).max()


CONVS = {
    # K = 16 * 9 = 144: 5 k-tiles of 32, 2 + 3; padding, bias, weights copied
    "S2-3x3-pad-bias": (Conv2dProblem((2, 16, 9, 10), (24, 16, 3, 3), pads=(1, 1, 1, 1), bias=True),
                        MatmulTcParams(64, 64, 32, (2, 2), 3, 2)),
    # K = 3 * 49 = 147 (gathered weights): 10 k-tiles of 16, 3 + 3 + 4; stride 2
    "S3-stem-gathered": (Conv2dProblem((1, 3, 20, 18), (16, 3, 7, 7), strides=(2, 2), pads=(3, 3, 3, 3),
                                       bias=True), MatmulTcParams(64, 64, 16, (2, 2), 2, 3)),
}


@pytest.mark.parametrize(("problem", "params"), CONVS.values(), ids=CONVS.keys())
def test_split_convolutions_match_float64_bit_for_bit_twice(problem: Conv2dProblem, params: MatmulTcParams) -> None:
    program = program_of([conv2d_tc_kernel("conv_tc", problem, params, Float16Type())])
    rng = np.random.default_rng(2)
    x = rng.standard_normal(problem.input_shape).astype(np.float16)
    w = rng.standard_normal(problem.weight_shape).astype(np.float16)
    bias = rng.standard_normal(problem.bias_shape).astype(np.float32)
    y = launch_twice(program, "conv_tc", params.blocks(problem.gemm), params.threads, [x, w, bias],
                     scratch_buffers(params, problem.gemm), problem.out_shape)
    want = reference_conv(problem, x.astype(np.float64), w.astype(np.float64), bias)
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3 * math.sqrt(problem.gemm.k))


def test_k_ranges_cover_k_once_and_differ_by_at_most_one_tile() -> None:
    for k_tiles in range(1, 30):
        for splits in range(1, k_tiles + 1):
            plan = SplitK(splits, k_tiles, 1, 32)
            bounds = [(s * k_tiles // splits, (s + 1) * k_tiles // splits) for s in range(splits)]
            assert bounds[0][0] == 0 and bounds[-1][1] == k_tiles
            assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
            sizes = {e - f for f, e in bounds}
            assert max(sizes) == plan.steps and min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
            assert plan.uneven == (len(sizes) > 1)
    with pytest.raises(ValueError, match="split_k=5 is more than the 4 k-tiles"):
        SplitK(5, 4, 1, 32)
    with pytest.raises(ValueError, match="split_k must be >= 1"):
        MatmulTcParams(split_k=0)


def test_the_space_splits_only_long_k_on_few_tiles() -> None:
    bert_ffn = MatmulProblem.plain(128, 768, 3072)  # 24 tiles of 64 x 64
    candidates = MATMUL_TC_SPACE.candidates(bert_ffn)
    splits = {p.split_k for p in candidates if (p.block_m, p.block_n) == (64, 64)}
    assert splits == {1, 2, 3, 4, 6}  # 8 would leave no SM idle with 7 splits
    for p in candidates:
        assert p.k_tiles(bert_ffn) // p.split_k >= 4
    assert {p.split_k for p in MATMUL_TC_SPACE.candidates(MatmulProblem.plain(4096, 4096, 4096))} == {1}
    short = MatmulProblem.plain(128, 768, 96)  # 3 k-tiles of 32: no split walks 4
    assert {p.split_k for p in MATMUL_TC_SPACE.candidates(short)} == {1}


# ---- through the pipeline: fused prologue and epilogue, a kernel launched twice ----------

SCHEDULE = "{schedule = {block_m = 64, block_n = 64, block_k = 16, warps = array<i64: 2, 2>, stages = 3, split_k = 3}}"
FUSED = f"""
func.func @main(%x1: tensor<96x200xf32>, %x2: tensor<96x200xf32>, %w: tensor<200x80xf16>, %b: tensor<80xf32>,
                %r: tensor<96x80xf32>) -> (tensor<96x80xf32>, tensor<96x80xf32>) {{
  %h1 = graph.cast %x1 : tensor<96x200xf32> -> tensor<96x200xf16>
  %m1 = graph.matmul %h1, %w, %b {SCHEDULE} : (tensor<96x200xf16>, tensor<200x80xf16>, tensor<80xf32>) -> tensor<96x80xf32>
  %a1 = graph.relu %m1 : tensor<96x80xf32>
  %y1 = graph.add %a1, %r : (tensor<96x80xf32>, tensor<96x80xf32>) -> tensor<96x80xf32>
  %h2 = graph.cast %x2 : tensor<96x200xf32> -> tensor<96x200xf16>
  %m2 = graph.matmul %h2, %w, %b {SCHEDULE} : (tensor<96x200xf16>, tensor<200x80xf16>, tensor<80xf32>) -> tensor<96x80xf32>
  %a2 = graph.relu %m2 : tensor<96x80xf32>
  %y2 = graph.add %a2, %r : (tensor<96x80xf32>, tensor<96x80xf32>) -> tensor<96x80xf32>
  func.return %y1, %y2 : tensor<96x80xf32>, tensor<96x80xf32>
}}
"""


def fused_program():
    return compile_ir(parse_ir(FUSED))


def test_one_fused_split_kernel_is_launched_twice_with_scratch_of_its_own() -> None:
    program, _ = fused_program()
    (kernel,) = [k for k in program.kernels if k.template == "matmul_tc"]
    assert kernel.params["split_k"] == 3
    assert [p.name for p in kernel.signature.params][-2:] == ["workspace", "counters"]
    launches = [launch for launch in program.launches if launch.kernel == kernel.signature.name]
    assert len(launches) == 2
    kinds = [[program.buffers[i].kind for i in launch.args[-2:]] for launch in launches]
    assert kinds == [["temp", "zeroed"]] * 2
    assert launches[0].args[-1] != launches[1].args[-1]  # counters of its own, per launch
    assert "prologue: cast; epilogue: relu, add" in program.source


@pytest.mark.parametrize("check", [False, True], ids=["emu", "emu-sanitizer"])
def test_fused_split_matmuls_match_float64_run_after_run(check: bool) -> None:
    program, weights = fused_program()
    runner = ProgramRunner(program, weights, "emu", check=check)
    rng = np.random.default_rng(3)
    feed = {"x1": rng.standard_normal((96, 200)).astype(np.float32),
            "x2": rng.standard_normal((96, 200)).astype(np.float32),
            "w": rng.standard_normal((200, 80)).astype(np.float16),
            "b": rng.standard_normal(80).astype(np.float32),
            "r": rng.standard_normal((96, 80)).astype(np.float32)}
    first = runner.run(feed)
    again = runner.run(feed)
    w = feed["w"].astype(np.float64)
    for name, x in (("y1", feed["x1"]), ("y2", feed["x2"])):
        half = x.astype(np.float16).astype(np.float64)
        want = np.maximum(half @ w + feed["b"], 0) + feed["r"]
        np.testing.assert_allclose(first[name], want, rtol=1e-3, atol=1e-3 * math.sqrt(200))
        assert first[name].tobytes() == again[name].tobytes()


# ---- PTX and the cost report --------------------------------------------------------------

BERT_FFN = MatmulProblem((128, 3072), (3072, 768), (128, 768), (768,))
COMPILED = [
    pytest.param(MatmulTcParams(64, 64, 32, (2, 2), 3, 4), Float16Type(), id="64x64x32-s3-S4-f16"),
    pytest.param(MatmulTcParams(128, 64, 32, (2, 2), 3, 2), Float16Type(), id="128x64x32-s3-S2-f16"),
    pytest.param(MatmulTcParams(64, 64, 32, (2, 2), 2, 6), Float32Type(), id="64x64x32-s2-S6-tf32"),
]


@needs_nvrtc
@pytest.mark.parametrize(("params", "element"), COMPILED)
def test_split_candidates_compile_for_sm80_and_sm90_without_spills(params: MatmulTcParams,
                                                                   element: Attribute) -> None:
    assert MATMUL_TC_SPACE.first_violation(params, BERT_FFN) is None or isinstance(element, Float32Type)
    source = program_of([matmul_tc_kernel("mm_tc", BERT_FFN, params, element)]).source
    for arch in ("sm_80", "sm_90"):
        stats = kernel_stats(source, arch, compiler="nvrtc")["mm_tc"]
        assert stats.spill_bytes == 0 and stats.local_bytes == 0, (arch, stats)
        assert stats.shared_bytes == params.shared_bytes(BERT_FFN, tc_element(element))
        assert stats.registers <= 255


@needs_nvrtc
def test_the_reduction_adds_one_split_at_a_time() -> None:
    """The last block's loop over the splits is never unrolled (``#pragma unroll 1``): a
    split kernel takes its unsplit twin's registers plus one split's partials in flight
    (unrolled, ptxas hoisted every split's loads: 246 registers at S = 4 here, and a 256 x 64
    tile on 2 x 2 warps at S = 6 spilled 3,224 bytes); the estimate counts them, so the
    space keeps threads of 128 accumulators unsplit, and 64 of them split without spills."""
    wide = MatmulProblem((256, 512), (512, 784), (256, 784), (784,))
    assert "registers" in str(MATMUL_TC_SPACE.first_violation(MatmulTcParams(256, 64, 16, (2, 2), 4, 6), wide))
    assert MATMUL_TC_SPACE.first_violation(MatmulTcParams(256, 64, 16, (2, 2), 4, 1), wide) is None
    kernels = [matmul_tc_kernel("s1", BERT_FFN, MatmulTcParams(64, 64, 32, (2, 2), 3, 1)),
               matmul_tc_kernel("s4", BERT_FFN, MatmulTcParams(64, 64, 32, (2, 2), 3, 4)),
               matmul_tc_kernel("wide", wide, MatmulTcParams(128, 128, 32, (4, 2), 4, 6))]
    source = program_of(kernels).source
    assert source.count("#pragma unroll 1\n") == 2
    for arch in ("sm_80", "sm_90"):
        stats = kernel_stats(source, arch, compiler="nvrtc")
        assert stats["s4"].registers <= stats["s1"].registers + 48, (arch, stats)
        assert stats["wide"].spill_bytes == 0 and stats["wide"].local_bytes == 0, (arch, stats["wide"])


def with_host(kernel: tm.KernelOp) -> ModuleOp:
    """`kernel` and a host function launching it once, its scratch on buffers of their own."""
    tensors = [a.type for a in kernel.tensor_args]
    block = Block(arg_types=tensors)
    b = IRBuilder.at_end(block)
    scratch = [b.insert(tm.AllocOp("global", a.type, zeroed=kind == "counters")).results[0]  # type: ignore[arg-type]
               for kind, a in zip(kernel.scratch_kinds, kernel.scratch_args)]
    b.insert(tm.LaunchOp(kernel.sym_name.data, [*block.args, *scratch]))
    b.insert(func.ReturnOp())
    module = ModuleOp([kernel, func.FuncOp("main", FunctionType.from_lists(tensors, []), Region(block))])
    module.verify()
    LowerToCuda().apply(make_context(), module)
    return module


def test_the_cost_report_counts_the_workspace_once_each_way() -> None:
    (split,) = cost_report(with_host(matmul_tc_kernel("mm", BERT_FFN, MatmulTcParams(64, 64, 32, (2, 2), 3, 4)))).launches
    (plain,) = cost_report(with_host(matmul_tc_kernel("mm", BERT_FFN, MatmulTcParams(64, 64, 32, (2, 2), 3)))).launches
    workspace = 4 * 24 * 64 * 64 * 4  # S x tiles x block_m x block_n floats
    assert split.bytes_written - plain.bytes_written == workspace + 24 * 4  # + the counters
    assert split.bytes_read - plain.bytes_read == workspace + 24 * 4  # all S, its own too
    # The reduction's 3 adds per element of C (4 splits), and the epilogue's bias adds once
    # per element, not once per split; the mmas are the same work.
    assert split.flops - plain.flops == 3 * 128 * 768
    assert split.tensor_flops == plain.tensor_flops == 2 * 128 * 768 * 3072
