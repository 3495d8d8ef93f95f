"""The parameters of the Hopper GEMM (``matmul_wgmma``) and their space.

A candidate is a block tile of ``64 W x block_n`` (``W = consumers`` warpgroups, each a
``64 x block_n`` wgmma accumulator), ``P = producers`` copying warps after them (a block has
``128 W + 32 P`` threads), a ``stages``-deep ring of shared k-tiles of ``block_k`` elements
(one 128-byte swizzled row: 64 halves, or 32 floats for tf32) and a split-K factor
(``split_k.py``).

The space (`wgmma_space`) keeps candidates whose tiles fit sm_90's 227 KiB of shared memory
per block, whose registers (estimated: ``block_n / 2`` accumulators a thread and the
producers' addresses) fit what a thread gets at this block size
(`MatmulWgmmaParams.register_cap`), whose producer threads copy at most `PRODUCER_CHUNKS`
chunks of a stage, and whose tiles do not exceed the problem rounded up; split-K as the
other GEMM templates add it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, MemRefType
from xdsl.ir import Attribute

from tmlir.gpu_limits import MAX_REGISTERS_PER_THREAD, WARP_SIZE, max_shared_bytes
from tmlir.schedules.gemm import MatmulProblem
from tmlir.schedules.matmul_simt import REFERENCE_SMS
from tmlir.schedules.space import Constraint, Param, Space
from tmlir.schedules.split_k import SPLIT_K_CHOICES, SPLIT_K_SHARED_BYTES, SplitK, split_k_constraints
from tmlir.wgmma_layouts import WARPGROUP, WGMMA_K

__all__ = ["COPY_BYTES", "PRODUCER_CHUNKS", "SWIZZLE_BYTES", "WGMMA_BF16", "WGMMA_F16", "WGMMA_M", "WGMMA_TF32",
           "MatmulWgmmaParams", "WgmmaElement", "wgmma_element", "wgmma_space"]

WGMMA_M = 64
"""Rows of one warpgroup's wgmma tile (``m64nNk*``)."""
COPY_BYTES = 16
"""One ``cp.async.cg``: a 16-byte chunk."""
SWIZZLE_BYTES = 128
"""The shared tiles' swizzle mode: rows of 128 bytes, 16-byte chunks XOR-ed with the row."""
PRODUCER_CHUNKS = 64
"""The most 16-byte chunks of one stage a producer thread copies: with ``stages - 1`` stages
in flight (at most 4 here) a producer's ``cp.async`` queue stays within the 256 copies the
emu holds for a thread."""
REGISTER_FILE = 65536
"""32-bit registers of an SM."""
BARRIER_BYTES = 8
"""One mbarrier (an i64)."""


@dataclass(frozen=True)
class WgmmaElement:
    """What the engine's code depends on in the operands' type."""

    dtype: str  # of tm.wgmma: f16, bf16 or tf32 (f32 operands)
    bytes: int

    @property
    def k(self) -> int:
        """The k of one wgmma (16 for 16-bit operands, 8 for tf32): 32 bytes of a row."""
        return WGMMA_K[self.dtype]

    @property
    def chunk(self) -> int:
        """Elements per 16-byte copy."""
        return COPY_BYTES // self.bytes

    @property
    def row(self) -> int:
        """Elements of one 128-byte swizzled row: the k-tile."""
        return SWIZZLE_BYTES // self.bytes

    @property
    def mn_major_b(self) -> bool:
        """Whether a ``K x N`` B can be read N-major (16-bit operands; tf32 is K-major only)."""
        return self.bytes == 2


WGMMA_F16, WGMMA_BF16, WGMMA_TF32 = WgmmaElement("f16", 2), WgmmaElement("bf16", 2), WgmmaElement("tf32", 4)


def wgmma_element(element: Attribute | str) -> WgmmaElement:
    """The geometry of operands of `element` (an element type, or ``f16``, ``bf16``,
    ``f32``/``tf32``)."""
    if isinstance(element, Float32Type) or element in ("f32", "tf32"):
        return WGMMA_TF32
    if isinstance(element, BFloat16Type) or element == "bf16":
        return WGMMA_BF16
    assert isinstance(element, Float16Type) or element == "f16", element
    return WGMMA_F16


@dataclass(frozen=True)
class MatmulWgmmaParams:
    """Consumer warpgroups (block tile ``64 consumers x block_n``), the k-tile, the ring's
    depth and split-K (see the module docstring)."""

    block_n: int = 128
    consumers: int = 2
    producers: int = 1
    stages: int = 4
    block_k: int = 64
    split_k: int = 1

    def __post_init__(self) -> None:
        if self.consumers not in (1, 2):
            raise ValueError(f"consumers must be 1 or 2 warpgroups, got {self.consumers}")
        if self.producers not in (1, 2, 4):
            raise ValueError(f"producers must be 1, 2 or 4 warps, got {self.producers}")
        if self.block_n % 64 or not 64 <= self.block_n <= 256:
            raise ValueError(f"block_n must be 64, 128, 192 or 256 (a wgmma N of whole 128-byte "
                             f"atoms), got {self.block_n}")
        if not 2 <= self.stages <= 8:
            raise ValueError(f"stages must be in [2, 8], got {self.stages}")
        if self.block_k not in (32, 64):
            raise ValueError(f"block_k must be 64 (16-bit operands) or 32 (tf32): one 128-byte row, "
                             f"got {self.block_k}")
        if self.split_k < 1:
            raise ValueError(f"split_k must be >= 1, got {self.split_k}")

    @property
    def block_m(self) -> int:
        return WGMMA_M * self.consumers

    @property
    def consumer_threads(self) -> int:
        return WARPGROUP * self.consumers

    def chunks(self) -> int:
        """16-byte chunks of one stage: A's ``block_m`` and B's ``block_n`` rows of 128 bytes."""
        return (self.block_m + self.block_n) * SWIZZLE_BYTES // COPY_BYTES

    @property
    def producer_threads(self) -> int:
        return WARP_SIZE * self.producers

    @property
    def producer_chunks(self) -> int:
        """16-byte chunks of a stage each producer thread copies."""
        return self.chunks() // self.producer_threads

    @property
    def threads(self) -> int:
        return self.consumer_threads + self.producer_threads

    @property
    def lag(self) -> int:
        """Stages a producer keeps in flight before it announces the oldest one (``stages -
        2``: one stage is read by the wgmmas in flight, one is being released)."""
        return self.stages - 2

    def tile_grid(self, problem: MatmulProblem) -> tuple[int, int, int]:
        """Blocks along batch, M and N."""
        return problem.batch, math.ceil(problem.m / self.block_m), math.ceil(problem.n / self.block_n)

    def tile_count(self, problem: MatmulProblem) -> int:
        return math.prod(self.tile_grid(problem))

    def blocks(self, problem: MatmulProblem) -> int:
        return self.tile_count(problem) * self.split_k

    def k_tiles(self, problem: MatmulProblem) -> int:
        return math.ceil(problem.k / self.block_k)

    def split(self, problem: MatmulProblem) -> SplitK:
        return SplitK(self.split_k, self.k_tiles(problem), self.tile_count(problem), self.threads)

    @property
    def acc_type(self) -> MemRefType:
        """One thread's accumulators: the ``64 x block_n`` fragment's ``block_n / 2`` floats."""
        return MemRefType(Float32Type(), [self.block_n // 2])

    def scratch(self, problem: MatmulProblem) -> list[tuple[str, MemRefType]]:
        return self.split(problem).scratch(self.acc_type)

    def shared_bytes(self, problem: MatmulProblem | None = None, element: WgmmaElement = WGMMA_F16) -> int:
        """Every stage of both tiles, the 2 mbarriers a stage, split-K's flag. (The
        printer places swizzled tiles at 1024-byte boundaries: the tiles are multiples of
        1024 bytes and come first, so nothing is lost to alignment.)"""
        flag = SPLIT_K_SHARED_BYTES if self.split_k > 1 else 0
        tiles = self.stages * (self.block_m + self.block_n) * self.block_k * element.bytes
        return tiles + 2 * self.stages * BARRIER_BYTES + flag

    @property
    def register_cap(self) -> int:
        """Registers a thread may use with one block of `threads` per SM
        (``__launch_bounds__(threads, 1)``): ptxas plans a kernel with wgmma for whole
        warpgroups (measured, NVCC 13.0: 168 at 288 and 320 threads, 65536 / 384), so 64 K over
        the threads rounded up to 128, in units of 8, at most 255."""
        warpgroups = math.ceil(self.threads / WARPGROUP)
        return min(MAX_REGISTERS_PER_THREAD, REGISTER_FILE // (warpgroups * WARPGROUP) // 8 * 8)

    def register_estimate(self) -> int:
        """The larger role's: a consumer's ``block_n / 2`` accumulators (twice with split-K,
        whose last block adds a split's partials into them) and ~40 for descriptors,
        parities, the loop and a fused epilogue; a producer's unrolled copies, ~2 registers
        each (their addresses, hoisted) and ~40. Measured (NVCC 13.0, sm_90a, the 328 unsplit
        candidates of four problems): ``block_n / 2 + 26`` wherever the consumers dominate
        (58 to 154), a producer thread with 64 chunks 96-128 under a 168 cap -- and up to 236
        where 255 were allowed: ptxas takes what it may --, never a spill or a stack frame."""
        consumer = self.block_n // 2 * (2 if self.split_k > 1 else 1) + 40
        return max(consumer, 2 * self.producer_chunks + 40)

    def describe(self) -> dict[str, int | str]:
        return {"block_m": self.block_m, "block_n": self.block_n, "block_k": self.block_k,
                "consumers": self.consumers, "producers": self.producers, "stages": self.stages,
                "split_k": self.split_k, "threads": self.threads}


# ----------------------------------------------------------------------------- the space


def _fits_problem(P: MatmulWgmmaParams, p: MatmulProblem) -> bool:
    """No block side beyond the problem's rounded up to a power of two (64 always fits)."""
    def up(x: int) -> int:
        return max(64, 1 << max(0, x - 1).bit_length())
    return P.block_m <= up(p.m) and P.block_n <= up(p.n)


@functools.cache
def wgmma_space(element: WgmmaElement = WGMMA_F16, arch: str = "sm_90a") -> Space[MatmulWgmmaParams]:
    """The candidates for operands of `element` on `arch` (sm_90a: 227 KiB of shared memory
    per block)."""
    shared = max_shared_bytes(arch.rstrip("a"))
    return Space(
        "matmul_wgmma",
        [
            Param("block_n", (64, 128, 192, 256), "block tile columns (the wgmma N)"),
            Param("consumers", (1, 2), "consumer warpgroups (block tile rows / 64)"),
            Param("producers", (1, 2, 4), "producer warps (the copies)"),
            Param("stages", (2, 3, 4, 5), "shared k-tiles in the ring"),
            Param("block_k", (element.row,), "k tile: one 128-byte swizzled row"),
            Param("split_k", SPLIT_K_CHOICES, "blocks per output tile, each on a part of K"),
        ],
        MatmulWgmmaParams,
        [
            Constraint("registers <= the block's share (estimate)",
                       lambda P, p: P.register_estimate() <= P.register_cap, static=True),
            Constraint(f"a producer thread copies <= {PRODUCER_CHUNKS} chunks a stage",
                       lambda P, p: P.producer_chunks <= PRODUCER_CHUNKS, static=True),
            Constraint("tile fits the problem", _fits_problem),
            Constraint(f"shared memory <= {shared // 1024} KiB", lambda P, p: P.shared_bytes(p, element) <= shared),
            *split_k_constraints(REFERENCE_SMS),
        ],
    )
