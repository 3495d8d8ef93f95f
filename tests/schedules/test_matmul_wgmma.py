"""The Hopper matmul template (``matmul_wgmma``): kernels run on emu (wgmma, mbarriers and
cp.async emulated exactly) against float64 numpy -- f16 and bf16 products are exact, so
only the f32 sums round --, with bias, partial tiles, both B layouts, batch broadcasting,
split-K, one and two consumer warpgroups, one to four producer warps and tf32; each planted
missing wait breaks the kernel; candidates compile with nvcc for sm_90a without spills or
stack; the space, the refusals and the kernel's structure."""

from __future__ import annotations

import math
import shutil
from collections.abc import Collection

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Attribute, BFloat16Type, Float16Type, Float32Type, ModuleOp

from tmlir.backends.cuda_c import CudaProgram, emit_cuda
from tmlir.backends.emu import EmuError, compile_emu
from tmlir.backends.ptx import ptxas_stats
from tmlir.dialects import tm
from tmlir.passes.arith_simplify import ArithSimplify
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.tm_lower_mappings import TmLowerMappings
from tmlir.registry import make_context
from tmlir.schedules.gemm import MatmulProblem
from tmlir.schedules.matmul_wgmma import check_problem, default_params, matmul_wgmma_kernel
from tmlir.schedules.matmul_wgmma_params import WGMMA_F16, WGMMA_TF32, MatmulWgmmaParams, wgmma_space
from tmlir.schedules.registry import NoTemplate

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
F16, BF16, F32 = Float16Type(), BFloat16Type(), Float32Type()


def problem(m: int, n: int, k: int, bias: bool = False, nk: bool = False) -> MatmulProblem:
    return MatmulProblem((m, k), (n, k) if nk else (k, n), (m, n), (n,) if bias else None, transpose_rhs=nk)


def lowered(prob: MatmulProblem, params: MatmulWgmmaParams, element: Attribute = F16,
            drop: Collection[str] = ()) -> CudaProgram:
    """The kernel through tm-lower-mappings, convert-tm-to-gpu and arith-simplify, as CUDA C
    for sm_90a."""
    module = ModuleOp([matmul_wgmma_kernel("mm_wgmma", prob, params, element, drop=drop)])
    module.verify()
    ctx = make_context()
    for p in (TmLowerMappings(), ConvertTmToGpu(), ArithSimplify()):
        p.apply(ctx, module)
    return emit_cuda(module, "sm_90a")


def tf32(x: np.ndarray) -> np.ndarray:
    """What wgmma multiplies of a float: its low 13 mantissa bits dropped."""
    return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def run_on_emu(prob: MatmulProblem, params: MatmulWgmmaParams, element: Attribute = F16,
               drop: Collection[str] = (), seed: int = 0, check: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(C from the emu, the float64 reference on the operands as wgmma sees them) for random
    unit-scale inputs; C starts as NaN, so every element must be written."""
    program = lowered(prob, params, element, drop)
    rng = np.random.default_rng(seed)
    dtype = {Float16Type: np.float16, BFloat16Type: ml_dtypes.bfloat16, Float32Type: np.float32}[type(element)]
    a = rng.standard_normal(prob.lhs_shape).astype(dtype)
    b = rng.standard_normal(prob.rhs_shape).astype(dtype)
    bias = rng.standard_normal(prob.bias_shape).astype(np.float32) if prob.bias_shape else None
    c = np.full(prob.out_shape, np.nan, np.float32)
    scratch = [np.zeros(t.get_shape(), np.float32 if kind == "workspace" else np.int32)
               for kind, t in params.scratch(prob)]
    with compile_emu(program.source, [k.signature for k in program.kernels], check=check) as emu:
        emu.launch("mm_wgmma", params.blocks(prob), params.threads,
                   [a, b, *([bias] if bias is not None else []), c, *scratch], program.kernels[0].dynamic_shared_bytes)
    if isinstance(element, Float32Type):
        a, b = tf32(a), tf32(b)
    rhs = b.astype(np.float64)
    want = prob.alpha * (a.astype(np.float64) @ (rhs.swapaxes(-1, -2) if prob.transpose_rhs else rhs))
    return c, want + prob.beta * bias if bias is not None else want


def assert_exact(c: np.ndarray, want: np.ndarray, k: int) -> None:
    """Exact products, f32 sums: within f32 rounding of a K-term sum of unit-scale terms."""
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5 * math.sqrt(k))


CASES = [
    pytest.param(problem(64, 64, 128), MatmulWgmmaParams(64, 1, 1, 2), F16, id="one-tile-f16"),
    pytest.param(problem(130, 136, 200, bias=True), MatmulWgmmaParams(128, 2, 1, 3), F16,
                 id="partial-MNK-bias-2wg-f16"),
    pytest.param(problem(100, 120, 72, bias=True), MatmulWgmmaParams(64, 1, 2, 4), BF16,
                 id="partial-MNK-bias-bf16"),
    pytest.param(problem(70, 200, 96, bias=True, nk=True), MatmulWgmmaParams(192, 2, 2, 3), F16,
                 id="NxK-n192-partial-f16"),
    pytest.param(problem(96, 136, 328, bias=True, nk=True), MatmulWgmmaParams(128, 1, 4, 5), BF16,
                 id="NxK-partial-4-producers-bf16"),
    pytest.param(MatmulProblem((2, 3, 40, 64), (3, 64, 48), (2, 3, 40, 48), (48,)), MatmulWgmmaParams(64, 1, 1, 2),
                 F16, id="batch-2x3-rhs-broadcast"),
    pytest.param(MatmulProblem((2, 50, 32), (1, 72, 32), (2, 50, 72), (50, 1), transpose_rhs=True, alpha=0.5,
                               beta=2.0), MatmulWgmmaParams(64, 1, 1, 2), BF16, id="batch-NxK-alpha-beta"),
    pytest.param(problem(64, 64, 1000), MatmulWgmmaParams(64, 1, 2, 3, split_k=3), F16, id="split-k-3-uneven"),
    pytest.param(problem(70, 72, 96, bias=True, nk=True), MatmulWgmmaParams(64, 1, 4, 3, block_k=32), F32,
                 id="tf32-NxK"),
]


@pytest.mark.parametrize(("prob", "params", "element"), CASES)
def test_kernels_match_float64_numpy_on_emu(prob: MatmulProblem, params: MatmulWgmmaParams,
                                            element: Attribute) -> None:
    assert_exact(*run_on_emu(prob, params, element), prob.k)


def test_partial_tiles_copy_with_zero_filling_cp_async() -> None:
    """A chunk past M, N or K is one zero-filling copy whose overhanging source indices are
    clamped by its own condition; full tiles copy unconditionally. (The emu's check build
    cannot run wgmma kernels: its shared arrays carry shadow records, which spread a block's
    tiles past the 256 KiB a descriptor addresses.)"""
    kernel = matmul_wgmma_kernel("mm", problem(72, 80, 88, bias=True), MatmulWgmmaParams(64, 1, 1, 2))
    ModuleOp([kernel]).verify()
    copies = [op for op in kernel.walk() if isinstance(op, tm.CpAsyncOp)]
    assert copies and all(op.inside is not None for op in copies)
    for c in copies:
        clamped = [i.owner for i in c.src_indices if isinstance(i.owner, arith.SelectOp)]
        assert clamped and all(s.cond is c.inside for s in clamped)
    full = matmul_wgmma_kernel("mm", problem(128, 128, 128), MatmulWgmmaParams(64, 1, 1, 2))
    assert all(op.inside is None for op in full.walk() if isinstance(op, tm.CpAsyncOp))


# ---- planted bugs ----------------------------------------------------------------------------

PIPELINE = problem(128, 128, 384)  # 6 k-tiles through 2 or 3 stages: every stage is refilled


@pytest.mark.parametrize("params", [MatmulWgmmaParams(128, 2, 1, 2), MatmulWgmmaParams(128, 1, 2, 3)],
                         ids=["2wg-s2", "1wg-s3"])
def test_a_stage_refilled_before_its_wgmmas_completed_gives_a_wrong_result(params: MatmulWgmmaParams) -> None:
    """Without ``wgmma_wait pending(1)`` a consumer releases a stage whose wgmmas are still
    in flight; the producer refills it, and the wgmmas (performed at the last wait, as
    the hardware may) read the next tiles."""
    c, want = run_on_emu(PIPELINE, params)
    assert_exact(c, want, PIPELINE.k)
    c, want = run_on_emu(PIPELINE, params, drop=("wgmma_wait",))
    assert not np.allclose(c, want, rtol=1e-2, atol=1e-2)


def test_consumers_that_do_not_wait_for_full_read_stale_tiles() -> None:
    """One k-tile (no stage is released, so nothing else is out of step): the wgmmas read
    shared memory before the copies landed."""
    prob = problem(64, 64, 64)
    c, want = run_on_emu(prob, MatmulWgmmaParams(64, 1, 1, 2), drop=("full_wait",))
    assert not np.allclose(c, want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("drop", ["full_wait", "empty_wait"])
def test_a_missing_mbarrier_wait_over_many_tiles_is_caught(drop: str) -> None:
    """With more k-tiles than stages one side laps the other: the barriers' phases run more
    than one ahead and a parity wait never returns -- the emu reports the deadlock (on a GPU
    a hang or a wrong result)."""
    with pytest.raises(EmuError, match="deadlock in block"):
        run_on_emu(PIPELINE, MatmulWgmmaParams(128, 2, 1, 2), drop=(drop,))


# ---- nvcc, sm_90a --------------------------------------------------------------------------

COMPILED = [  # the 4096^3 choice, two consumers with one producer, a small partial tile, tf32
    pytest.param(problem(4096, 4096, 4096), MatmulWgmmaParams(256, 2, 4, 4), F16, id="4096-n256-2wg-4p-s4"),
    pytest.param(problem(4096, 4096, 4096, nk=True), MatmulWgmmaParams(128, 2, 1, 4), BF16, id="NxK-n128-2wg-s4"),
    pytest.param(problem(100, 120, 72, bias=True), MatmulWgmmaParams(64, 1, 2, 4), F16, id="partial-n64"),
    pytest.param(problem(1000, 1000, 1000, nk=True), MatmulWgmmaParams(128, 1, 1, 5, block_k=32), F32,
                 id="tf32-n128"),
]


@needs_nvcc
@pytest.mark.parametrize(("prob", "params", "element"), COMPILED)
def test_candidates_compile_for_sm90a_without_spills_or_stack(prob: MatmulProblem, params: MatmulWgmmaParams,
                                                              element: Attribute) -> None:
    stats = ptxas_stats(lowered(prob, params, element).source, "sm_90a")["mm_wgmma"]
    assert stats.spill_bytes == 0 and stats.local_bytes == 0, stats
    assert stats.registers <= params.register_cap


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize(("prob", "element"), [(problem(4096, 4096, 4096), F16),
                                               (problem(1000, 1000, 1000, nk=True), BF16),
                                               (problem(4096, 4096, 4096, nk=True), F32)],
                         ids=["KxN-f16", "NxK-partial-bf16", "NxK-tf32"])
def test_the_whole_space_compiles_without_spills(prob: MatmulProblem, element: Attribute) -> None:
    space = wgmma_space(WGMMA_TF32 if isinstance(element, Float32Type) else WGMMA_F16)
    for params in space.candidates(prob):
        if params.split_k == 1:
            stats = ptxas_stats(lowered(prob, params, element).source, "sm_90a")["mm_wgmma"]
            assert stats.spill_bytes == 0 and stats.local_bytes == 0, (params, stats)


# ---- the space and the refusals ---------------------------------------------------------------

def test_space_keeps_shared_memory_registers_and_copies_within_limits() -> None:
    prob = problem(4096, 4096, 4096)
    candidates = wgmma_space().candidates(prob)
    assert candidates
    for P in candidates:
        assert P.shared_bytes(prob) <= 227 * 1024
        assert P.register_estimate() <= P.register_cap
        assert P.producer_chunks * (P.stages - 1) <= 256  # the emu's cp.async queue of a thread
    assert MatmulWgmmaParams(256, 2, 4, 4) in candidates
    assert MatmulWgmmaParams(256, 2, 4, 5) not in candidates  # 5 x 48 KiB


def test_register_cap_counts_whole_warpgroups() -> None:
    assert MatmulWgmmaParams(128, 1, 1).register_cap == 255  # 160 threads: two warpgroups
    assert MatmulWgmmaParams(128, 2, 1).register_cap == 168  # 288: three
    assert MatmulWgmmaParams(128, 2, 4).register_cap == 168  # 384


def test_default_params_is_a_valid_candidate() -> None:
    for prob in (problem(4096, 4096, 4096), problem(128, 768, 3072, nk=True), problem(40, 48, 64)):
        P = default_params(prob)
        assert wgmma_space().first_violation(P, prob) is None
    assert default_params(problem(4096, 4096, 4096)).block_n == 256


@pytest.mark.parametrize(("prob", "element", "message"), [
    (MatmulProblem((64, 64), (64, 64), (64, 64), transpose_lhs=True), F16, "A row-major"),
    (problem(64, 64, 60), F16, "K and N multiples of 8"),
    (problem(64, 60, 64, nk=True), BF16, None),
    (problem(64, 64, 64), F32, "only with B stored N x K"),
    (problem(64, 64, 62, nk=True), F32, "needs K multiples of 4"),
])
def test_problems_the_template_refuses(prob: MatmulProblem, element: Attribute, message: str | None) -> None:
    if message is None:
        check_problem(prob, element)  # N need not be a multiple of 8 when B is N x K
        return
    with pytest.raises(NoTemplate, match=message):
        check_problem(prob, element)


def test_bad_params_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match="block_k must be 32 for tf32"):
        matmul_wgmma_kernel("mm", problem(64, 64, 64, nk=True), MatmulWgmmaParams(64, 1, 1, 2), F32)
    with pytest.raises(ValueError, match="producers must be 1, 2 or 4"):
        MatmulWgmmaParams(64, 1, 3)


# ---- structure ---------------------------------------------------------------------------------

def test_roles_barriers_and_waits() -> None:
    """One scf.if on the role, weighted by threads; the consumers' loop waits on full and
    releases the previous stage after wgmma_wait pending(1); the producer's waits on empty
    and announces a tile ``stages - 2`` behind."""
    params = MatmulWgmmaParams(128, 2, 2, 4)
    kernel = matmul_wgmma_kernel("mm", problem(256, 256, 512), params)
    ModuleOp([kernel]).verify()
    roles = [op for op in kernel.walk() if isinstance(op, scf.IfOp) and op.cond.name_hint == "is_consumer"]
    assert len(roles) == 2  # the loops, then the epilogue (split-K's reduction between them)
    assert list(roles[0].attributes["tm.branch_weights"].get_values()) == [256, 64]
    consumer, producer = (list(r.walk()) for r in (roles[0].true_region, roles[0].false_region))
    assert [op.pending.data for op in consumer if isinstance(op, tm.WgmmaWaitOp)] == [1, 0]
    assert sum(isinstance(op, tm.WgmmaOp) for op in consumer) == 4  # 64 / 16 k-steps a tile
    assert [op.pending.data for op in producer if isinstance(op, tm.CpAsyncWaitOp)] == [params.stages - 2]
    assert any(isinstance(op, tm.FenceProxyAsyncOp) for op in producer)
    for ops, waited, arrived in ((consumer, "full", "empty"), (producer, "empty", "full")):
        assert {op.bar.name_hint for op in ops if isinstance(op, tm.MbarrierWaitOp)} == {waited}
        assert {op.bar.name_hint for op in ops if isinstance(op, tm.MbarrierArriveOp)} == {arrived}
    inits = [op for op in kernel.walk() if isinstance(op, tm.MbarrierInitOp)]
    assert sorted((op.bar.name_hint, op.count.data) for op in inits) == [("empty", 256)] * 4 + [("full", 64)] * 4


@pytest.mark.parametrize(("prob", "params"), [
    (problem(256, 256, 512), MatmulWgmmaParams(128, 2, 2, 4)),
    (problem(64, 64, 1000), MatmulWgmmaParams(64, 1, 2, 3, split_k=3)),
], ids=["2wg", "split-k-uneven"])
def test_cost_counts_each_role_for_its_threads(prob: MatmulProblem, params: MatmulWgmmaParams) -> None:
    """The cost report's counts: the padded tiles' wgmma FLOPs and each operand tile loaded
    once per output tile (the role branch and the producer's k-tiles carry their weights)."""
    from tmlir.backends.kernel_counts import kernel_facts
    from tmlir.dialects import tmgpu

    module = ModuleOp([matmul_wgmma_kernel("mm", prob, params)])
    ctx = make_context()
    for p in (TmLowerMappings(), ConvertTmToGpu(), ArithSimplify()):
        p.apply(ctx, module)
    facts = kernel_facts(next(op for op in module.walk() if isinstance(op, tmgpu.KernelOp)))
    threads = params.threads * params.blocks(prob)
    k = math.ceil(prob.k / params.block_k) * params.block_k
    tiles_m, tiles_n = params.tile_grid(prob)[1:]
    assert facts.accesses("tensor_flops")["f16"] * threads == 2 * params.tile_count(prob) * params.block_m \
        * params.block_n * k
    loads = facts.accesses("load")
    assert loads[0] * threads == tiles_n * tiles_m * params.block_m * k
    assert loads[1] * threads == tiles_m * tiles_n * params.block_n * k


FUSED_RELU_EPILOGUE = """
func.func @f(%x: tensor<72x88xf16>, %w: tensor<88x80xf16>, %b: tensor<80xf32>) -> tensor<72x80xf32> {
  %y = graph.fused -> tensor<72x80xf32> {
    %m = graph.matmul %x, %w, %b : (tensor<72x88xf16>, tensor<88x80xf16>, tensor<80xf32>) -> tensor<72x80xf32>
    %r = graph.relu %m : tensor<72x80xf32>
    graph.yield %r : tensor<72x80xf32>
  }
  func.return %y : tensor<72x80xf32>
}
"""


def test_a_fused_epilogue_rewrites_the_stores_of_c() -> None:
    """The epilogue contract: post-scheduling fusion rewrites the template's tm.store of C
    (relu after the bias), and the fused kernel is exact on emu."""
    from xdsl.parser import Parser

    from tmlir.dialects import graph
    from tmlir.schedules.fusion import fuse_group

    ctx = make_context()
    fused_op = next(op for op in Parser(ctx, FUSED_RELU_EPILOGUE).parse_module().walk()
                    if isinstance(op, graph.FusedOp))
    prob, params = problem(72, 80, 88, bias=True), MatmulWgmmaParams(64, 1, 1, 3)
    kernel = fuse_group(matmul_wgmma_kernel("mm_wgmma", prob, params), fused_op.members, fused_op.yielded).kernel
    module = ModuleOp([kernel])
    module.verify()
    for p in (TmLowerMappings(), ConvertTmToGpu(), ArithSimplify()):
        p.apply(ctx, module)
    program = emit_cuda(module, "sm_90a")
    rng = np.random.default_rng(7)
    x, w = (rng.standard_normal(s).astype(np.float16) for s in ((72, 88), (88, 80)))
    bias = rng.standard_normal(80).astype(np.float32)
    y = np.full((72, 80), np.nan, np.float32)
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        emu.launch("mm_wgmma", params.blocks(prob), params.threads, [x, w, bias, y],
                   program.kernels[0].dynamic_shared_bytes)
    want = np.maximum(x.astype(np.float64) @ w.astype(np.float64) + bias, 0)
    assert_exact(y, want, prob.k)
