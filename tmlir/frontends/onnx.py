"""The ONNX frontend: an ONNX ``ModelProto`` becomes a ``func.func @main`` of ``graph`` ops.

Function arguments are the graph inputs that are not initializers, results the graph
outputs, both in ONNX order; ``tm.inputs`` / ``tm.outputs`` keep their original ONNX names.
Initializers and ``Constant`` nodes become ``graph.weight "<name>"`` ops, emitted at first
use, whose arrays go to ``ImportedModel.weights``: the IR text never holds tensor data.
Computations on constants and static shapes (``Shape → Gather → Concat``, a ``Transpose``
of a weight) are folded first (``tmlir.frontends.onnx_fold``), alternating with shape
inference until nothing more folds, so their ops need no importer; what is left is folded
by the importer from its own graph's static shapes (``ImportContext.fold``). Each op the
importer takes is declared, with its attributes, input dtypes and
converter, in its family's module (``onnx_ops.FAMILIES``); a converter builds graph ops
through ``onnx_context.ImportContext``. Every shape comes from ``onnx.shape_inference``
(strict mode, ``onnx_model.py``; a node it left unknown is inferred again alone from our
graph's types) and must be static. A value that must be known at compile time but is
computed from model inputs raises ``RunTimeValueError`` naming them (``input_values``
fixes them; ``InferenceSession`` compiles per value). Element types are float32, int64,
int32 and bool (``tmlir.dtypes``), each op's inputs limited by its record. A model this
importer cannot take (unsupported op, attribute, dtype, dynamic shape, unreadable file)
raises a one-line ``FrontendError`` naming the node or value at fault.

    tm-opt model.onnx            # prints the graph IR
    import_onnx("model.onnx")    # ImportedModel(module, weights, input_names, output_names)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Region
from xdsl.utils.exceptions import VerifyException

from tmlir.frontends.onnx_common import (  # noqa: F401  (FrontendError re-exported)
    FrontendError,
    node_label,
    one_line,
    sanitize_name,
    static_type,
    value_type,
)
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_control_flow import ControlFlowInliner
from tmlir.frontends.onnx_empty import fold_empty
from tmlir.frontends.onnx_fold import fold_constants
from tmlir.frontends.onnx_model import (  # noqa: F401  (load_model, declared_inputs re-exported)
    declared_inputs,
    fix_values,
    infer_shapes,
    load_model,
    specialize,
)
from tmlir.frontends.onnx_ops import operators, record_of
from tmlir.progress import progress

_OPS = operators()
SUPPORTED_OPS: tuple[str, ...] = tuple(sorted(_OPS))
#: Inputs (by position) read as constants when the model is imported, by op type.
CONSTANT_INPUTS: dict[str, tuple[int, ...]] = {
    op.op_type: op.constant_inputs for op in _OPS.values() if op.constant_inputs}
_DEFAULT_DOMAINS = ("", "ai.onnx")
MAX_FOLD_ROUNDS = 16
"""Rounds of constant folding and shape inference at most (each round that folds something
runs inference again; a chain of N dependent ``Shape`` computations needs N rounds)."""


@dataclass
class ImportedModel:
    """The result of ``import_onnx``: a verified module and the weights it refers to."""

    module: ModuleOp
    weights: dict[str, np.ndarray] = field(repr=False)
    """``graph.weight`` name -> C-contiguous array of a supported dtype (used initializers,
    Constants)."""
    input_names: list[str]
    output_names: list[str]


def _initializer_type(tensor: TensorProto) -> TensorType:
    return static_type(tensor.data_type, tensor.dims, f"initializer '{tensor.name}'")


def _check_graph(graph_proto: onnx.GraphProto) -> None:
    """Errors that shape inference would report less clearly, or not at all."""
    for index, node in enumerate(graph_proto.node):  # the most fundamental error first
        if record_of(node) is None:
            raise FrontendError(f"{node_label(node, index)}: unsupported op type; "
                                f"supported: {', '.join(SUPPORTED_OPS)}")
    initializers = {t.name: t for t in graph_proto.initializer}
    infos = {i.name: i for i in graph_proto.input}
    for name in [n for n in infos if n not in initializers]:
        value_type(infos, name, f"input '{name}'")
    defined = set(infos) | set(initializers)
    consumed = {n for node in graph_proto.node for n in node.input} | {
        o.name for o in graph_proto.output}
    for index, node in enumerate(graph_proto.node):
        label = node_label(node, index)
        op = record_of(node)
        assert op is not None
        attributes = op.read_attributes(node, label)
        extra = [n for n in node.output[1:] if n]  # "" is an absent optional output
        if op.outputs != 1:  # its further outputs are imported too
            extra = []
            if (limit := op.outputs) is not None and len(node.output) > limit:
                raise FrontendError(f"{label}: expected at most {limit} "
                                    f"outputs, got {len(node.output)}")
        present = node.output[0] or op.optional_outputs and any(node.output)
        if not node.output or not present or (
                extra and not op.unused_outputs):
            raise FrontendError(f"{label}: expected 1 output, got {len(node.output)}")
        if used := [n for n in extra if n in consumed]:
            raise FrontendError(f"{label}: output '{used[0]}' is used, but only the first "
                                "output is supported")
        for position, name in enumerate(node.input):
            if name in initializers and position not in op.constant_inputs:
                _initializer_type(initializers[name])
            elif name and name not in defined:
                raise FrontendError(f"{label}: input '{name}' is not produced by any earlier "
                                    "node, graph input or initializer")
        for output in [n for n in node.output if n]:
            if output in defined:
                raise FrontendError(f"{label}: value '{output}' is defined twice")
            defined.add(output)
        if isinstance(value := attributes.get("value"), TensorProto):
            static_type(value.data_type, value.dims, f"{label}: value '{node.output[0]}'")
    for output in graph_proto.output:
        if output.name in initializers:
            _initializer_type(initializers[output.name])
        elif output.name not in defined:
            raise FrontendError(f"output '{output.name}' is not produced by any node, "
                                "graph input or initializer")


def _import_graph(graph_proto: onnx.GraphProto, base_dir: str,
                  opset: int) -> tuple[func.FuncOp, list[str], dict[str, np.ndarray]]:
    """``@main``, built node by node by the ops' converters; its inputs' ONNX names; the
    weights. `base_dir` is the folder of external data."""
    ctx = ImportContext(graph_proto, base_dir, opset)
    inputs = [i.name for i in graph_proto.input if not ctx.is_constant(i.name)]
    for name in inputs:
        arg_type = value_type(ctx.infos, name, f"input '{name}'")
        arg = ctx.block.insert_arg(arg_type, len(ctx.block.args))
        arg.name_hint = sanitize_name(name)
        ctx.alias(name, arg)
    nodes = progress(graph_proto.node, "importing ONNX nodes", len(graph_proto.node), "node")
    for index, node in enumerate(nodes):
        ctx.label = node_label(node, index)
        if ctx.fold(node):  # a shape computation on shapes our graph knows
            continue
        ctx.check_dtypes(node)
        record_of(node).convert(ctx, node)  # type: ignore[union-attr]  (checked)
    ctx.label = "graph"
    outputs = [ctx.value(out.name) for out in graph_proto.output]
    ctx.block.add_op(func.ReturnOp(*outputs))
    function = func.FuncOp("main", ([a.type for a in ctx.block.args],
                                    [v.type for v in outputs]), Region(ctx.block))
    function.attributes["tm.inputs"] = ArrayAttr([StringAttr(n) for n in inputs])
    function.attributes["tm.outputs"] = ArrayAttr(
        [StringAttr(o.name) for o in graph_proto.output])
    return function, inputs, ctx.weights


def import_onnx(
    model: onnx.ModelProto | bytes | str | os.PathLike[str], *, source: str | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    input_values: Mapping[str, np.ndarray] | None = None,
) -> ImportedModel:
    """Import an ONNX model given as a ModelProto, its serialized bytes, or a file path.

    `source` names the model in error messages and in the module's ``graph.source``
    attribute, and its folder holds any external data; it defaults to the path when `model`
    is one. `input_shapes` fixes the shapes of inputs with symbolic (or any) dimensions,
    by input name; a shape that contradicts a declared static dim is an error.
    `input_values` fixes the values of inputs by name: they become constants (initializers)
    and are no longer inputs of ``@main``; this is how a model whose shapes or axes are
    model inputs compiles (`RunTimeValueError` names them). Raises
    FrontendError for anything the frontend cannot import; the returned module is verified.
    """
    if source is None and isinstance(model, str | os.PathLike):
        source = os.fspath(model)
    proto = load_model(model, source)
    if input_values:
        input_shapes = {**(input_shapes or {}),
                        **{name: np.shape(value) for name, value in input_values.items()}}
    if input_shapes:
        proto = specialize(proto, input_shapes)  # a copy
        if input_values:
            fix_values(proto, input_values)
    elif proto is model:  # the caller's ModelProto: shape inference writes into it
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
    inline = ControlFlowInliner()  # If, Loop, Scan decided by constants (onnx_control_flow)
    inline(proto)
    try:
        inferred = infer_shapes(proto)
    except FrontendError:
        _check_graph(proto.graph)  # an unsupported op explains a failure best
        raise
    # Shape computations on static shapes fold away (tmlir.frontends.onnx_fold); the shapes
    # they fed (a Reshape's target) are then known to the next inference, which may make
    # further Shape nodes foldable: fold and infer until nothing changes. An If, Loop or Scan
    # that the folded constants decide is replaced by its branch or unrolled body in between.
    for _ in range(MAX_FOLD_ROUNDS):
        nodes = len(inferred.graph.node)
        fold_constants(inferred, in_place=True)  # a copy of the caller's model, or one of ours
        emptied = fold_empty(inferred)  # values with no element are constants (onnx_empty)
        if not inline(inferred) and not emptied and len(inferred.graph.node) == nodes:
            break
        infer_shapes(inferred)
    _check_graph(inferred.graph)
    opset = max((o.version for o in inferred.opset_import if o.domain in _DEFAULT_DOMAINS),
                default=1)
    function, input_names, weights = _import_graph(inferred.graph,
                                                   os.path.dirname(source or ""), opset)
    module = ModuleOp([function])
    if source is not None:
        module.attributes["graph.source"] = StringAttr(source)
    try:
        module.verify()
    except VerifyException as exc:  # each op was verified as it was built: not expected
        raise FrontendError(f"imported module does not verify: {one_line(exc)}") from exc
    return ImportedModel(module, weights, input_names,
                         [o.name for o in proto.graph.output])
