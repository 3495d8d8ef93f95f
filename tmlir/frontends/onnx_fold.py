"""Constant folding on the ONNX graph, before import.

Exported models compute shapes at run time: ``Shape → Gather → Unsqueeze → Concat →
Reshape`` chains, ``ConstantOfShape``, ``Range``, casts of constant indices. With static
shapes all of that is known when the model is compiled. `fold_constants` evaluates, with
onnx's reference implementation, every node whose inputs are all constants
(initializers, ``Constant`` nodes, results folded before), and every ``Shape``/``Size``
of a value whose shape shape inference determined; their results become initializers
and the nodes disappear. What is left for the importer is the computation on data, with
constant shapes as the shape inputs of ``Reshape``, ``Expand`` and the like.

Not folded: nodes outside the default domain, nondeterministic ops (``Random*``,
``Bernoulli``, ``Multinomial``), nodes with subgraphs (``If``, ``Loop``, ``Scan``) and
results of more than `MAX_FOLDED_ELEMENTS` elements (folding ``Expand`` of a scalar into
a huge tensor would trade a cheap kernel for a large weight). A node that the reference
implementation cannot evaluate is left in the graph for the importer to judge.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, TensorProto, helper, numpy_helper

from tmlir.frontends.onnx_common import tensor_array

MAX_FOLDED_ELEMENTS = 1 << 20
NONDETERMINISTIC = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform",
                              "RandomUniformLike", "Bernoulli", "Multinomial"})
_DEFAULT_DOMAINS = ("", "ai.onnx")


def _static_shape(info: onnx.ValueInfoProto | None) -> tuple[int, ...] | None:
    if info is None or not info.type.HasField("tensor_type"):
        return None
    tensor = info.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
    return None if any(d is None for d in dims) else tuple(dims)


def _shape_of(node: NodeProto, shape: tuple[int, ...]) -> np.ndarray:
    """``Shape`` with its optional ``start``/``end`` (opset 15), clamped like the spec."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    rank = len(shape)
    start, end = attrs.get("start", 0), attrs.get("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return np.array(shape[start:end], dtype=np.int64)


def constant_node_value(node: NodeProto) -> list[np.ndarray] | None:
    """A ``Constant`` node's value per the spec (``value_float`` is a scalar, ...)."""
    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        if attr.name == "value":
            return [tensor_array(value, f"Constant node '{node.name or node.output[0]}': attribute 'value'")]
        if attr.name in ("value_float", "value_floats"):
            return [np.array(value, dtype=np.float32)]
        if attr.name in ("value_int", "value_ints"):
            return [np.array(value, dtype=np.int64)]
    return None  # strings and sparse tensors stay as they are


def _evaluate(node: NodeProto, inputs: list[np.ndarray | None], opset: list) -> list[np.ndarray]:
    """Run one node with onnx's reference implementation."""
    from onnx.reference import ReferenceEvaluator

    names = [f"in{i}" if array is not None else "" for i, array in enumerate(inputs)]
    call = helper.make_node(node.op_type, names, [f"out{i}" for i in range(len(node.output))],
                            domain=node.domain)
    call.attribute.extend(node.attribute)
    initializers = [numpy_helper.from_array(np.asarray(a), n)
                    for n, a in zip(names, inputs) if a is not None]
    graph = helper.make_graph([call], "fold", [], [
        helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in call.output],
        initializers)
    model = helper.make_model(graph, opset_imports=opset)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return list(ReferenceEvaluator(model).run(None, {}))


def _gather_elements(node: NodeProto, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    """``GatherElements`` (onnx 1.23's reference fails on axes longer than 32)."""
    data, indices = inputs
    assert data is not None and indices is not None
    axis = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), 0)
    axis = axis % data.ndim
    indices = np.where(indices < 0, indices + data.shape[axis], indices)
    return [np.take_along_axis(data, indices.astype(np.int64), axis=axis)]


def _global_max_pool(node: NodeProto, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    """``GlobalMaxPool`` (onnx 1.23's reference drops a dim of a rank-3 input)."""
    (data,) = inputs
    assert data is not None
    return [np.max(data, axis=tuple(range(2, data.ndim)), keepdims=True)]


_NUMPY = {"GatherElements": _gather_elements, "GlobalMaxPool": _global_max_pool}
"""Ops folded with numpy where onnx's reference implementation is wrong."""


def fold_constants(model: ModelProto, *, in_place: bool = False) -> ModelProto:
    """A copy of `model` (shapes inferred) with its constant computations folded; `model`
    itself, changed, with `in_place` (copying a large model's weights costs seconds)."""
    folded = model
    if not in_place:
        folded = ModelProto()
        folded.CopyFrom(model)
    graph = folded.graph
    infos = {v.name: v for v in (*graph.input, *graph.value_info, *graph.output)}
    constants = _Constants({t.name: t for t in graph.initializer})
    graph_inputs = {i.name for i in graph.input}
    outputs = {o.name for o in graph.output}
    opset = list(folded.opset_import)
    kept: list[NodeProto] = []
    new_constants: dict[str, np.ndarray] = {}
    for node in graph.node:
        results = _fold(node, constants, infos, opset)
        if results is None:
            kept.append(node)
            continue
        for name, array in zip(node.output, results):
            if name:
                constants[name] = new_constants[name] = array
    if not new_constants:
        return folded
    del graph.node[:]
    graph.node.extend(kept)
    used = {name for node in kept for name in node.input} | outputs | _subgraph_reads(kept)
    for name, array in new_constants.items():
        if name in used:
            graph.initializer.append(numpy_helper.from_array(np.asarray(array, order="C"), name))
    alive = [t for t in graph.initializer if t.name in used or t.name in graph_inputs]
    del graph.initializer[:]
    graph.initializer.extend(alive)
    still_known = {v.name for v in graph.value_info if v.name not in new_constants}
    infos_left = [v for v in graph.value_info if v.name in still_known]
    del graph.value_info[:]
    graph.value_info.extend(infos_left)
    return folded


def _subgraph_reads(nodes: list[NodeProto]) -> set[str]:
    """The names read inside the subgraphs of `nodes`, at any depth (a constant read only by
    an ``If`` in a ``Loop`` body must stay)."""
    reads: set[str] = set()
    pending = [g for node in nodes for a in node.attribute
               for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                         a.graphs if a.type == onnx.AttributeProto.GRAPHS else [])]
    while pending:
        graph = pending.pop()
        for node in graph.node:
            reads.update(node.input)
            for a in node.attribute:
                pending.extend([a.g] if a.type == onnx.AttributeProto.GRAPH else
                               a.graphs if a.type == onnx.AttributeProto.GRAPHS else [])
    return reads


class _Constants(dict):
    """Constant name -> array; initializers are converted on first use (weights can be large
    and most are never an input of a foldable node)."""

    def __init__(self, initializers: dict[str, TensorProto]) -> None:
        super().__init__()
        self._initializers = initializers

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or name in self._initializers

    def __missing__(self, name: str) -> np.ndarray:
        array = self[name] = tensor_array(self._initializers[name], f"initializer '{name}'")
        return array


def _fold(node: NodeProto, constants: _Constants,
          infos: dict[str, onnx.ValueInfoProto], opset: list) -> list[np.ndarray] | None:
    """The node's results if it can be folded, else None."""
    if node.domain not in _DEFAULT_DOMAINS or node.op_type in NONDETERMINISTIC:
        return None
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
           for a in node.attribute):
        return None
    if node.op_type == "Constant":
        return constant_node_value(node)
    if node.op_type in ("Shape", "Size") and node.input:
        shape = _static_shape(infos.get(node.input[0]))
        if node.input[0] in constants:
            shape = constants[node.input[0]].shape
        return None if shape is None else [shape_result(node, shape)]
    if any(name and name not in constants for name in node.input):
        return None
    return evaluate_node(node, [constants[name] if name else None for name in node.input], opset)


def shape_result(node: NodeProto, shape: tuple[int, ...]) -> np.ndarray:
    """The result of a ``Shape`` (with its ``start``/``end``) or ``Size`` node of a value
    of static `shape`."""
    if node.op_type == "Size":
        return np.array(int(np.prod(shape)), dtype=np.int64)
    return _shape_of(node, shape)


def evaluate_node(node: NodeProto, inputs: list[np.ndarray | None],
                  opset: list) -> list[np.ndarray] | None:
    """The results of a deterministic default-domain node without subgraphs on constant
    `inputs` (None for an absent optional one); None if it cannot be evaluated here (the
    reference implementation fails) or a result exceeds `MAX_FOLDED_ELEMENTS`."""
    try:
        results = run_node(node, inputs, opset)
    except Exception:  # the reference implementation cannot run it: leave it to the importer
        return None
    if any(r.size > MAX_FOLDED_ELEMENTS for r in results):
        return None
    return results


def run_node(node: NodeProto, inputs: list[np.ndarray | None], opset: list) -> list[np.ndarray]:
    """The results of `node` on constant `inputs` (see `evaluate_node`), whatever their
    size; raises what the reference implementation raises when it cannot evaluate it."""
    if node.op_type in _NUMPY:
        results = _NUMPY[node.op_type](node, inputs)
    else:
        results = _evaluate(node, inputs, opset)
    return [np.asarray(r) for r in results]
