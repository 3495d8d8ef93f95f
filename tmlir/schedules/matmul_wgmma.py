"""The Hopper matmul template: ``C = alpha * A @ op(B) + beta * bias`` on ``wgmma`` (sm_90a).

In: a `MatmulProblem` (A row-major ``[..., M, K]``; B ``[..., K, N]``, or ``[..., N, K]``
with ``transpose_rhs``; batch dims broadcast as numpy does; f16 or bf16 operands, or f32
run as tf32 with B stored ``N x K``; an f32 bias that broadcasts to C) and
`MatmulWgmmaParams`. Out: a ``tm.kernel`` ``(A, B, [bias,] C)`` with f32 C -- the kernel
signature and epilogue contract of ``matmul_tc``: the epilogue (alpha, bias, beta, the
store of C) is plain ``tm.load``/``tm.store`` of each element, so fused epilogues and f16
results work as for every template. The GEMM itself is the wgmma engine's
(``wgmma_gemm.py``: consumer warpgroups on wgmma, producer warps filling a ring of
swizzled shared k-tiles by ``cp.async``, mbarriers between them).

What it does not take (`check_problem` raises `NoTemplate` naming it, and a caller falls
back to ``matmul_tc``): a transposed A; K (and N for a ``K x N`` B) not a multiple of a
16-byte chunk (8 halves, 4 floats); f32 (tf32) with a ``K x N`` B (tf32 wgmma reads K-major
tiles only); and fused prologues (an operand computed by ``tm.load``: the copies are dense
``cp.async`` only). The kernel needs sm_90a (wgmma exists only there).

The parameters form a space (`wgmma_space` in ``matmul_wgmma_params.py``); `default_params`
is the candidate the latency model (``wgmma_kloop.py``) estimates fastest on an H100.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, MemRefType
from xdsl.ir import Attribute, SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import max_shared_bytes
from tmlir.gpus import gpu
from tmlir.ir.builder import Index, IRBuilder
from tmlir.latency import estimate
from tmlir.schedules.common import broadcast_index, kernel_attributes, name_args
from tmlir.schedules.gemm import MatmulProblem, store_result
from tmlir.schedules.matmul_wgmma_params import MatmulWgmmaParams, wgmma_element, wgmma_space
from tmlir.schedules.registry import NoTemplate
from tmlir.schedules.tc_gemm import TcOperand, TcOperands
from tmlir.schedules.wgmma_gemm import wgmma_gemm
from tmlir.schedules.wgmma_kloop import wgmma_launch

__all__ = ["TEMPLATE", "check_problem", "default_params", "matmul_wgmma_kernel"]

TEMPLATE = "matmul_wgmma"
"""The template's name (``tm.template`` of its kernels, the latency model's key)."""


def check_problem(problem: MatmulProblem, element: Attribute) -> None:
    """`NoTemplate` naming what the template does not cover in `problem`."""
    p = problem
    shape = f"{p.m}x{p.n}x{p.k} (MxNxK)"
    if not isinstance(element, Float16Type | BFloat16Type | Float32Type):
        raise NoTemplate(f"{TEMPLATE} takes f16, bf16 or f32 (tf32) operands, got {element}")
    if p.transpose_lhs:
        raise NoTemplate(f"{TEMPLATE} takes A row-major (M x K), not transposed")
    E = wgmma_element(element)
    if not E.mn_major_b and not p.transpose_rhs:
        raise NoTemplate(f"{TEMPLATE} takes f32 (tf32) operands only with B stored N x K (tf32 wgmma reads "
                         "K-major tiles)")
    if p.k % E.chunk or (p.n % E.chunk and not p.transpose_rhs):
        needs = "K" if p.transpose_rhs else "K and N"
        raise NoTemplate(f"{TEMPLATE} needs {needs} multiples of {E.chunk} (16-byte copies of {element}), "
                         f"got {shape}")


def matmul_wgmma_kernel(name: str, problem: MatmulProblem, params: MatmulWgmmaParams,
                        element: Attribute = Float16Type(), *, drop: Collection[str] = ()) -> tm.KernelOp:
    """The kernel ``(A, B, [bias,] C)`` for `problem` with `params`; A and B of `element`,
    bias and C f32. ValueError for params whose tiles overflow a block's shared memory on
    sm_90a or whose k-tile is not one 128-byte row. `drop` leaves out waits (planted bugs,
    ``wgmma_gemm.DROPPABLE_WAITS``)."""
    check_problem(problem, element)
    p, P, E = problem, params, wgmma_element(element)
    size, limit = P.shared_bytes(p, E), max_shared_bytes("sm_90")
    if size > limit:
        raise ValueError(f"{TEMPLATE} tiles {P.block_m}x{P.block_n}x{P.block_k} in {P.stages} stages take "
                         f"{size} bytes of shared memory for {element} operands, over the {limit} of sm_90a")
    f32 = Float32Type()
    arg_types = [MemRefType(element, list(p.lhs_shape)), MemRefType(element, list(p.rhs_shape)),
                 *([MemRefType(f32, list(p.bias_shape))] if p.bias_shape else []),
                 MemRefType(f32, list(p.out_shape))]
    kernel = tm.KernelOp(name, arg_types, P.blocks(p), P.threads, kernel_attributes(
        TEMPLATE, {**P.describe(), "dtype": E.dtype, "M": p.m, "N": p.n, "K": p.k}))
    name_args(kernel, ["A", "B", *(["bias"] if p.bias_shape else []), "C"])
    a, bmat, *rest = kernel.args
    bias, c = (rest[0], rest[1]) if p.bias_shape else (None, rest[0])
    rank = len(p.out_shape)
    guarded_out = {d for d, g in ((rank - 2, p.m % P.block_m), (rank - 1, p.n % P.block_n)) if g}

    def block_operands(b: IRBuilder, batch_coords: Sequence[Index]) -> TcOperands:
        a_batch = broadcast_index(batch_coords, p.batch_shape, p.lhs_shape[:-2])
        b_batch = broadcast_index(batch_coords, p.batch_shape, p.rhs_shape[:-2])

        def a_index(row: Index, k: Index) -> list[Index]:
            return [*a_batch, row, k]

        def b_index(col: Index, k: Index) -> list[Index]:
            return [*b_batch, *((col, k) if p.transpose_rhs else (k, col))]

        def store_c(row: Index, col: Index, value: SSAValue) -> None:
            store_result(b, p, c, bias, [*batch_coords, row, col], value, guarded_out, f32)

        return TcOperands(TcOperand(True, a, a_index), TcOperand(p.transpose_rhs, bmat, b_index), store_c)

    wgmma_gemm(kernel, p, P, element, block_operands, drop=drop)
    return kernel


def default_params(problem: MatmulProblem, element: Attribute | str = "f16") -> MatmulWgmmaParams:
    """The candidate used without tuning: of the space's valid candidates for `problem`, the
    one the latency model estimates fastest on an H100 (the first of equals); NoTemplate
    when none is valid."""
    E = wgmma_element(element)
    candidates = wgmma_space(E).candidates(problem)
    if not candidates:
        raise NoTemplate(f"no {TEMPLATE} candidate fits {problem.m}x{problem.n}x{problem.k}")
    h100 = gpu("H100")
    scored = [(estimate(wgmma_launch(problem, P, E.dtype), h100).seconds, i, P) for i, P in enumerate(candidates)]
    return min(scored, key=lambda s: (s[0], s[1]))[2]
