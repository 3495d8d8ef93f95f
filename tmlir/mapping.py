"""The task-mapping algebra of Hidet (Ding et al., ASPLOS 2023), as plain Python.

A task mapping assigns a grid of tasks to a number of workers and orders each worker's
tasks. The two atoms are

* ``spatial(4, 8)``: 32 workers, one task each; worker ``w`` gets task ``(w // 8, w % 8)``;
* ``repeat(2, 2)``: one worker that does all four tasks in row-major order.

Both take ``ranks``, a permutation of the dimensions giving each one's place in the
linear order: the dimension of rank 0 varies slowest. The default is row-major
``(0, 1, ..., r-1)``; ``ranks=[1, 0]`` is column-major, so ``spatial(4, 8, ranks=[1, 0])``
gives worker ``w`` the task ``(w % 4, w // 4)`` and ``repeat(2, 3, ranks=[1, 0])`` runs
its loops with dimension 1 outermost. ``repeat`` also takes ``unroll``, one flag per
dimension saying whether its loop is fully unrolled when lowered (default: extents up to
``UNROLL_LIMIT``); it does not change which tasks run or in what order.

Composition ``f * g`` tiles them: it has ``workers(f) * workers(g)`` workers and a task
grid of ``shape(f) * shape(g)`` (elementwise). Worker ``w`` acts as worker ``w // workers(g)``
of ``f`` and worker ``w % workers(g)`` of ``g``; its tasks are
``outer * shape(g) + inner`` for each outer task of ``f`` and, within it, each inner task
of ``g``. :meth:`TaskMapping.worker_tasks` is this semantics, the oracle that the
lowering (``tm-lower-mappings``) is tested against.

The text form, used by ``#tm.map<...>`` and ``tm.for_task``, is
``spatial(4, 8, ranks=[1, 0]) * repeat(2, 64, unroll=[true, false])``; keywords at their
defaults are not printed. :func:`auto_map` builds ``repeat(...) * spatial(...)`` for a task
grid and a worker count.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Literal, TypeVar

from xdsl.context import Context
from xdsl.parser import BaseParser, Parser
from xdsl.utils.exceptions import ParseError

T = TypeVar("T")

AtomKind = Literal["spatial", "repeat"]
KEYWORDS = ("ranks", "unroll")
UNROLL_LIMIT = 16
"""``repeat`` loops of at most this extent are unrolled when ``unroll`` is not given."""


class MappingError(ValueError):
    """A task-mapping expression is malformed or inconsistent."""


@dataclass(frozen=True)
class MappingAtom:
    """``spatial(shape, ranks=...)`` or ``repeat(shape, ranks=..., unroll=...)``.

    `ranks` is normalized to a tuple (row-major when not given), so atoms that differ only
    in how they spell the default compare equal. `unroll` stays None unless given.
    """

    kind: AtomKind
    shape: tuple[int, ...]
    ranks: tuple[int, ...] | None = None
    unroll: tuple[bool, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("spatial", "repeat"):
            raise MappingError(f"unknown atom '{self.kind}', expected 'spatial' or 'repeat'")
        object.__setattr__(self, "shape", tuple(self.shape))
        if not self.shape:
            raise MappingError(f"{self.kind}() needs at least one dimension")
        if any(d < 1 for d in self.shape):
            raise MappingError(f"{self.kind}({', '.join(map(str, self.shape))}): every extent must be >= 1")
        rank = len(self.shape)
        ranks = tuple(range(rank)) if self.ranks is None else tuple(self.ranks)
        object.__setattr__(self, "ranks", ranks)
        if sorted(ranks) != list(range(rank)):
            raise MappingError(
                f"{self}: ranks must be a permutation of {list(range(rank))}, one per dimension"
            )
        if self.unroll is not None:
            object.__setattr__(self, "unroll", tuple(self.unroll))
            if self.kind == "spatial":
                raise MappingError(f"{self}: unroll applies to repeat only")
            if len(self.unroll) != rank:
                raise MappingError(
                    f"{self}: unroll has {len(self.unroll)} flags for {rank} dimensions"
                )

    @property
    def num_workers(self) -> int:
        return math.prod(self.shape) if self.kind == "spatial" else 1

    @property
    def order(self) -> tuple[int, ...]:
        """The dimensions from slowest (rank 0) to fastest varying."""
        assert self.ranks is not None
        return tuple(sorted(range(len(self.shape)), key=self.ranks.__getitem__))

    @property
    def unroll_flags(self) -> tuple[bool, ...]:
        """Per dimension, whether its loop is unrolled (the given flags or the default)."""
        return self.unroll or tuple(d <= UNROLL_LIMIT for d in self.shape)

    def tasks(self, worker: int) -> list[tuple[int, ...]]:
        """The ordered tasks of `worker` (0 <= worker < num_workers)."""
        order = self.order
        permuted = [self.shape[d] for d in order]
        if self.kind == "repeat":
            ordered = list(product(*(range(d) for d in permuted)))
        else:
            ordered = [unravel(worker, tuple(permuted))]
        return [_scatter(coords, order) for coords in ordered]

    def __str__(self) -> str:
        args = [str(d) for d in self.shape]
        if self.ranks is not None and self.ranks != tuple(range(len(self.shape))):
            args.append(f"ranks=[{', '.join(map(str, self.ranks))}]")
        if self.unroll is not None:
            args.append(f"unroll=[{', '.join('true' if u else 'false' for u in self.unroll)}]")
        return f"{self.kind}({', '.join(args)})"


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


def spatial(*shape: int, ranks: Sequence[int] | None = None) -> TaskMapping:
    """One task per worker: ``prod(shape)`` workers numbered over the dims in rank order."""
    return TaskMapping((MappingAtom("spatial", shape, _tuple(ranks)),))


def repeat(
    *shape: int, ranks: Sequence[int] | None = None, unroll: Sequence[bool] | None = None
) -> TaskMapping:
    """One worker doing every task, in loops nested in rank order."""
    return TaskMapping((MappingAtom("repeat", shape, _tuple(ranks), _tuple(unroll)),))


def unravel(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major coordinates of a linear `index` in `shape`."""
    coords = []
    for extent in reversed(shape):
        coords.append(index % extent)
        index //= extent
    return tuple(reversed(coords))


def _scatter(coords: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    """Coordinates listed in `order` (slowest dim first) back in dimension order."""
    out = [0] * len(order)
    for c, d in zip(coords, order):
        out[d] = c
    return tuple(out)


def _tuple(values: Sequence | None) -> tuple | None:
    return None if values is None else tuple(values)


def _split_worker(worker: int, counts: list[int]) -> list[int]:
    ids = []
    for count in reversed(counts):
        ids.append(worker % count)
        worker //= count
    return list(reversed(ids))


# ---- text form --------------------------------------------------------------------------
def parse_mapping_expr(parser: BaseParser) -> TaskMapping:
    """``spatial(4, 8, ranks=[1, 0]) * repeat(2, 2, unroll=[true, false])`` with an xDSL
    parser's tokens (the one grammar of the text form: ``#tm.map<...>``, ``tm.for_task ...
    in <mapping>`` and `parse_mapping`); a malformed atom is a parse error at that atom."""
    start = parser.pos
    atoms = [_parse_mapping_atom(parser)]
    while parser.parse_optional_punctuation("*") is not None:
        atoms.append(_parse_mapping_atom(parser))
    try:
        return TaskMapping(tuple(atoms))
    except MappingError as exc:
        parser.raise_error(str(exc), start, parser.pos)


def _parse_mapping_atom(parser: BaseParser) -> MappingAtom:
    """``spatial(4, 8, ranks=[1, 0])`` or ``repeat(2, 2, ranks=[..], unroll=[true, false])``."""
    start = parser.pos
    kind = parser.parse_keyword_in(("spatial", "repeat"), " in a task mapping")
    shape: list[int] = []
    keywords: dict[str, list] = {}

    def parse_argument() -> None:
        key_start = parser.pos
        if (key := parser.parse_optional_identifier()) is None:
            if keywords:
                parser.raise_error("extents must come before keywords in a task mapping")
            shape.append(parser.parse_integer(allow_boolean=False))
            return
        if key not in KEYWORDS:
            if parser.parse_optional_punctuation("=") is None:
                parser.raise_error(f"expected an integer extent, got '{key}' in {kind}(...)",
                                   key_start, parser.pos)
            parser.raise_error(f"unknown keyword '{key}' in {kind}(...), expected "
                               f"{' or '.join(KEYWORDS)}", key_start, parser.pos)
        if key in keywords:
            parser.raise_error(f"'{key}' given twice in {kind}(...)", key_start, parser.pos)
        parser.parse_punctuation("=")
        element = (
            (lambda: parser.parse_integer(allow_boolean=False)) if key == "ranks"
            else (lambda: parser.parse_boolean(" (unroll flag)"))
        )
        keywords[key] = parser.parse_comma_separated_list(BaseParser.Delimiter.SQUARE, element)

    parser.parse_comma_separated_list(BaseParser.Delimiter.PAREN, parse_argument)
    try:
        return make_atom(kind, shape, keywords.get("ranks"), keywords.get("unroll"))
    except MappingError as exc:
        parser.raise_error(str(exc), start, parser.pos)


@functools.lru_cache(maxsize=1024)
def parse_mapping(text: str) -> TaskMapping:
    """Parse ``spatial(4, 8, ranks=[1, 0]) * repeat(2, 2, unroll=[true, false])``.

    Raises MappingError with the parser's one-line message.
    """
    return parse_text(text, parse_mapping_expr, MappingError)


def parse_text(text: str, grammar: Callable[[BaseParser], T], error: type[ValueError]) -> T:
    """`grammar` applied to the whole of `text`; a parse error is raised as `error`."""
    parser = Parser(Context(), text)
    try:
        result = grammar(parser)
        if parser.pos < len(text.rstrip()):
            parser.raise_error("unexpected text after the expression")
    except ParseError as exc:
        raise error(exc.msg) from None
    return result


def make_atom(
    kind: str, shape: Sequence[int], ranks: Sequence[int] | None = None,
    unroll: Sequence[bool] | None = None,
) -> MappingAtom:
    """An atom from parsed parts."""
    return MappingAtom(kind, tuple(shape), _tuple(ranks), _tuple(unroll))  # type: ignore[arg-type]


# ---- building mappings ------------------------------------------------------------------
def auto_map(
    task_shape: Sequence[int], workers: int, ranks: Sequence[int] | None = None
) -> TaskMapping:
    """``repeat(...) * spatial(...)`` spreading `workers` exactly over a `task_shape` grid.

    As Hidet's ``auto_map``: the spatial extents go to the fastest-varying dimensions first
    (per `ranks`, row-major by default: the last dimension first), each the gcd of the
    extent and the workers left; what remains of each dimension is an outer repeat. Both
    atoms use `ranks`. An all-ones repeat is omitted, and so is an all-ones spatial (one
    worker) behind a repeat. Raises MappingError unless ``prod(task_shape)`` is a multiple
    of `workers` (then the factorisation always exists).
    """
    shape = tuple(task_shape)
    whole = MappingAtom("repeat", shape, _tuple(ranks))  # validates the shape and ranks
    grid = "x".join(map(str, shape))
    if workers < 1 or math.prod(shape) % workers:
        raise MappingError(f"cannot spread a {grid} task grid over {workers} workers")
    spatial_shape = [1] * len(shape)
    left = workers
    for d in reversed(whole.order):
        spatial_shape[d] = math.gcd(shape[d], left)
        left //= spatial_shape[d]
    # Per prime factor, the gcds take what each dim has until `workers` is exhausted, so
    # they always succeed once prod(shape) is a multiple of workers.
    assert left == 1, (shape, workers)
    repeat_shape = tuple(e // s for e, s in zip(shape, spatial_shape))
    outer = repeat(*repeat_shape, ranks=whole.ranks)
    inner = spatial(*spatial_shape, ranks=whole.ranks)
    if all(e == 1 for e in repeat_shape):
        return inner
    return outer if workers == 1 else outer * inner

