"""The tunable kernels of a model, deduplicated by signature.

The model is imported and taken through ``lower-to-cuda`` up to the pass that schedules
(``convert-graph-to-tm``): canonicalized, batch norms folded into convolutions (which
gives them a bias), partitioned. Every anchor op that `tunable_problem` recognizes is
then one tunable kernel, built from the same problem the template would build it from for
the target arch (an f16 or bf16 matmul or convolution is a tensor-core kernel from sm_80,
of its operands' element type; a matmul of at most 16 rows is the small-M template's; the
SIMT and small-M templates compute in f32 whatever their tensors store, so their kernels
are f32 ones), and kernels with equal signatures are
counted as one. An f64 matmul is not tuned (its template computes in double with its
default parameters).
Full-size ResNet-50's 53 convolutions and one GEMM are 24 kernels.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import Float64Type
from xdsl.ir import Attribute, Operation

from tmlir import dtypes
from tmlir.schedules.templates import DEFAULT_ARCH, tunable_problem
from tmlir.tuning.space import TEMPLATES, TunableKernel


@dataclass(frozen=True)
class ModelKernel:
    """A tunable kernel of a model and how many ops of the model it serves."""

    kernel: TunableKernel
    occurrences: int


def model_kernels(model: Any, input_shapes: Mapping[str, Sequence[int]] | None = None,
                  fusion: bool = True, arch: str = DEFAULT_ARCH, precision: str = "fp32"
                  ) -> list[ModelKernel]:
    """The tunable kernels of an ONNX model (path, bytes or ModelProto) compiled for
    `arch` at `precision` (``lower-to-cuda``'s: ``fp16`` or ``bf16`` gives the f32
    matmuls that fit the tensor-core template half-precision operands), in order of first
    occurrence. FrontendError for a model the frontend cannot import."""
    from tmlir.frontends.onnx import import_onnx
    from tmlir.passes.convert_graph_to_tm import ConvertGraphToTm
    from tmlir.passes.lower_to_cuda import pipeline
    from tmlir.registry import make_context

    source = os.fspath(model) if isinstance(model, str | os.PathLike) else None
    imported = import_onnx(model, source=source, input_shapes=input_shapes)
    ctx = make_context(weights=imported.weights)
    for graph_pass in pipeline(fusion, ConvertGraphToTm(target_arch=arch), precision):  # type: ignore[arg-type]
        if isinstance(graph_pass, ConvertGraphToTm):
            break
        graph_pass.apply(ctx, imported.module)
    counts: Counter[TunableKernel] = Counter()
    for op in imported.module.walk():
        if (kernel := tunable_kernel(op, arch)) is not None:
            counts[kernel] += 1
    return [ModelKernel(kernel, n) for kernel, n in counts.items()]


def tunable_kernel(op: Operation, arch: str = DEFAULT_ARCH) -> TunableKernel | None:
    """The tunable kernel `kernel_for` builds for `op` on `arch`; None for an op that has
    none or whose kernel takes no records (an f64 matmul)."""
    if (tunable := tunable_problem(op, arch)) is None:
        return None
    template, problem = tunable
    if TEMPLATES[template].elements == ("f32",):  # SIMT: computes in f32 (f16 tensors are a view)
        element = op.results[0].type.get_element_type()  # type: ignore[attr-defined]
        return None if isinstance(element, Float64Type) else TunableKernel(template, problem, arch=arch)
    element = op.operands[0].type.get_element_type()  # type: ignore[attr-defined]
    return TunableKernel(template, problem, _element_name(element), arch)


def _element_name(element: Attribute) -> str:
    """``f16``, ``bf16`` or ``tf32`` (f32 operands): the signature's name of a tensor-core
    kernel's element type."""
    return {dtypes.FLOAT16.ir: "f16", dtypes.BFLOAT16.ir: "bf16", dtypes.FLOAT32.ir: "tf32"}[element]
