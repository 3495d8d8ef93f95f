"""Hardware-centric schedule spaces: a few parameters with choices, and constraints.

Hidet's observation is that a schedule template with a handful of hardware-centric
parameters (tile sizes per block, warp and thread; the k-step) spans a space of a few
hundred valid schedules, small enough to try them all, instead of the thousands of loop
transformations a loop-oriented tuner explores. A :class:`Space` is that declaration:
the product of the parameter choices, built into the template's parameter object, minus
the candidates a constraint rejects for the problem at hand. Templates declare their
space next to themselves (see ``matmul_simt.MATMUL_SIMT_SPACE``).

A space also checks a candidate that a person names (`Space.pin`: a schedule pinned on an
op in IR, or a template's defaults changed by a pass option, see ``pinned.py``): every
named parameter must be one of the space's, its value one of its choices, and the
candidate must pass every constraint for the problem.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
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
    static: bool = False
    """Whether it ignores the problem: `Space.candidates` then checks it once per point."""


class Space(Generic[P]):
    """The candidates of a template: every combination of choices that passes every
    constraint, in a fixed order (the product of the choices, first parameter slowest)."""

    def __init__(self, template: str, params: Sequence[Param], build: Callable[..., P],
                 constraints: Sequence[Constraint[P]]) -> None:
        self.template = template
        self.params = tuple(params)
        self.build = build
        self.constraints = tuple(constraints)
        self._points: tuple[P, ...] | None = None
        self._static_valid: tuple[P, ...] | None = None

    def all_points(self) -> list[P]:
        """Every combination of choices, valid or not (built once per space)."""
        if self._points is None:
            names = [p.name for p in self.params]
            self._points = tuple(self.build(**dict(zip(names, values)))
                                 for values in product(*(p.choices for p in self.params)))
        return list(self._points)

    def first_violation(self, candidate: P, problem: Problem) -> str | None:
        """The name of the first constraint `candidate` breaks for `problem`, or None."""
        return next((c.name for c in self.constraints if not c.holds(candidate, problem)), None)

    def candidates(self, problem: Problem) -> list[P]:
        """The valid candidates for `problem` (the static constraints checked once per space)."""
        if self._static_valid is None:
            static = [c for c in self.constraints if c.static]
            self._static_valid = tuple(p for p in self.all_points() if all(c.holds(p, None) for c in static))
        dynamic = [c for c in self.constraints if not c.static]
        return [p for p in self._static_valid if all(c.holds(p, problem) for c in dynamic)]

    def rejections(self, problem: Problem) -> Counter[str]:
        """How many points each constraint rejects first (for reports)."""
        return Counter(v for c in self.all_points() if (v := self.first_violation(c, problem)))

    def param(self, name: str) -> Param | None:
        """The parameter called `name`, None if the space has none."""
        return next((p for p in self.params if p.name == name), None)

    def check_values(self, values: Mapping[str, Any]) -> None:
        """ValueError naming the first of `values` that is not a parameter of the space or
        whose value is not one of its choices."""
        names = [p.name for p in self.params]
        for name, value in values.items():
            param = self.param(name)
            if param is None:
                close = difflib.get_close_matches(name, names, n=1)
                hint = f"did you mean '{close[0]}'? " if close else ""
                raise ValueError(f"unknown parameter '{name}' ({hint}parameters of {self.template}: "
                                 f"{', '.join(names)})")
            if value not in param.choices:
                choices = ", ".join(value_text(c) for c in param.choices)
                raise ValueError(f"parameter '{name}' = {value_text(value)} is outside the "
                                 f"{self.template} space (choices: {choices})")

    def pin(self, base: P, values: Mapping[str, Any], problem: Problem) -> P:
        """`base` (a parameter dataclass whose fields are the parameters) with `values` in
        place; ValueError for a name or value `check_values` rejects, or for a candidate
        that breaks a constraint for `problem` (naming it and the pinned parameters)."""
        self.check_values(values)
        candidate = dataclasses.replace(base, **values)  # type: ignore[type-var]
        broken = self.first_violation(candidate, problem)
        if broken is not None:
            given = " ".join(f"{k}={value_text(v)}" for k, v in values.items()) or "the default"
            full = " ".join(f"{p.name}={value_text(getattr(candidate, p.name))}" for p in self.params)
            raise ValueError(f"{given} breaks the constraint '{broken}' of {self.template} for "
                             f"this problem (candidate: {full})")
        return candidate

    @property
    def size(self) -> int:
        n = 1
        for p in self.params:
            n *= len(p.choices)
        return n


def value_text(value: Any) -> str:
    """A parameter value as ``tm-space`` prints it: ``4x2`` for a tuple."""
    return "x".join(map(str, value)) if isinstance(value, tuple) else str(value)
