"""``lower-to-cuda``: the default pipeline from graph-level IR to the gpu level.

``graph-outline-constants`` → ``graph-fold-empty`` → ``graph-canonicalize`` →
``graph-fold-batchnorm`` → ``graph-merge-matmuls`` → ``graph-fuse-attention`` → ``graph-partition`` →
``convert-graph-to-tm`` → ``tm-lower-mappings`` → ``convert-tm-to-gpu`` → ``arith-simplify``
→ ``cse``. ``tm-opt model.onnx -p lower-to-cuda -t
cuda`` prints the CUDA C of a model (``--print-between-passes`` shows the IR after each
inner pass); ``-p 'lower-to-cuda{fusion=false}'`` leaves out
``graph-merge-matmuls``, ``graph-fuse-attention`` and ``graph-partition``, so every graph op gets a kernel of its own
(the unfused baseline).
``-p 'lower-to-cuda{precision=fp16}'`` (or ``bf16``) runs ``graph-mixed-precision`` before
``graph-partition``: float32 matmuls that fit the tensor-core template read f16 (bf16)
operands, weights converted at compile time; ``precision=tf32`` runs them with TF32 mma on
their float32 operands (marked ``tf32``, nothing converted); the default ``fp32`` computes
in float32.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal

from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from tmlir.ir.pipeline import PipelinePass
from tmlir.passes.arith_simplify import ArithSimplify
from tmlir.passes.convert_graph_to_tm import ConvertGraphToTm, check_schedule_defaults, check_target_arch
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.graph_canonicalize import GraphCanonicalize
from tmlir.passes.graph_fold_batchnorm import GraphFoldBatchnorm
from tmlir.passes.graph_fold_empty import GraphFoldEmpty
from tmlir.passes.graph_fuse_attention import GraphFuseAttention
from tmlir.passes.graph_merge_matmuls import GraphMergeMatmuls
from tmlir.passes.graph_mixed_precision import GraphMixedPrecision
from tmlir.passes.graph_outline_constants import GraphOutlineConstants
from tmlir.passes.graph_partition import GraphPartition
from tmlir.passes.tm_lower_mappings import TmLowerMappings

#: ``lower-to-cuda``'s ``precision`` values.
Precision = Literal["fp32", "fp16", "bf16", "tf32"]
#: The ``graph-mixed-precision`` dtype of each precision that runs it.
MIXED_PRECISION_DTYPES = {"fp16": "f16", "bf16": "bf16", "tf32": "tf32"}


def pipeline(fusion: bool = True, convert: ConvertGraphToTm | None = None,
             precision: Precision = "fp32") -> tuple[ModulePass, ...]:
    """The passes of ``lower-to-cuda``; without `fusion`, no ``graph-merge-matmuls`` (its
    slices pay only when fused) and no ``graph-partition``;
    `convert` is the ``convert-graph-to-tm`` pass with its options (default: none);
    `precision` ``fp16``, ``bf16`` or ``tf32`` adds ``graph-mixed-precision`` before the partition."""
    mixed = MIXED_PRECISION_DTYPES.get(precision)
    arch = convert.target_arch if convert else "sm_90"
    return (
        GraphOutlineConstants(),
        GraphFoldEmpty(),
        GraphCanonicalize(),
        GraphFoldBatchnorm(),
        *([GraphMergeMatmuls()] if fusion else []),
        *([GraphFuseAttention()] if fusion else []),
        *([GraphMixedPrecision(mixed, arch)] if mixed else []),  # type: ignore[arg-type]
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
    ``precision`` (default fp32): ``fp16`` or ``bf16`` runs the f32 matmuls that fit the
    tensor-core template with half-precision operands (``graph-mixed-precision``).
    ``schedule-defaults`` (default ``model``): the latency model chooses untuned parameters;
    ``legacy``: the choices before it (``convert-graph-to-tm``'s).
    ``tm-opt`` runs the inner passes as passes of its own pipeline (see tmlir.ir.pipeline).
    """

    name = "lower-to-cuda"

    fusion: bool = True
    """Group ops into fusion groups (``graph-partition``), one kernel per group; false: one
    kernel per graph op."""
    target_device: str = ""
    """The GPU whose tuning records tunable kernels use (``cuDeviceGetName``); empty: none."""
    target_arch: str = "sm_90"
    """The GPU architecture (one of tmlir.backends.ptx.SUPPORTED_ARCHS): the tuning records
    are looked up for it, and from sm_80 f16/bf16 matmuls and convolutions run on tensor cores."""
    tuning_records: str = ""
    """The tuning records file (default: ``$TMLIR_TUNING_RECORDS``, else the cache's)."""
    matmul: str = ""
    """The matmul template's default parameters (``"block_warps=2x2 block_k=16"``)."""
    conv: str = ""
    """The convolution template's default parameters (see docs/schedules.md)."""
    precision: Precision = "fp32"
    """fp32, or fp16/bf16: f32 matmuls on tensor cores with half-precision operands
    (``graph-mixed-precision``), accumulating in f32; tf32: with TF32 mma on f32 operands."""
    schedule_defaults: str = "model"
    """Untuned parameters of tunable templates: "model" (the latency model's choice) or
    "legacy" (the choices before it; ``convert-graph-to-tm``'s option)."""

    def __post_init__(self) -> None:
        check_target_arch(self.name, self.target_arch)
        check_schedule_defaults(self.name, self.schedule_defaults)
        if self.precision not in typing.get_args(Precision):
            raise ValueError(f"{self.name}: unknown precision '{self.precision}'; expected one of "
                             f"{', '.join(typing.get_args(Precision))}")
        self.passes()  # ValueError, one line, for a bad convert-graph-to-tm option

    def passes(self) -> tuple[ModulePass, ...]:
        convert = ConvertGraphToTm(self.target_device, self.target_arch, self.tuning_records,
                                   self.matmul, self.conv, schedule_defaults=self.schedule_defaults)
        return pipeline(self.fusion, convert, self.precision)
