"""Arithmetic ops of MLIR's ``arith`` dialect that xDSL 0.74 lacks, with MLIR's names and
syntax, so kernel IR that uses them prints and parses as MLIR's would.

- ``arith.remf``: the float remainder ``lhs - trunc(lhs / rhs) * rhs``, computed exactly,
  with the sign of ``lhs`` (C's ``fmodf``; ONNX ``Mod`` with ``fmod = 1``).

`EXTRA_ARITH_OPS` are loaded into every context the project makes (``make_context`` and
``tm-opt``) next to xDSL's ``arith`` dialect.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure


@irdl_op_definition
class RemFOp(arith.FloatingPointLikeBinaryOperation):
    """``%r = arith.remf %a, %b : f32``: C's ``fmodf``."""

    name = "arith.remf"
    traits = traits_def(Pure())


EXTRA_ARITH_OPS = (RemFOp,)


def load_extra_arith_ops(ctx: Context) -> None:
    """Make `ctx` parse the ops of `EXTRA_ARITH_OPS`."""
    for op in EXTRA_ARITH_OPS:
        if ctx.get_optional_op(op.name) is None:
            ctx.load_op(op)
