"""Where each intermediate buffer of a compiled model lives: one arena, reused by liveness.

A model's launch plan (`CudaProgram.launches`) names, for every launch, the buffers its
kernel reads and writes. An intermediate (``temp``) buffer is *live* from the first launch
that uses it to the last; two buffers whose live ranges share no launch may share memory.
`plan_memory` gives every temp a byte offset in one arena so that buffers live at the same
time never overlap, placing the largest buffers first, each in the smallest gap that fits
(best fit), or at the arena's end when none does. Inputs, outputs and weights are never in
the arena: a kernel can never overwrite them through a reused buffer. Nor are ``zeroed``
buffers (a kernel's counters: zero before the first launch, left zero by every launch):
each has memory of its own, zeroed once by the runner and kept from run to run.

    plan = plan_memory(program)
    plan.arena_bytes      # the memory the temps take: the peak
    plan.no_reuse_bytes   # what they would take, one allocation each
    plan.offsets[i]       # byte offset of buffer i (a temp) in the arena

Both runtimes use the plan: emu cuts numpy views out of one host arena, cuda pointers into
one device allocation. A temp used by no launch is given no memory.

The plan assumes what every template guarantees: a kernel writes each element of a temp it
produces before any later launch reads it, so a temp need not start out zero. (The test
suite runs every model with the arena filled with NaN to hold templates to it.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tmlir.backends.cuda_c import BufferSpec, CudaProgram

#: Byte alignment of every buffer in the arena (cudaMalloc's is 256; it suits vector loads).
ALIGNMENT = 256


def buffer_bytes(buf: BufferSpec) -> int:
    """Size in bytes of `buf` (a rank-0 buffer holds one element)."""
    return int(np.prod(buf.shape, dtype=np.int64)) * np.dtype(buf.dtype).itemsize


def _align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


@dataclass(frozen=True)
class Lifetime:
    """A temp buffer's size and the launches it is live across (inclusive)."""

    buffer: int
    nbytes: int
    first: int
    last: int

    def overlaps(self, other: Lifetime) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class MemoryPlan:
    """Byte offsets of a program's temp buffers in one arena (see the module docstring)."""

    offsets: dict[int, int]
    lifetimes: tuple[Lifetime, ...]
    arena_bytes: int
    no_reuse_bytes: int
    reuse: bool = True
    sizes: dict[str, int] = field(default_factory=dict)

    @property
    def live_peak_bytes(self) -> int:
        """The most bytes live at any one launch: the floor no placement can beat."""
        if not self.lifetimes:
            return 0
        last = max(t.last for t in self.lifetimes)
        live = [0] * (last + 2)
        for t in self.lifetimes:
            live[t.first] += t.nbytes
            live[t.last + 1] -= t.nbytes
        return int(max(np.cumsum(live)))

    def report(self) -> dict[str, int | float | bool]:
        """The plan in numbers: peak (arena) bytes against the no-reuse sum, and the rest."""
        return {
            "reuse": self.reuse,
            "temps": len(self.lifetimes),
            "peak_bytes": self.arena_bytes,
            "no_reuse_bytes": self.no_reuse_bytes,
            "live_peak_bytes": self.live_peak_bytes,
            "peak_fraction": round(self.arena_bytes / self.no_reuse_bytes, 4)
            if self.no_reuse_bytes else 0.0,
            **self.sizes,
        }


def lifetimes(program: CudaProgram) -> list[Lifetime]:
    """The live range of every temp buffer some launch uses, in buffer order."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for step, launch in enumerate(program.launches):
        for arg in launch.args:
            first.setdefault(arg, step)
            last[arg] = step
    return [Lifetime(i, _align(buffer_bytes(buf), ALIGNMENT), first[i], last[i])
            for i, buf in enumerate(program.buffers) if buf.kind == "temp" and i in first]


def plan_memory(program: CudaProgram, reuse: bool = True) -> MemoryPlan:
    """Place `program`'s temps in one arena; with `reuse` false, each gets memory of its own."""
    spans = lifetimes(program)
    placed: list[tuple[int, Lifetime]] = []  # (offset, lifetime)
    offsets: dict[int, int] = {}
    end = 0
    # Largest first (ties: earliest first), so big buffers claim the low addresses and
    # small ones fill the gaps between them.
    for span in sorted(spans, key=lambda t: (-t.nbytes, t.first, t.buffer)):
        offset = end
        if reuse:
            offset = _best_fit(span, placed)
        offsets[span.buffer] = offset
        placed.append((offset, span))
        end = max(end, offset + span.nbytes)
    sizes = {kind: sum(buffer_bytes(b) for b in program.buffers if b.kind == kind)
             for kind in ("input", "output", "weight", "zeroed")}
    return MemoryPlan(offsets, tuple(spans), end, sum(t.nbytes for t in spans), reuse,
                      {f"{kind}_bytes": n for kind, n in sizes.items()})


def _best_fit(span: Lifetime, placed: list[tuple[int, Lifetime]]) -> int:
    """The offset of the smallest gap between buffers live with `span` that holds it; the
    end of those buffers when no gap does."""
    busy = sorted((offset, offset + other.nbytes) for offset, other in placed
                  if other.overlaps(span))
    best: tuple[int, int] | None = None  # (gap size, offset)
    cursor = 0
    for start, stop in busy:
        gap = start - cursor
        if gap >= span.nbytes and (best is None or gap < best[0]):
            best = (gap, cursor)
        cursor = max(cursor, stop)
    return best[1] if best is not None else cursor


def check_plan(plan: MemoryPlan) -> None:
    """Assert that no two buffers live at the same launch overlap in the arena."""
    by_buffer = {t.buffer: t for t in plan.lifetimes}
    items = sorted(plan.offsets.items(), key=lambda kv: kv[1])
    for i, (a, offset_a) in enumerate(items):
        for b, offset_b in items[i + 1:]:
            if offset_b >= offset_a + by_buffer[a].nbytes:
                break
            assert not by_buffer[a].overlaps(by_buffer[b]), (
                f"buffers {a} and {b} are live together and overlap in the arena")
