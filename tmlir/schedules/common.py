"""Pieces shared by schedule templates: buffer types, index helpers, kernel attributes."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DictionaryAttr,
    Float32Type,
    IntegerAttr,
    MemRefType,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute

from tmlir.schedules.builder import Index, IRBuilder


def f32_memref(shape: Sequence[int]) -> MemRefType:
    return MemRefType(Float32Type(), list(shape))


def kernel_attributes(template: str, params: dict[str, int | str]) -> dict[str, Attribute]:
    """``tm.template`` and ``tm.params``: what the CUDA header comment reports."""
    values = {k: IntegerAttr(v, i64) if isinstance(v, int) else StringAttr(v) for k, v in params.items()}
    return {"tm.template": StringAttr(template), "tm.params": DictionaryAttr(values)}


def unravel(b: IRBuilder, linear: Index, shape: Sequence[int]) -> list[Index]:
    """Row-major coordinates of `linear` in `shape`; the first one is not reduced modulo
    its extent (so an index past the end shows up as an out-of-range first coordinate)."""
    coords: list[Index] = []
    for d, extent in enumerate(shape):
        stride = math.prod(shape[d + 1:])
        if extent == 1 and d > 0:
            coords.append(0)
            continue
        c = b.div(linear, stride)
        coords.append(c if d == 0 else b.rem(c, extent))
    return coords


def broadcast_index(coords: Sequence[Index], out_shape: Sequence[int],
                    in_shape: Sequence[int]) -> list[Index]:
    """Indices into an operand of `in_shape` broadcast (numpy rules) to `out_shape`."""
    offset = len(out_shape) - len(in_shape)
    return [
        0 if extent == 1 and out_shape[d + offset] != 1 else coords[d + offset]
        for d, extent in enumerate(in_shape)
    ]


def name_args(kernel, names: Sequence[str]) -> None:
    """Give the kernel's arguments readable names (they become CUDA parameter names)."""
    for arg, name in zip(kernel.body.block.args, names, strict=True):
        arg.name_hint = name
