"""Data layouts of shared-memory and register buffers, in the algebra of task mappings.

Hidet observes that task mappings and data layouts share one algebra (Ding et al.,
ASPLOS 2023, §4): a layout maps a logical index of a buffer to a linear offset in its
storage, and layouts compose like task mappings. The atoms are

* ``row_major(4, 8)``: offset ``i * 8 + j`` (the last dimension is contiguous);
* ``column_major(4, 8)``: offset ``i + j * 4`` (the first dimension is contiguous);
* either with ``pad=p`` as the last argument: the contiguous dimension is stored with
  ``p`` unused elements after it, so ``row_major(32, 32, pad=1)`` has offset
  ``i * 33 + j``. Padding moves consecutive rows (or columns) to different shared-memory
  banks, the classic cure for the bank conflicts of reading a tile across its contiguous
  dimension; it is the only non-dense form, chosen because it is the one schedules need
  and every offset stays affine in the index.

Composition ``outer * inner`` (same rank) tiles them: its shape is the elementwise product
``outer.shape * inner.shape``; index ``i`` is in tile ``i // inner.shape`` at position
``i % inner.shape`` (per dimension), and tiles are stored contiguously, one after another:

    offset(i) = outer.offset(i // inner.shape) * inner.size + inner.offset(i % inner.shape)

``size`` is the number of elements of storage, padding included (a composition's size is
the product of its atoms' sizes). Composition is associative, so a layout is a flat
sequence of atoms, outermost first. :meth:`DataLayout.offset` is this semantics, the
oracle that ``convert-tm-to-gpu``'s linearisation is tested against.

The text form, used by the ``#tm.layout<...>`` attribute and ``tm.alloc ... layout(...)``,
is ``row_major(2, 2) * column_major(4, 8, pad=1)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from xdsl.parser import BaseParser

from tmlir.mapping import parse_text

LayoutKind = Literal["row_major", "column_major"]
KINDS: tuple[LayoutKind, ...] = ("row_major", "column_major")


class LayoutError(ValueError):
    """A data-layout expression is malformed or an index is out of its shape."""


@dataclass(frozen=True)
class LayoutAtom:
    """``row_major(shape, pad=p)`` or ``column_major(shape, pad=p)``."""

    kind: LayoutKind
    shape: tuple[int, ...]
    pad: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise LayoutError(f"unknown layout atom '{self.kind}', expected row_major or column_major")
        if not self.shape:
            raise LayoutError(f"{self.kind}() needs at least one dimension")
        if any(d < 1 for d in self.shape):
            raise LayoutError(f"{self}: every extent must be >= 1")
        if self.pad < 0:
            raise LayoutError(f"{self}: pad must be >= 0")

    @property
    def contiguous_dim(self) -> int:
        return len(self.shape) - 1 if self.kind == "row_major" else 0

    @property
    def stored_shape(self) -> tuple[int, ...]:
        """The shape with the contiguous dimension's padding."""
        dims = list(self.shape)
        dims[self.contiguous_dim] += self.pad
        return tuple(dims)

    @property
    def strides(self) -> tuple[int, ...]:
        """Elements between neighbours along each dimension: offset = sum(i * stride)."""
        stored = self.stored_shape
        order = range(len(stored)) if self.kind == "column_major" else reversed(range(len(stored)))
        strides = [0] * len(stored)
        step = 1
        for d in order:
            strides[d] = step
            step *= stored[d]
        return tuple(strides)

    @property
    def size(self) -> int:
        return math.prod(self.stored_shape)

    def __str__(self) -> str:
        args = [*map(str, self.shape), *([f"pad={self.pad}"] if self.pad else [])]
        return f"{self.kind}({', '.join(args)})"


@dataclass(frozen=True)
class DataLayout:
    """A composition of layout atoms, outermost first."""

    atoms: tuple[LayoutAtom, ...]

    def __post_init__(self) -> None:
        if not self.atoms:
            raise LayoutError("a data layout needs at least one atom")
        if len({len(a.shape) for a in self.atoms}) != 1:
            raise LayoutError(
                f"cannot compose layouts of different ranks: {' * '.join(map(str, self.atoms))}"
            )

    @property
    def rank(self) -> int:
        return len(self.atoms[0].shape)

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical shape: the elementwise product of the atoms' shapes."""
        return tuple(math.prod(dims) for dims in zip(*(a.shape for a in self.atoms)))

    @property
    def size(self) -> int:
        """Elements of storage, padding included."""
        return math.prod(a.size for a in self.atoms)

    def __mul__(self, other: DataLayout) -> DataLayout:
        return DataLayout(self.atoms + other.atoms)

    def offset(self, index: Sequence[int]) -> int:
        """The storage offset of the logical `index` (0 <= index < shape, per dimension)."""
        index = tuple(index)
        if len(index) != self.rank or any(not 0 <= i < d for i, d in zip(index, self.shape)):
            raise LayoutError(
                f"index {index} is out of range for layout {self} of shape {self.shape}"
            )
        offset = 0
        for atom, coords in zip(self.atoms, self.split(index)):
            offset = offset * atom.size + sum(c * s for c, s in zip(coords, atom.strides))
        return offset

    def split(self, index: Sequence[int]) -> list[tuple[int, ...]]:
        """Each atom's coordinates of `index`, outermost atom first (mixed radix)."""
        coords = []
        rest = list(index)
        for atom in reversed(self.atoms):
            coords.append(tuple(r % d for r, d in zip(rest, atom.shape)))
            rest = [r // d for r, d in zip(rest, atom.shape)]
        return list(reversed(coords))

    def __str__(self) -> str:
        return " * ".join(map(str, self.atoms))


def row_major(*shape: int, pad: int = 0) -> DataLayout:
    return DataLayout((LayoutAtom("row_major", tuple(shape), pad),))


def column_major(*shape: int, pad: int = 0) -> DataLayout:
    return DataLayout((LayoutAtom("column_major", tuple(shape), pad),))


def make_layout_atom(kind: str, args: Sequence[int | tuple[str, int]]) -> LayoutAtom:
    """An atom from parsed arguments: extents, then optionally ``("pad", p)`` last."""
    extents = [a for a in args if isinstance(a, int)]
    pads = [a[1] for a in args if not isinstance(a, int)]
    if len(pads) > 1 or (pads and not isinstance(args[-1], tuple)):
        raise LayoutError(f"'pad=' may appear once, after the extents, in {kind}(...)")
    return LayoutAtom(kind, tuple(extents), pads[0] if pads else 0)  # type: ignore[arg-type]


def parse_layout_expr(parser: BaseParser) -> DataLayout:
    """``row_major(8, 64, pad=1) * column_major(2, 2)`` with an xDSL parser's tokens (the
    one grammar of the text form: ``#tm.layout<...>``, ``tm.alloc ... layout(...)`` and
    `parse_layout`)."""

    def argument() -> int | tuple[str, int]:
        if parser.parse_optional_keyword("pad"):
            parser.parse_punctuation("=")
            return ("pad", parser.parse_integer(allow_boolean=False))
        return parser.parse_integer(allow_boolean=False)

    start, atoms = parser.pos, []
    try:
        while True:
            kind = parser.parse_keyword_in(KINDS, " in a data layout")
            args = parser.parse_comma_separated_list(BaseParser.Delimiter.PAREN, argument)
            atoms.append(make_layout_atom(kind, args))
            if parser.parse_optional_punctuation("*") is None:
                return DataLayout(tuple(atoms))
    except LayoutError as exc:
        parser.raise_error(str(exc), start, parser.pos)


def parse_layout(text: str) -> DataLayout:
    """Parse ``row_major(2, 2) * column_major(4, 8, pad=1)``; raises LayoutError."""
    return parse_text(text, parse_layout_expr, LayoutError)
