"""The tensor-core matmul template: ``C = alpha * A @ op(B) + beta * bias`` on f16/bf16,
or on f32 with TF32 mma.

In: a `MatmulProblem` (A row-major ``[..., M, K]``; B ``[..., K, N]``, or ``[..., N, K]``
with ``transpose_rhs``; batch dims broadcast as numpy does; f16, bf16 or f32 operands,
both the same; an f32 bias that broadcasts to C) and `MatmulTcParams`. Out: a ``tm.kernel``
``(A, B, [bias,] C)`` with f32 C, built by the tensor-core GEMM engine (``tc_gemm.py``:
block/warp/mma tiling -- m16n8k16, or m16n8k8 tf32 for f32 operands, which the mma rounds
to a 10-bit mantissa --, a ``stages``-deep ``cp.async`` pipeline, ``ldmatrix`` from padded
shared tiles). Which f32 matmuls take it is the graph's choice (the ``tf32`` attribute,
``graph-mixed-precision{dtype=tf32}``); the kernel of f32 operands is always TF32.

A and B are copied 16 bytes at a time straight into shared memory by ``cp.async``, except
an operand named in `gathered`: its elements are read with ``tm.load`` (0 past its end)
and stored into the shared tile by the threads, so that a fused prologue (a cast, a
transpose, an activation before the matmul: ``convert-graph-to-tm`` names the operands
that have one) can compute them. The epilogue -- alpha, bias, beta, the store of C -- is
plain ``tm.load``/``tm.store``, so f16 results (``half_arguments``) and fused epilogues
work as for every template.

Partial tiles: a 16-byte chunk past M, N or K is not copied; the thread stores 8 zeros (4
for f32) there instead. This needs K (and N when B is ``K x N``) to be a multiple of 8 (4
for f32: a chunk is all in or all out): other shapes raise `NoTemplate` naming the shape,
as does a transposed A, and ``kernel_for`` then builds the SIMT template. The parameters
form a space, declared at the end of this file (`tc_space`: one per element geometry --
f32 tiles take twice the shared memory -- and arch, whose opt-in shared memory per block
bounds the stages and tiles; ``MATMUL_TC_SPACE`` and ``MATMUL_TC_TF32_SPACE`` where no
arch is named); the latency model picks one without tuning (``model_choice.default_of``),
`default_params` is the template's own rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, MemRefType
from xdsl.ir import Attribute, SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import MAX_REGISTERS_PER_THREAD, max_shared_bytes
from tmlir.ir.builder import Index, IRBuilder
from tmlir.schedules.common import broadcast_index, kernel_attributes, name_args
from tmlir.schedules.gemm import store_result
from tmlir.schedules.matmul_simt import REFERENCE_SMS, MatmulProblem
from tmlir.schedules.registry import NoTemplate
from tmlir.schedules.space import Constraint, Param, Space
from tmlir.schedules.split_k import SPLIT_K_CHOICES, split_k_constraints
from tmlir.schedules.tc_gemm import (
    MMA_K,
    MMA_M,
    MMA_N,
    TC_F16,
    TC_TF32,
    MatmulTcParams,
    TcElement,
    TcOperand,
    TcOperands,
    check_shared_memory,
    tc_element,
    tc_gemm,
)

__all__ = ["MATMUL_TC_SPACE", "MATMUL_TC_TF32_SPACE", "MatmulTcParams", "check_problem", "default_params",
           "matmul_tc_kernel", "tc_space"]

def check_problem(problem: MatmulProblem, element: Attribute) -> None:
    """`NoTemplate` naming what the template does not cover in `problem`."""
    p = problem
    shape = f"{p.m}x{p.n}x{p.k} (MxNxK)"
    if not isinstance(element, Float16Type | BFloat16Type | Float32Type):
        raise NoTemplate(f"the tensor-core matmul takes f16, bf16 or f32 (tf32) operands, got {element}")
    if p.transpose_lhs:
        raise NoTemplate("the tensor-core matmul takes A row-major (M x K), not transposed")
    chunk = tc_element(element).chunk
    if p.k % chunk or (p.n % chunk and not p.transpose_rhs):
        needs = "K" if p.transpose_rhs else "K and N"
        raise NoTemplate(f"the tensor-core matmul needs {needs} multiples of {chunk} (16-byte "
                         f"copies of {element}), got {shape}")


def matmul_tc_kernel(name: str, problem: MatmulProblem, params: MatmulTcParams,
                     element: Attribute = Float16Type(), *, wait: bool = True,
                     gathered: Collection[int] = ()) -> tm.KernelOp:
    """The kernel ``(A, B, [bias,] C)`` for `problem` with `params`; A and B of `element`
    (f16 or bf16; f32: TF32 mma), bias and C f32. The operands in `gathered` (0: A, 1: B)
    are read with ``tm.load`` (for a fused prologue) instead of ``cp.async``. ValueError
    for params whose tiles overflow the shared memory of every GPU (`check_shared_memory`). `wait=False` leaves out the
    ``cp_async_wait`` of every k-step (a planted race, for tests)."""
    check_problem(problem, element)
    p, P, E = problem, params, tc_element(element)
    check_shared_memory("matmul_tc", P, p, element)
    f32 = Float32Type()
    arg_types = [MemRefType(element, list(p.lhs_shape)), MemRefType(element, list(p.rhs_shape)),
                 *([MemRefType(f32, list(p.bias_shape))] if p.bias_shape else []),
                 MemRefType(f32, list(p.out_shape))]
    kernel = tm.KernelOp(name, arg_types, P.blocks(p), P.threads, kernel_attributes(
        "matmul_tc", {**P.describe(), "dtype": E.mma_dtype, "M": p.m, "N": p.n, "K": p.k}))
    name_args(kernel, ["A", "B", *(["bias"] if p.bias_shape else []), "C"])
    a, bmat, *rest = kernel.args
    bias, c = (rest[0], rest[1]) if p.bias_shape else (None, rest[0])
    rank = len(p.out_shape)
    guarded_out = {d for d, g in ((rank - 2, p.m % P.block_m), (rank - 1, p.n % P.block_n)) if g}

    def block_operands(b: IRBuilder, batch_coords: Sequence[Index]) -> TcOperands:
        a_batch = broadcast_index(batch_coords, p.batch_shape, p.lhs_shape[:-2])
        b_batch = broadcast_index(batch_coords, p.batch_shape, p.rhs_shape[:-2])

        def b_index(col: Index, k: Index) -> list[Index]:
            return [*b_batch, *((col, k) if p.transpose_rhs else (k, col))]

        def store_c(row: Index, col: Index, value: SSAValue) -> None:
            store_result(b, p, c, bias, [*batch_coords, row, col], value, guarded_out, f32)

        def a_index(row: Index, k: Index) -> list[Index]:
            return [*a_batch, row, k]

        def operand(k_major: bool, buffer: SSAValue, index: Callable[[Index, Index], list[Index]],
                    outer_extent: int, outer_tile: int, gather: bool) -> TcOperand:
            if not gather:
                return TcOperand(k_major, buffer, index)

            def load(outer: Index, k: Index) -> SSAValue:  # 0 past the operand's end
                inside = b.all_of([b.lt(g, n) for g, n, tile in ((outer, outer_extent, outer_tile),
                                                                  (k, p.k, P.block_k)) if n % tile])
                return b.load_if(inside, buffer, index(outer, k))
            return TcOperand(k_major, load=load)

        return TcOperands(operand(True, a, a_index, p.m, P.block_m, 0 in gathered),
                          operand(p.transpose_rhs, bmat, b_index, p.n, P.block_n, 1 in gathered), store_c)

    tc_gemm(kernel, p, P, element, block_operands, wait=wait)
    return kernel


#: Candidates `default_params` tries, largest tile first (none splits K).
DEFAULT_PREFERENCES = (
    MatmulTcParams(128, 128, 32, (2, 4), 2),
    MatmulTcParams(128, 64, 32, (2, 2), 3),
    MatmulTcParams(64, 128, 32, (2, 2), 3),
    MatmulTcParams(64, 64, 32, (2, 2), 3),
    MatmulTcParams(64, 64, 16, (2, 2), 4),
)


def default_params(problem: MatmulProblem, element: Attribute | str = "f16") -> MatmulTcParams:
    """The candidate used without tuning for operands of `element` (an element type, or
    its name: ``f16``, ``bf16``, ``f32``/``tf32``): the largest tile of
    `DEFAULT_PREFERENCES` that is valid and still gives every SM of the reference GPU a
    block, else the valid preference with the most blocks (the smallest tile among equals)."""
    space = tc_space(element)
    valid = [P for P in DEFAULT_PREFERENCES if space.first_violation(P, problem) is None]
    if not valid:  # every preference breaks a constraint: the space's first candidate
        candidates = space.candidates(problem)
        if not candidates:
            raise NoTemplate(f"no tensor-core matmul candidate fits {problem.m}x{problem.n}x{problem.k}")
        return candidates[0]
    fewest_idle = max(valid, key=lambda P: (P.blocks(problem), -P.block_m * P.block_n))
    return next((P for P in valid if P.blocks(problem) >= REFERENCE_SMS), fewest_idle)


# ----------------------------------------------------------------------------- the space


def _copies_even(E: TcElement) -> Callable[[MatmulTcParams, MatmulProblem], bool]:
    """Every thread copies the same number of 16-byte chunks of each tile."""
    def holds(P: MatmulTcParams, p: MatmulProblem) -> bool:
        return all((rows * cols // E.chunk) % P.threads == 0 and P.threads % (cols // E.chunk) == 0
                   for rows, cols in P.tiles(p))
    return holds


def _fits_problem(P: MatmulTcParams, p: MatmulProblem) -> bool:
    """No block side beyond the problem's side rounded up to a power of two (64 always
    fits), and no k tile beyond K rounded up to 16: a bigger tile only computes padding."""
    def up(x: int, least: int) -> int:
        return max(least, 1 << max(0, x - 1).bit_length())
    return P.block_m <= up(p.m, 64) and P.block_n <= up(p.n, 64) and P.block_k <= up(p.k, MMA_K)


#: The largest block tile (elements of C): 128 x 256, or 256 x 128.
MAX_BLOCK_AREA = 128 * 256


@functools.cache
def _space(E: TcElement, arch: str | None) -> Space[MatmulTcParams]:
    """The space for operands of geometry `E` (shared bytes and copies depend on it) on
    `arch` (its opt-in shared memory per block; None: sm_80's)."""
    shared = max_shared_bytes(arch)
    where = arch or "sm_80 (no arch given)"
    return Space(
        "matmul_tc",
        [
            Param("block_m", (64, 128, 256), "block tile rows"),
            Param("block_n", (64, 128, 256), "block tile columns"),
            Param("block_k", (16, 32, 64), "k tile (a multiple of 16)"),
            Param("warps", ((2, 2), (4, 2), (2, 4), (4, 4)), "warps per block (rows, cols)"),
            Param("stages", (2, 3, 4), "cp.async pipeline depth (shared buffers)"),
            Param("split_k", SPLIT_K_CHOICES, "blocks per output tile, each on a part of K"),
        ],
        MatmulTcParams,
        [
            Constraint("block tile <= 128 x 256", lambda P, p: P.block_m * P.block_n <= MAX_BLOCK_AREA,
                       static=True),
            Constraint("warp tile a multiple of 16 x 8",
                       lambda P, p: P.block_m % (P.warps[0] * MMA_M) == 0
                       and P.block_n % (P.warps[1] * MMA_N) == 0, static=True),
            Constraint("registers <= 255 (estimate)",
                       lambda P, p: P.register_estimate() <= MAX_REGISTERS_PER_THREAD, static=True),
            Constraint("copies spread evenly over threads", _copies_even(E)),
            Constraint("tile fits the problem", _fits_problem),
            Constraint(f"shared memory <= {shared // 1024} KiB (the block's opt-in maximum on {where})",
                       lambda P, p: P.shared_bytes(p, E) <= shared),
            *split_k_constraints(REFERENCE_SMS),
        ],
    )


MATMUL_TC_SPACE: Space[MatmulTcParams] = _space(TC_F16, None)
"""The space for f16 and bf16 operands where no architecture is named (sm_80's 163 KiB of
shared memory per block)."""
MATMUL_TC_TF32_SPACE: Space[MatmulTcParams] = _space(TC_TF32, None)
"""The space for f32 operands (TF32 mma): the same points, twice the shared bytes."""


def tc_space(element: Attribute | str, arch: str | None = None) -> Space[MatmulTcParams]:
    """The space for operands of `element` (an element type or its name; ``tf32`` is f32)
    on `arch` (``sm_XY``: its opt-in shared memory per block; None: sm_80's). One object per
    element geometry and arch."""
    tf32 = isinstance(element, Float32Type) or element in ("f32", "tf32")
    return _space(TC_TF32 if tf32 else TC_F16, arch)
