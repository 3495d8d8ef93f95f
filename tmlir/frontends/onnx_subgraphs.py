"""Names in ONNX subgraphs: which a subgraph defines and reads, and renaming them.

A subgraph (an ``If`` branch, a ``Loop`` or ``Scan`` body) sees the values of its enclosing
graphs by name; what it defines itself (its inputs, initializers and node outputs) shadows
them. The functions here change protos in place and respect that scoping at any depth;
`GraphRewrite` copies a subgraph into the main graph under fresh names (`instantiate`),
which is how `onnx_control_flow` inlines a branch or unrolls a loop.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, helper, numpy_helper

from tmlir.frontends.onnx_common import FrontendError, fresh_name, one_line
from tmlir.frontends.onnx_fold import constant_node_value

_SUBGRAPH_TYPES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
_DEFAULT_DOMAINS = ("", "ai.onnx")


def defined_names(graph: GraphProto) -> set[str]:
    """The value names `graph` defines itself (inputs, initializers, node outputs)."""
    return ({i.name for i in graph.input} | {t.name for t in graph.initializer}
            | {o for n in graph.node for o in n.output if o})


def all_names(graph: GraphProto) -> set[str]:
    """Every value name of `graph` and of its subgraphs, at any depth."""
    names = defined_names(graph) | {o.name for o in graph.output}
    for node in graph.node:
        names.update(node.input)
        for sub in subgraphs(node):
            names |= all_names(sub)
    return names


def subgraphs(node: NodeProto) -> list[GraphProto]:
    """The subgraphs among `node`'s attributes (an ``If``'s branches, a ``Loop``'s body)."""
    return [g for a in node.attribute if a.type in _SUBGRAPH_TYPES
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs)]


def rename_outer(graph: GraphProto, mapping: dict[str, str]) -> None:
    """Rename, in place, the outer names `graph` reads (its own definitions shadow them)."""
    inner = {k: v for k, v in mapping.items() if k not in defined_names(graph)}
    if not inner:
        return
    for node in graph.node:
        rename_node(node, inner)
    for output in graph.output:
        output.name = inner.get(output.name, output.name)


def rename_node(node: NodeProto, mapping: dict[str, str]) -> None:
    """Rename, in place, the inputs of `node` and the outer names its subgraphs read."""
    renamed = [mapping.get(n, n) for n in node.input]
    del node.input[:]
    node.input.extend(renamed)
    for sub in subgraphs(node):
        rename_outer(sub, mapping)


def unshadow(graph: GraphProto, outer: set[str], fresh: Callable[[str], str]) -> None:
    """Rename, in place, the values that the subgraphs of `graph` (at any depth) define
    under a name of an enclosing scope (`outer`, or `graph` itself): onnx's shape inference
    mixes up the two."""
    scope = outer | defined_names(graph)
    for node in graph.node:
        for sub in subgraphs(node):
            clashes = {n: fresh(n) for n in defined_names(sub) & scope}
            if clashes:  # a node reads the outer value until the subgraph defines its own
                defined = {v.name for v in (*sub.input, *sub.initializer)}
                active = {k: v for k, v in clashes.items() if k in defined}
                for inner in sub.node:
                    rename_node(inner, active)
                    active.update((o, clashes[o]) for o in inner.output if o in clashes)
                    renamed = [clashes.get(o, o) for o in inner.output]
                    del inner.output[:]
                    inner.output.extend(renamed)
                for value in (*sub.input, *sub.initializer, *sub.value_info):
                    value.name = clashes.get(value.name, value.name)
                for value in sub.output:
                    value.name = active.get(value.name, value.name)
            unshadow(sub, scope, fresh)


def outer_reads(graph: GraphProto) -> set[str]:
    """The names `graph` reads from enclosing scopes, its subgraphs' reads included."""
    defined = {v.name for v in (*graph.input, *graph.initializer)}
    reads = set()
    for node in graph.node:
        reads |= {n for n in node.input if n and n not in defined}
        for sub in subgraphs(node):
            reads |= outer_reads(sub) - defined
        defined.update(node.output)
    return reads | ({o.name for o in graph.output} - defined)


def _is_constant_node(node: NodeProto) -> bool:
    return node.op_type == "Constant" and node.domain in _DEFAULT_DOMAINS and not node.input


class GraphRewrite:
    """One rewrite of a model's main graph: its constants and static shapes, the names
    taken anywhere in the model, and the initializers added (`added`)."""

    def __init__(self, model: ModelProto) -> None:
        self.graph = model.graph
        self.opset = max((o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS),
                         default=1)
        self.taken = all_names(self.graph)
        self.initializers = {t.name: t for t in self.graph.initializer}
        self.constant_nodes = {n.output[0]: n for n in self.graph.node
                               if _is_constant_node(n) and n.output}
        self.infos = {v.name: v for v in (*self.graph.input, *self.graph.value_info,
                                          *self.graph.output)}
        self.added: list[TensorProto] = []

    def constant(self, name: str, what: str) -> np.ndarray | None:
        """The value of `name` if it is a constant of the main graph, else None."""
        try:
            if name in self.initializers:
                return numpy_helper.to_array(self.initializers[name])
            if name in self.constant_nodes:
                value = constant_node_value(self.constant_nodes[name])
                return None if value is None else value[0]
        except Exception as exc:  # external data that was not loaded, say
            raise FrontendError(f"{what}: cannot read the value of '{name}': {one_line(exc)}") from exc
        return None

    def static_shape(self, name: str) -> tuple[int, ...] | None:
        """The shape of `name` if shape inference (or its initializer) made it static."""
        if name in self.initializers:
            return tuple(self.initializers[name].dims)
        info = self.infos.get(name)
        if info is None or not info.type.HasField("tensor_type"):
            return None
        tensor = info.type.tensor_type
        if not tensor.HasField("shape") or not all(d.HasField("dim_value") for d in tensor.shape.dim):
            return None
        return tuple(d.dim_value for d in tensor.shape.dim)

    def fresh(self, base: str) -> str:
        """`base`, or `base` with a suffix, unused anywhere in the model."""
        return fresh_name(self.taken, base)

    def add_constant(self, base: str, array: np.ndarray) -> str:
        """A new initializer holding `array`, named after `base`; its name."""
        name = self.fresh(base)
        self.added.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def instantiate(self, graph: GraphProto, bound: dict[str, str], suffix: str,
                    constants: bool = True) -> tuple[list[NodeProto], list[str]]:
        """A copy of `graph`'s nodes under fresh names, its inputs bound to the outer names
        `bound`; and the names of its outputs. Without `constants` its initializers and the
        nodes whose results `bound` names are left out (they were hoisted: see `hoist`)."""
        mapping = dict(bound)
        if constants:
            for tensor in graph.initializer:
                copy = TensorProto()
                copy.CopyFrom(tensor)
                copy.name = mapping[tensor.name] = self.fresh(tensor.name + suffix)
                self.added.append(copy)
        nodes = []
        for node in graph.node:
            if not constants and node.output and node.output[0] in bound:
                continue
            copy = NodeProto()
            copy.CopyFrom(node)
            rename_node(copy, mapping)
            outputs = [self.fresh(o + suffix) if o else "" for o in node.output]
            mapping.update((o, n) for o, n in zip(node.output, outputs) if o)
            del copy.output[:]
            copy.output.extend(outputs)
            copy.name = node.name + suffix if node.name else ""
            nodes.append(copy)
        return nodes, [mapping.get(o.name, o.name) for o in graph.output]

    def hoist(self, body: GraphProto) -> tuple[list[NodeProto], dict[str, str]]:
        """The loop-invariant values of `body` (initializers, ``Constant`` nodes, and
        ``Identity`` nodes of outer values), added once: the nodes
        to place before the first iteration and their names."""
        mapping = {}
        for tensor in body.initializer:
            copy = TensorProto()
            copy.CopyFrom(tensor)
            copy.name = mapping[tensor.name] = self.fresh(tensor.name)
            self.added.append(copy)
        nodes, local = [], defined_names(body)
        for node in body.node:
            outer_identity = (node.op_type == "Identity" and node.domain in _DEFAULT_DOMAINS
                              and len(node.input) == 1 and node.input[0] not in local)
            if (_is_constant_node(node) or outer_identity) and node.output and node.output[0]:
                copy = NodeProto()
                copy.CopyFrom(node)
                copy.output[0] = mapping[node.output[0]] = self.fresh(node.output[0])
                nodes.append(copy)
        return nodes, mapping

    def stack(self, parts: list[str], axis: int, output: str) -> list[NodeProto]:
        """Nodes that stack the same-shaped values `parts` along a new `axis` into `output`."""
        if self.opset >= 13:
            axes = self.add_constant(f"{output}_axes", np.array([axis], np.int64))
            expanded = [helper.make_node("Unsqueeze", [p, axes], [self.fresh(f"{p}_{output}")])
                        for p in parts]
        else:
            expanded = [helper.make_node("Unsqueeze", [p], [self.fresh(f"{p}_{output}")], axes=[axis])
                        for p in parts]
        if len(parts) == 1:
            expanded[0].output[0] = output
            return expanded
        return [*expanded, helper.make_node("Concat", [n.output[0] for n in expanded], [output],
                                            axis=axis)]
