"""How the SIMT GEMM engine (``simt_gemm.py``) moves k-tiles from global to shared memory.

In: one operand of the GEMM (a `GemmOperand`: its loads, and its buffer and addresses when
it may be copied), its shared tile (k outermost: ``smem[stage][k][outer]``), the block's
threads and `MatmulSimtParams`. Out: the ops that fill the tile, one of four ways
(`copy_kind`, the kernel header's ``copy_a``/``copy_b``; see the engine's docstring):

* `PipelineCopy` in the cp.async pipeline: ``cp16`` (16-byte chunks along an outer-major
  operand), ``cp4`` (4-byte copies; a k-contiguous operand transposed by a warp's 8 k of 4
  rows, `pipeline_copy_mapping`), zero-filled past M, N or K, or ``gather`` (``tm.load``
  into registers, stored after the step's arithmetic);
* `TileLoad` on the register path (``ldg``): the next k-tile's elements into registers
  with ``tm.load``, then into the other shared buffer.

Every mapping follows the operand's memory order, so consecutive threads read consecutive
addresses.
"""

from __future__ import annotations

import functools

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Attribute, SSAValue

from tmlir.dialects import tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import TaskMapping, auto_map, repeat, spatial
from tmlir.schedules.gemm import ElementLoad, GemmOperand

if TYPE_CHECKING:
    from tmlir.schedules.matmul_simt import MatmulSimtParams

#: Floats per 16-byte ``cp.async`` chunk.
CHUNK = 4
#: Rows of a k-contiguous operand that one warp's transposing copy covers (8 k each).
COPY_K_LANES = 8
#: The padding of a transposed (k-contiguous) shared tile in the pipeline, in elements.
TRANSPOSED_PAD = 4
#: How each operand travels from global to shared memory (``copy_a``/``copy_b``).
COPY_KINDS = ("cp16", "cp4", "gather", "ldg")


def copy_kind(operand: GemmOperand, stages: int, element: Attribute) -> str:
    """How `operand` travels in a GEMM of `stages` with tiles of `element` (see the module
    docstring): ``ldg`` on the register path, ``gather`` for an operand that is not a
    copyable f32 buffer, else ``cp16`` where 16-byte chunks fit, else ``cp4``."""
    if stages == 1:
        return "ldg"
    if not operand.copyable or not isinstance(element, Float32Type):
        return "gather"
    return "cp16" if operand.chunked and not operand.k_major else "cp4"


def _split(mapping: TaskMapping) -> tuple[TaskMapping, TaskMapping]:
    """(repeat, spatial) parts of an ``auto_map`` result (a missing repeat is all ones)."""
    if len(mapping.atoms) == 2:
        return TaskMapping(mapping.atoms[:1]), TaskMapping(mapping.atoms[1:])
    return repeat(1, 1), mapping


@contextmanager
def _tasks(b: IRBuilder, rep: TaskMapping, spa: TaskMapping, tid: SSAValue,
           names: tuple[str | None, str | None] = (None, None)) -> Iterator[tuple[Index, Index, Index]]:
    """The tasks of ``rep * spa`` (2-D) of thread `tid`: (register index, row, col), the
    row and column named `names`. A thread has one spatial task, so it is the outer loop."""
    r_shape, s_shape = rep.task_shape, spa.task_shape
    with (b.for_task(spa, tid, ["s0", "s1"]) as (s0, s1),
          b.for_task(rep, None, ["r0", "r1"]) as (r0, r1)):
        reg = b.add(b.mul(r0, r_shape[1]), r1)
        yield (reg, b.add(b.mul(r0, s_shape[0]), s0, names[0]),
               b.add(b.mul(r1, s_shape[1]), s1, names[1]))


@functools.lru_cache(maxsize=4096)  # the spaces ask for the same few tiles thousands of times
def pipeline_copy_mapping(kind: str, k_major: bool, outer: int, block_k: int,
                          threads: int) -> tuple[TaskMapping, TaskMapping] | None:
    """(repeat, spatial) of the pipeline's copy of an ``outer x block_k`` tile (in the
    operand's memory order, in units of copies: 4-float chunks along outer for ``cp16``),
    or None when the threads cannot share the tile evenly (the space rules that out): a
    k-contiguous operand takes ``repeat * spatial(threads / 8, 8)`` (a warp: 8 k of 4 rows),
    any other ``auto_map`` over the tile."""
    if k_major:
        rows = threads // COPY_K_LANES
        if outer % rows or block_k % COPY_K_LANES:
            return None
        return repeat(outer // rows, block_k // COPY_K_LANES), spatial(rows, COPY_K_LANES)
    vector = CHUNK if kind == "cp16" else 1
    if outer % vector or (block_k * outer // vector) % threads:
        return None
    return _split(auto_map((block_k, outer // vector), threads))


@dataclass
class PipelineCopy:
    """One operand's copies into its shared tile (k outermost) in the pipeline."""

    kind: str  # cp16, cp4 or gather
    op: GemmOperand
    smem: SSAValue
    outer: int  # block_m or block_n
    extent: int  # M or N
    origin: Index  # the block's first row (column)
    P: MatmulSimtParams
    registers: SSAValue | None = None  # gather: one k-tile's elements of this thread

    @property
    def mapping(self) -> tuple[TaskMapping, TaskMapping]:
        mapping = pipeline_copy_mapping(self.kind, self.op.k_major, self.outer, self.P.block_k, self.P.threads)
        assert mapping is not None, f"{self.kind} copy of a {self.outer} x {self.P.block_k} tile " \
                                    f"over {self.P.threads} threads"
        return mapping

    @property
    def per_thread(self) -> int:
        return self.outer * self.P.block_k // self.P.threads

    @contextmanager
    def tasks(self, b: IRBuilder, tid: SSAValue) -> Iterator[tuple[Index, Index, Index]]:
        """This thread's copies: (register index, outer, k) within the tile."""
        rep, spa = self.mapping
        vector = CHUNK if self.kind == "cp16" else 1
        if self.op.k_major:
            with _tasks(b, rep, spa, tid, ("t_outer", "t_k")) as (reg, row, col):
                yield reg, row, col
        else:
            with _tasks(b, rep, spa, tid, ("t_k", "t_chunk" if vector > 1 else "t_outer")) as (reg, row, col):
                yield reg, b.mul(col, vector, "t_outer") if vector > 1 else col, row

    def issue(self, b: IRBuilder, tid: SSAValue, k0: Index, k_extent: int, stage: Index,
              to_registers: bool) -> None:
        """Tile ``k0 / block_k`` into buffer `stage`: cp.async, or a gathered operand's
        loads (into its registers when `to_registers`, else straight into the tile)."""
        with self.tasks(b, tid) as (reg, o, k):
            g_outer, g_k = b.add(self.origin, o, "g_outer"), b.add(k0, k, "g_k")
            if self.kind != "gather":
                self.copy(b, g_outer, g_k, k_extent, [stage, k, o])
            elif to_registers:
                assert self.registers is not None
                b.store(self.op.load(g_outer, g_k), self.registers, [reg])
            else:
                b.store(self.op.load(g_outer, g_k), self.smem, [stage, k, o])

    def copy(self, b: IRBuilder, g_outer: Index, g_k: Index, k_extent: int, dst: list[Index]) -> None:
        """One cp.async of element (chunk) ``(g_outer, g_k)`` to `dst`, zero-filled past M, N
        or K (the source clamped to the operand's origin) or where the operand's own
        condition fails."""
        assert self.op.buffer is not None and self.op.address is not None
        checks = []  # past M (N) or K: read from the operand's first row (k) instead
        if self.extent % self.outer:
            checks.append(b.lt(g_outer, self.extent, "in_outer"))
            g_outer = _clamp(b, checks[-1], g_outer)
        if k_extent % self.P.block_k:
            checks.append(b.lt(g_k, k_extent, "in_k"))
            g_k = _clamp(b, checks[-1], g_k)
        in_tile = b.all_of(checks)
        indices, inside_operand = self.op.address(g_outer, g_k)
        inside = b.all_of([c for c in (in_tile, inside_operand) if c is not None])
        if inside is not None and inside.name_hint is None:
            inside.name_hint = "inside"
        nbytes = 16 if self.kind == "cp16" else 4
        b.insert(tm.CpAsyncOp(nbytes, self.smem, [b.value(i) for i in dst], self.op.buffer,
                              [b.value(i) for i in indices], inside))

    def registers_to_shared(self, b: IRBuilder, tid: SSAValue, stage: Index) -> None:
        assert self.registers is not None
        with self.tasks(b, tid) as (reg, o, k):
            b.store(b.load(self.registers, [reg]), self.smem, [stage, k, o])


def _clamp(b: IRBuilder, inside: SSAValue, x: Index) -> SSAValue:
    """`x` where `inside`, else 0 (an index inside the operand for a zero-filled copy)."""
    return b.insert(arith.SelectOp(inside, b.value(x), b.value(0)), "clamped").results[0]


@dataclass(frozen=True)
class TileLoad:
    """The register path's cooperative copy of one operand's ``outer x block_k`` tile,
    global → registers → ``smem[stage][k][outer]``.

    The operand is stored ``(..., outer, k)`` unless `k_outermost`, when it is
    ``(..., k, outer)`` (contiguous along outer); the copy's mapping ``repeat * spatial``
    follows that memory order so consecutive threads read consecutive addresses. Which
    global element a task reads is the caller's `ElementLoad`.
    """

    outer: int
    block_k: int
    k_outermost: bool
    threads: int

    @property
    def tile(self) -> tuple[int, int]:
        return (self.block_k, self.outer) if self.k_outermost else (self.outer, self.block_k)

    @property
    def per_thread(self) -> int:
        return self.outer * self.block_k // self.threads

    @contextmanager
    def _tasks(self, b: IRBuilder, tid: SSAValue) -> Iterator[tuple[Index, Index, Index]]:
        """Open the copy's task loops; yield (register index, outer, k) of the task."""
        rep, spa = _split(auto_map(self.tile, self.threads))
        with _tasks(b, rep, spa, tid) as (reg, rows, cols):
            o, k = (cols, rows) if self.k_outermost else (rows, cols)
            yield reg, o, k

    def to_registers(self, b: IRBuilder, load: ElementLoad, regs: SSAValue, tid: SSAValue,
                     o_base: Index, k_base: Index) -> None:
        with self._tasks(b, tid) as (reg, o, k):
            b.store(load(b.add(o_base, o), b.add(k_base, k)), regs, [reg])

    def to_shared(self, b: IRBuilder, regs: SSAValue, smem: SSAValue, stage: Index,
                  tid: SSAValue) -> None:
        with self._tasks(b, tid) as (reg, o, k):
            b.store(b.load(regs, [reg]), smem, [stage, k, o])
