"""``lower-to-cuda``: the default pipeline from graph-level IR to the gpu level.

``graph-canonicalize`` → ``graph-fold-batchnorm`` → ``convert-graph-to-tm`` → ``tm-lower-mappings`` →
``convert-tm-to-gpu`` → ``canonicalize`` → ``arith-simplify`` → ``canonicalize`` →
``cse``. ``tm-opt model.onnx -p lower-to-cuda -t cuda`` prints the CUDA C of a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from tmlir.passes.arith_simplify import ArithSimplify
from tmlir.passes.convert_graph_to_tm import ConvertGraphToTm
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.graph_canonicalize import GraphCanonicalize
from tmlir.passes.graph_fold_batchnorm import GraphFoldBatchnorm
from tmlir.passes.tm_lower_mappings import TmLowerMappings

PIPELINE: tuple[ModulePass, ...] = (
    GraphCanonicalize(),
    GraphFoldBatchnorm(),
    ConvertGraphToTm(),
    TmLowerMappings(),
    ConvertTmToGpu(),
    CanonicalizePass(),
    ArithSimplify(),
    CanonicalizePass(),
    CommonSubexpressionElimination(),
)


@dataclass(frozen=True)
class LowerToCuda(ModulePass):
    """Run the default pipeline: graph ops in, tmgpu kernels and launches out."""

    name = "lower-to-cuda"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for p in PIPELINE:
            p.apply(ctx, op)
        op.verify()
