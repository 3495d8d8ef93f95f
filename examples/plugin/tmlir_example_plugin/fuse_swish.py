"""``example-fuse-swish``: ``x * sigmoid(x)`` becomes one ``example.swish``.

In: graph IR. Out: the same IR where every ``graph.mul`` of a value and ``graph.sigmoid`` of
that same value (either operand order) is an ``example.swish`` of the value; a sigmoid left
unused is erased. Other muls are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tmlir.dialects import graph
from tmlir_example_plugin.dialect import SwishOp


class _MulOfSigmoid(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter) -> None:
        for x, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            sigmoid = other.owner
            if isinstance(sigmoid, graph.SigmoidOp) and sigmoid.input == x and x.type == op.result.type:
                rewriter.replace_op(op, SwishOp(x))
                if not list(sigmoid.result.uses):
                    rewriter.erase_op(sigmoid)
                return


@dataclass(frozen=True)
class ExampleFuseSwish(ModulePass):
    """Replace ``graph.mul(x, graph.sigmoid(x))`` by ``example.swish(x)``."""

    name = "example-fuse-swish"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_MulOfSigmoid()).rewrite_module(op)
