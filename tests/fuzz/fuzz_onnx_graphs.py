"""A hypothesis strategy for random valid ONNX graphs of the ops tmlir supports.

`onnx_cases()` draws a `FuzzCase`: a model of 1 to `max_nodes` nodes and a seeded feed.
A `GraphBuilder` keeps a pool of the values defined so far; each node draws its operands
from that pool (a value read twice makes a diamond, a value read once a chain) or makes
a new graph input or initializer of a shape that fits the op. The op generators live in
``fuzz_onnx_ops.py`` and ``fuzz_onnx_shape_ops.py``: each draws attributes in their legal
range from the operand shapes, and the builder infers each node's output type with ONNX's
own shape inference, so a generator never computes a shape by hand.

The dtypes are float32, float16, int32, int64 and bool, each op limited to the dtypes that
its tmlir record (`tmlir.frontends.onnx_ops.operators`) declares. Dims are small and odd
(1, 3, 7, 17, ...); `zero_size=True` adds 0 (off by default). Every model passes
``onnx.checker.check_model(full_check=True)`` (strict shape inference).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from hypothesis import assume
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from tmlir.frontends.onnx_ops import operators

F32, F16, I32, I64, BOOL = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32,
                            TensorProto.INT64, TensorProto.BOOL)
#: The dtypes the fuzzer builds graphs of.
FUZZ_DTYPES = (F32, F16, I32, I64, BOOL)
FLOATS = (F32, F16)
NUMPY = {F32: np.float32, F16: np.float16, I32: np.int32, I64: np.int64, BOOL: np.bool_}
#: Dims drawn for new tensors: small, many odd.
DIMS = (1, 3, 2, 7, 4, 5, 17, 8)
#: The largest tensor a generator makes (emu runs every element on the CPU).
MAX_ELEMENTS = 2048


class Unsuitable(Exception):
    """A generator cannot build its op from what it drew: the builder draws another op."""


@dataclass(frozen=True)
class Value:
    """A tensor of the graph: a graph input, an initializer or a node's output."""

    name: str
    dtype: int
    shape: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass
class FuzzCase:
    """One drawn graph: the model, its feed, and the flags it was drawn with."""

    model: onnx.ModelProto
    feed: dict[str, np.ndarray]
    ops: list[str] = field(default_factory=list)

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        feed = ", ".join(f"{k}: {v.dtype}{list(v.shape)}" for k, v in self.feed.items())
        return f"FuzzCase(ops={self.ops}, feed={{{feed}}})\n{onnx.printer.to_text(self.model.graph)}"


_TYPE_STRS = {"tensor(float)": F32, "tensor(float16)": F16, "tensor(int32)": I32,
              "tensor(int64)": I64, "tensor(bool)": BOOL}


def supported_dtypes(op_type: str, position: int = 0, opset: int = 18) -> tuple[int, ...]:
    """The fuzzed dtypes that both tmlir's record of `op_type` and the ONNX schema accept
    at input `position`."""
    inputs = operators()[op_type].inputs
    allowed = {d.onnx for d in inputs[min(position, len(inputs) - 1)]}
    schema = onnx.defs.get_schema(op_type, opset)
    formal = schema.inputs[min(position, len(schema.inputs) - 1)]
    constraints = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
    legal = {_TYPE_STRS.get(t) for t in constraints.get(formal.type_str, [formal.type_str])}
    return tuple(d for d in FUZZ_DTYPES if d in allowed and d in legal)


class GraphBuilder:
    """The graph drawn so far; generators call `pick`, `fresh`, `const` and `node`."""

    def __init__(self, draw: Callable, *, opset: int, zero_size: bool = False) -> None:
        self.draw = draw
        self.opset = opset
        self.zero_size = zero_size
        self.values: list[Value] = []  # what nodes may read: inputs and node outputs
        self.inputs: list[Value] = []
        self.initializers: dict[str, np.ndarray] = {}
        self.nodes: list[onnx.NodeProto] = []
        self.types: dict[str, onnx.TypeProto] = {}
        self.count = 0

    # -- drawing ------------------------------------------------------------------------
    def dtypes(self, op_type: str, position: int = 0) -> tuple[int, ...]:
        """`supported_dtypes` at this graph's opset."""
        return supported_dtypes(op_type, position, self.opset)

    def integer(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def choice(self, options: Sequence):
        return self.draw(st.sampled_from(list(options)))

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def dim(self) -> int:
        return self.choice((*DIMS, 0) if self.zero_size else DIMS)

    def shape(self, rank: int, cap: int = MAX_ELEMENTS) -> tuple[int, ...]:
        dims = [self.dim() for _ in range(rank)]
        while math.prod(dims) > cap:
            dims[dims.index(max(dims))] = 1
        return tuple(dims)

    # -- values -------------------------------------------------------------------------
    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def pick(self, dtypes: Sequence[int], ranks: Sequence[int] = range(5),
             fits: Callable[[tuple[int, ...]], bool] | None = None,
             shape: tuple[int, ...] | None = None) -> Value:
        """A value of one of `dtypes`: mostly one already defined whose rank is in `ranks`
        and shape `fits`, else a new input or initializer (of `shape` if given)."""
        if not dtypes:
            raise Unsuitable("no dtype")
        found = [v for v in self.values if v.dtype in dtypes and v.rank in ranks
                 and (fits is None or fits(v.shape)) and (shape is None or v.shape == shape)]
        if found and self.integer(0, 3) > 0:
            return self.choice(found)
        for _ in range(4):
            if shape is not None:
                break
            shape = self.shape(self.choice(ranks))
            if fits is not None and not fits(shape):
                shape = None
        if shape is None:
            raise Unsuitable("no fitting shape")
        return self.fresh(self.choice(dtypes), shape)

    def fresh(self, dtype: int, shape: tuple[int, ...]) -> Value:
        """A new graph input, or (one time in four) an initializer of random data."""
        if self.integer(0, 3) == 0:
            seed = self.integer(0, 2**16)
            return self.const(random_array(np.random.default_rng(seed), dtype, shape), "w")
        value = Value(self.name("x"), dtype, tuple(shape))
        self.inputs.append(value)
        self.values.append(value)
        self.types[value.name] = helper.make_tensor_type_proto(dtype, list(shape))
        return value

    def const(self, array: np.ndarray, prefix: str = "c") -> Value:
        """An initializer holding `array` (not offered to `pick`: nodes of constants only
        would be folded by the frontend, not compiled)."""
        array = np.asarray(array)
        value = Value(self.name(prefix), helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)
        self.initializers[value.name] = array
        self.types[value.name] = helper.make_tensor_type_proto(value.dtype, list(array.shape))
        return value

    def node(self, op_type: str, inputs: Sequence[Value | None], outputs: int = 1,
             **attributes) -> list[Value]:
        """Add a node; its outputs' types come from ONNX shape inference."""
        names = [v.name if v is not None else "" for v in inputs]
        out_names = [self.name(op_type.lower()) for _ in range(outputs)]
        node = helper.make_node(op_type, names, out_names, **attributes)
        schema = onnx.defs.get_schema(op_type, self.opset)
        data = {n: numpy_helper.from_array(a, n) for n, a in self.initializers.items() if n in names}
        try:
            types = onnx.shape_inference.infer_node_outputs(
                schema, node, self.types, data, opset_imports=[helper.make_opsetid("", self.opset)])
        except Exception as exc:  # a generator bug: the node it drew is not valid ONNX
            raise AssertionError(f"invalid {op_type} node drawn: {exc}\n{node}") from exc
        made = []
        for name in out_names:
            tensor = types[name].tensor_type
            shape = tuple(d.dim_value for d in tensor.shape.dim)
            assert all(d.HasField("dim_value") and d.dim_value >= 0 for d in tensor.shape.dim), \
                f"{op_type}: no static shape: {tensor.shape}\n{node}"
            if math.prod(shape) > MAX_ELEMENTS:
                raise Unsuitable(f"{op_type} output {shape} too large")
            made.append(Value(name, tensor.elem_type, shape))
        self.nodes.append(node)
        for value in made:
            self.types[value.name] = helper.make_tensor_type_proto(value.dtype, list(value.shape))
            self.values.append(value)
        return made

    # -- the model ----------------------------------------------------------------------
    def model(self, extra_output: bool) -> onnx.ModelProto:
        """The graph's outputs: every node output nothing reads (and maybe one that is read)."""
        read = {name for node in self.nodes for name in node.input}
        computed = [v for v in self.values if v not in self.inputs]
        outputs = [v for v in computed if v.name not in read]
        inner = [v for v in computed if v.name in read]
        if extra_output and inner:
            outputs.append(self.choice(inner))
        info = [helper.make_tensor_value_info(v.name, v.dtype, list(v.shape)) for v in outputs]
        graph = helper.make_graph(
            self.nodes, "fuzz",
            [helper.make_tensor_value_info(v.name, v.dtype, list(v.shape)) for v in self.inputs],
            info, [numpy_helper.from_array(a, n) for n, a in self.initializers.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 10
        onnx.checker.check_model(model, full_check=True)
        return model


def random_array(rng: np.random.Generator, dtype: int, shape: Sequence[int]) -> np.ndarray:
    """Random data of a fuzzed dtype: normal floats, small integers, fair booleans."""
    shape = tuple(shape)
    if dtype in FLOATS:
        return rng.standard_normal(shape).astype(NUMPY[dtype])
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.5)
    return rng.integers(-5, 6, shape).astype(NUMPY[dtype])


@st.composite
def onnx_cases(draw, *, max_nodes: int = 6, zero_size: bool = False,
               families: Sequence[str] | None = None) -> FuzzCase:
    """A random valid model of 1..`max_nodes` nodes and a feed for it; `families` limits
    the op generators (names of `fuzz_onnx_ops.GENERATORS`)."""
    from fuzz_onnx_ops import GENERATORS

    names = sorted(GENERATORS) if families is None else list(families)
    builder = GraphBuilder(draw, opset=draw(st.sampled_from([18, 17, 20])), zero_size=zero_size)
    first = builder.choice(FUZZ_DTYPES)
    builder.fresh(first, builder.shape(builder.integer(1, 4)))
    ops: list[str] = []
    pick_op = draw(st.randoms(use_true_random=False))
    target = draw(st.integers(1, max_nodes))
    attempts = 0
    while len(ops) < target and attempts < 4 * max_nodes:
        attempts += 1
        name = pick_op.choice(names)  # flatter than sampled_from, which favours the first
        mark = (len(builder.nodes), len(builder.values), len(builder.inputs), dict(builder.initializers))
        try:
            GENERATORS[name](builder)
        except Unsuitable:  # roll back what the generator added
            del builder.nodes[mark[0]:], builder.values[mark[1]:], builder.inputs[mark[2]:]
            builder.initializers = mark[3]
            continue
        ops.append(name)
    assume(ops)
    model = builder.model(extra_output=draw(st.booleans()))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    feed = {v.name: random_array(rng, v.dtype, v.shape) for v in builder.inputs}
    return FuzzCase(model, feed, ops)
