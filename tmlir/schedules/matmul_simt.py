"""The fp32 SIMT matmul template: ``C = alpha * op(A) @ op(B) + beta * bias``, batched.

In: a `MatmulProblem` (A ``[..., M, K]`` or, with ``transpose_lhs``, ``[..., K, M]``; B
``[..., K, N]`` or ``[..., N, K]``; batch dims broadcast as numpy does; a bias that
broadcasts to C) and `MatmulSimtParams`. Out: a ``tm.kernel`` ``(A, B, [bias,] C)`` built
by the SIMT GEMM engine (``simt_gemm.py``: block, warp and thread tiles from task
mappings, register fragments one k slice ahead, and either the register path -- ``stages =
1``, the next k-tile prefetched into registers -- or a ``stages``-deep ``cp.async``
pipeline from sm_80). The epilogue scales by alpha, adds the broadcast bias times beta and
stores with guards only on the dimensions that are not tile multiples.

A and B are copied with ``cp.async`` in the pipeline (16 bytes at a time where the
operand's contiguous dimension is the shared tile's and its extent a multiple of 4, else 4
bytes, transposing a k-contiguous operand), except the operands named in `gathered`
(computed by a fused prologue, or read widened from f16/bf16 by ``half_arguments``): they
are read with ``tm.load`` and staged through registers. f64 matmuls compute in double;
they gather their operands too.

The parameters form a small hardware-centric space, declared at the end of this file
(``MATMUL_SIMT_SPACE``, and `matmul_simt_space` for a named architecture): a few hundred
valid candidates for a large fp32 problem. `MatmulSimtParams.default_for` picks one
without tuning; `MatmulSimtParams.legacy_default` is the register-path choice the template
made before the pipeline existed (the latency model is calibrated on its kernels).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import Float32Type, MemRefType, f32
from xdsl.ir import Attribute, SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import (
    CP_ASYNC_ARCH,
    MAX_REGISTERS_PER_THREAD,
    MAX_STATIC_SHARED_BYTES,
    MAX_THREADS_PER_BLOCK,
    WARP_SIZE,
    arch_number,
    max_shared_bytes,
)
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import TaskMapping, repeat, spatial
from tmlir.schedules.common import (
    broadcast_index,
    kernel_attributes,
    name_args,
)
from tmlir.schedules.gemm import ElementLoad, GemmOperand, GemmOperands, MatmulProblem, ResultStore, store_result
from tmlir.schedules.kloops import k_steps, single_step_fragments
from tmlir.schedules.simt_copies import (
    CHUNK,
    TRANSPOSED_PAD,
    pipeline_copy_mapping,
)
from tmlir.schedules.simt_gemm import simt_gemm
from tmlir.schedules.space import Constraint, Param, Space
from tmlir.schedules.split_k import SPLIT_K_CHOICES, SPLIT_K_SHARED_BYTES, SplitK, split_k_constraints

__all__ = ["DEFAULT_PREFERENCES", "MATMUL_SIMT_SPACE", "ElementLoad", "GemmOperand", "GemmOperands",
           "MatmulProblem", "MatmulSimtParams", "ResultStore", "matmul_simt_kernel", "matmul_simt_space",
           "simt_gemm"]

FLOAT_BYTES = 4
#: Streaming multiprocessors of the reference GPU (H100 SXM) for the default choice.
REFERENCE_SMS = 132

Pair = tuple[int, int]


@dataclass(frozen=True)
class MatmulSimtParams:
    """The template's parameters; block and thread tiles follow from them. ``stages = 1``
    is the register path (two shared buffers), 2-4 the cp.async pipeline's buffers;
    ``split_k`` blocks share each output tile, each on a part of K (``split_k.py``)."""

    block_warps: Pair = (4, 2)
    warp_outer: Pair = (2, 2)
    lanes: Pair = (4, 8)
    thread_inner: Pair = (4, 4)
    block_k: int = 8
    stages: int = 1
    split_k: int = 1

    def __post_init__(self) -> None:
        if self.lanes[0] * self.lanes[1] != WARP_SIZE:
            raise ValueError(f"lanes {self.lanes} must have {WARP_SIZE} lanes")
        if not 1 <= self.stages <= 4:
            raise ValueError(f"stages must be 1 (the register path) to 4, got {self.stages}")
        if self.split_k < 1:
            raise ValueError(f"split_k must be >= 1, got {self.split_k}")

    @property
    def threads(self) -> int:
        return self.block_warps[0] * self.block_warps[1] * WARP_SIZE

    @property
    def thread_m(self) -> int:
        return self.warp_outer[0] * self.thread_inner[0]

    @property
    def thread_n(self) -> int:
        return self.warp_outer[1] * self.thread_inner[1]

    @property
    def warp_m(self) -> int:
        return self.thread_m * self.lanes[0]

    @property
    def warp_n(self) -> int:
        return self.thread_n * self.lanes[1]

    @property
    def block_m(self) -> int:
        return self.block_warps[0] * self.warp_m

    @property
    def block_n(self) -> int:
        return self.block_warps[1] * self.warp_n

    @property
    def thread_mapping(self) -> TaskMapping:
        """The block tile's mapping over the block's threads."""
        return (spatial(*self.block_warps) * repeat(*self.warp_outer) * spatial(*self.lanes)
                * repeat(*self.thread_inner))

    def tile_grid(self, problem: MatmulProblem) -> tuple[int, int, int]:
        """Blocks along batch, M and N: one block per output tile."""
        return (problem.batch, math.ceil(problem.m / self.block_m),
                math.ceil(problem.n / self.block_n))

    def tile_count(self, problem: MatmulProblem) -> int:
        """Output tiles: blocks per split."""
        return math.prod(self.tile_grid(problem))

    def blocks(self, problem: MatmulProblem) -> int:
        """The kernel's grid: `split_k` blocks per output tile."""
        return self.tile_count(problem) * self.split_k

    def k_tiles(self, problem: MatmulProblem) -> int:
        """The ``block_k`` tiles of K (the last one maybe partial)."""
        return math.ceil(problem.k / self.block_k)

    def split(self, problem: MatmulProblem) -> SplitK:
        """How K is split over `split_k` blocks per tile (``split_k.py``); ValueError when
        a split would get no k-tile."""
        return SplitK(self.split_k, self.k_tiles(problem), self.tile_count(problem), self.threads)

    def acc_type(self, element: Attribute = f32) -> MemRefType:
        """One thread's accumulators, of `element`: its ``thread_m x thread_n`` tile of C."""
        return MemRefType(element, [self.thread_m, self.thread_n])

    def scratch(self, problem: MatmulProblem, element: Attribute = f32) -> list[tuple[str, MemRefType]]:
        """The kernel's scratch arguments (kind, type) for accumulators of `element`:
        split-K's workspace and counters; none for one split."""
        return self.split(problem).scratch(self.acc_type(element))

    def smem_pads(self, problem: MatmulProblem) -> Pair:
        """Row padding of the A and B shared tiles (``simt_gemm.py``: bank conflicts): an
        operand contiguous along k in global memory is transposed by the copy, its tile
        padded by ``32 / block_k`` on the register path and by 4 in the pipeline."""
        pad = max(1, WARP_SIZE // self.block_k) if self.stages == 1 else TRANSPOSED_PAD
        return (0 if problem.transpose_lhs else pad, pad if problem.transpose_rhs else 0)

    def shared_bytes(self, problem: MatmulProblem, element_bytes: int = FLOAT_BYTES) -> int:
        """Both operands' padded tiles, all buffers (two on the register path), and split-K's
        arrival flag."""
        pad_a, pad_b = self.smem_pads(problem)
        buffers = max(2, self.stages)
        flag = SPLIT_K_SHARED_BYTES if self.split_k > 1 else 0
        return buffers * self.block_k * (self.block_m + pad_a + self.block_n + pad_b) * element_bytes + flag

    def copies_per_thread(self) -> int:
        """Elements of one k-tile of A and B each thread moves: the register path's prefetch
        registers, and at most the pipeline's copies (fewer with 16-byte ones)."""
        return (self.block_m + self.block_n) * self.block_k // self.threads

    def register_estimate(self, problem: MatmulProblem | None = None) -> int:
        """Accumulators, two fragment stages, prefetch (or staging) registers and ~24 for
        addresses; the pipeline keeps ~8 more for its copies' addresses and predicates
        (as ``kloops.register_estimate``; split-K's last block adds the partial sums into
        the accumulators one split at a time, whose loads ptxas issues together: as many
        registers again as the accumulators). Not capped (the space rejects past 255). For
        `problem`, a pipelined kernel whose split walks one k-tile is straight-line code, and ptxas may hoist every fragment of the
        tile (`single_step_fragments`): the latency model's default avoids such candidates
        past 255 (a pin or the tuner may still take them; ptxas' report shows the spills)."""
        fragments = single_step_fragments(self.thread_m, self.thread_n, self.block_k) \
            if problem is not None and self.stages > 1 and self.one_step(problem) else 2 * (self.thread_m + self.thread_n)
        return (self.thread_m * self.thread_n * (2 if self.split_k > 1 else 1) + fragments
                + self.copies_per_thread() + 24 + (8 if self.stages > 1 else 0))

    def one_step(self, problem: MatmulProblem) -> bool:
        """Whether each split walks a single k-tile (K fits one block_k per split)."""
        return k_steps(problem.k, self.block_k, self.split_k) <= 1

    def copy_kinds(self, problem: MatmulProblem, im2col: bool = False) -> tuple[str, str]:
        """How A and B travel (``copy_a``, ``copy_b`` of the kernel's header) when neither is
        gathered (``simt_copies.copy_kind``): ``ldg`` on the register path; in the pipeline
        ``cp16`` for an operand contiguous along its outer dim with an extent that is a
        multiple of 4 (never an implicit-GEMM convolution's `im2col` B), else ``cp4``."""
        if self.stages == 1:
            return "ldg", "ldg"
        a = "cp16" if problem.transpose_lhs and problem.m % CHUNK == 0 else "cp4"
        b = "cp16" if not problem.transpose_rhs and problem.n % CHUNK == 0 and not im2col else "cp4"
        return a, b

    def describe(self) -> dict[str, int | str]:
        """Flat parameters for the kernel header, the CLI and reports."""
        return {
            "block_m": self.block_m, "block_n": self.block_n, "block_k": self.block_k,
            "threads": self.threads, "thread_m": self.thread_m, "thread_n": self.thread_n,
            "stages": self.stages, "split_k": self.split_k,
            "block_warps": _pair(self.block_warps), "warp_outer": _pair(self.warp_outer),
            "lanes": _pair(self.lanes), "thread_inner": _pair(self.thread_inner),
        }

    @classmethod
    def legacy_default(cls, problem: MatmulProblem) -> MatmulSimtParams:
        """The register-path candidate the template used without tuning before the cp.async
        pipeline (kept: the latency model is calibrated on its kernels): `preferred` among
        `DEFAULT_PREFERENCES` (``stages = 1``, ``block_k = 8``)."""
        chosen = preferred(DEFAULT_PREFERENCES, problem, matmul_simt_space())
        assert chosen is not None, "the smallest preference fits every problem"
        return chosen

    @classmethod
    def default_for(cls, problem: MatmulProblem, arch: str | None = None) -> MatmulSimtParams:
        """The candidate used without tuning on `arch` (None: sm_80): from sm_80 `preferred`
        among `DEFAULT_PREFERENCES` in the cp.async pipeline (`PIPELINE_DEFAULT`: 3 stages
        of block_k 16), where one is valid; `legacy_default` on older GPUs or else."""
        if arch is not None and arch_number(arch) < CP_ASYNC_ARCH:
            return cls.legacy_default(problem)
        stages, block_k = PIPELINE_DEFAULT
        pipelined = [dataclasses.replace(p, stages=stages, block_k=block_k) for p in DEFAULT_PREFERENCES]
        return preferred(pipelined, problem, matmul_simt_space(arch)) or cls.legacy_default(problem)


def preferred(candidates: Sequence[MatmulSimtParams], problem: MatmulProblem,
              space: Space[MatmulSimtParams]) -> MatmulSimtParams | None:
    """The first of `candidates` (largest tile first) that is valid in `space` and still
    gives every SM of the reference GPU a block, else the valid one with the most blocks
    (the smallest tile among equals); None when none is valid."""
    valid = [p for p in candidates if space.first_violation(p, problem) is None]
    if not valid:
        return None
    fewest_idle = max(valid, key=lambda p: (p.blocks(problem), -p.block_m * p.block_n))
    return next((p for p in valid if p.blocks(problem) >= REFERENCE_SMS), fewest_idle)


def _pair(p: Pair) -> str:
    return f"{p[0]}x{p[1]}"


def matmul_simt_kernel(name: str, problem: MatmulProblem, params: MatmulSimtParams,
                       element: Attribute = Float32Type(), *, gathered: Collection[int] = (),
                       wait: bool = True) -> tm.KernelOp:
    """A kernel ``(A, B, [bias,] C)`` for `problem` with the schedule `params`, on tensors of
    `element` (``f32``, or ``f64``: tiles and accumulators in double). The operands in
    `gathered` (0: A, 1: B) are read with ``tm.load`` in the pipeline (a fused prologue
    computes them, or they are f16/bf16 tensors read through ``half_arguments``), the others
    copied with ``cp.async``. With ``split_k > 1`` the kernel takes split-K's workspace (of
    `element`) and counters after C (``split_k.py``). `wait=False` leaves out the pipeline's
    waits (a planted race)."""
    p, P = problem, params
    arg_shapes = [p.lhs_shape, p.rhs_shape, *([p.bias_shape] if p.bias_shape else []), p.out_shape]
    kernel = tm.KernelOp(
        name, [MemRefType(element, list(s)) for s in arg_shapes], P.blocks(p), P.threads,
        kernel_attributes("matmul_simt", {"M": p.m, "N": p.n, "K": p.k, **P.describe()}),
    )
    name_args(kernel, ["A", "B", *(["bias"] if p.bias_shape else []), "C"])
    a, bmat, *rest = kernel.args
    bias, c = (rest[0], rest[1]) if p.bias_shape else (None, rest[0])
    rank = len(p.out_shape)
    guarded_out = {d for d, g in ((rank - 2, p.m % P.block_m), (rank - 1, p.n % P.block_n)) if g}
    guard_k = p.k % P.block_k != 0
    # Operand dims checked against the shape: rows/cols past a partial tile, k past a tail.
    a_guard = _operand_guard(len(p.lhs_shape), p.transpose_lhs, p.m % P.block_m != 0, guard_k)
    b_guard = _operand_guard(len(p.rhs_shape), not p.transpose_rhs, p.n % P.block_n != 0, guard_k)

    def block_operands(b: IRBuilder, batch_coords: Sequence[Index]) -> GemmOperands:
        a_batch = broadcast_index(batch_coords, p.batch_shape, p.lhs_shape[:-2])
        b_batch = broadcast_index(batch_coords, p.batch_shape, p.rhs_shape[:-2])

        def a_index(row: Index, k: Index) -> list[Index]:
            return [*a_batch, *((k, row) if p.transpose_lhs else (row, k))]

        def b_index(col: Index, k: Index) -> list[Index]:
            return [*b_batch, *((col, k) if p.transpose_rhs else (k, col))]

        def load_a(row: Index, k: Index) -> SSAValue:
            return b.load(a, a_index(row, k), a_guard)

        def load_b(col: Index, k: Index) -> SSAValue:
            return b.load(bmat, b_index(col, k), b_guard)

        def store_c(row: Index, col: Index, value: SSAValue) -> None:
            store_result(b, p, c, bias, [*batch_coords, row, col], value, guarded_out, element)

        a_op = _dense(not p.transpose_lhs, load_a, a, a_index, p.transpose_lhs and p.m % CHUNK == 0,
                      0 in gathered)
        b_op = _dense(p.transpose_rhs, load_b, bmat, b_index, not p.transpose_rhs and p.n % CHUNK == 0,
                      1 in gathered)
        return GemmOperands(a_op, b_op, store_c)

    simt_gemm(kernel, p, P, block_operands, element=element, wait=wait)
    return kernel


def _dense(k_major: bool, load: ElementLoad, buffer: SSAValue, index, chunked: bool, gather: bool) -> GemmOperand:
    """A plain operand: copyable unless `gather` (then only its `load` reads it)."""
    if gather:
        return GemmOperand(k_major, load)
    return GemmOperand(k_major, load, buffer, lambda outer, k: (index(outer, k), None), chunked)


def _operand_guard(rank: int, k_outermost: bool, guard_outer: bool, guard_k: bool) -> list[int]:
    dim_o, dim_k = (rank - 1, rank - 2) if k_outermost else (rank - 2, rank - 1)
    return sorted(d for d, g in ((dim_o, guard_outer), (dim_k, guard_k)) if g)


# ----------------------------------------------------------------------------- the space


def _next_pow2(x: int) -> int:
    return 1 << max(0, x - 1).bit_length()


#: Every tile side up to this fits any problem; the smallest tiles of the space (8 x 64,
#: 16 x 32, ...) are within it, so no problem has an empty space.
SMALL_TILE_SIDE = 64
#: The register path's tiles: block tiles up to 128 x 128, thread tiles up to 8 x 8, k-steps
#: of 8 or 16 (the space it always had); from sm_80 only its calibrated k-step, 8.
REGISTER_PATH = {"block_side": 128, "thread_side": 8, "block_k": (8, 16), "block_k_sm80": (8,)}
#: The pipeline's (stages, block_k): 32 to 64 k elements in flight, ``(stages - 1) * block_k``.
PIPELINE_DEPTHS = ((2, 32), (2, 64), (3, 16), (3, 32), (4, 16))
#: The pipeline's block tiles: sides up to 256, at most 128 x 256 elements.
PIPELINE_BLOCK = {"side": 256, "area": 128 * 256}
#: The pipeline's warp layouts (lanes): square-ish warp tiles.
PIPELINE_LANES = ((4, 8), (8, 4))
#: ``cp.async`` (or staged loads) one thread issues per k-tile, at most.
MAX_COPIES_PER_THREAD = 64
#: (stages, block_k) of `MatmulSimtParams.default_for` from sm_80.
PIPELINE_DEFAULT = (3, 16)
#: Split-K only with each path's deepest k-steps: the pipeline's with this many k elements
#: in flight, ``(stages - 1) * block_k`` ((2, 64) and (3, 32)), and the register path's
#: largest block_k (16, before sm_80 only).
SPLIT_K_IN_FLIGHT = 64


def _split_deepest(P: MatmulSimtParams, p: MatmulProblem) -> bool:
    """A split (`SPLIT_K_IN_FLIGHT`) walks a short, latency-bound k-loop: only the
    candidates that keep the most k in flight split (which keeps the space a few hundred)."""
    if P.split_k == 1:
        return True
    if P.stages == 1:
        return P.block_k == max(REGISTER_PATH["block_k"])  # type: ignore[type-var]
    return (P.stages - 1) * P.block_k >= SPLIT_K_IN_FLIGHT


def _fits_problem(P: MatmulSimtParams, p: MatmulProblem) -> bool:
    """No block tile side larger than the problem's side rounded up to a power of two
    (sides up to 64 always fit): a bigger tile only computes padding."""
    return (P.block_m <= max(SMALL_TILE_SIDE, _next_pow2(p.m))
            and P.block_n <= max(SMALL_TILE_SIDE, _next_pow2(p.n)))


def _copies_even(P: MatmulSimtParams, p: MatmulProblem) -> bool:
    """Every thread moves the same number of elements (16-byte chunks) of each tile: on the
    register path ``auto_map`` needs tile sizes that are multiples of the threads; the
    pipeline's copies (``simt_copies.pipeline_copy_mapping``) need that, and a warp's 4 rows
    of 8 k for a k-contiguous operand."""
    if P.stages == 1:
        return (P.block_m * P.block_k) % P.threads == 0 and (P.block_n * P.block_k) % P.threads == 0
    a_kind, b_kind = P.copy_kinds(p)  # a gathered or element-wise copy needs no more than these
    return all(pipeline_copy_mapping(kind, k_major, outer, P.block_k, P.threads) is not None
               for kind, k_major, outer in ((a_kind, not p.transpose_lhs, P.block_m),
                                            (b_kind, p.transpose_rhs, P.block_n)))


def _block_tile(P: MatmulSimtParams, p: MatmulProblem) -> bool:
    """The register path's block tiles (`REGISTER_PATH`) or the pipeline's (`PIPELINE_BLOCK`)."""
    if P.stages == 1:
        return max(P.block_m, P.block_n) <= REGISTER_PATH["block_side"]  # type: ignore[operator]
    return max(P.block_m, P.block_n) <= PIPELINE_BLOCK["side"] and P.block_m * P.block_n <= PIPELINE_BLOCK["area"]


@functools.cache
def _space(arch: str | None) -> Space[MatmulSimtParams]:
    pipelined = arch is None or arch_number(arch) >= CP_ASYNC_ARCH
    shared = max_shared_bytes(arch)
    register_steps: tuple[int, ...] = REGISTER_PATH["block_k_sm80" if pipelined else "block_k"]  # type: ignore[assignment]
    thread_side: int = REGISTER_PATH["thread_side"]  # type: ignore[assignment]
    where = arch or "sm_80 (no arch given)"
    return Space(
        "matmul_simt",
        [
            Param("block_warps", ((1, 1), (1, 2), (2, 1), (2, 2), (2, 4), (4, 2), (1, 4), (4, 1)),
                  "warps per block (rows, cols)"),
            Param("lanes", ((4, 8), (8, 4), (2, 16), (16, 2)), "the 32-lane layout of a warp"),
            Param("warp_outer", ((1, 1), (1, 2), (2, 1), (2, 2), (2, 4), (4, 2)), "repeats of the lane layout"),
            Param("thread_inner", ((4, 4),), "each thread's contiguous sub-tile"),
            Param("block_k", (8, 16, 32, 64), "k-step"),
            Param("stages", (1, 2, 3, 4), "1: the register path; 2-4: cp.async buffers (sm_80+)"),
            Param("split_k", SPLIT_K_CHOICES, "blocks per output tile, each on a part of K"),
        ],
        MatmulSimtParams,
        [
            Constraint(f"stages > 1 needs cp.async (sm_80+; this is {where})",
                       lambda P, p: P.stages == 1 or pipelined, static=True),
            Constraint("threads <= 1024", lambda P, p: P.threads <= MAX_THREADS_PER_BLOCK, static=True),
            Constraint("block tile <= 128 x 128 (pipeline: 128 x 256, sides <= 256)", _block_tile, static=True),
            Constraint("register path: thread tile <= 8 x 8",
                       lambda P, p: P.stages > 1 or max(P.thread_m, P.thread_n) <= thread_side, static=True),
            Constraint("register path: block_k " + " or ".join(map(str, register_steps)),
                       lambda P, p: P.stages > 1 or P.block_k in register_steps, static=True),
            Constraint("pipeline: (stages, block_k) one of " + ", ".join(map(str, PIPELINE_DEPTHS)),
                       lambda P, p: P.stages == 1 or (P.stages, P.block_k) in PIPELINE_DEPTHS, static=True),
            Constraint("pipeline: lanes 4x8 or 8x4", lambda P, p: P.stages == 1 or P.lanes in PIPELINE_LANES,
                       static=True),
            Constraint("tile fits the problem", _fits_problem),
            Constraint("copies spread evenly over threads", _copies_even),
            Constraint("pipeline: copies per thread and k-tile <= 64",
                       lambda P, p: P.stages == 1 or P.copies_per_thread() <= MAX_COPIES_PER_THREAD, static=True),
            Constraint("shared memory <= 48 KiB (register path: static)",
                       lambda P, p: P.stages > 1 or P.shared_bytes(p) <= MAX_STATIC_SHARED_BYTES),
            Constraint(f"shared memory <= {shared // 1024} KiB (the block's opt-in maximum on {where})",
                       lambda P, p: P.shared_bytes(p) <= shared),
            Constraint(f"split-K only with the deepest k-steps ({SPLIT_K_IN_FLIGHT} k in flight; "
                       "register path: block_k 16)", _split_deepest, static=True),
            *split_k_constraints(REFERENCE_SMS),
            Constraint("registers <= 255 (estimate)",
                       lambda P, p: P.register_estimate() <= MAX_REGISTERS_PER_THREAD, static=True),
        ],
    )


def matmul_simt_space(arch: str | None = None) -> Space[MatmulSimtParams]:
    """The space on `arch` (``sm_XY``): its shared memory per block, and the pipeline only
    from sm_80. None: sm_80's limits (`MATMUL_SIMT_SPACE`). One object per arch."""
    return _space(arch)


MATMUL_SIMT_SPACE: Space[MatmulSimtParams] = matmul_simt_space()
"""The space where no architecture is named: sm_80's limits (163 KiB of shared memory)."""

#: The tiles `MatmulSimtParams.default_for` and `legacy_default` prefer: large, balanced
#: tiles first (as register-path candidates: the legacy default is one of them).
DEFAULT_PREFERENCES = (
    MatmulSimtParams((4, 2), (2, 2), (4, 8), (4, 4), 8),  # 128 x 128, 256 threads, 8 x 8
    MatmulSimtParams((2, 2), (2, 2), (4, 8), (4, 4), 8),  # 64 x 128, 128 threads, 8 x 8
    MatmulSimtParams((2, 2), (1, 2), (8, 4), (4, 4), 8),  # 64 x 64, 128 threads, 4 x 8
    MatmulSimtParams((2, 2), (1, 1), (4, 8), (4, 4), 8),  # 32 x 64, 128 threads, 4 x 4
    MatmulSimtParams((1, 2), (1, 1), (4, 8), (4, 4), 8),  # 16 x 64, 64 threads, 4 x 4
    MatmulSimtParams((1, 1), (1, 1), (4, 8), (4, 4), 8),  # 16 x 32, 32 threads, 4 x 4
    MatmulSimtParams((1, 1), (1, 1), (2, 16), (4, 4), 8),  # 8 x 64, 32 threads, 4 x 4
)
