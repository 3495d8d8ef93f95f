"""The tunable kernels of a model, deduplicated by signature.

The model is imported and taken through ``lower-to-cuda`` up to the pass that schedules
(``convert-graph-to-tm``): canonicalized, batch norms folded into convolutions (which
gives them a bias), partitioned. Every anchor op that `tunable_problem` recognizes is
then one tunable kernel, built from the same problem the template would build it from,
and kernels with equal signatures are counted as one. Full-size ResNet-50's 53
convolutions and one GEMM are 24 kernels.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tmlir.tuning.space import TEMPLATES, TunableKernel


@dataclass(frozen=True)
class ModelKernel:
    """A tunable kernel of a model and how many ops of the model it serves."""

    kernel: TunableKernel
    occurrences: int


def model_kernels(model: Any, input_shapes: Mapping[str, Sequence[int]] | None = None,
                  fusion: bool = True) -> list[ModelKernel]:
    """The tunable kernels of an ONNX model (path, bytes or ModelProto), in order of first
    occurrence. FrontendError for a model the frontend cannot import."""
    from tmlir.frontends.onnx import import_onnx
    from tmlir.passes.convert_graph_to_tm import ConvertGraphToTm
    from tmlir.passes.lower_to_cuda import pipeline
    from tmlir.registry import make_context
    from tmlir.schedules.templates import tunable_problem

    source = os.fspath(model) if isinstance(model, str | os.PathLike) else None
    imported = import_onnx(model, source=source, input_shapes=input_shapes)
    ctx = make_context(weights=imported.weights)
    for graph_pass in pipeline(fusion):
        if isinstance(graph_pass, ConvertGraphToTm):
            break
        graph_pass.apply(ctx, imported.module)
    counts: Counter[TunableKernel] = Counter()
    for op in imported.module.walk():
        if (tunable := tunable_problem(op)) is not None and tunable[0] in TEMPLATES:
            counts[TunableKernel(*tunable)] += 1  # the tensor-core matmul is not tuned yet
    return [ModelKernel(kernel, n) for kernel, n in counts.items()]
