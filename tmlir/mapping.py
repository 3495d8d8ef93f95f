"""The task-mapping algebra of Hidet (Ding et al., ASPLOS 2023), as plain Python.

A task mapping assigns a grid of tasks to a number of workers and orders each worker's
tasks. The two atoms are

* ``spatial(4, 8)``: 32 workers, one task each; worker ``w`` gets task ``(w // 8, w % 8)``;
* ``repeat(2, 2)``: one worker that does all four tasks in row-major order.

Composition ``f * g`` tiles them: it has ``workers(f) * workers(g)`` workers and a task
grid of ``shape(f) * shape(g)`` (elementwise). Worker ``w`` acts as worker ``w // workers(g)``
of ``f`` and worker ``w % workers(g)`` of ``g``; its tasks are
``outer * shape(g) + inner`` for each outer task of ``f`` and, within it, each inner task
of ``g``. :meth:`TaskMapping.worker_tasks` is this semantics, the oracle that the
lowering (``tm-lower-mappings``) is tested against.

The text form, used by the ``#tm.map<...>`` attribute, is ``spatial(4, 8) * repeat(2, 2)``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import product
from typing import Literal

AtomKind = Literal["spatial", "repeat"]


class MappingError(ValueError):
    """A task-mapping expression is malformed or inconsistent."""


@dataclass(frozen=True)
class MappingAtom:
    """``spatial(shape)`` or ``repeat(shape)``."""

    kind: AtomKind
    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.shape:
            raise MappingError(f"{self.kind}() needs at least one dimension")
        if any(d < 1 for d in self.shape):
            raise MappingError(f"{self.kind}{self.shape}: every extent must be >= 1")

    @property
    def num_workers(self) -> int:
        return math.prod(self.shape) if self.kind == "spatial" else 1

    def tasks(self, worker: int) -> list[tuple[int, ...]]:
        """The ordered tasks of `worker` (0 <= worker < num_workers)."""
        if self.kind == "repeat":
            return list(product(*(range(d) for d in self.shape)))
        return [unravel(worker, self.shape)]

    def __str__(self) -> str:
        return f"{self.kind}({', '.join(map(str, self.shape))})"


@dataclass(frozen=True)
class TaskMapping:
    """A composition of atoms, outermost first."""

    atoms: tuple[MappingAtom, ...]

    def __post_init__(self) -> None:
        if not self.atoms:
            raise MappingError("a task mapping needs at least one atom")
        ranks = {len(a.shape) for a in self.atoms}
        if len(ranks) != 1:
            raise MappingError(
                f"cannot compose mappings of different ranks: {' * '.join(map(str, self.atoms))}"
            )

    @property
    def rank(self) -> int:
        return len(self.atoms[0].shape)

    @property
    def num_workers(self) -> int:
        return math.prod(a.num_workers for a in self.atoms)

    @property
    def task_shape(self) -> tuple[int, ...]:
        return tuple(math.prod(dims) for dims in zip(*(a.shape for a in self.atoms)))

    def __mul__(self, other: TaskMapping) -> TaskMapping:
        return TaskMapping(self.atoms + other.atoms)

    def worker_tasks(self, worker: int) -> list[tuple[int, ...]]:
        """The tasks of `worker`, in order; no tasks for a worker id past num_workers."""
        if not 0 <= worker < self.num_workers:
            return []
        tasks: list[tuple[int, ...]] = [(0,) * self.rank]
        ids = _split_worker(worker, [a.num_workers for a in self.atoms])
        for atom, wid in zip(self.atoms, ids):
            inner = atom.tasks(wid)
            tasks = [
                tuple(o * s + i for o, s, i in zip(outer, atom.shape, t))
                for outer in tasks
                for t in inner
            ]
        return tasks

    def __str__(self) -> str:
        return " * ".join(map(str, self.atoms))


def spatial(*shape: int) -> TaskMapping:
    return TaskMapping((MappingAtom("spatial", tuple(shape)),))


def repeat(*shape: int) -> TaskMapping:
    return TaskMapping((MappingAtom("repeat", tuple(shape)),))


def unravel(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major coordinates of a linear `index` in `shape`."""
    coords = []
    for extent in reversed(shape):
        coords.append(index % extent)
        index //= extent
    return tuple(reversed(coords))


def _split_worker(worker: int, counts: list[int]) -> list[int]:
    ids = []
    for count in reversed(counts):
        ids.append(worker % count)
        worker //= count
    return list(reversed(ids))


_ATOM = re.compile(r"\s*(spatial|repeat)\s*\(([^()]*)\)\s*")


def parse_mapping(text: str) -> TaskMapping:
    """Parse ``spatial(4, 8) * repeat(2, 2)``; raises MappingError with the offending part."""
    atoms = []
    for part in text.split("*"):
        match = _ATOM.fullmatch(part)
        if match is None:
            raise MappingError(
                f"expected 'spatial(d, ...)' or 'repeat(d, ...)', got '{part.strip()}'"
            )
        try:
            shape = tuple(int(x) for x in match.group(2).split(","))
        except ValueError:
            raise MappingError(f"extents must be integers in '{part.strip()}'") from None
        atoms.append(MappingAtom(match.group(1), shape))  # type: ignore[arg-type]
    return TaskMapping(tuple(atoms))


def tile_mapping(task_shape: tuple[int, int], workers: int) -> TaskMapping:
    """``repeat(r0, r1) * spatial(s0, s1)`` covering a 2-D task grid with `workers` workers.

    The spatial part puts consecutive workers along the last (contiguous) dimension. All
    extents must divide evenly; the schedule spaces guarantee this for their choices.
    """
    rows, cols = task_shape
    s1 = math.gcd(cols, workers)
    s0 = workers // s1
    if rows % s0 or rows * cols < workers:
        raise MappingError(f"cannot spread a {rows}x{cols} task grid over {workers} workers")
    mapping = spatial(s0, s1)
    if (rows // s0, cols // s1) != (1, 1):
        mapping = repeat(rows // s0, cols // s1) * mapping
    return mapping
