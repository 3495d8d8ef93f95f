"""The ONNX frontend: an ONNX ``ModelProto`` becomes a ``func.func @main`` of ``graph`` ops.

Function arguments are the graph inputs that are not initializers, results the graph
outputs, both in ONNX order; ``tm.inputs`` / ``tm.outputs`` keep their original ONNX names.
Initializers and ``Constant`` nodes become ``graph.weight "<name>"`` ops, emitted at first
use, whose arrays go to ``ImportedModel.weights``: the IR text never holds tensor data.
Computations on constants and static shapes (``Shape → Gather → Concat``, a ``Transpose``
of a weight) are folded first (``tmlir.frontends.onnx_fold``), so their ops need no
importer. Every shape comes from ``onnx.shape_inference`` (strict mode, ``onnx_model.py``)
and must be static; element types are float32, int64, int32 and bool (``tmlir.dtypes``),
each op's inputs limited by ``INPUT_DTYPES``. A model this importer cannot take
(unsupported op, attribute, dtype, dynamic shape, unreadable file) raises a one-line
``FrontendError`` naming the node or value at fault.

    tm-opt model.onnx            # prints the graph IR
    import_onnx("model.onnx")    # ImportedModel(module, weights, input_names, output_names)
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import AttributeProto, NodeProto, TensorProto, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends import onnx_conv as conv
from tmlir.frontends import onnx_data_movement as data_movement
from tmlir.frontends import onnx_logic as logic
from tmlir.frontends._onnx_common import (  # noqa: F401  (FrontendError re-exported)
    FrontendError,
    one_line,
    sanitize_name,
    static_type,
    value_type,
)
from tmlir.frontends.onnx_conv import ConvConverters
from tmlir.frontends.onnx_data_movement import DataMovementConverters
from tmlir.frontends.onnx_fold import fold_constants
from tmlir.frontends.onnx_logic import LogicConverters
from tmlir.frontends.onnx_model import (  # noqa: F401  (load_model, declared_inputs re-exported)
    declared_inputs,
    infer_shapes,
    load_model,
    specialize,
)
from tmlir.frontends.onnx_reductions import ATTRIBUTES as REDUCTION_ATTRIBUTES
from tmlir.frontends.onnx_reductions import CHOICES as REDUCTION_CHOICES
from tmlir.frontends.onnx_reductions import CONSTANT_INPUTS as REDUCTION_CONSTANT_INPUTS
from tmlir.frontends.onnx_reductions import CONVERTERS as REDUCTION_CONVERTERS
from tmlir.frontends.onnx_reductions import INPUT_DTYPES as REDUCTION_INPUT_DTYPES
from tmlir.frontends.onnx_reductions import OUTPUTS as REDUCTION_OUTPUTS
from tmlir.frontends.onnx_reductions import ReductionConverters

SUPPORTED_OPS: tuple[str, ...] = (
    "Abs", "Add", "And", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat",
    "Constant", "ConstantOfShape", "Conv", "ConvTranspose", "Div", "Dropout", "Elu", "Equal",
    "Erf", "Exp", "Expand", "Flatten", "Gather", "GatherElements", "GatherND", "Gelu", "Gemm",
    "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "HardSigmoid",
    "HardSwish", "Identity", "IsNaN", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual",
    "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Mean", "Min", "Mul", "Neg", "Not", "Or",
    "Pad", "Pow", "Range", "Reciprocal", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceSum",
    "Relu", "Reshape", "Resize", "Selu", "Shape", "Sigmoid", "Size", "Slice", "Softmax",
    "Softplus", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "Tile", "Transpose",
    "Unsqueeze", "Where", "Xor",
)
_BINARY = {"Add": graph.AddOp, "Sub": graph.SubOp, "Mul": graph.MulOp, "Div": graph.DivOp,
           "Pow": graph.PowOp}
_VARIADIC = {"Max": graph.MaxOp, "Min": graph.MinOp, "Sum": graph.SumOp, "Mean": graph.MeanOp}
_UNARY: dict[str, tuple[type[graph.UnaryElementwiseOp], dict[str, float | str]]] = {
    # op type -> graph op, ONNX defaults of its attributes (which become its properties)
    "Relu": (graph.ReluOp, {}), "Sigmoid": (graph.SigmoidOp, {}), "Tanh": (graph.TanhOp, {}),
    "Exp": (graph.ExpOp, {}), "Log": (graph.LogOp, {}), "Sqrt": (graph.SqrtOp, {}),
    "Reciprocal": (graph.ReciprocalOp, {}), "Neg": (graph.NegOp, {}), "Abs": (graph.AbsOp, {}),
    "Erf": (graph.ErfOp, {}), "Softplus": (graph.SoftplusOp, {}),
    "HardSwish": (graph.HardSwishOp, {}),
    "LeakyRelu": (graph.LeakyReluOp, {"alpha": 0.01}),
    "HardSigmoid": (graph.HardSigmoidOp, {"alpha": 0.2, "beta": 0.5}),
    "Elu": (graph.EluOp, {"alpha": 1.0}),
    "Selu": (graph.SeluOp, {"alpha": 1.67326319217681884765625,
                            "gamma": 1.05070102214813232421875}),
    "Gelu": (graph.GeluOp, {"approximate": "none"}),
}
_DEFAULT_DOMAINS = ("", "ai.onnx")
_INT, _FLOAT, _STRING = AttributeProto.INT, AttributeProto.FLOAT, AttributeProto.STRING
_ATTRIBUTES: dict[str, dict[str, int]] = {  # op type -> supported attribute -> its type
    "Gemm": {"transA": _INT, "transB": _INT, "alpha": _FLOAT, "beta": _FLOAT},
    "Constant": {"value": AttributeProto.TENSOR, "value_float": _FLOAT,
                 "value_floats": AttributeProto.FLOATS, "value_int": _INT,
                 "value_ints": AttributeProto.INTS},
    "Clip": {"min": _FLOAT, "max": _FLOAT},  # before opset 11; then they are inputs
    **{op: {name: _STRING if isinstance(value, str) else _FLOAT
            for name, value in defaults.items()} for op, (_, defaults) in _UNARY.items()},
    **REDUCTION_ATTRIBUTES,
    **data_movement.ATTRIBUTES,
    **conv.ATTRIBUTES,
    **logic.ATTRIBUTES,
}
_CHOICES: dict[tuple[str, str], tuple[object, ...]] = {  # the values an attribute may take
    ("Gemm", "transA"): (0, 1), ("Gemm", "transB"): (0, 1),
    ("Gelu", "approximate"): graph.GELU_APPROXIMATIONS,
    **REDUCTION_CHOICES,
    **data_movement.CHOICES,
    **conv.CHOICES,
    **logic.CHOICES,
}
_NUMERIC = (dtypes.NUMERIC,)
#: op type -> the dtypes each input may have (the last entry repeats); float32 for the
#: ops not listed. Inputs read as constants (CONSTANT_INPUTS) are checked only when they
#: are computed at run time: their converters then say that they must be constants.
INPUT_DTYPES: dict[str, tuple[tuple[dtypes.DType, ...], ...]] = {
    **{op: _NUMERIC for op in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Neg", "Abs")},
    "Pow": ((dtypes.FLOAT32,), dtypes.NUMERIC),
    **data_movement.INPUT_DTYPES,
    **REDUCTION_INPUT_DTYPES,
    **logic.INPUT_DTYPES,
}
#: Ops whose outputs after the first are accepted when nothing uses them.
_UNUSED_EXTRA_OUTPUTS = ("MaxPool", *data_movement.UNUSED_EXTRA_OUTPUTS,
                         *conv.UNUSED_EXTRA_OUTPUTS)
#: Op types with more than one output: how many they may have (None: any number).
_OUTPUTS: dict[str, int | None] = {**REDUCTION_OUTPUTS, **data_movement.OUTPUTS}
#: Inputs (by position) read as constants when the model is imported.
CONSTANT_INPUTS: dict[str, tuple[int, ...]] = {**REDUCTION_CONSTANT_INPUTS,
                                               **data_movement.CONSTANT_INPUTS}


@dataclass
class ImportedModel:
    """The result of ``import_onnx``: a verified module and the weights it refers to."""

    module: ModuleOp
    weights: dict[str, np.ndarray] = field(repr=False)
    """``graph.weight`` name -> C-contiguous array of a supported dtype (used initializers,
    Constants)."""
    input_names: list[str]
    output_names: list[str]


def _node_label(node: NodeProto, index: int) -> str:
    op = node.op_type if node.domain in _DEFAULT_DOMAINS else f"{node.domain}.{node.op_type}"
    return f"node '{node.name}' ({op})" if node.name else f"node #{index} ({op})"


def _attributes(node: NodeProto, label: str) -> dict[str, object]:
    """The node's attribute values; a FrontendError for any the op does not support."""
    allowed, found = _ATTRIBUTES.get(node.op_type, {}), {}
    for attr in node.attribute:
        if attr.name not in allowed:
            raise FrontendError(f"{label}: unsupported attribute '{attr.name}'")
        if attr.type != allowed[attr.name]:
            expected = AttributeProto.AttributeType.Name(allowed[attr.name])
            raise FrontendError(f"{label}: attribute '{attr.name}' must be {expected}")
        value = onnx.helper.get_attribute_value(attr)
        found[attr.name] = value.decode(errors="replace") if isinstance(value, bytes) else value
        choices = _CHOICES.get((node.op_type, attr.name))
        if choices is not None and found[attr.name] not in choices:
            expected = " or ".join(map(repr, choices))
            raise FrontendError(f"{label}: unsupported value {found[attr.name]!r} of attribute "
                                f"'{attr.name}' (expected {expected})")
    if node.op_type == "Constant" and len(found) != 1:
        raise FrontendError(f"{label}: expected exactly one of the attributes "
                            f"{', '.join(map(repr, allowed))}")
    return found


def _initializer_type(tensor: TensorProto) -> TensorType:
    return static_type(tensor.data_type, tensor.dims, f"initializer '{tensor.name}'")


def _check_graph(graph_proto: onnx.GraphProto) -> None:
    """Errors that shape inference would report less clearly, or not at all."""
    for index, node in enumerate(graph_proto.node):  # the most fundamental error first
        if node.op_type not in SUPPORTED_OPS or node.domain not in _DEFAULT_DOMAINS:
            raise FrontendError(f"{_node_label(node, index)}: unsupported op type; "
                                f"supported: {', '.join(SUPPORTED_OPS)}")
    initializers = {t.name: t for t in graph_proto.initializer}
    infos = {i.name: i for i in graph_proto.input}
    for name in [n for n in infos if n not in initializers]:
        value_type(infos, name, f"input '{name}'")
    defined = set(infos) | set(initializers)
    consumed = {n for node in graph_proto.node for n in node.input} | {
        o.name for o in graph_proto.output}
    for index, node in enumerate(graph_proto.node):
        label = _node_label(node, index)
        attributes = _attributes(node, label)
        extra = [n for n in node.output[1:] if n]  # "" is an absent optional output
        if node.op_type in _OUTPUTS:  # its further outputs are imported too
            extra = []
            if (limit := _OUTPUTS[node.op_type]) is not None and len(node.output) > limit:
                raise FrontendError(f"{label}: expected at most {limit} "
                                    f"outputs, got {len(node.output)}")
        if not node.output or not node.output[0] or (
                extra and node.op_type not in _UNUSED_EXTRA_OUTPUTS):
            raise FrontendError(f"{label}: expected 1 output, got {len(node.output)}")
        if used := [n for n in extra if n in consumed]:
            raise FrontendError(f"{label}: output '{used[0]}' is used, but only the first "
                                "output is supported")
        for position, name in enumerate(node.input):
            if name in initializers and position not in CONSTANT_INPUTS.get(node.op_type, ()):
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


class _GraphImporter(ReductionConverters, DataMovementConverters, ConvConverters,
                     LogicConverters):
    """Builds the body of ``@main`` node by node; ``values`` maps ONNX names to SSA values."""

    def __init__(self, graph_proto: onnx.GraphProto, base_dir: str, opset: int) -> None:
        self.graph, self.base_dir = graph_proto, base_dir  # base_dir: of external data
        self.opset = opset  # of the default domain
        self.initializers = {t.name: t for t in graph_proto.initializer}
        self.infos = {v.name: v for v in (*graph_proto.input, *graph_proto.value_info,
                                          *graph_proto.output)}
        self.values: dict[str, SSAValue] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.block = Block()
        self.label = "graph"

    def run(self) -> tuple[func.FuncOp, list[str]]:
        inputs = [i.name for i in self.graph.input if i.name not in self.initializers]
        for name in inputs:
            arg_type = value_type(self.infos, name, f"input '{name}'")
            arg = self.block.insert_arg(arg_type, len(self.block.args))
            arg.name_hint = sanitize_name(name)
            self.values[name] = arg
        converters = self.converters()
        for index, node in enumerate(self.graph.node):
            self.label = _node_label(node, index)
            self.check_dtypes(node)
            converters[node.op_type](node)
        self.label = "graph"
        outputs = [self.value(out.name) for out in self.graph.output]
        self.block.add_op(func.ReturnOp(*outputs))
        function = func.FuncOp("main", ([a.type for a in self.block.args],
                                        [v.type for v in outputs]), Region(self.block))
        function.attributes["tm.inputs"] = ArrayAttr([StringAttr(n) for n in inputs])
        function.attributes["tm.outputs"] = ArrayAttr(
            [StringAttr(o.name) for o in self.graph.output])
        return function, inputs

    # -- values, weights and operands -------------------------------------------------------

    def check_dtypes(self, node: NodeProto) -> None:
        """A FrontendError unless each input has a dtype that `INPUT_DTYPES` allows."""
        allowed = INPUT_DTYPES.get(node.op_type, ((dtypes.FLOAT32,),))
        constants = CONSTANT_INPUTS.get(node.op_type, ())
        for position, name in enumerate(node.input):
            if not name or (position in constants and name in self.initializers):
                continue
            wanted = allowed[min(position, len(allowed) - 1)]
            if name in self.values:
                code = dtypes.of_ir(self.values[name].type.get_element_type()).onnx
            elif name in self.initializers:
                code = self.initializers[name].data_type
            else:
                continue  # _check_graph: not defined; the converter will say so
            if code not in [d.onnx for d in wanted]:
                names = ", ".join(d.name for d in wanted)
                raise FrontendError(f"{self.label}: input '{name}' is {dtypes.onnx_name(code)}, "
                                    f"but {node.op_type} takes {names} there")

    def same_dtype(self, lhs: SSAValue, rhs: SSAValue, what: str = "the inputs") -> None:
        """A FrontendError unless the two tensors have one element type."""
        types = [v.type.get_element_type() for v in (lhs, rhs)]  # type: ignore[attr-defined]
        if types[0] != types[1]:
            raise FrontendError(f"{self.label}: {what} have different dtypes "
                                f"({types[0]} and {types[1]})")

    def value(self, name: str) -> SSAValue:
        """The SSA value of an ONNX value name; an initializer becomes a weight on first use."""
        if name not in self.values:
            self.add_weight(name, self.initializer_array(name))  # _check_graph: it is one
        return self.values[name]

    def initializer_array(self, name: str) -> np.ndarray:
        try:
            return numpy_helper.to_array(self.initializers[name], self.base_dir)
        except Exception as exc:  # e.g. external data that was not loaded
            raise FrontendError(f"initializer '{name}': cannot read its data: "
                                f"{one_line(exc)}") from exc

    def add_weight(self, name: str, array: np.ndarray) -> None:
        """A ``graph.weight`` for `array`, whose dtype _check_graph made sure is supported."""
        dtype = dtypes.from_numpy(array.dtype)
        if dtype is None:  # a Constant's value, say
            raise FrontendError(f"{self.label}: constant '{name}' has unsupported dtype "
                                f"{array.dtype} (supported: {dtypes.SUPPORTED_NAMES})")
        self.weights[name] = np.asarray(array, order="C")  # (ascontiguousarray makes () (1,))
        self.define(name, graph.WeightOp(name, TensorType(dtype.ir, array.shape)))

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

    def attributes(self, node: NodeProto) -> dict[str, object]:
        """The node's attribute values (checked against ``_ATTRIBUTES`` and ``_CHOICES``)."""
        return _attributes(node, self.label)

    def result_type(self, node: NodeProto) -> TensorType:
        name = node.output[0]
        return value_type(self.infos, name, f"{self.label}: output '{name}'")

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

    # -- one converter per op type ---------------------------------------------------------

    def converters(self) -> dict[str, Callable[[NodeProto], None]]:
        table: dict[str, Callable[[NodeProto], None]] = {
            "MatMul": self.matmul, "Gemm": self.gemm, "Identity": self.identity,
            "Constant": self.constant,
            "Clip": self.clip,
            **{op: self.binary for op in _BINARY}, **{op: self.unary for op in _UNARY},
            **{op: self.variadic for op in _VARIADIC},
            **{op: getattr(self, method) for op, method in REDUCTION_CONVERTERS.items()},
            **{op: getattr(self, method) for op, method in data_movement.CONVERTERS.items()},
            **{op: getattr(self, method) for op, method in conv.CONVERTERS.items()},
            **{op: getattr(self, method) for op, method in logic.CONVERTERS.items()},
        }
        assert set(table) == set(SUPPORTED_OPS)
        return table

    def binary(self, node: NodeProto) -> None:
        lhs, rhs = self.inputs(node, 2)
        if node.op_type == "Pow" and rhs.type.get_element_type() != lhs.type.get_element_type():
            # an integer exponent (INPUT_DTYPES): computed in float, as ONNX's Pow does
            rhs = self.append(graph.CastOp(rhs, lhs.type.get_element_type()), f"{node.input[1]}_f")
        self.same_dtype(lhs, rhs)
        self.define(node.output[0], _BINARY[node.op_type](lhs, rhs, self.result_type(node)))

    def unary(self, node: NodeProto) -> None:
        (x,) = self.inputs(node, 1)
        op_type, defaults = _UNARY[node.op_type]
        params = {**defaults, **_attributes(node, self.label)}
        if params.get("approximate") == "none":  # graph.gelu's default
            del params["approximate"]
        self.define(node.output[0], op_type(x, **params))

    def variadic(self, node: NodeProto) -> None:
        """Max, Min, Sum, Mean of one or more inputs; of one input, that input."""
        inputs = self.inputs(node, max(len(node.input), 1))
        if len(inputs) == 1:
            self.values[node.output[0]] = inputs[0]
        else:
            self.define(node.output[0],
                        _VARIADIC[node.op_type](inputs, self.result_type(node)))

    def clip(self, node: NodeProto) -> None:
        """``graph.clip`` with the constant bounds; a bound computed at run time (a graph
        input, say) becomes a ``graph.max`` / ``graph.min`` with it instead."""
        attrs = _attributes(node, self.label)
        if self.opset >= 11 and attrs:
            raise FrontendError(f"{self.label}: attribute '{next(iter(attrs))}' is not allowed "
                                "since opset 11, where the bounds are inputs")
        if self.opset < 11:
            (x,) = self.inputs(node, 1)
            bounds: list[float | SSAValue | None] = [attrs.get("min"), attrs.get("max")]
        else:
            name, *bound_names = self.input_names(node, 1, optional=2)
            x = self.value(name)
            bounds = [self.clip_bound(b, x, what) for b, what in zip(bound_names, ("min", "max"))]
        lower, upper = bounds
        constant = {k: v for k, v in (("min", lower), ("max", upper)) if isinstance(v, float)}
        # max(x, run-time lower), clip to the constant bounds, min(., run-time upper): the
        # order min(max(x, lower), upper), since a bound is either constant or run-time.
        steps: list[Operation] = []
        if isinstance(lower, SSAValue):
            steps.append(graph.MaxOp([x, lower], x.type))
        if constant:
            steps.append(graph.ClipOp(steps[-1].results[0] if steps else x, **constant))
        if isinstance(upper, SSAValue):
            steps.append(graph.MinOp([steps[-1].results[0] if steps else x, upper], x.type))
        out = node.output[0]
        for index, op in enumerate(steps):  # a first of two steps applies the lower bound
            self.append(op, out if index == len(steps) - 1 else f"{out}_lower")
        self.values[out] = steps[-1].results[0] if steps else x  # no bounds: x itself

    def clip_bound(self, name: str, x: SSAValue, what: str) -> float | SSAValue | None:
        """A Clip bound: its value if it is an initializer, else its SSA value (a graph input
        or a computed value); None if absent."""
        if not name:
            return None
        array = self.initializer_array(name) if name in self.initializers else None
        value = self.value(name) if array is None else None
        shape = array.shape if array is not None else tuple(value.type.get_shape())
        if math.prod(shape) != 1 or len(shape) > len(x.type.get_shape()):
            raise FrontendError(f"{self.label}: bound '{what}' must be a scalar, "
                                f"got shape {list(shape)}")
        return float(array.reshape(())) if array is not None else value

    def identity(self, node: NodeProto) -> None:
        (self.values[node.output[0]],) = self.inputs(node, 1)

    def matmul(self, node: NodeProto) -> None:
        lhs, rhs = self.inputs(node, 2)
        shapes = [list(v.type.get_shape()) for v in (lhs, rhs)]
        if min(len(s) for s in shapes) < 2:
            raise FrontendError(f"{self.label}: 1-D MatMul operands are not supported yet "
                                f"(shapes {shapes[0]} and {shapes[1]})")
        self.define(node.output[0], graph.MatmulOp(lhs, rhs, self.result_type(node)))

    def gemm(self, node: NodeProto) -> None:
        attrs = _attributes(node, self.label)
        a, b, c = self.inputs(node, 2, optional=1)
        for operand, what in ((a, "A"), (b, "B")):
            if len(operand.type.get_shape()) != 2:
                raise FrontendError(f"{self.label}: operand {what} must be 2-D, "
                                    f"got shape {list(operand.type.get_shape())}")
        result_type = self.result_type(node)
        if c is not None:  # unidirectional broadcast of C to (M, N)
            bias, out = list(c.type.get_shape()), list(result_type.get_shape())
            if len(bias) > 2 or any(d not in (1, o) for d, o in zip(bias[::-1], out[::-1])):
                raise FrontendError(f"{self.label}: C of shape {bias} does not broadcast to "
                                    f"the result shape {out}")
        op = graph.MatmulOp(
            a, b, result_type, c,
            transpose_lhs=attrs.get("transA", 0) == 1,
            transpose_rhs=attrs.get("transB", 0) == 1,
            alpha=float(attrs.get("alpha", 1.0)),
            beta=float(attrs.get("beta", 1.0)) if c is not None else 1.0,
        )
        self.define(node.output[0], op)

    def constant(self, node: NodeProto) -> None:
        self.inputs(node, 0)
        ((attribute, value),) = _attributes(node, self.label).items()
        if isinstance(value, TensorProto):
            array = numpy_helper.to_array(value)
        else:  # value_float(s) are float32, value_int(s) int64
            array = np.array(value, np.float32 if attribute.startswith("value_float") else np.int64)
        self.add_weight(node.output[0], array)


def import_onnx(
    model: onnx.ModelProto | bytes | str | os.PathLike[str], *, source: str | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ImportedModel:
    """Import an ONNX model given as a ModelProto, its serialized bytes, or a file path.

    `source` names the model in error messages and in the module's ``graph.source``
    attribute, and its folder holds any external data; it defaults to the path when `model`
    is one. `input_shapes` fixes the shapes of inputs with symbolic (or any) dimensions,
    by input name; a shape that contradicts a declared static dim is an error. Raises
    FrontendError for anything the frontend cannot import; the returned module is verified.
    """
    if source is None and isinstance(model, str | os.PathLike):
        source = os.fspath(model)
    proto = load_model(model, source)
    if input_shapes:
        proto = specialize(proto, input_shapes)  # a copy
    elif proto is model:  # the caller's ModelProto: shape inference writes into it
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
    try:
        inferred = infer_shapes(proto)
    except FrontendError:
        _check_graph(proto.graph)  # an unsupported op explains a failure best
        raise
    # Shape computations on static shapes fold away (tmlir.frontends.onnx_fold); the shapes
    # they fed (a Reshape's target) are then known to a second inference.
    nodes = len(inferred.graph.node)
    fold_constants(inferred, in_place=True)  # a copy of the caller's model, or one of ours
    if len(inferred.graph.node) != nodes:
        infer_shapes(inferred)
    _check_graph(inferred.graph)
    opset = max((o.version for o in inferred.opset_import if o.domain in _DEFAULT_DOMAINS),
                default=1)
    importer = _GraphImporter(inferred.graph, os.path.dirname(source or ""), opset)
    function, input_names = importer.run()
    module = ModuleOp([function])
    if source is not None:
        module.attributes["graph.source"] = StringAttr(source)
    try:
        module.verify()
    except VerifyException as exc:  # each op was verified as it was built: not expected
        raise FrontendError(f"imported module does not verify: {one_line(exc)}") from exc
    return ImportedModel(module, importer.weights, input_names,
                         [o.name for o in proto.graph.output])
