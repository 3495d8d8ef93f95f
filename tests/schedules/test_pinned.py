"""Schedules pinned in IR and template defaults set by options: a pinned candidate runs on
emu and matches numpy; pins win over tuning records; parameters are checked."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.dialects import graph
from tmlir.ir.diagnostics import OpError
from tmlir.passes.convert_graph_to_tm import ConvertGraphToTm
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.matmul_simt import MATMUL_SIMT_SPACE, MatmulProblem, MatmulSimtParams
from tmlir.schedules.pinned import (
    option_text,
    pinned_params,
    schedule_attr_text,
    values_from_text,
)
from tmlir.schedules.templates import kernel_for

M, N, K = 24, 40, 20  # not multiples of the tile: guarded loads and stores
PIN = MatmulSimtParams(block_warps=(1, 2), warp_outer=(1, 1), lanes=(8, 4), thread_inner=(4, 4),
                       block_k=16, stages=4)
GEMM = """
func.func @gemm(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>, %bias: tensor<{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %c = graph.matmul %a, %b, %bias {{{attr}}}
         : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = graph.relu %c : tensor<{m}x{n}xf32>
  func.return %r : tensor<{m}x{n}xf32>
}}
"""


def parse(attr: str):
    module = Parser(make_context(), GEMM.format(m=M, n=N, k=K, attr=attr)).parse_module()
    module.verify()
    return module


def matmul_of(module) -> graph.MatmulOp:
    return next(op for op in module.walk() if isinstance(op, graph.MatmulOp))


def test_pinned_candidate_runs_on_emu_and_matches_numpy():
    problem = MatmulProblem((M, K), (K, N), (M, N), (N,))
    assert PIN != MatmulSimtParams.default_for(problem)
    assert MATMUL_SIMT_SPACE.first_violation(PIN, problem) is None
    module = parse(schedule_attr_text(PIN))
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    (kernel,) = program.kernels
    assert kernel.params["block_warps"] == "1x2" and kernel.params["lanes"] == "8x4"
    assert kernel.params["block_k"] == 16 and kernel.params["stages"] == 4 and kernel.block == PIN.threads
    header = next(line for line in kernel.source.splitlines() if line.startswith("// Kernel"))
    assert "lanes=8x4" in header and "stages=4" in header  # the header comment names the pin
    rng = np.random.default_rng(0)
    a, b, bias = (rng.standard_normal(s).astype(np.float32) for s in ((M, K), (K, N), (N,)))
    arrays = [a, b, bias, np.full((M, N), np.nan, np.float32)]
    assert [buf.shape for buf in program.buffers] == [x.shape for x in arrays]
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        for launch in program.launches:
            emu.launch(launch.kernel, launch.grid, launch.block, [arrays[i] for i in launch.args],
                       launch.shared_bytes)
    want = np.maximum(a.astype(np.float64) @ b + bias, 0)
    np.testing.assert_allclose(arrays[3], want, rtol=1e-5, atol=1e-5)


def test_pin_wins_over_tuning_records_and_fills_in_defaults():
    op = matmul_of(parse("schedule = {stages = 4}"))
    pinned = pinned_params(op)
    default = MatmulSimtParams.default_for(MatmulProblem((M, K), (K, N), (M, N), (N,)), "sm_90")
    assert pinned == MatmulSimtParams(default.block_warps, default.warp_outer, default.lanes,
                                      default.thread_inner, default.block_k, 4)
    recorded = MatmulSimtParams((1, 1), (1, 1), (4, 8), (4, 4), 8)
    kernel = kernel_for("mm", op, lambda template, problem, element: recorded, pinned)
    assert kernel is not None
    assert kernel.attributes["tm.params"].data["stages"].value.data == 4
    without_pin = kernel_for("mm", op, lambda template, problem, element: recorded)
    assert without_pin is not None and without_pin.block.data == recorded.threads


def test_attribute_and_option_texts_round_trip():
    op = matmul_of(parse(schedule_attr_text(PIN)))
    assert pinned_params(op) == PIN
    assert values_from_text(option_text(PIN)) == {
        "block_warps": (1, 2), "lanes": (8, 4), "warp_outer": (1, 1), "thread_inner": (4, 4),
        "block_k": 16, "stages": 4, "split_k": 1}


@pytest.mark.parametrize(("attr", "message"), [
    ("schedule = {warp_outr = array<i64: 1, 1>}", "unknown parameter 'warp_outr' (did you mean 'warp_outer'?"),
    ("schedule = {threads = 64}", "'threads' is derived from the parameters"),
    ("schedule = {block_k = array<i64: 8, 8>}", "parameter 'block_k' expects an integer"),
    ("schedule = {lanes = array<i64: 1, 32>}", "parameter 'lanes' = 1x32 is outside the matmul_simt space"),
    ("schedule = {block_warps = array<i64: 4, 1>, warp_outer = array<i64: 2, 2>, lanes = array<i64: 16, 2>}",
     "breaks the constraint 'block tile <= 128 x 128 (pipeline: 128 x 256"),
    ("schedule = {split_k = 5}", "parameter 'split_k' = 5 is outside the matmul_simt space (choices: 1, 2, 3, 4, 6, 8)"),
    ("schedule = {split_k = 2}", "breaks the constraint 'split-K only with the deepest k-steps"),
    ("schedule = {block_k = 32, split_k = 2}", "breaks the constraint 'each split walks >= 4 k-tiles'"),
])
def test_invalid_pins_name_the_parameter_and_the_op(attr, message):
    op = matmul_of(parse(attr))
    with pytest.raises(OpError, match=r"^'graph.matmul': schedule: ") as info:
        pinned_params(op)
    assert message in str(info.value) and info.value.op is op


@pytest.mark.parametrize(("options", "message"), [
    ({"matmul": "block_k=9"}, "option 'matmul': parameter 'block_k' = 9 is outside"),
    ({"conv": "lanes=4x8 blocks=2"}, "option 'conv': unknown parameter 'blocks'"),
    ({"matmul": "lanes"}, "option 'matmul': 'lanes' is not name=value"),
])
def test_bad_options_fail_when_the_pass_is_made(options, message):
    for make in (ConvertGraphToTm, LowerToCuda):
        with pytest.raises(ValueError, match=message):
            make(**options)


def test_tm_space_pin_prints_text_that_pins_the_candidate(capsys):
    from tmlir.tools.tm_space import main

    assert main(["matmul", "--m", str(M), "--n", str(N), "--k", str(K), "--pin", "5"]) == 0
    attr, option = capsys.readouterr().out.splitlines()
    candidate = MATMUL_SIMT_SPACE.candidates(MatmulProblem((M, K), (K, N), (M, N)))[5]
    assert pinned_params(matmul_of(parse(attr))) == candidate
    assert option == f"-p 'convert-graph-to-tm{{matmul=\"{option_text(candidate)}\"}}'"
    assert main(["matmul", "--m", "8", "--n", "8", "--k", "8", "--pin", "1000"]) == 1
    assert "tm-space: error: --pin 1000: the space has candidates 0 to" in capsys.readouterr().err


def test_a_tf32_pin_is_checked_against_the_f32_space():
    """The same tile fits f16 operands and not f32 ones (twice the shared memory: 192 and
    392 KiB of sm_90's 227)."""
    from tmlir.schedules.tc_gemm import MatmulTcParams

    text = ("func.func @f(%a: tensor<256x256x{t}>, %b: tensor<256x256x{t}>) -> tensor<256x256xf32> {{\n"
            "  %c = graph.matmul %a, %b {{tf32, schedule = {{block_m = 128, block_n = 256, block_k = 64, "
            "warps = array<i64: 2, 4>, stages = 4}}}} : (tensor<256x256x{t}>, tensor<256x256x{t}>) -> tensor<256x256xf32>\n"
            "  func.return %c : tensor<256x256xf32>\n}}")
    half = matmul_of(Parser(make_context(), text.format(t="f16")).parse_module())
    assert pinned_params(half) == MatmulTcParams(128, 256, 64, (2, 4), 4)
    single = matmul_of(Parser(make_context(), text.format(t="f32")).parse_module())
    with pytest.raises(OpError, match="breaks the constraint 'shared memory <= 227 KiB .* of matmul_tc"):
        pinned_params(single)


def test_split_k_is_pinned_like_any_tensor_core_parameter():
    """A pin may split K; each split must walk 4 k-tiles, and the attribute text shows it."""
    from tmlir.schedules.tc_gemm import MatmulTcParams

    text = ("func.func @f(%a: tensor<64x512xf16>, %b: tensor<512x64xf16>) -> tensor<64x64xf32> {{\n"
            "  %c = graph.matmul %a, %b {{schedule = {{block_m = 64, block_n = 64, block_k = 32, "
            "split_k = {s}}}}} : (tensor<64x512xf16>, tensor<512x64xf16>) -> tensor<64x64xf32>\n"
            "  func.return %c : tensor<64x64xf32>\n}}")
    split = pinned_params(matmul_of(Parser(make_context(), text.format(s=4)).parse_module()))
    assert split == MatmulTcParams(64, 64, 32, (2, 2), 3, 4)  # 16 k-tiles: 4 each; the rest the rule's
    assert "stages = 3, split_k = 4}" in schedule_attr_text(split)
    too_far = matmul_of(Parser(make_context(), text.format(s=6)).parse_module())
    with pytest.raises(OpError, match="split_k=6 breaks the constraint 'each split walks >= 4 k-tiles'"):
        pinned_params(too_far)
