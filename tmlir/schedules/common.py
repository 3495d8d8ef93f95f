"""Pieces shared by schedule templates: buffer types, index helpers, kernel attributes."""

from __future__ import annotations

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

from tmlir.ir.builder import Index


def f32_memref(shape: Sequence[int]) -> MemRefType:
    return MemRefType(Float32Type(), list(shape))


def kernel_attributes(template: str, params: dict[str, int | str]) -> dict[str, Attribute]:
    """``tm.template`` and ``tm.params``: what the CUDA header comment reports."""
    values = {k: IntegerAttr(v, i64) if isinstance(v, int) else StringAttr(v) for k, v in params.items()}
    return {"tm.template": StringAttr(template), "tm.params": DictionaryAttr(values)}


def broadcast_index(coords: Sequence[Index], out_shape: Sequence[int],
                    in_shape: Sequence[int]) -> list[Index]:
    """Indices into an operand of `in_shape` broadcast (numpy rules) to `out_shape`."""
    offset = len(out_shape) - len(in_shape)
    return [
        0 if extent == 1 and out_shape[d + offset] != 1 else coords[d + offset]
        for d, extent in enumerate(in_shape)
    ]


def broadcast_guards(out_shape: Sequence[int], in_shape: Sequence[int],
                     guarded_out_dims: set[int]) -> list[int]:
    """Operand dims that need a bound guard: those indexed by a guarded output dim, unless
    broadcast there (indexed by the constant 0)."""
    offset = len(out_shape) - len(in_shape)
    return [
        d for d, extent in enumerate(in_shape)
        if d + offset in guarded_out_dims and not (extent == 1 and out_shape[d + offset] != 1)
    ]


def name_args(kernel, names: Sequence[str]) -> None:
    """Give the kernel's arguments readable names (they become CUDA parameter names)."""
    for arg, name in zip(kernel.body.block.args, names, strict=True):
        arg.name_hint = name
