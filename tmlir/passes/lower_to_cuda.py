"""``lower-to-cuda``: the default pipeline from graph-level IR to the gpu level.

``graph-outline-constants`` → ``graph-fold-empty`` → ``graph-canonicalize`` →
``graph-fold-batchnorm`` → ``graph-partition`` →
``convert-graph-to-tm`` → ``tm-lower-mappings`` → ``convert-tm-to-gpu`` → ``arith-simplify``
→ ``cse``. ``tm-opt model.onnx -p lower-to-cuda -t
cuda`` prints the CUDA C of a model (``--print-between-passes`` shows the IR after each
inner pass); ``-p 'lower-to-cuda{fusion=false}'`` leaves out
``graph-partition``, so every graph op gets a kernel of its own (the unfused baseline).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from tmlir.ir.pipeline import PipelinePass
from tmlir.passes.arith_simplify import ArithSimplify
from tmlir.passes.convert_graph_to_tm import ConvertGraphToTm, check_target_arch
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.graph_canonicalize import GraphCanonicalize
from tmlir.passes.graph_fold_batchnorm import GraphFoldBatchnorm
from tmlir.passes.graph_fold_empty import GraphFoldEmpty
from tmlir.passes.graph_outline_constants import GraphOutlineConstants
from tmlir.passes.graph_partition import GraphPartition
from tmlir.passes.tm_lower_mappings import TmLowerMappings


def pipeline(fusion: bool = True, convert: ConvertGraphToTm | None = None
             ) -> tuple[ModulePass, ...]:
    """The passes of ``lower-to-cuda``; without `fusion`, no ``graph-partition``;
    `convert` is the ``convert-graph-to-tm`` pass with its options (default: none)."""
    return (
        GraphOutlineConstants(),
        GraphFoldEmpty(),
        GraphCanonicalize(),
        GraphFoldBatchnorm(),
        *([GraphPartition()] if fusion else []),
        convert or ConvertGraphToTm(),
        TmLowerMappings(),
        ConvertTmToGpu(),
        ArithSimplify(),
        CommonSubexpressionElimination(),
    )


#: The default pipeline (with fusion).
PIPELINE: tuple[ModulePass, ...] = pipeline()


@dataclass(frozen=True)
class LowerToCuda(PipelinePass):
    """The default pipeline: graph ops in, tmgpu kernels and launches out.

    ``fusion`` (default true): group ops into fusion groups (``graph-partition``), one
    kernel per group; false gives one kernel per graph op. ``target-device``,
    ``target-arch`` and ``tuning-records`` are ``convert-graph-to-tm``'s: with a target
    device, tunable kernels take the parameters of its tuning records (``tm-tune``).
    ``matmul`` and ``conv`` are too: they change the templates' default parameters
    (``-p 'lower-to-cuda{matmul="block_warps=2x2 block_k=16"}'``, see docs/schedules.md).
    ``tm-opt`` runs the inner passes as passes of its own pipeline (see tmlir.ir.pipeline).
    """

    name = "lower-to-cuda"

    fusion: bool = True
    """Group ops into fusion groups (``graph-partition``), one kernel per group; false: one
    kernel per graph op."""
    target_device: str = ""
    """The GPU whose tuning records tunable kernels use (``cuDeviceGetName``); empty: none."""
    target_arch: str = "sm_90"
    """The GPU architecture of the tuning records (one of tmlir.backends.ptx.SUPPORTED_ARCHS)."""
    tuning_records: str = ""
    """The tuning records file (default: ``$TMLIR_TUNING_RECORDS``, else the cache's)."""
    matmul: str = ""
    """The matmul template's default parameters (``"block_warps=2x2 block_k=16"``)."""
    conv: str = ""
    """The convolution template's default parameters (see docs/schedules.md)."""

    def __post_init__(self) -> None:
        check_target_arch(self.name, self.target_arch)
        self.passes()  # ValueError, one line, for a bad convert-graph-to-tm option

    def passes(self) -> tuple[ModulePass, ...]:
        convert = ConvertGraphToTm(self.target_device, self.target_arch, self.tuning_records,
                                   self.matmul, self.conv)
        return pipeline(self.fusion, convert)
