"""The elementwise/broadcast template: one thread per output element.

Blocks of ``block`` threads cover the flattened output; ``spatial(grid)`` maps blocks and
``spatial(block)`` threads, and each thread unravels its linear index into output
coordinates and broadcast operand coordinates. When the output size is not a multiple of
the block, the last block's spare threads fall past output dim 0, which the loads and
stores guard; otherwise no guard is emitted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import Float32Type, MemRefType
from xdsl.ir import Attribute, SSAValue

from tmlir.dialects import tm
from tmlir.ir.builder import IRBuilder
from tmlir.mapping import spatial
from tmlir.schedules.common import (
    broadcast_guards,
    broadcast_index,
    kernel_attributes,
    name_args,
)

#: Computes the output element from the loaded operand elements.
ElementFunction = Callable[[IRBuilder, Sequence[SSAValue]], SSAValue]


@dataclass(frozen=True)
class ElementwiseParams:
    """Threads per block."""

    block: int = 256


def elementwise_kernel(
    name: str,
    out_shape: Sequence[int],
    in_shapes: Sequence[Sequence[int]],
    compute: ElementFunction,
    expression: str,
    params: ElementwiseParams = ElementwiseParams(),
    element_types: Sequence[Attribute] | None = None,
) -> tm.KernelOp:
    """A kernel ``(inputs..., output)`` computing ``output = compute(inputs...)``;
    `element_types` are those of the inputs, then the output's (all ``f32`` if None)."""
    out_shape = tuple(out_shape) or (1,)
    total = math.prod(out_shape)
    block = min(params.block, 32 * math.ceil(total / 32))
    grid = math.ceil(total / block)
    in_shapes = [tuple(s) or (1,) for s in in_shapes]
    types = element_types or [Float32Type()] * (len(in_shapes) + 1)
    assert len(types) == len(in_shapes) + 1
    kernel = tm.KernelOp(
        name,
        [MemRefType(t, s) for t, s in zip(types, [*in_shapes, out_shape])],
        grid,
        block,
        kernel_attributes("elementwise", {"block": block, "expr": expression}),
    )
    name_args(kernel, [*(f"x{i}" for i in range(len(in_shapes))), "out"])
    *inputs, output = kernel.args
    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    guarded = {0} if total % block != 0 else set()  # spare threads run past output dim 0
    with b.for_task(spatial(grid), bid, ["blk"]) as (blk,), b.for_task(spatial(block), tid, ["lane"]) as (t,):
        linear = b.add(b.mul(blk, block), t, "idx")
        coords = b.unravel(linear, out_shape)
        loaded = []
        for arg, shape in zip(inputs, in_shapes):
            index = broadcast_index(coords, out_shape, shape)
            guard = broadcast_guards(out_shape, shape, guarded)
            loaded.append(b.load(arg, index, guard, name="x"))
        result = compute(b, loaded)
        b.store(result, output, coords, sorted(guarded))
    return kernel
