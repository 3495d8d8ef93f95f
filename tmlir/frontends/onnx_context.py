"""What a converter may use: `ImportContext`, the state of one graph's import.

A converter (declared with ``onnx_op``, ``onnx_ops.py``) turns one ONNX node into graph
ops through these methods only: it reads its operands (`inputs`, `input_names`, `value`,
`constant_input`, `constant_ints`), attributes (`attributes`) and result types
(`result_type`), then defines its outputs (`define`, `append`, `alias`, `name_result`,
`add_weight`). Errors name the node through `label`; `opset` is the model's default-domain
opset.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import NodeProto, numpy_helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends.onnx_common import (
    FrontendError,
    RunTimeValueError,
    one_line,
    sanitize_name,
    value_type,
)
from tmlir.frontends.onnx_fold import NONDETERMINISTIC, evaluate_node, shape_result
from tmlir.frontends.onnx_model import MAX_INFERENCE_CONSTANT
from tmlir.frontends.onnx_ops import record_of


class ImportContext:
    """The body of ``@main`` as it is built node by node, and the ONNX names' SSA values."""

    def __init__(self, graph_proto: onnx.GraphProto, base_dir: str, opset: int) -> None:
        self.graph, self.base_dir = graph_proto, base_dir  # base_dir: of external data
        self.opset = opset
        """The model's opset of the default domain."""
        self.label = "graph"
        """The node being converted, for error messages: ``node 'name' (Op)``."""
        self.initializers = {t.name: t for t in graph_proto.initializer}
        self.infos = {v.name: v for v in (*graph_proto.input, *graph_proto.value_info,
                                          *graph_proto.output)}
        self.values: dict[str, SSAValue] = {}
        self.known: dict[str, np.ndarray] = {}
        """Values the importer computed (`constant_value`) by name."""
        self.producers = {out: node for node in graph_proto.node for out in node.output if out}
        self.graph_inputs = {v.name: v for v in graph_proto.input if v.name not in self.initializers}
        self.weights: dict[str, np.ndarray] = {}
        """``graph.weight`` name -> its array."""
        self.block = Block()

    # -- operands ---------------------------------------------------------------------------

    def inputs(self, node: NodeProto, required: int, optional: int = 0) -> list[SSAValue | None]:
        """The node's operands; missing optional ones (absent or ``""``) are None."""
        return [self.value(n) if n else None for n in self.input_names(node, required, optional)]

    def input_names(self, node: NodeProto, required: int, optional: int = 0) -> list[str]:
        """The node's input names, checked and padded with ``""`` to required + optional."""
        names = list(node.input)
        while names and not names[-1]:
            names.pop()
        if not required <= len(names) <= required + optional or "" in names[:required]:
            count = f"{required}" + (f" to {required + optional}" if optional else "")
            raise FrontendError(f"{self.label}: expected {count} inputs, got {len(names)}")
        return names + [""] * (required + optional - len(names))

    def value(self, name: str) -> SSAValue:
        """The SSA value of an ONNX value name; an initializer or a value computed by `fold`
        becomes a weight on first use."""
        if name not in self.values:
            known = self.known.get(name)
            self.add_weight(name, self.initializer_array(name) if known is None else known)
        return self.values[name]

    def is_constant(self, name: str) -> bool:
        """Whether the value `name` is an initializer (a constant folded before import)."""
        return name in self.initializers

    def initializer_array(self, name: str) -> np.ndarray:
        """The data of initializer `name`."""
        try:
            return numpy_helper.to_array(self.initializers[name], self.base_dir)
        except Exception as exc:  # e.g. external data that was not loaded
            raise FrontendError(f"initializer '{name}': cannot read its data: "
                                f"{one_line(exc)}") from exc

    def constant_input(self, node: NodeProto, position: int) -> np.ndarray | None:
        """The value of the node's input at `position` (None when it is absent); an error
        unless it is known when the model is compiled: an initializer, or computed from
        initializers and static shapes (`constant_value`). The op's ``input_names`` name it
        in errors."""
        name = node.input[position] if position < len(node.input) else ""
        if not name:
            return None
        if self.is_constant(name):
            return self.initializer_array(name)
        value = self.constant_value(name)
        if value is None:
            what = record_of(node).input_names[position]
            raise self.run_time_error(name, f"input '{what}' ('{name}')")
        return value

    def constant_value(self, name: str) -> np.ndarray | None:
        """The value of `name` if it is known when the model is compiled: an initializer,
        or a result of `fold`; else None."""
        if self.is_constant(name):
            return self.initializer_array(name)
        return self.known.get(name)

    def fold(self, node: NodeProto) -> bool:
        """Compute `node` now if it is a ``Shape``/``Size`` of an imported value (whose
        shape our graph knows, whatever shape inference found) or a node whose inputs were
        computed so; its results join `known` and become weights only where a graph op
        reads them. False (nothing done) otherwise: the node is converted."""
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in node.attribute) or node.op_type in NONDETERMINISTIC:
            return False
        if node.op_type in ("Shape", "Size"):
            source = self.values.get(node.input[0]) if node.input else None
            if source is None:
                return False
            results = [shape_result(node, tuple(source.type.get_shape()))]
        else:
            names = [n for n in node.input if n]
            if not names or not any(n in self.known for n in names) or not all(
                    n in self.known or self.is_constant(n) for n in names):
                return False
            inputs = [self.constant_value(n) if n else None for n in node.input]
            results = evaluate_node(node, inputs, [onnx.helper.make_opsetid("", self.opset)])
            if results is None:
                return False
        self.known.update((out, array) for out, array in zip(node.output, results) if out)
        return True

    def run_time_error(self, name: str, what: str) -> FrontendError:
        """The error for `what` (the value `name`), which must be known when the model is
        compiled but is not: a `RunTimeValueError` naming the model inputs it is computed
        from (their values can be given) when nothing else unknown feeds it, else a plain
        FrontendError."""
        sources = self.input_sources(name)
        if sources:
            listed = ", ".join(f"'{s}'" for s in sources)
            origin = ("is a model input" if sources == (name,) else
                      f"is computed from the model input{'s' * (len(sources) > 1)} {listed}")
            return RunTimeValueError(
                f"{self.label}: {what} {origin}, whose value must be known when the model is "
                "compiled (InferenceSession compiles the model for each value it is fed)",
                sources, self.label)
        return FrontendError(f"{self.label}: {what} must be a constant (an initializer or a "
                             "Constant node), not computed at run time")

    def input_sources(self, name: str) -> tuple[str, ...] | None:
        """The model inputs from which `name` is computed, if nothing else unknown (a
        ``Shape`` of a value not imported, a subgraph) feeds it; None otherwise."""
        sources, seen, pending = [], set(), [name]
        while pending:
            current = pending.pop()
            if current in seen or not current or self.is_constant(current) or current in self.known:
                continue
            seen.add(current)
            if current in self.graph_inputs:
                sources.append(current)
                continue
            node = self.producers.get(current)
            if node is None or node.op_type in ("Shape", "Size") or node.attribute and any(
                    a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                    for a in node.attribute):
                return None
            pending.extend(node.input)
        return tuple(sorted(sources)) or None

    def constant_ints(self, node: NodeProto, position: int) -> list[int] | None:
        """An integer constant input as a list (see `constant_input`)."""
        array = self.constant_input(node, position)
        if array is None:
            return None
        if not np.issubdtype(array.dtype, np.integer):
            what = record_of(node).input_names[position]
            raise FrontendError(f"{self.label}: input '{what}' must be integers, got {array.dtype}")
        return [int(v) for v in array.reshape(-1)]

    def same_dtype(self, lhs: SSAValue, rhs: SSAValue, what: str = "the inputs") -> None:
        """A FrontendError unless the two tensors have one element type."""
        types = [v.type.get_element_type() for v in (lhs, rhs)]  # type: ignore[attr-defined]
        if types[0] != types[1]:
            raise FrontendError(f"{self.label}: {what} have different dtypes "
                                f"({types[0]} and {types[1]})")

    def check_dtypes(self, node: NodeProto) -> None:
        """A FrontendError unless each input has a dtype that its op's record allows."""
        op = record_of(node)
        for position, name in enumerate(node.input):
            if not name or (position in op.constant_inputs and self.is_constant(name)):
                continue
            wanted = op.inputs[min(position, len(op.inputs) - 1)]
            if name in self.values:
                code = dtypes.of_ir(self.values[name].type.get_element_type()).onnx
            elif self.is_constant(name):
                code = self.initializers[name].data_type
            else:
                continue  # not defined: the converter will say so
            if code not in [d.onnx for d in wanted]:
                names = ", ".join(d.name for d in wanted)
                raise FrontendError(f"{self.label}: input '{name}' is {dtypes.onnx_name(code)}, "
                                    f"but {node.op_type} takes {names} there")

    # -- attributes and axes ----------------------------------------------------------------

    def attributes(self, node: NodeProto) -> dict[str, object]:
        """The node's attribute values, checked against its op's record."""
        return record_of(node).read_attributes(node, self.label)

    def axis_of(self, axis: int, rank: int, what: str = "axis") -> int:
        """`axis` normalized to [0, rank)."""
        if not -rank <= axis < rank:
            raise FrontendError(f"{self.label}: {what} {axis} is out of range for rank {rank}")
        return axis % rank

    def normalized_axes(self, axes: list[int], rank: int) -> list[int]:
        """`axes` in [0, rank), without repeats."""
        normalized = [self.axis_of(a, rank) for a in axes]
        if len(set(normalized)) != len(normalized):
            raise FrontendError(f"{self.label}: axes {list(axes)} repeat an axis")
        return normalized

    def axes_of(self, node: NodeProto, attrs: dict[str, object], since: int, rank: int,
                position: int = 1) -> list[int] | None:
        """Axes given as an attribute before opset `since`, as a constant input after;
        normalized (None: not given)."""
        if self.opset >= since and "axes" in attrs:
            raise FrontendError(f"{self.label}: attribute 'axes' is not allowed since opset "
                                f"{since}, where the axes are an input")
        axes = self.constant_ints(node, position) if self.opset >= since else attrs.get("axes")
        return None if axes is None else self.normalized_axes(axes, rank)  # type: ignore[arg-type]

    # -- results ----------------------------------------------------------------------------

    def result_type(self, node: NodeProto) -> TensorType:
        """The inferred type of the node's first output."""
        return self.result_type_of(node.output[0])

    def result_type_of(self, name: str) -> TensorType:
        """The inferred type of output `name` of the current node. Where shape inference of
        the whole model left it unknown or dynamic, the node is inferred again on its own,
        from the types of its operands in our graph (always static) and the values of its
        constant operands."""
        what = f"{self.label}: output '{name}'"
        try:
            return value_type(self.infos, name, what)
        except FrontendError:
            if not self._infer_node(name):
                raise
        return value_type(self.infos, name, what)

    def _infer_node(self, name: str) -> bool:
        """Run onnx's shape inference on the node that defines `name` alone, its operands
        typed as our graph has them; record what it finds in `infos`. Whether it ran."""
        node = self.producers.get(name)
        if node is None:
            return False
        inputs, constants = [], []
        for operand in dict.fromkeys(n for n in node.input if n):
            value = self.known.get(operand)
            if value is None and self.is_constant(operand):
                tensor = self.initializers[operand]
                if math.prod(tensor.dims) <= MAX_INFERENCE_CONSTANT:
                    value = self.initializer_array(operand)
            if value is not None:
                constants.append(numpy_helper.from_array(np.asarray(value), operand))
            elif operand in self.values:
                type_ = self.values[operand].type
                code = dtypes.of_ir(type_.get_element_type()).onnx  # type: ignore[attr-defined]
                inputs.append(onnx.helper.make_tensor_value_info(operand, code, type_.get_shape()))
            else:
                return False
        outputs = [onnx.helper.make_empty_tensor_value_info(o) for o in node.output if o]
        model = onnx.helper.make_model(
            onnx.helper.make_graph([node], "node", inputs, outputs, constants),
            opset_imports=[onnx.helper.make_opsetid("", self.opset)])
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        except Exception:  # the whole model's inference has already said why
            return False
        for info in (*inferred.graph.value_info, *inferred.graph.output):
            if info.type.HasField("tensor_type") and info.type.tensor_type.HasField("shape"):
                self.infos[info.name] = info
        return True

    def check_inferred(self, node: NodeProto, result_type: TensorType) -> None:
        """`result_type` (computed by the converter) agrees with what shape inference
        found, if it found a static shape."""
        try:
            inferred = value_type(self.infos, node.output[0], "")
        except FrontendError:
            return
        if inferred != result_type:
            raise FrontendError(f"{self.label}: result shape {list(result_type.get_shape())} "
                                f"differs from the inferred {list(inferred.get_shape())}")

    def is_used(self, name: str) -> bool:
        """Whether a node or a graph output reads the value `name`."""
        return bool(name) and (any(name in node.input for node in self.graph.node)
                               or any(name == output.name for output in self.graph.output))

    def define(self, name: str, op: Operation) -> None:
        """Append `op`, the definition of the ONNX value `name`, and verify it."""
        self.values[name] = self.append(op, name)

    def append(self, op: Operation, hint: str) -> SSAValue:
        """Append `op` with the SSA name hint of `hint`, verify it, and return its result."""
        op.results[0].name_hint = sanitize_name(hint)
        self.block.add_op(op)
        try:
            op.verify()
        except VerifyException as exc:
            raise FrontendError(f"{self.label}: {one_line(exc)}") from exc
        return op.results[0]

    def alias(self, name: str, value: SSAValue) -> None:
        """The ONNX value `name` is `value` itself (an Identity, a no-op Reshape, ...)."""
        self.values[name] = value

    def name_result(self, name: str, result: SSAValue) -> None:
        """A further result of an op just defined is the ONNX value `name`."""
        result.name_hint = sanitize_name(name)
        self.values[name] = result

    def add_weight(self, name: str, array: np.ndarray) -> None:
        """A ``graph.weight`` for `array` (C-contiguous in `weights`), the value `name`."""
        dtype = dtypes.from_numpy(array.dtype)
        if dtype is None:  # a Constant's value, say
            raise FrontendError(f"{self.label}: constant '{name}' has unsupported dtype "
                                f"{array.dtype} (supported: {dtypes.SUPPORTED_NAMES})")
        self.weights[name] = np.asarray(array, order="C")  # (ascontiguousarray makes () (1,))
        self.define(name, graph.WeightOp(name, TensorType(dtype.ir, array.shape)))
