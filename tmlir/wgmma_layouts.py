"""Hopper's ``wgmma`` operands: the accumulator fragment as a task mapping, the canonical
shared-memory layouts of A and B, and the 64-bit matrix descriptors that address them.

In: nothing (constants), or a buffer's :class:`tmlir.layout.DataLayout`. Out: the mapping
of each thread of a warpgroup (128 threads) to the accumulator elements its registers hold,
and for a shared tile the descriptor fields (start, leading and stride byte offsets,
swizzle) that make ``wgmma.mma_async`` read exactly that tile. The PTX ISA (9.7.15.5.1,
"Register Fragments and Shared Memory Matrix Layouts") is the source of every formula.

**Accumulator.** ``wgmma.mma_async.m64nNk*`` leaves D (64 x N, f32) in N/2 registers per
thread: warp ``w`` of the warpgroup holds rows ``16w .. 16w+15``, each 8 columns as the
accumulator of ``mma.m16n8``: with ``g = lane >> 2`` and ``t = lane & 3``, register
``4j + 2h + e`` is ``D[16w + 8h + g][8j + 2t + e]``::

    wgmma_accumulator(64) == spatial(4, 1) * repeat(1, 8) * repeat(2, 1) * spatial(8, 4) * repeat(1, 2)

**Shared operands.** A is M x K (64 x 16 for f16/bf16, 64 x 8 for tf32), B is K x N; both
are read from shared memory, each as an ``[mn, k]`` tile (B's is indexed ``[n, k]``), in one
of the canonical layouts. ``major`` says which dimension is contiguous: ``k`` (K-major, the
``.row`` A and ``.col`` B of ``mma``; tf32 allows only this) or ``mn`` (M- or N-major,
``imm-trans`` 1). A 16-byte *chunk* holds ``T = 16 / element_bytes`` elements. The swizzle
modes interleave chunks in rows of 32, 64 or 128 bytes (``W = 2, 4, 8`` chunks) with
``Swizzle<log2 W, 4, 3>`` on the byte address: bits ``[7, 7 + log2 W)`` XOR-ed into
``[4, 4 + log2 W)`` -- on elements of ``e`` bytes that is tmlir's ``swizzle(log2 W,
log2 T, 3)`` (128B on f16: ``swizzle(3, 3, 3)``). In bytes from the start address, before
the swizzle, element ``(mn, k)`` of a tile is at (``LBO``/``SBO``: the leading and stride
byte offsets of the descriptor)::

    K-major,  no swizzle:  (mn % 8) * 16 + (mn / 8) * SBO + (k / T) * LBO + (k % T) * e
    K-major,  swizzle W:   (mn % 8) * 16W + (mn / 8) * SBO + k * e               (LBO unused)
    MN-major, no swizzle:  (mn % T) * e + (mn / T) * SBO + (k % 8) * 16 + (k / 8) * LBO
    MN-major, swizzle W:   (mn % WT) * e + (mn / WT) * LBO + (k % 8) * 16W + (k / 8) * SBO

and the swizzle then acts on the absolute shared address, so a swizzled tile must start
its pattern at a multiple of ``128 W`` bytes (1024 for 128B: the descriptor's base offset
is 0) -- the CUDA printer aligns such arrays to 1024 bytes. Advancing the start address
inside a pattern (the next k16 step of a 128-byte row) is fine: the hardware swizzles the
sum, which is what the layout's swizzle does to the element's offset.

`wgmma_descriptor(layout, ...)` derives LBO, SBO and the mode from a buffer's layout and
checks, for every tile-aligned origin of the buffer and every element of the tile, that
`descriptor_address` (this module's semantics of the hardware's addressing, which the emu
decodes the same way) lands on the layout's offset of that element; a layout for which no
descriptor can do that is refused with one line. `canonical_layout` builds such layouts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from tmlir.layout import DataLayout, LayoutError, Swizzle, column_major, row_major
from tmlir.mapping import TaskMapping, repeat, spatial

__all__ = [
    "WGMMA_N", "WGMMA_K", "WARPGROUP", "SWIZZLE_BYTES", "Major", "WgmmaLayoutError",
    "wgmma_accumulator", "wgmma_shape", "parse_wgmma_shape", "MatrixDescriptor",
    "canonical_offset", "descriptor_address", "byte_swizzle", "wgmma_descriptor", "tile_start", "canonical_layout",
]

WARPGROUP = 128
"""Threads of a warpgroup: four consecutive warps, the first a multiple of 4."""
WGMMA_N = (8, 16, 32, 64, 96, 128, 192, 256)
"""The N of ``wgmma.mma_async.m64nNk*`` that tmlir supports (PTX allows every multiple of 8
up to 256; these are the ones worth a definition each)."""
WGMMA_K = {"f16": 16, "bf16": 16, "tf32": 8}
"""K of one ``wgmma`` by operand type: always 32 bytes of A's and B's rows."""
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "tf32": 4}
SWIZZLE_BYTES = (0, 32, 64, 128)
"""The swizzle modes by the bytes of their rows (0: none, the "interleaved" core matrices)."""
SWIZZLE_MODE = {0: 0, 128: 1, 64: 2, 32: 3}
"""The 2-bit field (bits 62-63) of a descriptor for each mode."""
CHUNK = 16
"""Bytes of a core-matrix row, of an address unit of the descriptor, of a swizzled chunk."""
DESCRIPTOR_RANGE = 1 << 18
"""Start address, LBO and SBO are encoded as ``(x & 0x3FFFF) >> 4``: 14 bits of 16 bytes."""

Major = Literal["k", "mn"]


class WgmmaLayoutError(LayoutError):
    """A shared layout no wgmma descriptor can address, or a bad wgmma shape."""


def wgmma_shape(n: int, dtype: str) -> str:
    """``m64n128k16`` for (128, "f16")."""
    return f"m64n{n}k{WGMMA_K[dtype]}"


def parse_wgmma_shape(shape: str, dtype: str) -> int:
    """N of a wgmma shape text for `dtype` (``m64n128k16`` and f16: 128); WgmmaLayoutError
    unless it is ``m64nNk16`` (f16, bf16) or ``m64nNk8`` (tf32) with N in `WGMMA_N`."""
    if dtype not in WGMMA_K:
        raise WgmmaLayoutError(f"unsupported wgmma dtype '{dtype}', expected f16, bf16 or tf32")
    k = WGMMA_K[dtype]
    for n in WGMMA_N:
        if shape == f"m64n{n}k{k}":
            return n
    raise WgmmaLayoutError(f"unsupported wgmma shape {shape} for {dtype}, expected m64nNk{k} with N in "
                           + ", ".join(map(str, WGMMA_N)))


def wgmma_accumulator(n: int) -> TaskMapping:
    """The m64nN accumulator over the 128 threads of a warpgroup, in register order (see the
    module docstring): thread ``32w + lane`` holds ``D[16w + 8h + g][8j + 2t + e]`` in
    register ``4j + 2h + e``."""
    if n not in WGMMA_N:
        raise WgmmaLayoutError(f"unsupported wgmma N {n}, expected one of {', '.join(map(str, WGMMA_N))}")
    return spatial(4, 1) * repeat(1, n // 8) * repeat(2, 1) * spatial(8, 4) * repeat(1, 2)


@dataclass(frozen=True)
class MatrixDescriptor:
    """What a wgmma matrix descriptor says, in bytes: the start (an offset from the start of
    the buffer, 16-byte aligned), the leading and stride byte offsets, and the swizzle mode
    by its row bytes (0, 32, 64, 128). The base-offset field is always 0 (patterns start
    aligned). `encode` packs it for a buffer at shared address `base`."""

    start: int
    lbo: int
    sbo: int
    swizzle: int

    def encode(self, base: int = 0) -> int:
        """The 64-bit descriptor: bits 0-13 start, 16-29 LBO, 32-45 SBO (each ``(x &
        0x3FFFF) >> 4``), 62-63 the mode (1: 128B, 2: 64B, 3: 32B)."""
        def field(x: int) -> int:
            return (x & (DESCRIPTOR_RANGE - 1)) >> 4

        return (field(base + self.start) | field(self.lbo) << 16 | field(self.sbo) << 32
                | SWIZZLE_MODE[self.swizzle] << 62)

    @staticmethod
    def decode(value: int) -> MatrixDescriptor:
        """The fields of a 64-bit descriptor (start is the 18-bit shared address)."""
        modes = {v: k for k, v in SWIZZLE_MODE.items()}
        return MatrixDescriptor((value & 0x3FFF) << 4, (value >> 16 & 0x3FFF) << 4,
                                (value >> 32 & 0x3FFF) << 4, modes[value >> 62 & 3])


def byte_swizzle(swizzle: int) -> Swizzle | None:
    """The swizzle a mode applies to byte addresses: ``Swizzle<log2 W, 4, 3>`` (None: none)."""
    if swizzle == 0:
        return None
    return Swizzle((swizzle // CHUNK).bit_length() - 1, 4, 3)


def canonical_offset(major: Major, swizzle: int, element_bytes: int, lbo: int, sbo: int,
                     mn: int, k: int) -> int:
    """Byte offset of element ``(mn, k)`` from the start address, before the swizzle (the
    formulas of the module docstring)."""
    per_chunk, e = CHUNK // element_bytes, element_bytes
    chunks = swizzle // CHUNK
    if major == "k":
        if swizzle == 0:
            return mn % 8 * CHUNK + mn // 8 * sbo + k // per_chunk * lbo + k % per_chunk * e
        return mn % 8 * CHUNK * chunks + mn // 8 * sbo + k * e
    if swizzle == 0:
        return mn % per_chunk * e + mn // per_chunk * sbo + k % 8 * CHUNK + k // 8 * lbo
    atom = chunks * per_chunk
    return mn % atom * e + mn // atom * lbo + k % 8 * CHUNK * chunks + k // 8 * sbo


def descriptor_address(descriptor: MatrixDescriptor, major: Major, element_bytes: int,
                       mn: int, k: int, base: int = 0) -> int:
    """The shared byte address wgmma reads for element ``(mn, k)`` of the tile `descriptor`
    describes, in a buffer at address `base` (aligned to the swizzle's pattern)."""
    address = base + descriptor.start + canonical_offset(
        major, descriptor.swizzle, element_bytes, descriptor.lbo, descriptor.sbo, mn, k)
    swizzle = byte_swizzle(descriptor.swizzle)
    return address if swizzle is None else swizzle.apply(address)


def _mode_of(layout: DataLayout, element_bytes: int) -> int:
    """The swizzle mode whose byte swizzle is `layout`'s on `element_bytes` elements."""
    swizzle = layout.swizzle
    if swizzle is None:
        return 0
    base = (CHUNK // element_bytes).bit_length() - 1
    if swizzle.base != base or swizzle.shift != 3 or swizzle.bits not in (1, 2, 3):
        raise WgmmaLayoutError(
            f"layout '{layout}': a wgmma operand's swizzle is swizzle(b, {base}, 3) with b = 1, 2 or 3 "
            f"on {element_bytes}-byte elements (32, 64 or 128-byte rows), got {swizzle}")
    return CHUNK << swizzle.bits


def _unswizzled(layout: DataLayout) -> DataLayout:
    return DataLayout(layout.atoms)


@functools.lru_cache(maxsize=256)
def wgmma_descriptor(layout: DataLayout, element_bytes: int, major: Major,
                     tile: tuple[int, int]) -> MatrixDescriptor:
    """The descriptor of the ``tile`` (``(MN, K)``) at the origin of a shared buffer of
    `layout` (indexed ``[mn, k]``), whose elements are `element_bytes` wide and `major`. Its
    LBO, SBO and mode hold for every tile-aligned origin (a multiple of `tile`): the start of
    the one at ``origin`` is the unswizzled byte offset of ``origin`` (`tile_start`).
    WgmmaLayoutError, one line, when the layout is not canonical for such tiles."""
    mn_extent, k_extent = tile
    if layout.rank != 2:
        raise WgmmaLayoutError(f"layout '{layout}': a wgmma operand is a 2-D [mn, k] tile, got rank {layout.rank}")
    if element_bytes not in (2, 4):
        raise WgmmaLayoutError(f"wgmma operands have 2- or 4-byte elements, got {element_bytes}")
    if major not in ("k", "mn"):
        raise WgmmaLayoutError(f"major must be 'k' or 'mn', got '{major}'")
    if k_extent * element_bytes != 2 * CHUNK or mn_extent % 8 or not 8 <= mn_extent <= 256:
        raise WgmmaLayoutError(f"a wgmma operand tile is MN x {2 * CHUNK // element_bytes} with MN a multiple "
                               f"of 8 up to 256, got {mn_extent}x{k_extent}")
    if major == "mn" and element_bytes != 2:
        raise WgmmaLayoutError("an MN-major wgmma operand needs 16-bit elements (tf32 is K-major only)")
    rows, cols = layout.shape
    if rows % mn_extent or cols % k_extent:
        raise WgmmaLayoutError(f"layout '{layout}' of shape {rows}x{cols} is not a whole number of "
                               f"{mn_extent}x{k_extent} tiles")
    swizzle = _mode_of(layout, element_bytes)
    plain = _unswizzled(layout)

    def at(mn: int, k: int) -> int:
        return plain.offset((mn, k)) * element_bytes

    def stride(mn: int, k: int) -> int:
        """The byte distance to element (mn, k) from (0, 0), 16 (unused) past the tile."""
        return at(mn, k) - at(0, 0) if mn < mn_extent and k < k_extent else CHUNK

    per_chunk = CHUNK // element_bytes
    if major == "k":
        lbo, sbo = (stride(0, per_chunk) if swizzle == 0 else CHUNK), stride(8, 0)
    elif swizzle == 0:
        lbo, sbo = stride(0, 8), stride(per_chunk, 0)
    else:
        lbo, sbo = stride(swizzle // CHUNK * per_chunk, 0), stride(0, 8)
    for name, value in (("leading", lbo), ("stride", sbo)):
        if value <= 0 or value % CHUNK or value >= DESCRIPTOR_RANGE:
            raise WgmmaLayoutError(
                f"layout '{layout}' is not a canonical {major.upper()}-major wgmma layout: its {name} byte "
                f"offset would be {value}, not a positive multiple of 16 below 2^18")
    byte_swizzler = byte_swizzle(swizzle)
    for mn0 in range(0, rows, mn_extent):
        for k0 in range(0, cols, k_extent):
            start = at(mn0, k0)
            if start % CHUNK:
                raise WgmmaLayoutError(f"layout '{layout}': the tile at ({mn0}, {k0}) starts at byte {start}, "
                                       "not 16-byte aligned")
            for mn in range(mn_extent):
                for k in range(k_extent):
                    address = start + canonical_offset(major, swizzle, element_bytes, lbo, sbo, mn, k)
                    if byte_swizzler is not None:
                        address = byte_swizzler.apply(address)
                    expected = layout.offset((mn0 + mn, k0 + k)) * element_bytes
                    if address != expected:
                        raise WgmmaLayoutError(
                            f"layout '{layout}' is not a canonical {major.upper()}-major wgmma layout for "
                            f"{mn_extent}x{k_extent} tiles: element ({mn0 + mn}, {k0 + k}) is at byte {expected}, "
                            f"a descriptor would read byte {address}")
    return MatrixDescriptor(0, lbo, sbo, swizzle)


def tile_start(layout: DataLayout, element_bytes: int, origin: tuple[int, int]) -> int:
    """The start byte offset of the tile at `origin`: its unswizzled offset."""
    return _unswizzled(layout).offset(origin) * element_bytes


def canonical_layout(rows: int, cols: int, element_bytes: int, major: Major, swizzle: int = 128) -> DataLayout:
    """A ``[mn, k]`` buffer of `rows` x `cols` that wgmma reads with `major` and the
    `swizzle` mode (0, 32, 64, 128), as a tmlir layout:

    * K-major, swizzled: rows of ``swizzle`` bytes, side by side along K:
      ``row_major(1, cols / R) * row_major(rows, R) ^ swizzle(log2 W, log2 T, 3)`` (R the
      elements of a row; just ``row_major(rows, R) ^ ...`` when ``cols == R``);
    * K-major, none: 8 x 16-byte core matrices, ``row_major(rows / 8, cols / T) * row_major(8, T)``;
    * MN-major, swizzled: atoms of R x 8, ``row_major(rows / R, cols / 8) * column_major(R, 8) ^ ...``;
    * MN-major, none: ``row_major(rows / T, cols / 8) * column_major(T, 8)``.

    Every tile-aligned wgmma tile of it has a descriptor (`wgmma_descriptor`)."""
    if swizzle not in SWIZZLE_BYTES:
        raise WgmmaLayoutError(f"swizzle must be one of {', '.join(map(str, SWIZZLE_BYTES))} bytes, got {swizzle}")
    per_chunk = CHUNK // element_bytes
    if swizzle == 0:
        if major == "k":
            outer, inner = (rows // 8, cols // per_chunk), row_major(8, per_chunk)
        else:
            outer, inner = (rows // per_chunk, cols // 8), column_major(per_chunk, 8)
        _check_divides(rows, cols, inner.shape)
        return row_major(*outer) * inner
    row = swizzle // element_bytes
    bits = (swizzle // CHUNK).bit_length() - 1
    xor = Swizzle(bits, per_chunk.bit_length() - 1, 3)
    if major == "k":
        _check_divides(rows, cols, (8, row))
        tiles = row_major(rows, row) if cols == row else row_major(1, cols // row) * row_major(rows, row)
        return tiles ^ xor
    _check_divides(rows, cols, (row, 8))
    return row_major(rows // row, cols // 8) * column_major(row, 8) ^ xor


def _check_divides(rows: int, cols: int, atom: tuple[int, ...]) -> None:
    if rows % atom[0] or cols % atom[1]:
        raise WgmmaLayoutError(f"a {rows}x{cols} buffer is not a whole number of {atom[0]}x{atom[1]} atoms")
