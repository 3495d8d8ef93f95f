"""The tensor-core attention template's parameters, what it covers, and how its tiles are
chosen (``attention_tc.py`` builds the kernel).

`AttentionTcParams` are the tiles of ``attention_tc``: query rows per block (16 per warp),
keys per tile and the depth of the key/value pipeline. `check_problem` says which problems
the template takes (f16 or bf16 q, k, v; D a multiple of 16, the k of m16n8k16; Dv a
multiple of 8, the n of its tile), `dense_operands` which of q, k, v it can copy by
``cp.async`` (16 bytes along their contiguous dim), and `default_for` picks the tiles: a
small space (`CANDIDATES`) that the latency model (``kloops.attention_tc_kloop``) ranks on
the arch's reference GPU -- the first of equal estimates wins, so larger tiles win ties.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection
from dataclasses import dataclass

from xdsl.dialects.builtin import BFloat16Type, Float16Type
from xdsl.ir import Attribute

from tmlir.gpu_limits import MAX_SHARED_BYTES, WARP_SIZE, max_shared_bytes
from tmlir.latency import Launch, estimate
from tmlir.schedules.attention_params import AttentionProblem
from tmlir.schedules.kloops import attention_tc_kloop, attention_tc_pressure, register_estimate
from tmlir.schedules.registry import NoTemplate

__all__ = ["CANDIDATES", "AttentionTcParams", "check_problem", "covers", "default_for", "dense_operands",
           "header"]

HALF_BYTES = 2
CHUNK = 8
"""Halves per 16-byte ``cp.async``."""
MMA_M, MMA_N, MMA_K = 16, 8, 16
#: Register pressure (``kloops.attention_tc_pressure``) above which a candidate is left out:
#: ptxas spilled every measured tiling above it.
MAX_PRESSURE = 248
#: Elements of a gathered key or value tile one thread loads per step, at most: all of them
#: are in flight together (unrolled); more spilled (sm_90: 728 bytes and up at 32).
MAX_GATHERED_PER_THREAD = 16


@dataclass(frozen=True)
class AttentionTcParams:
    """Query rows per block (`block_q`, one warp per 16), keys per tile (`block_k`, a
    multiple of 16) and key/value tiles in flight (`stages` shared buffers of each)."""

    block_q: int = 64
    block_k: int = 64
    stages: int = 2

    def __post_init__(self) -> None:
        if self.block_q < MMA_M or self.block_q % MMA_M:
            raise ValueError(f"block_q must be a positive multiple of {MMA_M}, got {self.block_q}")
        if self.block_k < MMA_K or self.block_k % MMA_K:
            raise ValueError(f"block_k must be a positive multiple of {MMA_K}, got {self.block_k}")
        if not 2 <= self.stages <= 4:
            raise ValueError(f"stages must be 2, 3 or 4, got {self.stages}")

    @property
    def warps(self) -> int:
        return self.block_q // MMA_M

    @property
    def threads(self) -> int:
        return self.warps * WARP_SIZE

    def q_tiles(self, problem: AttentionProblem) -> int:
        return math.ceil(problem.sq / self.block_q)

    def k_tiles(self, problem: AttentionProblem) -> int:
        return math.ceil(problem.sk / self.block_k)

    def blocks(self, problem: AttentionProblem) -> int:
        return problem.batch * self.q_tiles(problem)

    def tiles_needed(self, problem: AttentionProblem, q_tile: int) -> int:
        """The key tiles q-tile `q_tile` walks: all, or (causal) up to its last row's."""
        n = self.k_tiles(problem)
        if not problem.causal:
            return n
        return min(n, math.ceil((q_tile + 1) * self.block_q / self.block_k))

    def causal_tiles(self, problem: AttentionProblem) -> int:
        """Key tiles the blocks of one batch element walk in all."""
        return sum(self.tiles_needed(problem, qt) for qt in range(self.q_tiles(problem)))

    def shared_bytes(self, problem: AttentionProblem) -> int:
        """The query tile and `stages` key and value tiles, in halves."""
        return HALF_BYTES * (self.block_q * problem.d + self.stages * self.block_k * (problem.d + problem.dv))

    def check(self, problem: AttentionProblem) -> None:
        """ValueError, one line, for tiles that take more shared memory than any GPU has."""
        if (need := self.shared_bytes(problem)) > MAX_SHARED_BYTES:
            raise ValueError(f"attention_tc tiles (block_q {self.block_q}, block_k {self.block_k}, "
                             f"{self.stages} stages) take {need} bytes of shared memory for D = {problem.d}, "
                             f"Dv = {problem.dv}; at most {MAX_SHARED_BYTES}")

    def describe(self, problem: AttentionProblem, dtype: str, copies: dict[str, str]) -> dict[str, int | str]:
        """The kernel header (``tm.params``): the problem's sizes, the tiles, the mma type and
        how q, k and v travel (``copy_q``, ``copy_k``, ``copy_v``: ``cp16`` or ``gather``)."""
        return {"Sq": problem.sq, "Sk": problem.sk, "D": problem.d, "Dv": problem.dv,
                "block_q": self.block_q, "block_k": self.block_k, "stages": self.stages,
                "threads": self.threads, "dtype": dtype, **copies,
                **({"causal": 1} if problem.causal else {}),
                **({"bias": 1} if problem.bias_shape is not None else {})}


def half_dtype(element: Attribute) -> str:
    """``f16`` or ``bf16``; NoTemplate for another element type."""
    if isinstance(element, Float16Type):
        return "f16"
    if isinstance(element, BFloat16Type):
        return "bf16"
    raise NoTemplate(f"the tensor-core attention takes f16 or bf16 q, k and v, got {element}")


def check_problem(problem: AttentionProblem, element: Attribute) -> None:
    """NoTemplate naming what ``attention_tc`` does not cover: q, k, v not f16/bf16, an empty
    dim, D not a multiple of 16 (the k of an m16n8k16 mma) or Dv not a multiple of 8."""
    half_dtype(element)
    p = problem
    if min(p.batch, p.sq, p.sk, p.d, p.dv) == 0:
        raise NoTemplate("the tensor-core attention needs non-empty q, k and v")
    if p.d % MMA_K or p.dv % MMA_N:
        raise NoTemplate(f"the tensor-core attention needs D a multiple of {MMA_K} and Dv a multiple of "
                         f"{MMA_N}, got D = {p.d}, Dv = {p.dv}")


def covers(problem: AttentionProblem, element: Attribute, arch: str | None = None) -> bool:
    """Whether `check_problem` accepts `problem` with q, k, v of `element` and tiles fit it on
    `arch` (`default_for`), whether its operands are copied or all gathered (a head size
    of 256 fits neither: its fragments alone pass the register budget)."""
    try:
        check_problem(problem, element)
        dtype = half_dtype(element)
        default_for(problem, dtype, arch)
        default_for(problem, dtype, arch, frozenset({0, 1, 2}))
    except NoTemplate:
        return False
    return True


def dense_operands(problem: AttentionProblem) -> frozenset[int]:
    """The operands (0: q, 1: k, 2: v) whose tiles ``cp.async`` can copy 16 bytes at a time:
    rows of whole chunks along the contiguous dim (D, Dv; Sk for a kᵀ), so every chunk is
    16-byte aligned and lies wholly inside or outside the operand."""
    dense = {0, 2}  # D and Dv are multiples of 8 (check_problem)
    if not problem.k_transposed or problem.sk % CHUNK == 0:
        dense.add(1)
    return frozenset(dense)


def copy_kinds(problem: AttentionProblem, gathered: Collection[int]) -> dict[str, str]:
    """``copy_q``, ``copy_k``, ``copy_v``: ``cp16`` for a dense operand without a prologue,
    else ``gather``."""
    dense = dense_operands(problem) - set(gathered)
    return {f"copy_{n}": "cp16" if i in dense else "gather" for i, n in enumerate("qkv")}


def header(problem: AttentionProblem, params: AttentionTcParams, dtype: str,
           gathered: Collection[int] = ()) -> dict[str, int | str]:
    """The ``tm.params`` of the kernel of `problem` with `params` (what the latency model reads)."""
    return params.describe(problem, dtype, copy_kinds(problem, gathered))


#: The space the default choice ranks: block_q (warps x 16), block_k, stages; largest first.
CANDIDATES = tuple(AttentionTcParams(bq, bk, st) for bq in (128, 64, 32, 16) for bk in (64, 32)
                   for st in (2, 3))


def _fits(problem: AttentionProblem, params: AttentionTcParams, arch: str | None,
          gathered: Collection[int] = (), tall: bool = False) -> bool:
    """No block taller than Sq rounded up to 16 (and a power of two; unless `tall`), no key
    tile wider than Sk rounded up to 32, no deeper pipeline than there are key tiles;
    shared memory within the arch's; register pressure within `MAX_PRESSURE`; a gathered
    key or value tile within `MAX_GATHERED_PER_THREAD` elements a thread."""
    rows = max(MMA_M, 1 << max(0, problem.sq - 1).bit_length())
    keys = max(32, 1 << max(0, problem.sk - 1).bit_length())
    if (params.block_q > rows and not tall) or params.block_k > keys:
        return False
    if params.stages > 2 and params.k_tiles(problem) < params.stages:
        return False  # a deeper pipeline than there are tiles
    values = header(problem, params, "f16", gathered)
    if any(values[f"copy_{n}"] == "gather" and math.ceil(params.block_k * dim / params.threads)
           > MAX_GATHERED_PER_THREAD for n, dim in (("k", problem.d), ("v", problem.dv))):
        return False
    return params.shared_bytes(problem) <= max_shared_bytes(arch) and attention_tc_pressure(values) <= MAX_PRESSURE


def launch(problem: AttentionProblem, params: AttentionTcParams, dtype: str = "f16",
           gathered: Collection[int] = (), bias_bytes: int = 4) -> Launch:
    """What the latency model needs of the kernel (``tmlir.latency``), without building it:
    the mma FLOPs of the key tiles the blocks walk, the softmax's FLOPs on CUDA cores, the
    compulsory bytes of q, k, v (halves), the bias and the f32 result."""
    values = header(problem, params, dtype, gathered)
    p = problem
    walked = p.batch * params.causal_tiles(p) * params.block_q * params.block_k
    bias = math.prod(p.bias_shape) * bias_bytes if p.bias_shape is not None else 0
    compulsory = (math.prod(p.q_shape) + math.prod(p.k_shape) + math.prod(p.v_shape)) * HALF_BYTES \
        + math.prod(p.out_shape) * 4 + bias
    return Launch(params.blocks(p), params.threads, register_estimate("attention_tc", values) or 128,
                  params.shared_bytes(p), 8 * walked, compulsory, {dtype: 2 * walked * (p.d + p.dv)},
                  attention_tc_kloop(values))


@functools.lru_cache(maxsize=1024)
def default_for(problem: AttentionProblem, dtype: str = "f16", arch: str | None = None,
                gathered: frozenset[int] = frozenset()) -> AttentionTcParams:
    """The tiles of `problem`: of the `CANDIDATES` that fit (`_fits`), the one the latency
    model estimates fastest on `arch`'s reference GPU (``model_choice.gpu_for``); the first
    of equal estimates (the larger tile). A gathered operand's tile is loaded with the
    step's barrier, not ahead: only 2 stages then. Where no block as short as Sq fits
    (gathered tiles of D = 128 need 256 threads), taller ones are tried; NoTemplate where
    nothing fits."""
    from tmlir.schedules.model_choice import REFERENCE_ARCH, gpu_for

    on = gpu_for(arch or REFERENCE_ARCH)
    deep = not (set(gathered) & {1, 2}) and {1, 2} <= dense_operands(problem)
    candidates = [c for c in CANDIDATES if (deep or c.stages == 2) and _fits(problem, c, arch, gathered)] or \
        [c for c in CANDIDATES if (deep or c.stages == 2) and _fits(problem, c, arch, gathered, tall=True)]
    if not candidates:
        raise NoTemplate(f"no tensor-core attention tiles fit D = {problem.d}, Dv = {problem.dv}")
    scored = [(estimate(launch(problem, c, dtype, gathered), on).seconds, i, c) for i, c in enumerate(candidates)]
    return min(scored)[2]
