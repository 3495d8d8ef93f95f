"""Hopper's wgmma operand layouts: the accumulator fragment lane by lane against the PTX
ISA's (written out independently, as CUTLASS's CLayout_64xN encodes the ISA's figure), the
swizzles on elements against the hardware's on bytes, and the descriptors: their addressing
lands on the layout's offset of every element of every tile."""

from __future__ import annotations

import itertools

import pytest

from tmlir.layout import Swizzle, column_major, row_major
from tmlir.wgmma_layouts import (
    WGMMA_N,
    MatrixDescriptor,
    WgmmaLayoutError,
    byte_swizzle,
    canonical_layout,
    descriptor_address,
    parse_wgmma_shape,
    tile_start,
    wgmma_accumulator,
    wgmma_descriptor,
)


def _ptx_accumulator(thread: int, register: int) -> tuple[int, int]:
    """D's element in `register` of `thread`: the figure of "Matrix Fragments for
    wgmma.mma_async.m64nNk16" as the layout ((4, 8, 4), (2, 2, N/8)) : ((128, 1, 16),
    (64, 8, 512)) of (thread, register) onto column-major 64 x N offsets."""
    t0, t1, t2 = thread % 4, thread // 4 % 8, thread // 32
    v0, v1, v2 = register % 2, register // 2 % 2, register // 4
    offset = 128 * t0 + t1 + 16 * t2 + 64 * v0 + 8 * v1 + 512 * v2
    return offset % 64, offset // 64


@pytest.mark.parametrize("n", WGMMA_N)
def test_accumulator_matches_ptx(n: int) -> None:
    layout = wgmma_accumulator(n)
    assert layout.num_workers == 128 and layout.task_shape == (64, n)
    owners: dict[tuple[int, ...], int] = {}
    for thread in range(128):
        elements = layout.worker_tasks(thread)
        assert elements == [_ptx_accumulator(thread, r) for r in range(n // 2)], f"thread {thread}"
        for e in elements:
            assert e not in owners, f"{e} held by threads {owners[e]} and {thread}"
            owners[e] = thread
    assert len(owners) == 64 * n


def test_accumulator_of_each_warp_is_mma_m16n8s_side_by_side() -> None:
    """Warp w's registers 4j..4j+3 are mma.m16n8's c[0..3] of rows 16w.., columns 8j.."""
    layout = wgmma_accumulator(32)
    for thread, j in itertools.product(range(128), range(4)):
        w, g, t = thread // 32, thread % 32 // 4, thread % 4
        assert layout.worker_tasks(thread)[4 * j:4 * j + 4] == [
            (16 * w + g, 8 * j + 2 * t), (16 * w + g, 8 * j + 2 * t + 1),
            (16 * w + g + 8, 8 * j + 2 * t), (16 * w + g + 8, 8 * j + 2 * t + 1)]


@pytest.mark.parametrize("element_bytes, bits", [(2, 3), (2, 2), (2, 1), (4, 3), (4, 2), (4, 1)])
def test_element_swizzle_is_the_hardware_byte_swizzle(element_bytes: int, bits: int) -> None:
    """The 128B swizzle is Swizzle<3, 4, 3> on byte addresses: on 2-byte elements tmlir's
    swizzle(3, 3, 3), on 4-byte ones swizzle(3, 2, 3) (64B, 32B: bits 2, 1)."""
    on_elements = Swizzle(bits, 4 - element_bytes.bit_length() + 1, 3)
    on_bytes = byte_swizzle(16 << bits)
    assert on_bytes == Swizzle(bits, 4, 3)
    for offset in range(4096):
        assert on_elements.apply(offset) * element_bytes == on_bytes.apply(offset * element_bytes)


CANONICAL = [  # major, swizzle, element bytes, [mn, k] buffer shape, MN of the tile
    *((m, s, 2, (64, 128), 64) for m in ("k", "mn") for s in (0, 32, 64, 128)),
    *((m, s, 2, (256, 64), 256) for m in ("k", "mn") for s in (0, 32, 64, 128)),
    *(("k", s, 4, (64, 64), 64) for s in (0, 32, 64, 128)),
    ("k", 128, 2, (128, 64), 8), ("mn", 64, 2, (96, 32), 32), ("k", 32, 4, (16, 8), 16),
]


@pytest.mark.parametrize("major, swizzle, element_bytes, shape, rows", CANONICAL)
def test_descriptor_addresses_every_element(major, swizzle, element_bytes, shape, rows) -> None:
    """For every tile-aligned origin, the descriptor (start = the tile's unswizzled offset)
    addresses the layout's byte offset of each element of the tile, in a buffer at a base
    aligned to 1024 bytes (as the printer aligns it)."""
    layout = canonical_layout(*shape, element_bytes, major, swizzle)
    k = 32 // element_bytes
    desc = wgmma_descriptor(layout, element_bytes, major, (rows, k))
    assert desc.swizzle == swizzle
    base = 7 * 1024
    for mn0, k0 in itertools.product(range(0, shape[0], rows), range(0, shape[1], k)):
        tile = MatrixDescriptor(tile_start(layout, element_bytes, (mn0, k0)), desc.lbo, desc.sbo, desc.swizzle)
        for mn, kk in itertools.product(range(rows), range(k)):
            expected = base + layout.offset((mn0 + mn, k0 + kk)) * element_bytes
            assert descriptor_address(tile, major, element_bytes, mn, kk, base) == expected, (mn0 + mn, k0 + kk)


@pytest.mark.parametrize("major, swizzle, element_bytes, lbo, sbo", [
    ("k", 128, 2, 16, 1024), ("k", 64, 2, 16, 512), ("k", 32, 2, 16, 256), ("k", 128, 4, 16, 1024),
    ("k", 0, 2, 128, 1024),  # core matrices of 8 rows x 16 bytes, 8 of them along K
    ("mn", 128, 2, 8192, 1024), ("mn", 32, 2, 2048, 256), ("mn", 0, 2, 128, 1024),
])
def test_descriptor_fields_of_a_128x64_tile(major, swizzle, element_bytes, lbo, sbo) -> None:
    """The leading and stride byte offsets of a 128 x 64 buffer (CUTLASS's make_gmma_desc
    gives the same for the same layouts): K-major SBO is the next 8 rows, MN-major the next 8
    k's (swizzled) and LBO the next row of atoms."""
    layout = canonical_layout(128, 64, element_bytes, major, swizzle)
    desc = wgmma_descriptor(layout, element_bytes, major, (128, 32 // element_bytes))
    assert (desc.lbo, desc.sbo) == (lbo, sbo)


def test_encode_and_decode() -> None:
    desc = MatrixDescriptor(start=0x440, lbo=16, sbo=1024, swizzle=128)
    value = desc.encode(base=0x1_2000)  # bits 4-17 of the address only
    assert value == (1 << 62) | (64 << 32) | (1 << 16) | ((0x12440 & 0x3FFFF) >> 4)
    assert MatrixDescriptor.decode(value) == MatrixDescriptor(0x12440, 16, 1024, 128)
    assert MatrixDescriptor.decode(MatrixDescriptor(16, 32, 48, 32).encode()) == MatrixDescriptor(16, 32, 48, 32)
    assert MatrixDescriptor(0, 16, 16, 0).encode() >> 62 == 0


@pytest.mark.parametrize("layout, element_bytes, major, tile, message", [
    (row_major(64, 16), 2, "k", (64, 16), r"not a canonical K-major wgmma layout for 64x16 tiles: element \(1, 0\)"),
    (row_major(64, 64) ^ Swizzle(3, 3, 4), 2, "k", (64, 16), r"swizzle\(b, 3, 3\) with b = 1, 2 or 3"),
    (row_major(64, 64) ^ Swizzle(3, 3, 3), 2, "mn", (64, 16), r"not a canonical MN-major"),
    (column_major(64, 8), 4, "mn", (64, 8), r"MN-major wgmma operand needs 16-bit elements"),
    (row_major(60, 16), 2, "k", (64, 16), r"60x16 is not a whole number of 64x16 tiles"),
    (row_major(64, 16), 2, "k", (64, 8), r"tile is MN x 16"),
])
def test_non_canonical_layouts_are_refused(layout, element_bytes, major, tile, message) -> None:
    with pytest.raises(WgmmaLayoutError, match=message):
        wgmma_descriptor(layout, element_bytes, major, tile)


def test_shapes() -> None:
    assert parse_wgmma_shape("m64n256k16", "bf16") == 256
    assert parse_wgmma_shape("m64n8k8", "tf32") == 8
    with pytest.raises(WgmmaLayoutError, match=r"unsupported wgmma shape m64n100k16 for f16, expected m64nNk16"):
        parse_wgmma_shape("m64n100k16", "f16")
    with pytest.raises(WgmmaLayoutError, match="unsupported wgmma N 12"):
        wgmma_accumulator(12)
