"""Hardware-centric schedule spaces: a few parameters with choices, and constraints.

Hidet's observation is that a schedule template with a handful of hardware-centric
parameters (tile sizes per block, warp and thread; the k-step) spans a space of a few
hundred valid schedules, small enough to try them all, instead of the thousands of loop
transformations a loop-oriented tuner explores. A :class:`Space` is that declaration:
the product of the parameter choices, built into the template's parameter object, minus
the candidates a constraint rejects for the problem at hand. Templates declare their
space next to themselves (see ``matmul_simt.MATMUL_SIMT_SPACE``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any, Generic, TypeVar

P = TypeVar("P")  # the template's parameter object
Problem = Any


@dataclass(frozen=True)
class Param:
    """One parameter: its name (the keyword of the parameter object) and its choices."""

    name: str
    choices: tuple[Any, ...]
    doc: str = ""


@dataclass(frozen=True)
class Constraint(Generic[P]):
    """A named predicate a valid candidate satisfies for a problem."""

    name: str
    holds: Callable[[P, Problem], bool]


class Space(Generic[P]):
    """The candidates of a template: every combination of choices that passes every
    constraint, in a fixed order (the product of the choices, first parameter slowest)."""

    def __init__(self, template: str, params: Sequence[Param], build: Callable[..., P],
                 constraints: Sequence[Constraint[P]]) -> None:
        self.template = template
        self.params = tuple(params)
        self.build = build
        self.constraints = tuple(constraints)

    def all_points(self) -> list[P]:
        """Every combination of choices, valid or not."""
        names = [p.name for p in self.params]
        return [self.build(**dict(zip(names, values)))
                for values in product(*(p.choices for p in self.params))]

    def first_violation(self, candidate: P, problem: Problem) -> str | None:
        """The name of the first constraint `candidate` breaks for `problem`, or None."""
        return next((c.name for c in self.constraints if not c.holds(candidate, problem)), None)

    def candidates(self, problem: Problem) -> list[P]:
        """The valid candidates for `problem`."""
        return [c for c in self.all_points() if self.first_violation(c, problem) is None]

    def rejections(self, problem: Problem) -> Counter[str]:
        """How many points each constraint rejects first (for reports)."""
        return Counter(v for c in self.all_points() if (v := self.first_violation(c, problem)))

    @property
    def size(self) -> int:
        n = 1
        for p in self.params:
            n *= len(p.choices)
        return n
