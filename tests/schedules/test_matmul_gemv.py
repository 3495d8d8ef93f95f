"""The small-M matmul template (GEMV) and its space: candidates run on emu against numpy
(float64) for both layouts of B, with 1, 3 and 16 rows, tails along N and K, bias, alpha,
beta and a folded batch; the space's constraints and default; the default's resources
from ptxas. Whole spaces run under ``-m slow``; candidates of a shape are compiled as one
emu module."""

from __future__ import annotations

import random
import shutil

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import compile_ptx, ptxas_stats
from tmlir.dialects import tm
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.matmul_gemv import (
    MATMUL_GEMV_SPACE,
    MatmulGemvParams,
    layout_of,
    matmul_gemv_kernel,
    takes,
)
from tmlir.schedules.matmul_simt import MatmulProblem

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
RTOL = 1e-5


def problem(m: int, n: int, k: int, layout: str, bias: bool = True, **kw) -> MatmulProblem:
    """``C[m, n] = alpha * A[m, k] @ B + beta * bias[n]``, B stored ``N x K`` (nk) or
    ``K x N`` (kn)."""
    rhs = (n, k) if layout == "nk" else (k, n)
    return MatmulProblem((m, k), rhs, (m, n), (n,) if bias else None, transpose_rhs=layout == "nk", **kw)


def relative_errors(p: MatmulProblem, candidates: list[MatmulGemvParams], seed: int = 0,
                    check: bool = False) -> list[float]:
    """Run every candidate's kernel (one emu module) on the same random operands; per
    candidate max |C - reference| / max |reference|, the reference in float64. C starts as
    NaN: every element must be written."""
    kernels = [matmul_gemv_kernel(f"gemv_{i}", p, c) for i, c in enumerate(candidates)]
    module = ModuleOp(kernels)
    module.verify()
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(p.lhs_shape).astype(np.float32)
    b = rng.standard_normal(p.rhs_shape).astype(np.float32)
    bias = rng.standard_normal(p.bias_shape).astype(np.float32) if p.bias_shape else None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if p.transpose_lhs:
        a64 = np.swapaxes(a64, -1, -2)
    if p.transpose_rhs:
        b64 = np.swapaxes(b64, -1, -2)
    want = p.alpha * (a64 @ b64)
    if bias is not None:
        want = want + p.beta * bias.astype(np.float64)
    errors = []
    with compile_emu(program.source, [k.signature for k in program.kernels], check) as emu:
        for kernel in kernels:
            c = np.full(p.out_shape, np.nan, np.float32)
            emu.launch(kernel.sym_name.data, kernel.grid.data, kernel.block.data,
                       [a, b, *([bias] if bias is not None else []), c])
            errors.append(float(np.abs(c - want).max() / np.abs(want).max()))
    return errors


def sample(p: MatmulProblem, count: int, seed: int) -> list[MatmulGemvParams]:
    """`count` candidates drawn with a fixed seed, plus the default one."""
    candidates = MATMUL_GEMV_SPACE.candidates(p)
    picked = random.Random(seed).sample(candidates, min(count, len(candidates)))
    default = MatmulGemvParams.default_for(p)
    return picked + ([default] if default not in picked else [])


SHAPES = [  # (m, n, k): N and K tails (odd N; K % 4 == 0 so vectors apply, or odd: scalars)
    (1, 37, 1028), (3, 37, 1028), (16, 20, 260), (3, 41, 77),
]


@pytest.mark.parametrize("layout", ["nk", "kn"])
@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_sampled_candidates_match_numpy(shape, layout):
    p = problem(*shape, layout, alpha=0.5, beta=2.0)
    candidates = sample(p, 5, seed=sum(shape))
    errors = relative_errors(p, candidates)
    assert max(errors) < RTOL, [(c, e) for c, e in zip(candidates, errors) if e >= RTOL]


@pytest.mark.parametrize("layout", ["nk", "kn"])
def test_folded_batch_and_broadcast_bias(layout):
    """A ``2 x 3 x K`` A against an unbatched B is 6 rows; the bias broadcasts per row."""
    lhs, rhs = (2, 3, 68), ((29, 68) if layout == "nk" else (68, 29))
    p = MatmulProblem(lhs, rhs, (2, 3, 29), (3, 1), transpose_rhs=layout == "nk")
    assert takes(p)
    assert max(relative_errors(p, sample(p, 3, seed=1), check=True)) < RTOL


@pytest.mark.parametrize("layout", ["nk", "kn"])
def test_transposed_a(layout):
    """A stored ``K x M`` (Gemm transA): read element by element."""
    rhs = (33, 64) if layout == "nk" else (64, 33)
    p = MatmulProblem((64, 5), rhs, (5, 33), None, transpose_lhs=True, transpose_rhs=layout == "nk")
    assert max(relative_errors(p, sample(p, 3, seed=2))) < RTOL


def test_sanitizer_passes_every_default():
    """Bounds and alignment of every vector, and shared-memory races, on both layouts."""
    for layout in ("nk", "kn"):
        for shape in ((1, 37, 1028), (16, 20, 260)):
            p = problem(*shape, layout)
            assert max(relative_errors(p, [MatmulGemvParams.default_for(p)], check=True)) < RTOL


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["nk", "kn"])
@pytest.mark.parametrize("shape", [(1, 37, 1028), (16, 37, 1028), (3, 260, 77), (16, 260, 77)],
                         ids=["1x37x1028", "16x37x1028", "3x260x77", "16x260x77"])
def test_whole_space(shape, layout):
    """K = 1028 (tails of k-steps) with vectors along K (nk) and N = 37 with scalars (kn);
    N = 260 with vectors along N (kn) and K = 77 with scalars (nk)."""
    p = problem(*shape, layout, alpha=0.5, beta=2.0)
    candidates = MATMUL_GEMV_SPACE.candidates(p)
    errors = relative_errors(p, candidates)
    assert max(errors) < RTOL, [(c, e) for c, e in zip(candidates, errors) if e >= RTOL]


def test_takes_small_unbatched_problems():
    assert takes(problem(16, 10, 10, "kn")) and not takes(problem(17, 10, 10, "kn"))
    assert takes(MatmulProblem((4, 1, 8), (8, 5), (4, 1, 5)))  # a batch of 4 rows
    assert not takes(MatmulProblem((2, 1, 8), (2, 8, 5), (2, 1, 5)))  # B batched
    assert takes(MatmulProblem((2, 1, 8), (1, 8, 5), (2, 1, 5)))  # B's batch dim is 1


def test_space_constraints():
    for layout in ("nk", "kn"):
        p = problem(16, 4096, 4096, layout)
        candidates = MATMUL_GEMV_SPACE.candidates(p)
        assert 40 <= len(candidates) <= 200 and len(set(candidates)) == len(candidates)
        for c in candidates:
            assert c.shared_bytes(p) <= 48 * 1024 and c.register_estimate(p) <= 255
            across = c.block_n * 32 if layout == "nk" else c.column_threads(p)  # threads along N
            assert c.k_slices(p) * across == c.threads
        rejected = MATMUL_GEMV_SPACE.rejections(p)
        assert sum(rejected.values()) + len(candidates) == MATMUL_GEMV_SPACE.size
    odd = problem(1, 100, 77, "nk")  # K % 4 != 0: scalars only
    assert {c.vector for c in MATMUL_GEMV_SPACE.candidates(odd)} == {1}
    assert {c.vector for c in MATMUL_GEMV_SPACE.candidates(problem(1, 77, 100, "nk"))} == {1, 4}
    assert {c.vector for c in MATMUL_GEMV_SPACE.candidates(problem(1, 77, 100, "kn"))} == {1}
    assert MATMUL_GEMV_SPACE.candidates(problem(1, 1, 1, "kn"))  # never empty


@pytest.mark.parametrize(("shape", "layout", "expected"), [
    ((1, 4096, 4096), "nk", MatmulGemvParams(8, 4, 4, 8)),  # 512 blocks, 8 k-steps
    ((1, 768, 768), "nk", MatmulGemvParams(8, 4, 1, 2)),  # 4 warps per column: 384 blocks
    ((16, 4096, 4096), "nk", MatmulGemvParams(8, 4, 4, 8)),  # 16 rows: A element by element
    ((1, 4096, 4096), "kn", MatmulGemvParams(16, 4, 8, 16)),  # 256 blocks of 16 warps: 1024 threads per SM
    ((1, 1000, 2048), "kn", MatmulGemvParams(16, 4, 8, 8)),  # 125 blocks: 16 warps each
    ((1, 1001, 4096), "kn", MatmulGemvParams(16, 1, 8, 8)),  # N % 4 != 0: scalars
    ((1, 1001, 64), "kn", MatmulGemvParams(16, 1, 1, 8)),  # 64 threads split K = 64: unroll 1
])
def test_default_choice(shape, layout, expected):
    p = problem(*shape, layout)
    assert MatmulGemvParams.default_for(p) == expected
    assert expected in MATMUL_GEMV_SPACE.candidates(p)


def test_kernel_header_lists_the_serial_steps():
    p = problem(1, 4096, 4096, "nk")
    kernel = matmul_gemv_kernel("gemv", p, MatmulGemvParams.default_for(p))
    params = {k: v.value.data if hasattr(v, "value") else v.data
              for k, v in kernel.attributes["tm.params"].data.items()}
    assert params == {"M": 1, "N": 4096, "K": 4096, "layout": "nk", "block_m": 1, "block_n": 8,
                      "block_k": 512, "threads": 256, "warps": 8, "vector": 4, "unroll": 4,
                      "k_slices": 1, "k_steps": 8, "loads_in_flight": 4, "stages": 1, "split_k": 1}
    assert kernel.grid.data == 512 and layout_of(p) == "nk"
    assert sum(isinstance(op, tm.LoadVectorOp) for op in kernel.walk()) == 2  # a vector of B, one of A


def test_prologue_operands_are_read_element_by_element():
    p = problem(2, 64, 64, "nk")
    plain = matmul_gemv_kernel("g", p, MatmulGemvParams.default_for(p))
    fused_a = matmul_gemv_kernel("g", p, MatmulGemvParams.default_for(p), prologue=[0])
    vectors = [sum(isinstance(op, tm.LoadVectorOp) and op.memref is k.args[0] for op in k.walk())
               for k in (plain, fused_a)]
    assert vectors[0] > 0 and vectors[1] == 0


def test_a_in_vectors_up_to_eight_rows():
    """nk reads A in vectors up to VECTOR_A_ROWS rows (ptxas would hold all rows' vectors in
    registers beyond), element by element past them."""
    from tmlir.schedules.matmul_gemv_params import VECTOR_A_ROWS

    for rows, vectors in ((VECTOR_A_ROWS, True), (VECTOR_A_ROWS + 1, False)):
        p = problem(rows, 64, 256, "nk")
        kernel = matmul_gemv_kernel("g", p, MatmulGemvParams.default_for(p))
        assert any(isinstance(op, tm.LoadVectorOp) and op.memref is kernel.args[0]
                   for op in kernel.walk()) == vectors


def test_candidate_outside_the_space_is_refused():
    p = problem(1, 64, 77, "nk")  # K % 4 != 0
    with pytest.raises(ValueError, match="breaks the constraint 'vector divides the contiguous dimension'"):
        matmul_gemv_kernel("g", p, MatmulGemvParams(8, 4, 1, 8))
    with pytest.raises(ValueError, match="matmul_gemv takes at most 16 rows"):
        matmul_gemv_kernel("g", problem(17, 64, 64, "nk"), MatmulGemvParams(8, 1, 1, 8))


DEFAULT_SHAPES = [(1, 4096, 4096), (1, 768, 768), (1, 1000, 2048), (16, 4096, 4096)]


@needs_nvcc
@pytest.mark.parametrize("layout", ["nk", "kn"])
def test_defaults_do_not_spill(layout):
    """ptxas for sm_80 and sm_90: no spills, no local memory; shared memory as planned; the
    vector loads of B are 128-bit (``ld.global.nc.v4.f32`` in the PTX: LDG.E.128)."""
    kernels = {}
    for i, shape in enumerate(DEFAULT_SHAPES):
        p = problem(*shape, layout)
        kernels[f"gemv_{i}"] = (p, MatmulGemvParams.default_for(p))
    module = ModuleOp([matmul_gemv_kernel(name, p, c) for name, (p, c) in kernels.items()])
    LowerToCuda().apply(make_context(), module)
    source = emit_cuda(module).source
    for arch in ("sm_80", "sm_90"):
        ptx = compile_ptx(source, arch)  # NVRTC where it is installed
        assert ptx.count("ld.global.nc.v4.f32") >= len(kernels)
        stats = ptxas_stats(source, arch)
        for name, (p, c) in kernels.items():
            s = stats[name]
            assert s.spill_bytes == 0 and s.local_bytes == 0, (arch, name, s)
            assert 0 < s.registers <= 160 and s.shared_bytes == c.shared_bytes(p), (arch, name, s)


FUSED_RELU_PROLOGUE = """
func.func @f(%x: tensor<3x64xf32>, %w: tensor<20x64xf32>) -> tensor<3x20xf32> {
  %y = graph.fused -> tensor<3x20xf32> {
    %r = graph.relu %x : tensor<3x64xf32>
    %m = graph.matmul %r, %w {transpose_rhs} : (tensor<3x64xf32>, tensor<20x64xf32>) -> tensor<3x20xf32>
    graph.yield %m : tensor<3x20xf32>
  }
  func.return %y : tensor<3x20xf32>
}
"""


def test_fusion_splits_vector_loads_of_a_prologue_operand():
    """A kernel built as if A had no prologue reads it in vectors; fusing relu into A splits
    those into element loads, each computing relu of its element (and stays exact)."""
    from xdsl.parser import Parser

    from tmlir.dialects import graph
    from tmlir.schedules.fusion import fuse_group

    ctx = make_context()
    fused_op = next(op for op in Parser(ctx, FUSED_RELU_PROLOGUE).parse_module().walk()
                    if isinstance(op, graph.FusedOp))
    p = problem(3, 20, 64, "nk", bias=False)
    kernel = matmul_gemv_kernel("gemv_0", p, MatmulGemvParams.default_for(p))  # no prologue named
    a_vectors = [op for op in kernel.walk() if isinstance(op, tm.LoadVectorOp) and op.memref is kernel.args[0]]
    assert a_vectors
    fused = fuse_group(kernel, fused_op.members, fused_op.yielded).kernel
    assert not any(isinstance(op, tm.LoadVectorOp) and op.memref is fused.args[0] for op in fused.walk())
    assert any(isinstance(op, tm.LoadVectorOp) and op.memref is fused.args[1] for op in fused.walk())
    module = ModuleOp([fused])
    module.verify()
    LowerToCuda().apply(ctx, module)
    program = emit_cuda(module)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((3, 64)).astype(np.float32), rng.standard_normal((20, 64)).astype(np.float32)
    y = np.full((3, 20), np.nan, np.float32)
    with compile_emu(program.source, [k.signature for k in program.kernels], True) as emu:
        emu.launch("gemv_0", fused.grid.data, fused.block.data, [x, w, y])
    want = np.maximum(x.astype(np.float64), 0) @ w.astype(np.float64).T
    assert np.abs(y - want).max() / np.abs(want).max() < RTOL


GEMV_4096 = """
func.func @gemv(%x: tensor<1x4096xf32>) -> tensor<1x4096xf32> attributes {tm.inputs = ["x"], tm.outputs = ["y"]} {
  %w = graph.weight "w" : tensor<4096x4096xf32>
  %y = graph.matmul %x, %w {transpose_rhs} : (tensor<1x4096xf32>, tensor<4096x4096xf32>) -> tensor<1x4096xf32>
  %w2 = graph.weight "w2" : tensor<4096x4096xf32>
  %z = graph.matmul %y, %w2 : (tensor<1x4096xf32>, tensor<4096x4096xf32>) -> tensor<1x4096xf32>
  func.return %z : tensor<1x4096xf32>
}
"""


def test_cost_report_counts_b_once():
    """1 x 4096 x 4096 in both layouts: B's 64 MiB read once (each 16-byte load counts 4
    elements), A's 16 KiB, C's 16 KiB written."""
    from xdsl.parser import Parser

    from tmlir.backends.cost import cost_report

    ctx = make_context()
    module = Parser(ctx, GEMV_4096).parse_module()
    LowerToCuda().apply(ctx, module)
    launches = cost_report(module).launches
    assert [k.template for k in launches] == ["matmul_gemv"] * 2
    for k in launches:
        assert k.bytes_read == 4096 * 4096 * 4 + 4096 * 4 and k.bytes_written == 4096 * 4
        assert k.flops >= 2 * 4096 * 4096
