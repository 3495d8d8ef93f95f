"""The attention template (tmlir/schedules/attention.py) on emu against float64 numpy:
no mask, a padding bias, causal, fully masked rows (NaN as softmax, or 0 with
``zero_masked_rows``), Sq != Sk, D and Dv not multiples of anything, several query and key
tiles under several schedules, kᵀ stored transposed, broadcast batch dims, f16 operands;
all under the emu sanitizer (bounds and shared-memory races), and each of the kernel's
copy barriers shown necessary (removed, the sanitizer reports a race). The default tile
rule, and ptxas for sm_80 and sm_90: no spills."""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import EmuError, compile_emu
from tmlir.backends.ptx import kernel_stats, nvrtc_version
from tmlir.dialects import tmgpu
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.runtime.ir_program import ProgramRunner, compile_ir, parse_ir
from tmlir.schedules.attention import AttentionParams, AttentionProblem, attention_kernel

#: f32 sums in another order than float64's, relative to the output's largest magnitude.
RTOL = 2e-6
needs_nvrtc = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC (cuda.bindings) not available")


def reference(problem: AttentionProblem, q, k, v, bias) -> np.ndarray:
    """graph.attention's semantics in float64 (its docstring's ONNX reference)."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    scores = problem.scale * (q @ (k if problem.k_transposed else np.swapaxes(k, -1, -2)))
    if bias is not None:
        scores = scores + bias.astype(np.float64)
    if problem.causal:
        scores = np.where(np.tril(np.ones((problem.sq, problem.sk), bool)), scores, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(scores - scores.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
    if problem.zero_masked_rows:
        p = np.where(np.isnan(p), 0.0, p)
    return p @ v


def inputs(problem: AttentionProblem, seed: int, bias: np.ndarray | None = None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in (problem.q_shape, problem.k_shape, problem.v_shape)]
    if problem.bias_shape is not None:
        arrays.append(bias if bias is not None else rng.standard_normal(problem.bias_shape).astype(np.float32))
    return arrays


def run(cases: dict[str, tuple[AttentionProblem, AttentionParams | None, list[np.ndarray]]],
        check: bool = True) -> dict[str, np.ndarray]:
    """Build every case's kernel, compile them together once, launch each on its inputs
    (outputs start as NaN: every element must be written)."""
    kernels = {name: attention_kernel(name, problem, params) for name, (problem, params, _) in cases.items()}
    module = ModuleOp(list(kernels.values()))
    module.verify()
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    outputs = {}
    with compile_emu(program.source, [k.signature for k in program.kernels], check=check) as emu:
        for name, (problem, _, arrays) in cases.items():
            out = np.full(problem.out_shape, np.nan, np.float32)
            kernel = kernels[name]
            emu.launch(name, kernel.grid.data, kernel.block.data, [*arrays, out])
            outputs[name] = out
    return outputs


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float = RTOL) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    if finite.any():
        assert np.abs(got[finite] - want[finite]).max() <= rtol * np.abs(want[finite]).max()


def problem(q, k, v, bias=None, scale=0.3, **flags) -> AttentionProblem:
    return AttentionProblem(tuple(q), tuple(k), tuple(v), None if bias is None else tuple(bias), scale, **flags)


def padding(shape: tuple[int, ...], valid: int) -> np.ndarray:
    """A key-padding bias: 0 for the first `valid` keys, -inf after."""
    bias = np.zeros(shape, np.float32)
    bias[..., valid:] = -np.inf
    return bias


def test_masks_tiles_and_shapes():
    """One compile for many kernels: each case against float64."""
    masked_rows = np.zeros((1, 1, 40, 30), np.float32)
    masked_rows[..., 3, :] = -np.inf      # every key of row 3
    masked_rows[..., 7, 5:] = -np.inf     # all but 5 keys of row 7
    masked_rows[..., 9, :] = np.finfo(np.float32).min  # finite: a uniform row, not a masked one
    specs = {
        "plain": (problem((2, 3, 16, 16), (2, 3, 16, 16), (2, 3, 16, 16)), None, None),
        "padding": (problem((2, 4, 33, 16), (2, 4, 40, 16), (2, 4, 40, 16), (2, 1, 1, 40), zero_masked_rows=True),
                    None, padding((2, 1, 1, 40), 30)),
        "causal": (problem((1, 2, 100, 64), (1, 2, 100, 64), (1, 2, 100, 64), causal=True), None, None),
        "causal_tiles": (problem((1, 2, 100, 24), (1, 2, 100, 24), (1, 2, 100, 24), causal=True),
                         AttentionParams(32, 16, 8, 2), None),
        "causal_sq_gt_sk": (problem((1, 1, 50, 8), (1, 1, 20, 8), (1, 1, 20, 8), causal=True), None, None),
        "causal_sq_lt_sk": (problem((1, 1, 20, 8), (1, 1, 50, 8), (1, 1, 50, 8), causal=True), None, None),
        "nan_rows": (problem((1, 2, 40, 8), (1, 2, 30, 8), (1, 2, 30, 8), (1, 1, 40, 30)), None, masked_rows),
        "zero_rows": (problem((1, 2, 40, 8), (1, 2, 30, 8), (1, 2, 30, 8), (1, 1, 40, 30), zero_masked_rows=True),
                      AttentionParams(64, 8, 4, 4), masked_rows),
        "odd_dims": (problem((2, 3, 70, 17), (2, 3, 45, 17), (2, 3, 45, 13), (2, 1, 70, 45), scale=0.25),
                     AttentionParams(64, 32, 16, 8), None),
        "k_transposed": (problem((2, 3, 70, 17), (2, 3, 17, 45), (2, 3, 45, 13), k_transposed=True, causal=True),
                         AttentionParams(16, 8, 8, 1), None),
        "broadcast": (problem((2, 4, 33, 16), (2, 1, 40, 16), (1, 1, 40, 16)), AttentionParams(32, 32, 32, 1), None),
        "rank2_scalar_bias": (problem((33, 16), (40, 16), (40, 5), ()), None, np.array(0.5, np.float32)),
    }
    cases = {name: (p, params, inputs(p, i, bias)) for i, (name, (p, params, bias)) in enumerate(specs.items())}
    got = run(cases)
    for name, (p, _, arrays) in cases.items():
        want = reference(p, *arrays[:3], arrays[3] if len(arrays) > 3 else None)
        assert_close(got[name], want)
    assert np.isnan(got["nan_rows"][:, :, 3]).all() and not got["zero_rows"][:, :, 3].any()
    assert np.isfinite(got["nan_rows"][:, :, 9]).all()
    assert np.isnan(got["padding"]).sum() == 0


def test_half_operands_through_the_pipeline():
    """f16 q, k, v and output with an f32 bias: read widened, math in f32, one rounding."""
    text = """func.func @main(%q: tensor<2x40x16xf16>, %k: tensor<2x24x16xf16>, %v: tensor<2x24x8xf16>, %b: tensor<2x1x24xf32>) -> tensor<2x40x8xf16> {
  %o = graph.attention %q, %k, %v, %b {scale = 0.25 : f64, causal} : (tensor<2x40x16xf16>, tensor<2x24x16xf16>, tensor<2x24x8xf16>, tensor<2x1x24xf32>) -> tensor<2x40x8xf16>
  func.return %o : tensor<2x40x8xf16>
}"""
    program, weights = compile_ir(parse_ir(text))
    rng = np.random.default_rng(1)
    feed = {"q": rng.standard_normal((2, 40, 16)).astype(np.float16),
            "k": rng.standard_normal((2, 24, 16)).astype(np.float16),
            "v": rng.standard_normal((2, 24, 8)).astype(np.float16),
            "b": rng.standard_normal((2, 1, 24)).astype(np.float32)}
    (got,) = ProgramRunner(program, weights, "emu", check=True).run(feed).values()
    assert got.dtype == np.float16
    p = problem((2, 40, 16), (2, 24, 16), (2, 24, 8), (2, 1, 24), scale=0.25, causal=True)
    assert_close(got.astype(np.float32), reference(p, feed["q"], feed["k"], feed["v"], feed["b"]), rtol=2e-3)


@pytest.mark.parametrize("barrier", [0, 1], ids=["before_tiles", "after_tiles"])
def test_each_barrier_is_needed(barrier):
    """Remove the barrier before or after the key loop's copies: the emu sanitizer reports a
    race on shared memory (several key tiles, so each buffer is rewritten). (The third,
    after ``p_smem`` is written, orders lanes of one warp: the sanitizer counts the row-sum
    shuffles between as a warp barrier, which CUDA does not promise for memory.)"""
    p = problem((1, 1, 32, 8), (1, 1, 64, 8), (1, 1, 64, 8))
    kernel = attention_kernel("attn", p, AttentionParams(32, 16, 8, 2))
    grid, block = kernel.grid.data, kernel.block.data
    module = ModuleOp([kernel])
    LowerToCuda().apply(make_context(), module)
    barriers = [op for op in module.walk() if isinstance(op, tmgpu.BarrierOp)]
    assert len(barriers) == 3
    barriers[barrier].detach()
    barriers[barrier].erase()
    program = emit_cuda(module)
    arrays = inputs(p, 0)
    with compile_emu(program.source, [k.signature for k in program.kernels], check=True) as emu, \
            pytest.raises(EmuError, match="race"):
        emu.launch("attn", grid, block, [*arrays, np.zeros(p.out_shape, np.float32)])


def test_default_tiles():
    """The rule: 128 threads of 8-lane row groups; block_q for 132 blocks, else 16; block_k
    from Sk; smaller tiles where D would overflow shared memory; nothing for a huge D."""
    bert_base = problem((1, 12, 128, 64), (1, 12, 128, 64), (1, 12, 128, 64))
    assert AttentionParams.default_for(bert_base) == AttentionParams(16, 32, 8, 1)
    long = problem((1, 12, 2048, 64), (1, 12, 2048, 64), (1, 12, 2048, 64))
    assert AttentionParams.default_for(long) == AttentionParams(64, 32, 8, 4)
    example = problem((1, 2, 16, 16), (1, 2, 16, 16), (1, 2, 16, 16))
    assert AttentionParams.default_for(example) == AttentionParams(16, 16, 8, 1)
    wide = problem((8, 16, 1024, 128), (8, 16, 1024, 128), (8, 16, 1024, 128))
    params = AttentionParams.default_for(wide)
    assert params is not None and params.shared_bytes(wide) <= 48 * 1024 and params.threads == 128
    assert AttentionParams.default_for(problem((1, 1, 64, 512), (1, 1, 64, 512), (1, 1, 64, 512))) is None
    for p in (bert_base, long, example, wide):
        params = AttentionParams.default_for(p)
        assert params is not None and params.rows_per_thread * math.ceil(p.dv / 8) <= 64


def test_causal_tiles_weight_the_cost_report():
    """A causal block skips the key tiles after its last row; the cost report counts the
    tiles taken (about half of the FLOPs)."""
    p = problem((1, 1, 256, 64), (1, 1, 256, 64), (1, 1, 256, 64))
    params = AttentionParams(64, 32, 8, 4)
    assert params.causal_tiles(p) == 4 * 8
    causal = problem((1, 1, 256, 64), (1, 1, 256, 64), (1, 1, 256, 64), causal=True)
    assert params.causal_tiles(causal) == 2 + 4 + 6 + 8


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_no_spills(arch):
    """BERT-base's and GPT-2's heads (D = 64; causal), seq 2048, the examples' D = 16, a
    D = 128 head and odd shapes: ptxas spills nothing."""
    shapes = [problem((1, 12, 128, 64), (1, 12, 128, 64), (1, 12, 128, 64), (1, 1, 1, 128)),
              problem((1, 12, 2048, 64), (1, 12, 2048, 64), (1, 12, 2048, 64), causal=True),
              problem((1, 2, 17, 16), (1, 2, 17, 16), (1, 2, 17, 16), zero_masked_rows=True),
              problem((2, 16, 512, 128), (2, 16, 512, 128), (2, 16, 512, 128)),
              problem((2, 3, 70, 17), (2, 3, 17, 45), (2, 3, 45, 13), k_transposed=True)]
    module = ModuleOp([attention_kernel(f"attention_{i}", p) for i, p in enumerate(shapes)])
    LowerToCuda().apply(make_context(), module)
    stats = kernel_stats(emit_cuda(module).source, arch)
    assert len(stats) == len(shapes)
    for name, s in stats.items():
        assert s.spill_bytes == 0 and s.local_bytes == 0, (name, s)
        assert s.registers <= 168, (name, s)
