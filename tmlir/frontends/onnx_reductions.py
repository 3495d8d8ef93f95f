"""The ONNX frontend's reductions, normalizations and pooling.

`ReductionConverters` is a mixin of the frontend's importer (``onnx.py``), one method per op
type (`CONVERTERS`); `ATTRIBUTES`, `CHOICES`, `CONSTANT_INPUTS` and `OUTPUTS` extend the
frontend's tables. What each op imports to:

- ``Softmax`` / ``LogSoftmax``: ``graph.softmax`` / ``graph.log_softmax``. Before opset 13
  the input is taken as 2-D, flattened at ``axis`` (default 1), so the axes are ``axis`` to
  the last; since 13, the single ``axis`` (default -1).
- ``ReduceSum`` / ``ReduceMean`` / ``ReduceMax`` / ``ReduceMin``: ``graph.reduce_*``. The
  axes are an attribute before opset 18 (13 for ``ReduceSum``), then an optional input,
  which must be a constant (an initializer, or a ``Constant`` node, which constant folding
  made one). No axes reduce every dim, or with ``noop_with_empty_axes`` none (the input
  itself); ``keepdims`` (default 1) keeps the reduced dims as 1. Reducing empty sets (an
  input with a zero extent) gives a constant: 0, NaN (mean), -inf (max) or inf (min).
- ``LayerNormalization``: ``graph.layer_norm`` (``axis`` default -1, ``epsilon`` 1e-5,
  ``stash_type`` 1 only: float32 statistics), with the optional ``Mean`` / ``InvStdDev``
  outputs as two more results when either is used.
- ``MaxPool`` / ``AveragePool``: ``graph.max_pool`` / ``graph.average_pool`` with explicit
  pads (``auto_pad`` resolved; ``ceil_mode`` applies to explicit pads only, as in
  onnxruntime). ``MaxPool``'s ``Indices`` output and ``storage_order = 1`` are not
  supported.
- ``GlobalAveragePool`` / ``GlobalMaxPool``: ``graph.reduce_mean`` / ``graph.reduce_max``
  over the spatial dims with ``keepdims``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import AttributeProto, NodeProto
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends._onnx_common import FrontendError, sanitize_name
from tmlir.schedules.pool import pool_pads

_INT, _INTS = AttributeProto.INT, AttributeProto.INTS
_FLOAT, _STRING = AttributeProto.FLOAT, AttributeProto.STRING
_REDUCE: dict[str, type[graph.ReduceOp]] = {
    "ReduceSum": graph.ReduceSumOp, "ReduceMean": graph.ReduceMeanOp,
    "ReduceMax": graph.ReduceMaxOp, "ReduceMin": graph.ReduceMinOp,
}
#: A reduction over an empty set (ONNX's ``reduce_*_empty_set`` tests).
_EMPTY_REDUCTION = {"ReduceSum": 0.0, "ReduceMean": float("nan"), "ReduceMax": -np.inf,
                    "ReduceMin": np.inf}
#: The opset from which a reduction's axes are an input rather than an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18}
_POOL_ATTRIBUTES = {"auto_pad": _STRING, "ceil_mode": _INT, "dilations": _INTS,
                    "kernel_shape": _INTS, "pads": _INTS, "strides": _INTS}
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")

ATTRIBUTES: dict[str, dict[str, int]] = {  # op type -> supported attribute -> its type
    "Softmax": {"axis": _INT}, "LogSoftmax": {"axis": _INT},
    **{op: {"axes": _INTS, "keepdims": _INT, "noop_with_empty_axes": _INT} for op in _REDUCE},
    "LayerNormalization": {"axis": _INT, "epsilon": _FLOAT, "stash_type": _INT},
    "MaxPool": {**_POOL_ATTRIBUTES, "storage_order": _INT},
    "AveragePool": {**_POOL_ATTRIBUTES, "count_include_pad": _INT},
    "GlobalAveragePool": {}, "GlobalMaxPool": {},
}
CHOICES: dict[tuple[str, str], tuple[object, ...]] = {  # the values an attribute may take
    **{(op, flag): (0, 1) for op in _REDUCE for flag in ("keepdims", "noop_with_empty_axes")},
    ("LayerNormalization", "stash_type"): (1,),
    ("MaxPool", "storage_order"): (0,),
    ("AveragePool", "count_include_pad"): (0, 1),
    **{(op, "auto_pad"): AUTO_PADS for op in ("MaxPool", "AveragePool")},
    **{(op, "ceil_mode"): (0, 1) for op in ("MaxPool", "AveragePool")},
}
#: Inputs (by position) read as constant integer arrays when the model is imported.
CONSTANT_INPUTS: dict[str, tuple[int, ...]] = {op: (1,) for op in _REDUCE}
#: op type -> the dtypes each input may have: float32 data, integer axes.
INPUT_DTYPES: dict[str, tuple[tuple[dtypes.DType, ...], ...]] = {
    op: ((dtypes.FLOAT32,), dtypes.INTEGERS) for op in _REDUCE}
#: Op types whose outputs after the first are imported too: how many they may have.
OUTPUTS: dict[str, int] = {"LayerNormalization": 3}


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


class ReductionConverters:
    """Converters of the frontend's importer (``_GraphImporter``, whose helpers they use:
    ``inputs``, ``input_names``, ``value``, ``define``, ``attributes``, ``label``, ...)."""

    def _axis(self, axis: int, rank: int, what: str = "axis") -> int:
        if not -rank <= axis < rank:
            raise FrontendError(f"{self.label}: {what} {axis} is out of range for rank {rank}")
        return axis % rank

    def _used(self, name: str) -> bool:
        """Whether a later node or a graph output reads the value `name`."""
        return bool(name) and (any(name in node.input for node in self.graph.node)
                               or any(name == output.name for output in self.graph.output))

    def _constant_ints(self, name: str, what: str) -> list[int]:
        if name not in self.initializers:
            raise FrontendError(f"{self.label}: input '{what}' ('{name}') must be a constant "
                                "(an initializer or a Constant node), not computed at run time")
        array = self.initializer_array(name)
        if not np.issubdtype(array.dtype, np.integer):
            raise FrontendError(f"{self.label}: input '{what}' must be integers, got {array.dtype}")
        return [int(v) for v in array.reshape(-1)]

    def softmax(self, node: NodeProto) -> None:
        (x,) = self.inputs(node, 1)
        rank = len(_shape(x))
        legacy = self.opset < 13  # softmax of the input flattened to 2-D at `axis`
        axis = self._axis(self.attributes(node).get("axis", 1 if legacy else -1), rank)
        axes = range(axis, rank) if legacy else [axis]
        op_type = graph.LogSoftmaxOp if node.op_type == "LogSoftmax" else graph.SoftmaxOp
        self.define(node.output[0], op_type(x, axes))

    def reduce(self, node: NodeProto) -> None:
        attrs = self.attributes(node)
        since = _AXES_INPUT_SINCE[node.op_type]
        if self.opset >= since:
            if "axes" in attrs:
                raise FrontendError(f"{self.label}: attribute 'axes' is not allowed since opset "
                                    f"{since}, where the axes are an input")
            name, axes_name = self.input_names(node, 1, optional=1)
            axes = self._constant_ints(axes_name, "axes") if axes_name else []
        else:
            (name,) = self.input_names(node, 1)
            axes = list(attrs.get("axes", []))
        x = self.value(name)
        rank = len(_shape(x))
        if not axes and (attrs.get("noop_with_empty_axes", 0) == 1 or rank == 0):
            self.values[node.output[0]] = x  # nothing to reduce
            return
        reduced = sorted({self._axis(a, rank) for a in axes}) if axes else range(rank)
        keepdims = attrs.get("keepdims", 1) == 1
        if 0 in _shape(x):  # reducing empty sets: the identity (mean: NaN), a constant
            out_shape = graph.reduced_shape(_shape(x), reduced, keepdims)
            if 0 in out_shape:
                raise FrontendError(f"{self.label}: zero-size tensors are not supported "
                                    f"(input {list(_shape(x))}, output {list(out_shape)})")
            self.add_weight(node.output[0], np.full(out_shape, _EMPTY_REDUCTION[node.op_type],
                                                    np.float32))
            return
        self.define(node.output[0], _REDUCE[node.op_type](x, reduced, keepdims))

    def global_pool(self, node: NodeProto) -> None:
        (x,) = self.inputs(node, 1)
        rank = len(_shape(x))
        if rank < 3:
            raise FrontendError(f"{self.label}: input must be (N, C, D1, ...), got shape "
                                f"{list(_shape(x))}")
        op_type = graph.ReduceMeanOp if node.op_type == "GlobalAveragePool" else graph.ReduceMaxOp
        self.define(node.output[0], op_type(x, range(2, rank), keepdims=True))

    def layer_norm(self, node: NodeProto) -> None:
        attrs = self.attributes(node)
        x, scale, bias = self.inputs(node, 2, optional=1)
        axis = self._axis(attrs.get("axis", -1), len(_shape(x)))
        stats = list(node.output[1:3])
        op = graph.LayerNormOp(x, scale, bias, axis, float(attrs.get("epsilon", 1e-5)),
                               statistics=any(self._used(name) for name in stats))
        self.define(node.output[0], op)
        for name, result in zip(stats, op.statistics):
            if name:
                result.name_hint = sanitize_name(name)
                self.values[name] = result

    def pool(self, node: NodeProto) -> None:
        attrs = self.attributes(node)
        (x,) = self.inputs(node, 1)  # MaxPool's Indices: accepted by _check_graph if unused
        shape = _shape(x)
        k = len(shape) - 2
        if k < 1:
            raise FrontendError(f"{self.label}: input must be (N, C, D1, ...), got shape "
                                f"{list(shape)}")
        if "kernel_shape" not in attrs:
            raise FrontendError(f"{self.label}: attribute 'kernel_shape' is required")
        kernel = self._per_dim(attrs, "kernel_shape", k, 1)
        strides = self._per_dim(attrs, "strides", k, 1)
        dilations = self._per_dim(attrs, "dilations", k, 1)
        pads = self._per_dim(attrs, "pads", 2 * k, 0)
        auto_pad = attrs.get("auto_pad", "NOTSET")
        pads = pool_pads(auto_pad, shape[2:], kernel, strides, dilations, pads)
        ceil_mode = attrs.get("ceil_mode", 0) == 1 and auto_pad == "NOTSET"
        if node.op_type == "MaxPool":
            op = graph.MaxPoolOp(x, self.result_type(node), kernel, strides, pads, dilations,
                                 ceil_mode)
        else:
            op = graph.AveragePoolOp(x, self.result_type(node), kernel, strides, pads, dilations,
                                     ceil_mode,
                                     count_include_pad=attrs.get("count_include_pad", 0) == 1)
        self.define(node.output[0], op)

    def _per_dim(self, attrs: dict[str, object], name: str, size: int,
                 default: int) -> Sequence[int]:
        values = list(attrs.get(name) or [default] * size)  # type: ignore[call-overload]
        if len(values) != size:
            spatial = size // 2 if name == "pads" else size
            raise FrontendError(f"{self.label}: attribute '{name}' has {len(values)} values, "
                                f"expected {size} (the input has {spatial} spatial dims)")
        return values


CONVERTERS: dict[str, str] = {  # op type -> ReductionConverters method
    "Softmax": "softmax", "LogSoftmax": "softmax",
    **{op: "reduce" for op in _REDUCE},
    "GlobalAveragePool": "global_pool", "GlobalMaxPool": "global_pool",
    "LayerNormalization": "layer_norm",
    "MaxPool": "pool", "AveragePool": "pool",
}
assert set(CONVERTERS) == set(ATTRIBUTES)
