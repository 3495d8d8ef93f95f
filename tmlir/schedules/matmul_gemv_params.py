"""The small-M matmul template's parameters and space (the schedule: ``matmul_gemv.py``).

`takes` says which problems the template builds (at most `MAX_ROWS` rows once a batch is
folded into them, B not batched), `layout_of` how B is stored (``nk``: ``N x K``, ``kn``:
``K x N``). `MatmulGemvParams` holds the four parameters -- ``warps``, ``vector``,
``unroll``, ``block_n`` -- and what they mean for a problem (k-slices, the k-step, serial
k-steps, shared memory, a register estimate, the kernel header); `MATMUL_GEMV_SPACE` is
their hardware-centric space with its constraints, `MatmulGemvParams.default_for` the
candidate used untuned (a documented rule until the latency model chooses).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmlir.gpu_limits import MAX_REGISTERS_PER_THREAD, MAX_STATIC_SHARED_BYTES, WARP_SIZE
from tmlir.schedules.matmul_simt import REFERENCE_SMS, MatmulProblem
from tmlir.schedules.space import Constraint, Param, Space

#: The most folded rows (batch x M) the template takes.
MAX_ROWS = 16
#: 32-bit registers of one SM (every GPU from sm_70 on): a block must fit them.
REGISTERS_PER_SM = 64 * 1024
#: nk reads A in vectors up to this many rows, element by element beyond: ptxas loads the
#: vectors of all rows ahead (16 rows, sm_90: 102 registers with vectors, 64 without).
VECTOR_A_ROWS = 8
FLOAT_BYTES = 4


def folded_rows(problem: MatmulProblem) -> int:
    """Rows of A once a batch is folded into them (B is not batched)."""
    return problem.batch * problem.m


def takes(problem: MatmulProblem) -> bool:
    """Whether the template builds `problem`: B not batched (any batch folds into the rows)
    and at most `MAX_ROWS` folded rows."""
    return math.prod(problem.rhs_shape[:-2]) == 1 and folded_rows(problem) <= MAX_ROWS


def layout_of(problem: MatmulProblem) -> str:
    """``nk`` when B is stored ``N x K`` (transposed), else ``kn``."""
    return "nk" if problem.transpose_rhs else "kn"


def _next_pow2(x: int) -> int:
    return 1 << max(0, x - 1).bit_length()


@dataclass(frozen=True)
class MatmulGemvParams:
    """The template's parameters; how they split the work depends on B's layout (see the
    module docstring): `block_n` columns per block, `vector` elements per load along B's
    contiguous dimension, `unroll` loads of B in flight per thread per k-step."""

    warps: int = 8
    vector: int = 4
    unroll: int = 4
    block_n: int = 8

    @property
    def threads(self) -> int:
        return self.warps * WARP_SIZE

    def column_threads(self, problem: MatmulProblem) -> int:
        """Threads side by side along N: a warp's 32 lanes share one column for nk; for kn,
        one vector of columns each."""
        return 1 if layout_of(problem) == "nk" else self.block_n // self.vector

    def k_slices(self, problem: MatmulProblem) -> int:
        """How many warps (nk) or threads (kn) split the K of one column (vector)."""
        if layout_of(problem) == "nk":
            return self.warps // self.block_n
        return self.threads // self.column_threads(problem)

    def block_k(self, problem: MatmulProblem) -> int:
        """K elements one k-step of the block covers."""
        if layout_of(problem) == "nk":
            return WARP_SIZE * self.vector * self.unroll * self.k_slices(problem)
        return self.unroll * self.k_slices(problem)

    def k_steps(self, problem: MatmulProblem) -> int:
        """Serial k-steps of a thread (the last may be partial)."""
        return math.ceil(problem.k / self.block_k(problem))

    def blocks(self, problem: MatmulProblem) -> int:
        return math.ceil(problem.n / self.block_n)

    def shared_bytes(self, problem: MatmulProblem) -> int:
        """The partial sums that meet in shared memory: one per row, column and K slice of
        another warp (none when one warp sums them alone)."""
        rows = folded_rows(problem)
        if layout_of(problem) == "nk":
            slices = self.k_slices(problem)
            return slices * self.block_n * rows * FLOAT_BYTES if slices > 1 else 0
        return self.warps * rows * self.block_n * FLOAT_BYTES if self.warps > 1 else 0

    def register_estimate(self, problem: MatmulProblem) -> int:
        """Accumulators (a row each; times the vector for kn), the loads of B in flight
        and ~24 for addresses; for nk also A's vectors, which ptxas loads ahead for about
        half the unrolled loads (up to `VECTOR_A_ROWS` rows), or A's elements (beyond)."""
        rows = folded_rows(problem)
        if layout_of(problem) == "nk" and rows <= VECTOR_A_ROWS:
            return 24 + rows + self.unroll * self.vector + rows * self.vector * self.unroll // 2
        if layout_of(problem) == "nk":
            return 24 + 2 * rows + self.unroll * self.vector
        return rows * self.vector + self.unroll * self.vector + 24

    def describe(self, problem: MatmulProblem | None = None) -> dict[str, int | str]:
        """Flat parameters for the kernel header, the CLI and reports: with a `problem`,
        also what they mean for it (rows, layout, k-step, serial steps, ...)."""
        if problem is None:
            return {"threads": self.threads, "warps": self.warps, "vector": self.vector,
                    "unroll": self.unroll, "block_n": self.block_n}
        return {
            "M": folded_rows(problem), "N": problem.n, "K": problem.k, "layout": layout_of(problem),
            "block_m": folded_rows(problem), "block_n": self.block_n, "block_k": self.block_k(problem),
            "threads": self.threads, "warps": self.warps, "vector": self.vector, "unroll": self.unroll,
            "k_slices": self.k_slices(problem), "k_steps": self.k_steps(problem),
            "loads_in_flight": self.unroll, "stages": 1, "split_k": 1,
        }

    @classmethod
    def default_for(cls, problem: MatmulProblem) -> MatmulGemvParams:
        """The candidate used without tuning (a rule, until a latency model chooses).

        16-byte vectors where the layout allows them, else scalars. Columns per block: nk,
        the most of 8, 4, 2, 1 (fewer warps per column) that still gives two blocks per SM
        of the reference GPU, else 1; kn, the widest of 128, 64, 32, 16, 8 (two threads of
        vectors at least) that gives every SM a block, else the narrowest. Then the most
        warps (8; 16 when there are fewer blocks than SMs for nk, fewer than four per SM
        for kn, whose 8-warp blocks would leave an SM under 1024 threads: bigger blocks
        are the way to more bytes in flight then) and, for them, the largest unroll (nk:
        4, 2, 1; kn: 8, 4, 2, 1) whose k-step fits in K and whose register estimate stays
        within 128 (two such blocks per SM). A K too short for any of those: the fewest
        warps, unroll 1."""
        nk = layout_of(problem) == "nk"
        vector = 4 if (problem.k if nk else problem.n) % 4 == 0 else 1
        if nk:
            block_n = next((w for w in (8, 4, 2, 1) if math.ceil(problem.n / w) >= 2 * REFERENCE_SMS), 1)
        else:
            tiles = [w for w in (128, 64, 32, 16, 8) if w >= 2 * vector]
            block_n = next((w for w in tiles if math.ceil(problem.n / w) >= REFERENCE_SMS), tiles[-1])
        blocks = math.ceil(problem.n / block_n)
        most = 16 if blocks < (REFERENCE_SMS if nk else 4 * REFERENCE_SMS) else 8
        for warps in (w for w in (16, 8, 4, 2, 1) if w <= most):
            for unroll in (4, 2, 1) if nk else (8, 4, 2, 1):
                candidate = cls(warps, vector, unroll, block_n)
                if (problem.k >= candidate.block_k(problem) and candidate.register_estimate(problem) <= 128
                        and MATMUL_GEMV_SPACE.first_violation(candidate, problem) is None):
                    return candidate
        fewest = cls(block_n if nk else 1, vector, 1, block_n)
        if MATMUL_GEMV_SPACE.first_violation(fewest, problem) is None:
            return fewest
        return MATMUL_GEMV_SPACE.candidates(problem)[0]


# ----------------------------------------------------------------------------- the space


def _layout_fits(P: MatmulGemvParams, p: MatmulProblem) -> bool:
    """nk: a whole number of warps per column; kn: 2 to 32 threads of vectors across a
    column tile (a power of two, so a warp holds whole K slices), which reads at least 32
    bytes of a row of B (a DRAM sector)."""
    if layout_of(p) == "nk":
        return P.block_n <= P.warps and P.warps % P.block_n == 0
    across = P.block_n // P.vector
    return P.block_n % P.vector == 0 and across in (2, 4, 8, 16, 32) and P.block_n >= 8


def _vector_fits(P: MatmulGemvParams, p: MatmulProblem) -> bool:
    """Vectors along B's contiguous dimension need it to be a multiple of the width."""
    return (p.k if layout_of(p) == "nk" else p.n) % P.vector == 0


def _tile_fits(P: MatmulGemvParams, p: MatmulProblem) -> bool:
    """No more columns per block than N rounded up to a power of two, no k-step longer
    than K so rounded -- but the narrowest tile of a layout and the shortest k-step of a
    tile (the fewest warps, unroll 1) always fit, so no problem has an empty space."""
    nk = layout_of(p) == "nk"
    narrowest = 1 if nk else 8
    shortest = WARP_SIZE * P.vector if nk else WARP_SIZE * P.vector // P.block_n
    return P.block_n <= max(narrowest, _next_pow2(p.n)) and P.block_k(p) <= max(shortest, _next_pow2(p.k))


MATMUL_GEMV_SPACE: Space[MatmulGemvParams] = Space(
    "matmul_gemv",
    [
        Param("warps", (1, 2, 4, 8, 16), "warps per block"),
        Param("vector", (4, 1), "elements per load of B along its contiguous dimension"),
        Param("unroll", (1, 2, 4, 8), "loads of B in flight per thread per k-step"),
        Param("block_n", (1, 2, 4, 8, 16, 32, 64, 128), "output columns per block"),
    ],
    MatmulGemvParams,
    [
        Constraint("columns split evenly over the block", _layout_fits),
        Constraint("vector divides the contiguous dimension", _vector_fits),
        Constraint("tile fits the problem", _tile_fits),
        Constraint("shared memory <= 48 KiB",
                   lambda P, p: P.shared_bytes(p) <= MAX_STATIC_SHARED_BYTES),
        Constraint("registers <= 255 (estimate)",
                   lambda P, p: P.register_estimate(p) <= MAX_REGISTERS_PER_THREAD),
        Constraint("a block's registers fit an SM (estimate)",
                   lambda P, p: P.register_estimate(p) * P.threads <= REGISTERS_PER_SM),
    ],
)
