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
  and every offset stays affine in the index (a swizzle, below, is the other cure).

Composition ``outer * inner`` (same rank) tiles them: its shape is the elementwise product
``outer.shape * inner.shape``; index ``i`` is in tile ``i // inner.shape`` at position
``i % inner.shape`` (per dimension), and tiles are stored contiguously, one after another:

    offset(i) = outer.offset(i // inner.shape) * inner.size + inner.offset(i % inner.shape)

``size`` is the number of elements of storage, padding included (a composition's size is
the product of its atoms' sizes). Composition is associative, so a layout is a flat
sequence of atoms, outermost first. :meth:`DataLayout.offset` is this semantics, the
oracle that ``convert-tm-to-gpu``'s linearisation is tested against.

A layout may end in a **swizzle**, ``row_major(8, 64) ^ swizzle(3, 3, 3)``: the offset
the atoms give is then permuted by XOR-ing some of its higher bits into lower ones
(:class:`Swizzle`, CuTe's ``Swizzle<B, M, S>``)::

    offset(i) = o ^ ((o >> shift) & (((1 << bits) - 1) << base)),  o = offset of the atoms

so bits ``[base + shift, base + shift + bits)`` are XOR-ed into bits ``[base, base + bits)``.
Why: a tile whose rows are read 16 bytes at a time, 8 consecutive rows at one column
(``ldmatrix``; ``cp.async`` writes the same chunks), hits one 16-byte group of banks 8
times when its rows are a multiple of 128 bytes long (2 or 4 times for rows of 32 or 64
bytes). Padding each row by 16 bytes cures that but wastes shared memory and is not
allowed by Hopper's wgmma and TMA; the swizzle instead moves each 16-byte chunk to
another chunk column of the same row, a different one per row (`chunk_swizzle` picks it,
`swizzled_row_major` builds such a tile). With ``2 ** base`` elements at least a chunk
(``base`` 3 for 2-byte elements), a chunk moves whole and stays contiguous. The swizzle
applies to the whole layout, after composition: ``a * b ^ swizzle(...)`` is ``(a * b)``
swizzled (``^`` binds looser than ``*``, as in C), and a swizzled layout cannot be an
operand of ``*`` (its swizzle would then act on part of an offset, which is not an XOR of
the whole). ``size`` is unchanged.

The text form, used by the ``#tm.layout<...>`` attribute and ``tm.alloc ... layout(...)``,
is ``row_major(2, 2) * column_major(4, 8, pad=1)``, optionally followed by
``^ swizzle(bits, base, shift)``.
"""

from __future__ import annotations

import math
import re
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
class Swizzle:
    """``swizzle(bits, base, shift)``: XOR bits ``[base + shift, base + shift + bits)`` of an
    offset into bits ``[base, base + bits)`` (CuTe's ``Swizzle<B, M, S>`` with B = bits,
    M = base, S = shift). ``shift >= bits`` keeps the bits read apart from the bits changed,
    so the map is an involution (applied twice it is the identity) that changes only bits
    ``[base, base + bits)``: it permutes each aligned block of ``2 ** (base + bits)``
    offsets (its `period`) within itself. A storage whose size is a multiple of the period
    is therefore permuted onto itself, every swizzled offset in it."""

    bits: int
    base: int
    shift: int

    def __post_init__(self) -> None:
        if self.bits < 1:
            raise LayoutError(f"{self}: bits must be >= 1")
        if self.base < 0:
            raise LayoutError(f"{self}: base must be >= 0")
        if self.shift < self.bits:
            raise LayoutError(
                f"{self}: shift must be >= bits, so that the bits read "
                f"[{self.base + self.shift}, {self.base + self.shift + self.bits}) do not overlap "
                f"the bits changed [{self.base}, {self.base + self.bits})"
            )

    @property
    def mask(self) -> int:
        """The bits the swizzle changes: ``((1 << bits) - 1) << base``."""
        return ((1 << self.bits) - 1) << self.base

    @property
    def period(self) -> int:
        """``2 ** (base + bits)``: each aligned block of this many offsets maps onto itself."""
        return 1 << (self.base + self.bits)

    def apply(self, offset: int) -> int:
        return offset ^ ((offset >> self.shift) & self.mask)

    def __str__(self) -> str:
        return f"swizzle({self.bits}, {self.base}, {self.shift})"


@dataclass(frozen=True)
class DataLayout:
    """A composition of layout atoms, outermost first, optionally swizzled as a whole."""

    atoms: tuple[LayoutAtom, ...]
    swizzle: Swizzle | None = None

    def __post_init__(self) -> None:
        if not self.atoms:
            raise LayoutError("a data layout needs at least one atom")
        if len({len(a.shape) for a in self.atoms}) != 1:
            raise LayoutError(
                f"cannot compose layouts of different ranks: {' * '.join(map(str, self.atoms))}"
            )
        if self.swizzle is not None and self.size % self.swizzle.period:
            raise LayoutError(
                f"{self}: the size {self.size} must be a multiple of 2 ** (base + bits) = "
                f"{self.swizzle.period}, so that every swizzled offset stays in the storage"
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
        swizzled = next((x for x in (self, other) if x.swizzle is not None), None)
        if swizzled is not None:
            raise LayoutError(f"cannot compose the swizzled layout '{swizzled}': a swizzle applies "
                              "to a whole layout, so swizzle the composition instead")
        return DataLayout(self.atoms + other.atoms)

    def __xor__(self, swizzle: Swizzle) -> DataLayout:
        """This layout with its offsets permuted by `swizzle`: ``row_major(8, 64) ^ Swizzle(3, 3, 3)``."""
        if self.swizzle is not None:
            raise LayoutError(f"the layout '{self}' is already swizzled")
        return DataLayout(self.atoms, swizzle)

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
        return offset if self.swizzle is None else self.swizzle.apply(offset)

    def split(self, index: Sequence[int]) -> list[tuple[int, ...]]:
        """Each atom's coordinates of `index`, outermost atom first (mixed radix)."""
        coords = []
        rest = list(index)
        for atom in reversed(self.atoms):
            coords.append(tuple(r % d for r, d in zip(rest, atom.shape)))
            rest = [r // d for r, d in zip(rest, atom.shape)]
        return list(reversed(coords))

    def __str__(self) -> str:
        atoms = " * ".join(map(str, self.atoms))
        return atoms if self.swizzle is None else f"{atoms} ^ {self.swizzle}"


def row_major(*shape: int, pad: int = 0) -> DataLayout:
    return DataLayout((LayoutAtom("row_major", tuple(shape), pad),))


def column_major(*shape: int, pad: int = 0) -> DataLayout:
    return DataLayout((LayoutAtom("column_major", tuple(shape), pad),))


CHUNK_BYTES = 16
"""What one lane moves per ``ldmatrix`` row or ``cp.async``: a 16-byte chunk."""
BANK_GROUPS = 8
"""16-byte groups of shared-memory banks (32 banks of 4 bytes): the chunks of one
128-byte wavefront, served together when they fall in distinct groups."""


def chunk_swizzle(row_elements: int, element_bytes: int) -> Swizzle | None:
    """The swizzle that lets a row-major tile with rows of `row_elements` elements of
    `element_bytes` bytes be read (and written) 16 bytes at a time without bank conflicts;
    None where the rows need none (one chunk long) or no swizzle of this kind helps
    (rows not a power-of-two number of chunks).

    A row of ``2 ** k`` chunks puts chunk column ``c`` of row ``r`` in bank group
    ``(r * 2 ** k + c) % 8``: 8 consecutive rows at one column fall in only ``2 ** (3 - k)``
    groups when k < 3, in one when k >= 3. The swizzle XORs the low ``bits = min(k, 3)``
    bits of the chunk column with the row bits the group does not hold yet (row bits
    ``[3 - k, 3)`` when k < 3, ``[0, 3)`` otherwise), which sit ``shift = max(k, 3)`` bits
    up in the chunk index; ``base`` is log2 of a chunk's elements, so a chunk stays whole,
    16-byte aligned and in its row. Then the bank group holds all three low bits of the
    row: any 8 consecutive rows at one chunk column hit 8 distinct groups, and the 8 chunks
    of each 128-byte block (a row-major ``cp.async`` fill) are permuted among themselves.
    For 2-byte elements, rows of 16, 32, 64, 128 and 256 elements give ``swizzle(1, 3, 3)``,
    ``(2, 3, 3)``, ``(3, 3, 3)``, ``(3, 3, 4)`` and ``(3, 3, 5)``; 4-byte elements have
    ``base`` 2.
    """
    if element_bytes < 1 or CHUNK_BYTES % element_bytes:
        raise LayoutError(f"chunk_swizzle: element_bytes must divide {CHUNK_BYTES}, got {element_bytes}")
    if row_elements < 1:
        raise LayoutError(f"chunk_swizzle: row_elements must be >= 1, got {row_elements}")
    chunks, rest = divmod(row_elements * element_bytes, CHUNK_BYTES)
    if rest or chunks & (chunks - 1) or chunks == 1:
        return None
    k = chunks.bit_length() - 1
    groups = BANK_GROUPS.bit_length() - 1
    return Swizzle(min(k, groups), (CHUNK_BYTES // element_bytes).bit_length() - 1, max(k, groups))


def swizzled_row_major(*shape: int, element_bytes: int) -> DataLayout:
    """``row_major(*shape) ^ chunk_swizzle(shape[-1], element_bytes)``: a tile read in
    16-byte chunks without bank conflicts and without padding (plain ``row_major`` where
    `chunk_swizzle` gives None)."""
    layout = row_major(*shape)
    swizzle = chunk_swizzle(shape[-1], element_bytes)
    return layout if swizzle is None else layout ^ swizzle


def make_layout_atom(kind: str, args: Sequence[int | tuple[str, int]]) -> LayoutAtom:
    """An atom from parsed arguments: extents, then optionally ``("pad", p)`` last."""
    extents = [a for a in args if isinstance(a, int)]
    pads = [a[1] for a in args if not isinstance(a, int)]
    if len(pads) > 1 or (pads and not isinstance(args[-1], tuple)):
        raise LayoutError(f"'pad=' may appear once, after the extents, in {kind}(...)")
    return LayoutAtom(kind, tuple(extents), pads[0] if pads else 0)  # type: ignore[arg-type]


_CLOSE_CARET = re.compile(r"\)\s*\^")


def parse_layout_expr(parser: BaseParser) -> DataLayout:
    """``row_major(8, 64, pad=1) * column_major(2, 2) ^ swizzle(3, 3, 3)`` (the swizzle
    optional) with an xDSL parser's tokens (the one grammar of the text form:
    ``#tm.layout<...>``, ``tm.alloc ... layout(...)`` and `parse_layout`)."""

    def argument() -> int | tuple[str, int]:
        if parser.parse_optional_keyword("pad"):
            parser.parse_punctuation("=")
            return ("pad", parser.parse_integer(allow_boolean=False))
        return parser.parse_integer(allow_boolean=False)

    def arguments(kind: str) -> tuple[list[int | tuple[str, int]], bool]:
        """The ``(...)`` after `kind`, and whether ``^`` follows it."""
        parser.parse_punctuation("(", f" after '{kind}' in a data layout")
        args = []
        if text[parser.pos] != ")":
            args = [argument()]
            while parser.parse_optional_punctuation(",") is not None:
                args.append(argument())
        # xDSL's lexer takes `^` for the start of a block label (`^bb0`) and fails on `^ `,
        # one token ahead of the parser: so a `^` after `)` is stepped over here, by text.
        caret = _CLOSE_CARET.match(text, parser.pos)
        if caret is None:
            parser.parse_punctuation(")")
            return args, False
        parser._resume_from(caret.end())
        return args, True

    def swizzle() -> Swizzle:
        parser.parse_keyword("swizzle", " after '^' in a data layout")
        args, caret = arguments("swizzle")
        if caret:
            raise LayoutError("a data layout takes one swizzle")
        if len(args) != 3 or not all(isinstance(a, int) for a in args):
            given = ", ".join(str(a) if isinstance(a, int) else f"{a[0]}={a[1]}" for a in args)
            raise LayoutError(f"swizzle(...) takes 3 integers (bits, base, shift), got ({given})")
        return Swizzle(*args)  # type: ignore[arg-type]

    text = parser.lexer.input.content
    start, atoms = parser.pos, []
    try:
        while True:
            kind = parser.parse_keyword_in(KINDS, " in a data layout")
            args, swizzled = arguments(kind)
            atoms.append(make_layout_atom(kind, args))
            if swizzled:
                layout = DataLayout(tuple(atoms), swizzle())
                if parser.parse_optional_punctuation("*") is not None:
                    raise LayoutError("a swizzle applies to the whole layout: "
                                      "write '^ swizzle(...)' after the last atom")
                return layout
            if parser.parse_optional_punctuation("*") is None:
                return DataLayout(tuple(atoms))
    except LayoutError as exc:
        parser.raise_error(str(exc), start, parser.pos)


def parse_layout(text: str) -> DataLayout:
    """Parse ``row_major(2, 2) * column_major(4, 8, pad=1) ^ swizzle(1, 0, 2)``; raises
    LayoutError."""
    return parse_text(text, parse_layout_expr, LayoutError)
