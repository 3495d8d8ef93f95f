"""The ONNX frontend's model-level steps: loading a model (a ModelProto, bytes or a file),
fixing the shapes of its dynamic inputs, and onnx's shape inference, each with one-line
``FrontendError``s."""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import onnx

from tmlir import dtypes
from tmlir.frontends.onnx_common import FrontendError, one_line, type_kind


def load_model(model: onnx.ModelProto | bytes | str | os.PathLike[str],
               source: str | None = None) -> onnx.ModelProto:
    """The ModelProto of a model given as one (itself), as serialized bytes or as a file
    path; `source` names bytes in errors."""
    if isinstance(model, onnx.ModelProto):
        return model
    is_bytes = isinstance(model, bytes | bytearray)
    where = (source or "<bytes>") if is_bytes else os.fspath(model)
    try:
        proto = onnx.load_model_from_string(bytes(model)) if is_bytes else onnx.load(where)
    except Exception as exc:  # DecodeError, OSError, missing external data
        raise FrontendError(f"cannot parse ONNX model from '{where}': {one_line(exc)}") from exc
    if not proto.HasField("graph"):
        raise FrontendError(f"cannot parse ONNX model from '{where}': not an ONNX model "
                            "(it has no graph)")
    return proto


Dim = int | str | None
"""A declared dimension: its size, the name of a symbolic one (``"batch"``), or None."""


def declared_inputs(model: onnx.ModelProto) -> list[tuple[str, tuple[Dim, ...] | None]]:
    """The model's inputs (initializers excluded) and their declared dims (None: no shape)."""
    initializers = {t.name for t in model.graph.initializer}
    inputs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dims = None
        if value.type.HasField("tensor_type") and tensor.HasField("shape"):
            dims = tuple(d.dim_value if d.HasField("dim_value")
                         else d.dim_param if d.HasField("dim_param") else None
                         for d in tensor.shape.dim)
        inputs.append((value.name, dims))
    return inputs


def specialize(proto: onnx.ModelProto, shapes: Mapping[str, Sequence[int]]) -> onnx.ModelProto:
    """A copy of `proto` whose inputs named in `shapes` have those static dims."""
    declared = dict(declared_inputs(proto))
    kinds = {v.name: v.type.WhichOneof("value") for v in proto.graph.input}
    for name, shape in shapes.items():
        if name not in declared:
            raise FrontendError(f"input shape given for '{name}', which is not a model input "
                                f"(inputs: {', '.join(declared) or 'none'})")
        if kinds[name] != "tensor_type":
            kind = type_kind(kinds[name]) if kinds[name] else "of unknown type"
            raise FrontendError(f"input '{name}': {kind}, not a tensor (only tensors are supported)")
        dims = declared[name]
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise FrontendError(f"input '{name}': shape {list(shape)} has a negative dimension")
        if dims is not None and (len(dims) != len(shape) or any(
                isinstance(d, int) and d > 0 and d != n for d, n in zip(dims, shape))):
            pretty = [d if d is not None else "?" for d in dims]
            raise FrontendError(f"input '{name}': shape {list(shape)} does not match the "
                                f"declared shape {pretty}")
    specialized = onnx.ModelProto()
    specialized.CopyFrom(proto)
    for value in specialized.graph.input:
        if value.name in shapes:
            tensor_shape = value.type.tensor_type.shape
            tensor_shape.ClearField("dim")
            for n in shapes[value.name]:
                tensor_shape.dim.add().dim_value = int(n)
    return specialized


def fix_values(proto: onnx.ModelProto, values: Mapping[str, np.ndarray]) -> None:
    """The inputs of `proto` named in `values` become initializers holding those values, in
    place (their shapes were fixed by `specialize`); a value of another dtype than the
    declared one is an error."""
    declared = {v.name: v.type.tensor_type.elem_type for v in proto.graph.input}
    for name, value in values.items():
        array = np.asarray(value)
        known = dtypes.from_numpy(array.dtype)
        if known is None or known.onnx != declared[name]:
            raise FrontendError(f"input '{name}': value of dtype {array.dtype}, but the model "
                                f"declares {onnx.TensorProto.DataType.Name(declared[name])}")
        proto.graph.initializer.append(onnx.numpy_helper.from_array(np.array(array, order="C"), name))


INFERENCE_DEFAULTS = {"MeanVarianceNormalization": ("axes", [0, 2, 3])}
"""Attributes whose ONNX default onnx's shape inference does not apply (the function body of
``MeanVarianceNormalization`` reads ``axes`` and fails without it): `infer_shapes` writes
them into the nodes that leave them out, which changes nothing else."""


def _fill_inference_defaults(graph_proto: onnx.GraphProto) -> None:
    for node in graph_proto.node:
        default = INFERENCE_DEFAULTS.get(node.op_type)
        if default and node.domain in ("", "ai.onnx") and all(
                a.name != default[0] for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute(*default))


MAX_INFERENCE_CONSTANT = 4096
"""Initializers of more elements are given to shape inference as typed inputs, without
their data: inference reads the values of shape-like constants only, and serializing a
model's weights into it dominated the import of large models (BERT-base: 10 of 12 s)."""


def infer_shapes(proto: onnx.ModelProto) -> onnx.ModelProto:
    """Every value's type inferred (strict mode) into `proto`'s ``value_info`` and outputs,
    in place; `proto` is returned. A failure is a one-line FrontendError (`proto` unchanged).
    Stored ``value_info`` that contradicts inference (stale shapes) is dropped with a warning;
    attributes inference needs but does not default (`INFERENCE_DEFAULTS`) are written into
    the nodes first.

    Inference runs on a light copy: initializers of more than MAX_INFERENCE_CONSTANT
    elements become typed graph inputs there, without their data."""
    graph_proto = proto.graph
    _fill_inference_defaults(graph_proto)
    small = [t for t in graph_proto.initializer if math.prod(t.dims) <= MAX_INFERENCE_CONSTANT]
    large = [t for t in graph_proto.initializer if math.prod(t.dims) > MAX_INFERENCE_CONSTANT]
    light = onnx.ModelProto(ir_version=proto.ir_version, opset_import=proto.opset_import,
                            functions=proto.functions)
    for field in ("node", "input", "output", "value_info", "sparse_initializer"):
        getattr(light.graph, field).extend(getattr(graph_proto, field))
    light.graph.initializer.extend(small)
    declared = {i.name for i in graph_proto.input}
    light.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                             for t in large if t.name not in declared)
    try:
        inferred = _run_shape_inference(light)
    except FrontendError as exc:
        if not light.graph.value_info:
            raise
        # The shapes a model stores for its intermediate values are hints: exporters leave
        # stale ones behind (a dim fixed at export, a pass that changed a shape). Inference
        # from the inputs and the nodes alone decides; a failure then is the model's own.
        del light.graph.value_info[:]
        inferred = _run_shape_inference(light)
        warnings.warn(f"ignored the shapes the model stores for its intermediate values: "
                      f"{str(exc).removeprefix('shape inference failed: ')}", stacklevel=2)
    for field in ("value_info", "output"):
        graph_proto.ClearField(field)
        getattr(graph_proto, field).extend(getattr(inferred.graph, field))
    return proto


def _run_shape_inference(proto: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    except Exception as exc:  # InferenceError, ValidationError: one line per failing node
        lines = str(exc).replace("[ShapeInferenceError] Inference error(s): ", "").splitlines()
        first = lines[0].strip() if lines else type(exc).__name__
        match = re.match(r"\(op_type:(\w+)(?:, node name: ([^)]*))?\): (?:\[\w+\] )?(.*)", first)
        if match:
            op, node, message = match.groups()
            first = f"node '{node}' ({op}): {message}" if node else f"a {op} node: {message}"
        raise FrontendError(f"shape inference failed: {first}") from exc
