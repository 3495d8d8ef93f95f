"""The attention template's problem and parameters, and the rule that picks its tiles.

`AttentionProblem` is ``graph.attention``'s shapes and attributes; `AttentionParams` the
tiles of ``attention.py``'s kernel (query rows per block, keys per tile, lanes per row
group, rows per thread); `AttentionParams.default_for` the documented rule that picks them
from Sq, Sk, D and Dv (there is no tuning space); `supports` whether any tiles fit, which
``graph-fuse-attention`` asks before it forms the op.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from tmlir.dialects import graph
from tmlir.gpu_limits import MAX_STATIC_SHARED_BYTES, MAX_THREADS_PER_BLOCK, WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.schedules.common import broadcast_guards, broadcast_index
from tmlir.schedules.matmul_simt import REFERENCE_SMS

__all__ = ["AttentionParams", "AttentionProblem", "supports"]

FLOAT_BYTES = 4
#: Query rows per block tried by the default rule, largest first.
BLOCK_Q_CHOICES = (64, 32, 16)
#: Keys per tile tried by the default rule, largest first.
BLOCK_K_CHOICES = (32, 16, 8)
#: Lanes sharing a row group in the default rule.
DEFAULT_THREADS_PER_ROW = 8
#: Threads per block of the default rule (row groups x threads per row).
DEFAULT_THREADS = 128
#: At most this many accumulators per thread in the default rule (no spills below it).
MAX_ACCUMULATORS = 64


def _next_pow2(x: int) -> int:
    return 1 << max(0, x - 1).bit_length()


@dataclass(frozen=True)
class AttentionProblem:
    """``graph.attention``'s shapes and attributes (see its docstring)."""

    q_shape: tuple[int, ...]
    k_shape: tuple[int, ...]
    v_shape: tuple[int, ...]
    bias_shape: tuple[int, ...] | None
    scale: float
    causal: bool = False
    k_transposed: bool = False
    zero_masked_rows: bool = False

    def __post_init__(self) -> None:
        batch, sq, sk, d, dv = graph.attention_shape(self.q_shape, self.k_shape, self.v_shape,
                                                     self.k_transposed)
        object.__setattr__(self, "_dims", (batch, sq, sk, d, dv))

    @classmethod
    def of(cls, op: graph.AttentionOp) -> AttentionProblem:
        def shape(value: SSAValue) -> tuple[int, ...]:
            assert isinstance(value.type, TensorType)
            return tuple(value.type.get_shape())

        return cls(shape(op.q), shape(op.k), shape(op.v), shape(op.bias) if op.bias is not None else None,
                   op.scale_value, op.causal is not None, op.k_transposed is not None,
                   op.zero_masked_rows is not None)

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return self._dims[0]  # type: ignore[attr-defined]

    @property
    def batch(self) -> int:
        return math.prod(self.batch_shape)

    @property
    def sq(self) -> int:
        return self._dims[1]  # type: ignore[attr-defined]

    @property
    def sk(self) -> int:
        return self._dims[2]  # type: ignore[attr-defined]

    @property
    def d(self) -> int:
        return self._dims[3]  # type: ignore[attr-defined]

    @property
    def dv(self) -> int:
        return self._dims[4]  # type: ignore[attr-defined]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (*self.batch_shape, self.sq, self.dv)

    @property
    def scores_shape(self) -> tuple[int, ...]:
        return (*self.batch_shape, self.sq, self.sk)


@dataclass(frozen=True)
class AttentionParams:
    """Query rows per block, keys per tile, lanes per row group and rows per thread; a
    block is ``block_q / rows_per_thread * threads_per_row`` threads, whole warps."""

    block_q: int = 64
    block_k: int = 32
    threads_per_row: int = DEFAULT_THREADS_PER_ROW
    rows_per_thread: int = 4

    def __post_init__(self) -> None:
        t = self.threads_per_row
        if t < 1 or t > WARP_SIZE or t & (t - 1):
            raise ValueError(f"threads_per_row must be a power of two in [1, {WARP_SIZE}], got {t}")
        if self.rows_per_thread < 1 or self.block_q % self.rows_per_thread:
            raise ValueError(f"block_q {self.block_q} must be a multiple of rows_per_thread "
                             f"{self.rows_per_thread}")
        if self.block_k < t or self.block_k % t:
            raise ValueError(f"block_k {self.block_k} must be a multiple of threads_per_row {t}")
        if self.threads % WARP_SIZE or self.threads > MAX_THREADS_PER_BLOCK:
            raise ValueError(f"a block must be whole warps, at most {MAX_THREADS_PER_BLOCK} threads, "
                             f"got {self.threads}")

    @property
    def row_groups(self) -> int:
        return self.block_q // self.rows_per_thread

    @property
    def threads(self) -> int:
        return self.row_groups * self.threads_per_row

    @property
    def keys_per_thread(self) -> int:
        return self.block_k // self.threads_per_row

    def cols_per_thread(self, problem: AttentionProblem) -> int:
        return math.ceil(problem.dv / self.threads_per_row)

    def q_tiles(self, problem: AttentionProblem) -> int:
        return math.ceil(problem.sq / self.block_q)

    def k_tiles(self, problem: AttentionProblem) -> int:
        return math.ceil(problem.sk / self.block_k)

    def blocks(self, problem: AttentionProblem) -> int:
        return problem.batch * self.q_tiles(problem)

    def shared_bytes(self, problem: AttentionProblem) -> int:
        """The query, key, value and probability tiles (rows padded by one float)."""
        d, padded_dv = problem.d, self.cols_per_thread(problem) * self.threads_per_row
        return FLOAT_BYTES * (d * (self.block_q + 1) + d * (self.block_k + 1)
                              + self.block_k * padded_dv + self.block_q * (self.block_k + 1))

    def check(self, problem: AttentionProblem) -> None:
        """ValueError if the tiles need more than the static shared memory."""
        if (need := self.shared_bytes(problem)) > MAX_STATIC_SHARED_BYTES:
            raise ValueError(f"attention tiles need {need} bytes of shared memory (D = {problem.d}, "
                             f"block_q {self.block_q}, block_k {self.block_k}); at most "
                             f"{MAX_STATIC_SHARED_BYTES}")

    def causal_tiles(self, problem: AttentionProblem) -> int:
        """Key tiles the blocks of one batch element walk in all (all of them unless causal:
        q-tile ``qt`` stops at the tile of its last row)."""
        n = self.k_tiles(problem)
        if not problem.causal:
            return n * self.q_tiles(problem)
        return sum(min(n, math.ceil((qt + 1) * self.block_q / self.block_k))
                   for qt in range(self.q_tiles(problem)))

    def describe(self, problem: AttentionProblem) -> dict[str, int | str]:
        return {"Sq": problem.sq, "Sk": problem.sk, "D": problem.d, "Dv": problem.dv,
                "block_q": self.block_q, "block_k": self.block_k, "threads_per_row": self.threads_per_row,
                "rows_per_thread": self.rows_per_thread, "threads": self.threads,
                **({"causal": 1} if problem.causal else {}), **({"bias": 1} if problem.bias_shape is not None else {})}

    @classmethod
    def default_for(cls, problem: AttentionProblem) -> AttentionParams | None:
        """The rule: 8 lanes per row group and 128 threads; ``block_q`` the largest of 64,
        32, 16 that is at most ``Sq`` rounded up to a power of two and still gives the
        reference GPU's 132 SMs a block each (``batch * ceil(Sq / block_q) >= 132``; else
        16), ``block_k`` ``Sk`` rounded up to a power of two, within 8..32; then, while the
        tiles exceed 48 KiB of shared memory or a thread would hold more than 64
        accumulators (``rows_per_thread * ceil(Dv / 8)``), ``block_k`` halves down to 8,
        then ``block_q`` halves (``block_k`` back to its first choice). None if nothing
        fits (a head size of several hundred)."""
        rows = _next_pow2(problem.sq)
        fitting = [bq for bq in BLOCK_Q_CHOICES if bq <= max(rows, BLOCK_Q_CHOICES[-1])]
        start = next((bq for bq in fitting if problem.batch * math.ceil(problem.sq / bq) >= REFERENCE_SMS),
                     fitting[-1])
        bk0 = min(BLOCK_K_CHOICES[0], max(BLOCK_K_CHOICES[-1], _next_pow2(problem.sk)))
        groups = DEFAULT_THREADS // DEFAULT_THREADS_PER_ROW
        for bq in (c for c in BLOCK_Q_CHOICES if c <= start):
            for bk in (c for c in BLOCK_K_CHOICES if c <= bk0):
                params = cls(bq, bk, DEFAULT_THREADS_PER_ROW, max(1, bq // groups))
                accumulators = params.rows_per_thread * params.cols_per_thread(problem)
                if params.shared_bytes(problem) <= MAX_STATIC_SHARED_BYTES and accumulators <= MAX_ACCUMULATORS:
                    return params
        return None


def supports(problem: AttentionProblem) -> bool:
    """Whether the template builds `problem` with its default parameters: no empty dim (an
    empty key axis would give 0 / 0 where the matmul of empty operands gives zeros) and
    tiles that fit."""
    sizes = (problem.batch, problem.sq, problem.sk, problem.d, problem.dv)
    return min(sizes) > 0 and AttentionParams.default_for(problem) is not None


def mask_score(b: IRBuilder, p: AttentionProblem, tile: tuple[int, int], bias: SSAValue | None,
               batch: list[Index], row: Index, key: Index, x: SSAValue) -> SSAValue:
    """Score `x` of query `row` and `key` (batch coordinates `batch`) as both attention
    templates mask it: plus the bias (broadcast to the scores; guarded along a dim the
    ``block_q x block_k`` `tile` overhangs; a rank-0 bias is one element), and ``-inf`` for
    a key past ``Sk`` or, causal, after the row."""
    if bias is not None and p.bias_shape is not None:
        rank = len(p.scores_shape)
        partial = {d for d, g in ((rank - 2, p.sq % tile[0]), (rank - 1, p.sk % tile[1])) if g}
        shape = p.bias_shape or (1,)  # a rank-0 bias is stored as one element
        index = broadcast_index([*batch, row, key], p.scores_shape, shape) if p.bias_shape else [0]
        guard = broadcast_guards(p.scores_shape, shape, partial) if p.bias_shape else []
        x = b.fop(arith.AddfOp, x, b.load(bias, index, guard, name="mask"))
    valid = []
    if p.sk % tile[1]:
        valid.append(b.lt(key, p.sk, "key_ok"))
    if p.causal:
        valid.append(b.lt(key, b.add(row, 1), "seen"))
    condition = b.all_of(valid)
    if condition is not None:
        x = b.fop(arith.SelectOp, condition, x, b.f32(-math.inf), name="x")
    return x
