"""Zero-size tensors on the ONNX graph, before import: onnxruntime's results, no kernels.

A tensor with a dimension of 0 holds no data: its type alone says what it is. After shape
inference, `fold_empty` therefore treats every value whose static shape has no element as a
constant, so that no converter, schedule or kernel ever sees a 0 extent:

- a node whose results all have no element disappears; its results become empty
  initializers (an empty graph output is returned with no kernel launched);
- a graph input with no element stays an input (a run is fed an empty array, as with
  onnxruntime), but the nodes reading it read an empty initializer instead;
- ``Concat`` drops its empty operands, ``Split`` its empty pieces (an ``Identity`` when
  one is left);
- a node that reads an empty tensor and produces a non-empty one is computed now when its
  result does not depend on run-time data. Reductions over an empty set give what
  onnxruntime gives (`REDUCE_EMPTY`): 0 for ``ReduceSum``, ``ReduceMean``, ``ReduceL1``,
  ``ReduceL2``, ``ReduceSumSquare``; 1 for ``ReduceProd``; -inf (an integer type's least
  value) for ``ReduceMax``, ``ReduceLogSum``, ``ReduceLogSumExp``; +inf (its greatest) for
  ``ReduceMin``. ``MatMul`` and ``Einsum`` contract an empty dimension to zeros whatever
  their other operands. Any other node whose other inputs are constants is evaluated by
  onnx's reference implementation (``Pad`` of an empty tensor, ``Conv`` with no input
  channels: its bias, ...); a node it cannot evaluate (``ArgMax`` of an empty axis) is a
  one-line FrontendError, as onnxruntime fails on it too;
- ``Gemm`` with an empty inner dimension is ``beta * C`` broadcast to the result
  (a ``Mul`` and an ``Expand``), zeros without ``C``; ``Pad`` of an empty tensor with a
  padding value computed at run time is that value broadcast (an ``Expand``).

A computed result of more than ``MAX_FOLDED_ELEMENTS`` elements, all equal, becomes an
``Expand`` of a scalar (one cheap kernel) rather than a large weight. A node that reads an
empty tensor and whose non-empty result depends on a value computed at run time (other
than the cases above) is a FrontendError naming the node.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, helper, numpy_helper

from tmlir.frontends.onnx_common import FrontendError, fresh_name, node_label, one_line
from tmlir.frontends.onnx_fold import MAX_FOLDED_ELEMENTS, run_node
from tmlir.frontends.onnx_ops import operators

_DEFAULT_DOMAINS = ("", "ai.onnx")

REDUCE_EMPTY: dict[str, float] = {
    "ReduceSum": 0.0, "ReduceMean": 0.0, "ReduceL1": 0.0, "ReduceL2": 0.0,
    "ReduceSumSquare": 0.0, "ReduceProd": 1.0, "ReduceMax": -np.inf, "ReduceLogSum": -np.inf,
    "ReduceLogSumExp": -np.inf, "ReduceMin": np.inf}
"""The value of a reduction over an empty set, as onnxruntime 1.2x computes it (ReduceMean
gives 0 there, where onnx's reference implementation gives NaN). For integer types, an
infinity stands for the type's extreme value; for bools, ``value > 0``."""

ZERO_CONTRACTIONS = frozenset({"MatMul", "Einsum"})
"""Ops whose non-empty result from an empty operand sums over an empty dimension: zeros."""


TYPE_ONLY_INPUTS: dict[str, tuple[int, ...]] = {"CastLike": (1,)}
"""Inputs whose data an op does not read (only their type): empty, they are no data."""


def empty_array(info: onnx.ValueInfoProto | None) -> np.ndarray | None:
    """An empty array of the value's type if shape inference found a static shape with no
    element (a dimension of 0), else None."""
    if info is None or not info.type.HasField("tensor_type"):
        return None
    tensor = info.type.tensor_type
    if not tensor.HasField("shape") or tensor.elem_type == onnx.TensorProto.UNDEFINED:
        return None
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
    if None in dims or 0 not in dims:
        return None
    try:
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
    except (KeyError, ValueError):
        return None
    return np.empty(dims, dtype)


def _fill(value: float, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """`value` in every element of `shape`; an infinity is an integer type's extreme."""
    if dtype == np.bool_:
        return np.full(shape, value > 0, dtype)
    if np.issubdtype(dtype, np.integer) and np.isinf(value):
        info = np.iinfo(dtype)
        value = info.max if value > 0 else info.min
    return np.full(shape, value, dtype)


class _EmptyFolder:
    """The state of one `fold_empty` run over a graph."""

    def __init__(self, model: ModelProto) -> None:
        graph = model.graph
        self.graph, self.opset = graph, list(model.opset_import)
        self.infos = {v.name: v for v in (*graph.input, *graph.value_info, *graph.output)}
        self.initializers = {t.name: t for t in graph.initializer}
        self.constants: dict[str, np.ndarray] = {}
        """Values known now: empty ones and results computed here, by name."""
        self.taken = {*self.infos, *self.initializers,
                      *(o for node in graph.node for o in node.output)}
        self.renamed: dict[str, str] = {}
        """Empty graph input -> the empty initializer its readers read instead."""
        self.nodes: list[NodeProto] = []
        self.changed = False
        for tensor in graph.initializer:
            if 0 in tensor.dims:
                self.constants[tensor.name] = numpy_helper.to_array(tensor)
        for value in graph.input:
            array = empty_array(value)
            if array is not None and value.name not in self.initializers:
                self.renamed[value.name] = name = self.fresh(f"{value.name}_empty")
                self.constants[name] = array

    def fresh(self, base: str) -> str:
        """`base`, or `base` with a suffix, unused anywhere in the model."""
        return fresh_name(self.taken, base)

    def constant(self, name: str) -> np.ndarray | None:
        """The value of `name` if it is known now (an initializer, empty or computed)."""
        if name in self.constants:
            return self.constants[name]
        if name in self.initializers:
            return numpy_helper.to_array(self.initializers[name])
        return None

    def run(self) -> None:
        for index, node in enumerate(self.graph.node):
            if any(name in self.renamed for name in node.input):
                node.input[:] = [self.renamed.get(name, name) for name in node.input]
                self.changed = True
            if node.domain not in _DEFAULT_DOMAINS or any(
                    a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                    for a in node.attribute):
                self.nodes.append(node)
                continue
            self.visit(node, node_label(node, index))

    def visit(self, node: NodeProto, label: str) -> None:
        outputs = [name for name in node.output if name]
        arrays = {name: empty_array(self.infos.get(name)) for name in outputs}
        if outputs and all(a is not None for a in arrays.values()):
            self.refuse_invalid(node, label)
            self.known(node, [arrays[name] for name in outputs])
            return
        if node.op_type == "Split" and any(a is not None for a in arrays.values()) and self.split(
                node, [name for name in outputs if arrays[name] is not None]):
            return
        record = operators().get(node.op_type)
        parameters = (*(record.constant_inputs if record is not None else ()),
                      *TYPE_ONLY_INPUTS.get(node.op_type, ()))
        empty = [n for i, n in enumerate(node.input) if n and i not in parameters
                 and n in self.constants and self.constants[n].size == 0]
        if not empty or record is None:  # (empty axes, pads, scales... are no data)
            self.nodes.append(node)
            return
        if node.op_type == "Concat":
            kept = [n for n in node.input if n not in empty]
            replacement = helper.make_node("Concat", kept, node.output, name=node.name) if len(
                kept) > 1 else helper.make_node("Identity", kept, node.output, name=node.name)
            replacement.attribute.extend(a for a in node.attribute if len(kept) > 1)
            self.nodes.append(replacement)
            self.changed = True
            return
        shape = self.static_shape(node.output[0])
        if node.op_type == "Gemm" and shape is not None:
            self.gemm(node, shape)
            return
        if node.op_type == "Pad" and shape is not None and self.pad(node, shape):
            return
        if any(node.input[i] and self.constant(node.input[i]) is None
               for i in parameters if i < len(node.input)):
            self.nodes.append(node)  # the converter asks for the value of the parameter
            return
        results = self.compute(node, label, shape, empty)
        if results is None:
            other = next(n for n in node.input if n and self.constant(n) is None)
            source = next((k for k, v in self.renamed.items() if v == empty[0]), empty[0])
            raise FrontendError(
                f"{label}: reads the empty tensor '{source}' (shape "
                f"{list(self.constants[empty[0]].shape)}), and its non-empty result depends on "
                f"'{other}', computed at run time: not supported")
        self.known(node, results)

    def refuse_invalid(self, node: NodeProto, label: str) -> None:
        """The checks of a node's converter that an empty result would skip, where
        onnxruntime fails too (a ``OneHot`` of depth 0 has an empty result)."""
        if node.op_type == "OneHot" and len(node.input) > 1:
            depth = self.constant(node.input[1])
            if depth is not None and depth.size == 1 and float(depth.reshape(-1)[0]) < 1:
                raise FrontendError(f"{label}: depth must be at least 1, got {depth.reshape(-1)[0]}")

    def static_shape(self, name: str) -> tuple[int, ...] | None:
        info = self.infos.get(name)
        if info is None or not info.type.tensor_type.HasField("shape"):
            return None
        dims = [d.dim_value if d.HasField("dim_value") else None for d in info.type.tensor_type.shape.dim]
        return None if None in dims else tuple(dims)  # type: ignore[arg-type]

    def dtype_of(self, name: str) -> np.dtype:
        return helper.tensor_dtype_to_np_dtype(self.infos[name].type.tensor_type.elem_type)

    def compute(self, node: NodeProto, label: str, shape: tuple[int, ...] | None,
                empty: list[str]) -> list[np.ndarray] | None:
        """The node's results, if they do not depend on run-time data; else None."""
        if len(node.output) == 1 and shape is not None:
            if node.op_type in REDUCE_EMPTY and node.input[0] in empty:
                return [_fill(REDUCE_EMPTY[node.op_type], shape, self.dtype_of(node.output[0]))]
            if node.op_type in ZERO_CONTRACTIONS:
                return [np.zeros(shape, self.dtype_of(node.output[0]))]
        inputs = [self.constant(name) if name else None for name in node.input]
        if any(name and value is None for name, value in zip(node.input, inputs)):
            return None
        try:
            return run_node(node, inputs, self.opset)
        except Exception as exc:  # the reference implementation fails: onnxruntime does too
            raise FrontendError(f"{label}: cannot compute it on an empty input: "
                                f"{one_line(exc)}") from exc

    def gemm(self, node: NodeProto, shape: tuple[int, ...]) -> None:
        """``Gemm`` with an empty inner dimension: ``beta * C`` broadcast to `shape`."""
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        dtype = self.dtype_of(node.output[0])
        bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
        known = None if bias is None else self.constant(bias)
        if bias is None or known is not None:
            beta = attrs.get("beta", 1.0)
            product = np.zeros(shape, dtype) if bias is None else (known * dtype.type(beta)).astype(dtype)
            self.known(node, [np.array(np.broadcast_to(product, shape), order="C")])
            return
        if attrs.get("beta", 1.0) != 1.0:
            beta = self.add_constant(f"{node.output[0]}_beta", np.array(attrs["beta"], dtype))
            scaled = self.fresh(f"{node.output[0]}_scaled")
            self.nodes.append(helper.make_node("Mul", [bias, beta], [scaled]))
            bias = scaled
        self.broadcast(node, bias, shape)

    def pad(self, node: NodeProto, shape: tuple[int, ...]) -> bool:
        """``Pad`` (constant mode) of an empty tensor with a value computed at run time:
        that value broadcast to `shape`. False (nothing done) for anything else."""
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        value = node.input[2] if len(node.input) > 2 and node.input[2] else None
        if attrs.get("mode", b"constant") not in (b"constant", "constant") or value is None or (
                self.constant(value) is not None or self.constant(node.input[1]) is None):
            return False
        self.broadcast(node, value, shape)
        return True

    def split(self, node: NodeProto, empty: list[str]) -> bool:
        """``Split`` with empty pieces: a ``Split`` into the others (or an ``Identity``),
        its pieces' sizes explicit; False (nothing done) where a size is unknown."""
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        axis = attrs.get("axis", 0)
        kept = [name for name in node.output if name and name not in empty]
        shapes = [self.static_shape(name) for name in kept]
        if not kept or len(node.output) != len([n for n in node.output if n]) or None in shapes:
            return False
        sizes = [shape[axis] for shape in shapes]  # type: ignore[index]
        if len(kept) == 1:
            replacement = helper.make_node("Identity", node.input[:1], kept, name=node.name)
        elif max((o.version for o in self.opset if o.domain in _DEFAULT_DOMAINS), default=1) >= 13:
            sizes_name = self.add_constant(f"{kept[0]}_split", np.array(sizes, np.int64))
            replacement = helper.make_node("Split", [node.input[0], sizes_name], kept,
                                           name=node.name, axis=axis)
        else:
            replacement = helper.make_node("Split", node.input[:1], kept, name=node.name,
                                           axis=axis, split=sizes)
        for name in empty:
            self.constants[name] = empty_array(self.infos[name])  # type: ignore[assignment]
        self.nodes.append(replacement)
        self.changed = True
        return True

    def broadcast(self, node: NodeProto, value: str, shape: tuple[int, ...]) -> None:
        """The node becomes ``Expand(value, shape)``."""
        target = self.add_constant(f"{node.output[0]}_shape", np.array(shape, np.int64))
        self.nodes.append(helper.make_node("Expand", [value, target], [node.output[0]], name=node.name))
        self.changed = True

    def add_constant(self, base: str, array: np.ndarray) -> str:
        name = self.fresh(base)
        self.constants[name] = array
        return name

    def known(self, node: NodeProto, results: list[np.ndarray]) -> None:
        """The node's outputs are `results`: the node goes; a large uniform result becomes
        an ``Expand`` of a scalar."""
        self.changed = True
        for name, array in zip([n for n in node.output if n], results):
            array = np.asarray(array)
            flat = array.reshape(-1)
            uniform = array.size > MAX_FOLDED_ELEMENTS and (np.all(flat == flat[0]) or (
                np.issubdtype(array.dtype, np.floating) and np.all(np.isnan(flat))))
            if uniform:
                scalar = self.add_constant(f"{name}_fill", flat[:1].reshape(()).copy())
                target = self.add_constant(f"{name}_shape", np.array(array.shape, np.int64))
                self.nodes.append(helper.make_node("Expand", [scalar, target], [name], name=node.name))
            else:
                self.constants[name] = array

    def finish(self) -> None:
        """Write the kept nodes and the constants that are read back into the graph."""
        graph = self.graph
        used = {n for node in self.nodes for n in node.input} | {o.name for o in graph.output}
        new = {name: array for name, array in self.constants.items()
               if name in used and name not in self.initializers}
        del graph.node[:]
        graph.node.extend(self.nodes)
        graph.initializer.extend(numpy_helper.from_array(np.asarray(array, order="C"), name)
                                 for name, array in new.items())
        kept = [v for v in graph.value_info if v.name not in self.constants]
        del graph.value_info[:]
        graph.value_info.extend(kept)


def fold_empty(model: ModelProto) -> bool:
    """Make the values of `model` (shapes inferred) that have no element constants, in
    place, as the module docstring says; whether anything changed. Raises FrontendError
    for a node whose non-empty result from an empty input cannot be known."""
    folder = _EmptyFolder(model)
    folder.run()
    if folder.changed:
        folder.finish()
    return folder.changed
