"""The schedule template of ``example.swish``: tmlir's elementwise template (one thread per
element) computing ``x / (1 + exp(-x))``, which ``convert-graph-to-tm`` calls for each
``example.swish`` (arguments: the operand, then the result, as buffers)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.ir import SSAValue

from tmlir.dialects import tm
from tmlir.ir.builder import IRBuilder
from tmlir.schedules.elementwise import elementwise_kernel
from tmlir_example_plugin.dialect import SwishOp


def _swish(b: IRBuilder, xs: Sequence[SSAValue]) -> SSAValue:
    (x,) = xs
    e = b.fop(xmath.ExpOp, b.fop(arith.NegfOp, x))
    return b.fop(arith.DivfOp, x, b.fop(arith.AddfOp, b.constant(1.0, x.type), e))


def swish_kernel(name: str, op: SwishOp) -> tm.KernelOp:
    """The kernel ``name(x, y)`` with ``y = swish(x)``."""
    shape = tuple(op.input.type.get_shape())  # type: ignore[attr-defined]
    return elementwise_kernel(name, shape, [shape], _swish, "swish(x0)")
