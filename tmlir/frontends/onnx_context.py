"""What a converter may use: `ImportContext`, the state of one graph's import.

A converter (declared with ``onnx_op``, ``onnx_ops.py``) turns one ONNX node into graph
ops through these methods only: it reads its operands (`inputs`, `input_names`, `value`,
`constant_input`, `constant_ints`), attributes (`attributes`) and result types
(`result_type`), then defines its outputs (`define`, `append`, `alias`, `name_result`,
`add_weight`). Errors name the node through `label`; `opset` is the model's default-domain
opset.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import NodeProto, numpy_helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError, one_line, sanitize_name, value_type
from tmlir.frontends.onnx_ops import operators


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
        """The SSA value of an ONNX value name; an initializer becomes a weight on first use."""
        if name not in self.values:
            self.add_weight(name, self.initializer_array(name))  # checked: it is one
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
        unless it is an initializer. The op's ``input_names`` name it in errors."""
        name = node.input[position] if position < len(node.input) else ""
        if not name:
            return None
        if not self.is_constant(name):
            what = operators()[node.op_type].input_names[position]
            raise FrontendError(f"{self.label}: input '{what}' ('{name}') must be a constant "
                                "(an initializer or a Constant node), not computed at run time")
        return self.initializer_array(name)

    def constant_ints(self, node: NodeProto, position: int) -> list[int] | None:
        """An integer constant input as a list (see `constant_input`)."""
        array = self.constant_input(node, position)
        if array is None:
            return None
        if not np.issubdtype(array.dtype, np.integer):
            what = operators()[node.op_type].input_names[position]
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
        op = operators()[node.op_type]
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
        return operators()[node.op_type].read_attributes(node, self.label)

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
        """The inferred type of output `name` of the current node."""
        return value_type(self.infos, name, f"{self.label}: output '{name}'")

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
