"""The tensor-core attention template (tmlir/schedules/attention_tc.py) on emu against
float64 numpy, f16 and bf16: no mask, a key-padding bias, causal with Sq != Sk both ways,
fully masked rows (NaN as softmax, or 0 with ``zero_masked_rows``), D = 16, 32, 64 and
128, partial query and key tiles, 2- and 3-stage pipelines, kᵀ copied and gathered,
gathered (prologue) operands, broadcast batch dims -- all under the emu sanitizer. The P
fragment trick lane by lane against ``mma_layouts`` (and a wrong pairing caught on emu); a
planted missing ``cp.async`` wait and a missing barrier caught on emu; the tile rule; ptxas
for sm_80 and sm_90: no spills for the tiles the rule picks."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from test_attention import padding, problem, reference  # tests/schedules is on sys.path
from xdsl.dialects.builtin import BFloat16Type, Float16Type, ModuleOp

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import kernel_stats, nvrtc_version
from tmlir.dialects import tm, tmgpu
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules import attention_tc
from tmlir.schedules.attention_tc import AttentionTcParams, attention_tc_kernel, p_half_source
from tmlir.schedules.attention_tc_params import (
    CANDIDATES,
    MAX_PRESSURE,
    check_problem,
    covers,
    default_for,
    dense_operands,
    header,
)
from tmlir.schedules.kloops import attention_tc_pressure
from tmlir.schedules.mma_layouts import MMA_ACC, MMA_F16_A, fragment_elements
from tmlir.schedules.registry import NoTemplate

needs_nvrtc = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC (cuda.bindings) not available")
A = AttentionTcParams
#: Relative to the output's largest magnitude: P rounds to 11 (f16) or 8 (bf16) significant
#: bits before ``P V`` (q, k, v are exact halves; scores, softmax and sums are f32).
RTOL = {"f16": 5e-4, "bf16": 4e-3}
ELEMENTS = {"f16": (Float16Type(), np.float16), "bf16": (BFloat16Type(), ml_dtypes.bfloat16)}


def test_p_fragment_is_the_two_accumulator_tiles_in_order() -> None:
    """Half e of the A fragment of 16-key slice j (MMA_F16_A, register order) is the element
    of P that accumulator p_half_source(e) of n-tile 2j + e // 4 holds (MMA_ACC), lane by
    lane: the accumulators become A fragments without crossing lanes."""
    for lane in range(32):
        a_elements = fragment_elements(MMA_F16_A, lane)  # (row, key) of a 16 x 16 tile
        c_elements = fragment_elements(MMA_ACC, lane)  # (row, key) of a 16 x 8 tile
        assert len(a_elements) == 8 and len(c_elements) == 4
        for e, (row, key) in enumerate(a_elements):
            pair, register = p_half_source(e)
            c_row, c_key = c_elements[register]
            assert (row, key) == (c_row, 8 * pair + c_key), (lane, e)


def run(cases: dict, dtype: str, check: bool = True, **build) -> dict[str, np.ndarray]:
    """Build every case's kernel (q, k, v of `dtype`), compile them together once, launch
    each on its inputs (outputs start as NaN: every element must be written)."""
    element = ELEMENTS[dtype][0]
    kernels = {name: attention_tc_kernel(name, p, element, params, gathered=g, **build)
               for name, (p, params, g, _) in cases.items()}
    module = ModuleOp(list(kernels.values()))
    module.verify()
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    outputs = {}
    with compile_emu(program.source, [k.signature for k in program.kernels], check=check) as emu:
        for name, (p, _, _, arrays) in cases.items():
            out = np.full(p.out_shape, np.nan, np.float32)
            emu.launch(name, kernels[name].grid.data, kernels[name].block.data, [*arrays, out])
            outputs[name] = out
    return outputs


def inputs(p, seed: int, dtype: str, bias: np.ndarray | None = None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(ELEMENTS[dtype][1]) for s in (p.q_shape, p.k_shape, p.v_shape)]
    if p.bias_shape is not None:
        arrays.append(bias if bias is not None else rng.standard_normal(p.bias_shape).astype(np.float32))
    return arrays


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    if finite.any():
        assert np.abs(got[finite] - want[finite]).max() <= rtol * np.abs(want[finite]).max()


MASKED_ROWS = np.zeros((1, 1, 40, 30), np.float32)
MASKED_ROWS[..., 3, :] = -np.inf      # every key of row 3
MASKED_ROWS[..., 7, 5:] = -np.inf     # all but 5 keys of row 7
MASKED_ROWS[..., 9, :] = np.finfo(np.float32).min  # finite: a uniform row, not a masked one
SPECS = {  # problem, params (None: the rule's), gathered operands, bias
    "d64_tiles": (problem((1, 2, 100, 64), (1, 2, 90, 64), (1, 2, 90, 64)), A(32, 32, 2), (), None),
    "d64_3_stages": (problem((1, 2, 100, 64), (1, 2, 90, 64), (1, 2, 90, 64)), A(32, 32, 3), (), None),
    "d128": (problem((1, 1, 40, 128), (1, 1, 72, 128), (1, 1, 72, 128)), A(32, 32, 2), (), None),
    "causal_sq_gt_sk": (problem((1, 2, 70, 32), (1, 2, 40, 32), (1, 2, 40, 32), causal=True), A(16, 16, 2), (), None),
    "causal_sq_lt_sk": (problem((1, 2, 40, 32), (1, 2, 70, 32), (1, 2, 70, 32), causal=True), A(32, 16, 3), (), None),
    "padding": (problem((2, 4, 33, 16), (2, 4, 40, 16), (2, 4, 40, 16), (2, 1, 1, 40), zero_masked_rows=True),
                A(32, 32, 2), (), padding((2, 1, 1, 40), 30)),
    "nan_rows": (problem((1, 2, 40, 16), (1, 2, 30, 16), (1, 2, 30, 16), (1, 1, 40, 30)), A(16, 32, 2), (),
                 MASKED_ROWS),
    "zero_rows": (problem((1, 2, 40, 16), (1, 2, 30, 16), (1, 2, 30, 16), (1, 1, 40, 30), zero_masked_rows=True),
                  A(32, 16, 2), (), MASKED_ROWS),
    "k_transposed": (problem((2, 3, 70, 32), (2, 3, 32, 48), (2, 3, 48, 24), k_transposed=True, causal=True),
                     A(32, 32, 2), (), None),
    "k_transposed_gathered": (problem((2, 3, 70, 32), (2, 3, 32, 45), (2, 3, 45, 24), k_transposed=True),
                              A(16, 16, 2), (), None),
    "prologues": (problem((1, 2, 50, 48), (1, 2, 45, 48), (1, 2, 45, 40)), A(32, 32, 2), (0, 1, 2), None),
    "broadcast": (problem((2, 4, 33, 16), (2, 1, 40, 16), (1, 1, 40, 16)), None, (), None),
    "rank2_scalar_bias": (problem((33, 16), (40, 16), (40, 8), ()), A(32, 16, 2), (), np.array(0.5, np.float32)),
}


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_matches_float64(dtype: str) -> None:
    """One compile for every case: each against float64 numpy on the same (exact) halves."""
    cases = {name: (p, params, g, inputs(p, i, dtype, bias))
             for i, (name, (p, params, g, bias)) in enumerate(SPECS.items())}
    got = run(cases, dtype)
    for name, (p, _, _, arrays) in cases.items():
        want = reference(p, *(a.astype(np.float64) for a in arrays[:3]), arrays[3] if len(arrays) > 3 else None)
        assert_close(got[name], want, RTOL[dtype])
    assert np.isnan(got["nan_rows"][:, :, 3]).all() and not got["zero_rows"][:, :, 3].any()
    assert np.isfinite(got["nan_rows"][:, :, 9]).all()
    assert not np.isnan(got["padding"]).any()


SMALL = problem((1, 1, 32, 16), (1, 1, 64, 16), (1, 1, 64, 16))


def _small_case() -> dict:
    return {"attn": (SMALL, A(16, 16, 2), (), inputs(SMALL, 3, "f16"))}


def _want() -> np.ndarray:
    arrays = _small_case()["attn"][3]
    return reference(SMALL, *(a.astype(np.float64) for a in arrays), None)


def test_a_wrong_p_fragment_pairing_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Swap the row halves of P's A fragment (a[1] and a[2]): the result is wrong on emu."""
    assert_close(run(_small_case(), "f16")["attn"], _want(), RTOL["f16"])
    swapped = {0: 0, 1: 1, 2: 4, 3: 5, 4: 2, 5: 3, 6: 6, 7: 7}
    monkeypatch.setattr(attention_tc, "p_half_source", lambda e: divmod(swapped[e], 4))
    got = run(_small_case(), "f16")["attn"]
    assert np.abs(got - _want()).max() > 0.05


def test_a_missing_cp_async_wait_gives_a_wrong_result() -> None:
    """Without the key loop's waits the tiles are read before their copies land (the emu
    lands a copy only at its wait): the output is wrong."""
    kernel = attention_tc_kernel("attn", SMALL, Float16Type(), A(16, 16, 2), wait=False)
    assert sum(isinstance(op, tm.CpAsyncWaitOp) for op in kernel.walk()) == 1  # the query tile's only
    got = run(_small_case(), "f16", check=False, wait=False)["attn"]
    assert np.isnan(got).any() or np.abs(got - _want()).max() > 0.05


def test_a_missing_barrier_gives_a_wrong_result() -> None:
    """Remove the barrier of a step, in a block of two warps: a warp reads key rows the other
    warp copied before that warp's wait landed them (and a tile is refilled while the other
    warp may still read it) -- the output is wrong on emu."""
    params = A(32, 16, 2)
    kernel = attention_tc_kernel("attn", SMALL, Float16Type(), params)
    module = ModuleOp([kernel])
    LowerToCuda().apply(make_context(), module)
    barriers = [op for op in module.walk() if isinstance(op, tmgpu.BarrierOp)]
    assert len(barriers) == 3  # the query tile's and one per step of a 2-stage round
    barriers[1].detach()
    barriers[1].erase()
    program = emit_cuda(module)
    arrays = inputs(SMALL, 3, "f16")
    out = np.full(SMALL.out_shape, np.nan, np.float32)
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        emu.launch("attn", kernel.grid.data, kernel.block.data, [*arrays, out])
    assert np.isnan(out).any() or np.abs(out - _want()).max() > 0.05


def test_what_the_template_covers() -> None:
    check_problem(problem((2, 8, 64), (2, 8, 64), (2, 8, 8)), Float16Type())
    with pytest.raises(NoTemplate, match="D a multiple of 16"):
        check_problem(problem((2, 8, 24), (2, 8, 24), (2, 8, 24)), Float16Type())
    with pytest.raises(NoTemplate, match="Dv = 12"):
        check_problem(problem((2, 8, 16), (2, 8, 16), (2, 8, 12)), BFloat16Type())
    with pytest.raises(NoTemplate, match="f16 or bf16"):
        from xdsl.dialects.builtin import Float32Type
        check_problem(problem((2, 8, 16), (2, 8, 16), (2, 8, 16)), Float32Type())
    head_256 = problem((1, 64, 256), (1, 64, 256), (1, 64, 256))
    assert not covers(head_256, Float16Type())  # no tiles within the register budget: SIMT
    head_128 = problem((1, 2, 64, 128), (1, 2, 64, 128), (1, 2, 64, 128))
    assert covers(head_128, BFloat16Type(), "sm_80")
    # gathered tiles of D = 128 need 256 threads: a block taller than Sq = 64
    assert default_for(head_128, "bf16", "sm_80", frozenset({0, 1, 2})).block_q == 128
    kt = problem((1, 8, 16), (1, 16, 12), (1, 12, 16), k_transposed=True)
    assert dense_operands(kt) == {0, 2}  # kᵀ rows of 12 keys: not whole 16-byte chunks
    assert dense_operands(problem((1, 8, 16), (1, 16, 24), (1, 24, 16), k_transposed=True)) == {0, 1, 2}


def test_tile_rule() -> None:
    """The latency model's choice among `CANDIDATES`: long sequences take 4-warp blocks and
    a 3-stage pipeline; a gathered key/value tile stays within 16 elements a thread (2
    stages); nothing chosen exceeds the register pressure at which ptxas spilled."""
    long = problem((1, 12, 2048, 64), (1, 12, 64, 2048), (1, 12, 2048, 64), k_transposed=True)
    assert default_for(long, "f16", "sm_90") == A(64, 64, 3)
    bert = problem((1, 12, 128, 64), (1, 12, 128, 64), (1, 12, 128, 64), (1, 1, 128, 128))
    gathered = default_for(bert, "f16", "sm_90", frozenset({0, 1, 2}))
    assert gathered.stages == 2 and gathered.block_k * 64 // gathered.threads <= 16
    for p in (long, bert, problem((2, 16, 512, 128), (2, 16, 512, 128), (2, 16, 512, 128)),
              problem((1, 2, 17, 16), (1, 2, 17, 16), (1, 2, 17, 16), causal=True)):
        for g in (frozenset(), frozenset({0, 1, 2})):
            params = default_for(p, "f16", "sm_90", g)
            assert params in CANDIDATES
            assert attention_tc_pressure(header(p, params, "f16", g)) <= MAX_PRESSURE
            assert params.block_q <= max(16, 1 << (p.sq - 1).bit_length())
    with pytest.raises(ValueError, match="block_k"):
        A(64, 24, 2)
    with pytest.raises(ValueError, match="stages"):
        A(64, 32, 5)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_no_spills(arch: str) -> None:
    """The tiles the rule picks for BERT's and GPT-2's heads (gathered: their q, k, v have
    prologues), seq 512 and 2048 (kᵀ, as the benchmark), a D = 128 head and a partial odd
    shape, f16 and bf16: ptxas spills nothing and uses no local memory (P's fragments of
    halves stay in registers)."""
    shapes = [
        (problem((1, 12, 128, 64), (1, 12, 128, 64), (1, 12, 128, 64), (1, 1, 128, 128), zero_masked_rows=True),
         (0, 1, 2), "f16"),
        (problem((1, 12, 128, 64), (1, 12, 128, 64), (1, 12, 128, 64), causal=True), (0, 1, 2), "bf16"),
        (problem((1, 12, 512, 64), (1, 12, 64, 512), (1, 12, 512, 64), k_transposed=True), (), "f16"),
        (problem((1, 12, 2048, 64), (1, 12, 64, 2048), (1, 12, 2048, 64), k_transposed=True), (), "f16"),
        (problem((2, 16, 512, 128), (2, 16, 512, 128), (2, 16, 512, 128), causal=True), (), "bf16"),
        (problem((2, 3, 70, 32), (2, 3, 45, 32), (2, 3, 45, 24), (2, 1, 70, 45)), (), "f16"),
    ]
    kernels = [attention_tc_kernel(f"attention_{i}", p, ELEMENTS[dtype][0], arch=arch, gathered=g)
               for i, (p, g, dtype) in enumerate(shapes)]
    module = ModuleOp(kernels)
    LowerToCuda().apply(make_context(), module)
    stats = kernel_stats(emit_cuda(module).source, arch)
    assert len(stats) == len(shapes)
    for name, s in stats.items():
        assert s.spill_bytes == 0 and s.local_bytes == 0, (name, s)


def test_causal_blocks_skip_tiles_past_the_diagonal() -> None:
    """The branch weights count the key tiles a causal block walks (the cost report's
    FLOPs): about half of them for a square problem."""
    p = problem((1, 1, 256, 64), (1, 1, 256, 64), (1, 1, 256, 64), causal=True)
    params = A(64, 64, 2)
    assert params.causal_tiles(p) == 1 + 2 + 3 + 4
    kernel = attention_tc_kernel("attn", p, Float16Type(), params)
    weights = [op.attributes["tm.branch_weights"] for op in kernel.walk() if "tm.branch_weights" in op.attributes]
    taken = sum(w.get_values()[0] for w in weights)  # type: ignore[attr-defined]
    total = sum(sum(w.get_values()) for w in weights)  # type: ignore[attr-defined]
    assert (taken, total) == (10, 16)
    assert math.isclose(taken / total, params.causal_tiles(p) / (4 * 4))


@needs_nvrtc
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_p_rounds_in_one_instruction_on_the_gpu(dtype: str) -> None:
    """The CUDA prelude's float -> f16/bf16 conversion takes the hardware's ``cvt.rn`` on
    the GPU (the emu keeps the exact software rounding): P's rounding is one instruction per
    score, not the ~40 of the bit manipulation."""
    from tmlir.backends.ptx import compile_ptx

    kernel = attention_tc_kernel("attn", SMALL, ELEMENTS[dtype][0], A(16, 16, 2))
    module = ModuleOp([kernel])
    LowerToCuda().apply(make_context(), module)
    ptx = compile_ptx(emit_cuda(module).source, "sm_80")
    assert f"cvt.rn.{dtype}.f32" in ptx
