"""The ONNX frontend's scatters and generated tensors.

- ``ScatterElements`` (and its deprecated opset 9-10 form ``Scatter``; ``axis``,
  ``reduction`` none/add/mul/max/min): ``graph.scatter_elements``; ``ScatterND``
  (``reduction``): ``graph.scatter_nd``. The indices are computed at run time.
- ``Trilu`` (``upper``, ``k`` an optional constant input): ``graph.trilu``.
- ``EyeLike`` (``k``, ``dtype``; a 2-D input, of which only the shape matters):
  ``graph.eye`` of the result's dtype.
- ``OneHot`` (``axis``; ``depth`` a constant, of any numeric type; ``values`` = [off, on]
  computed at run time; float indices are truncated to integers, as onnxruntime does):
  ``graph.one_hot``.
"""

from __future__ import annotations

import math

from onnx import NodeProto
from xdsl.dialects.builtin import TensorType, i64

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import (
    ANY,
    INT,
    INT64,
    INTEGERS,
    NUMERIC,
    STRING,
    Attr,
    onnx_op,
)


def _shape(value) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


_SCATTER_INPUTS = {"inputs": (ANY, INTEGERS, ANY)}


@onnx_op("ScatterElements", attributes={
    "axis": INT, "reduction": Attr(STRING, graph.SCATTER_REDUCTIONS, "none")}, **_SCATTER_INPUTS)
@onnx_op("Scatter", attributes={"axis": INT}, **_SCATTER_INPUTS)
def scatter_elements(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    data, indices, updates = ctx.inputs(node, 3)
    ctx.same_dtype(data, updates, "data and updates")
    axis = ctx.axis_of(int(attrs.get("axis", 0)), len(_shape(data)))  # type: ignore[call-overload]
    ctx.define(node.output[0], graph.ScatterElementsOp(
        data, indices, updates, axis, str(attrs.get("reduction", "none"))))


@onnx_op("ScatterND", attributes={"reduction": Attr(STRING, graph.SCATTER_REDUCTIONS, "none")},
         inputs=(ANY, (INT64,), ANY))
def scatter_nd(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    data, indices, updates = ctx.inputs(node, 3)
    ctx.same_dtype(data, updates, "data and updates")
    ctx.define(node.output[0], graph.ScatterNdOp(data, indices, updates,
                                                 str(attrs.get("reduction", "none"))))


@onnx_op("Trilu", attributes={"upper": Attr(INT, (0, 1), 1)}, inputs=(ANY, (INT64,)),
         constant_inputs=(1,), input_names=("input", "k"))
def trilu(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    names = ctx.input_names(node, 1, 1)
    x = ctx.value(names[0])
    if len(_shape(x)) < 2:
        raise FrontendError(f"{ctx.label}: input must have rank >= 2, got {list(_shape(x))}")
    k = ctx.constant_ints(node, 1) or [0]
    if len(k) != 1:
        raise FrontendError(f"{ctx.label}: input 'k' must have one element, got {len(k)}")
    ctx.define(node.output[0], graph.TriluOp(x, k[0], bool(attrs.get("upper", 1))))


@onnx_op("EyeLike", attributes={"k": INT, "dtype": INT}, inputs=(ANY,))
def eye_like(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    (x,) = ctx.inputs(node, 1)
    if len(_shape(x)) != 2:
        raise FrontendError(f"{ctx.label}: input must have rank 2, got {list(_shape(x))}")
    element = x.type.get_element_type()  # type: ignore[attr-defined]
    if "dtype" in attrs:
        code = int(attrs["dtype"])  # type: ignore[call-overload]
        dtype = dtypes.from_onnx(code)
        if dtype is None:
            raise FrontendError(f"{ctx.label}: unsupported dtype {dtypes.onnx_name(code)} "
                                f"(supported: {dtypes.SUPPORTED_NAMES})")
        element = dtype.ir
    result_type = TensorType(element, _shape(x))
    ctx.check_inferred(node, result_type)
    ctx.define(node.output[0], graph.EyeOp(result_type, int(attrs.get("k", 0))))  # type: ignore[call-overload]


@onnx_op("OneHot", attributes={"axis": INT}, inputs=(NUMERIC, NUMERIC, ANY),
         constant_inputs=(1,), input_names=("indices", "depth", "values"))
def one_hot(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    names = ctx.input_names(node, 3)
    indices, values = ctx.value(names[0]), ctx.value(names[2])
    array = ctx.constant_input(node, 1)
    assert array is not None  # a required input
    if array.size != 1 or array.ndim > 1:
        raise FrontendError(f"{ctx.label}: input 'depth' must be a scalar or have one element, "
                            f"got shape {list(array.shape)}")
    depth_value = float(array.reshape(-1)[0])
    if not math.isfinite(depth_value) or int(depth_value) < 1:
        raise FrontendError(f"{ctx.label}: depth must be at least 1, got {depth_value:g}")
    depth = int(depth_value)
    if _shape(values) != (2,):
        raise FrontendError(f"{ctx.label}: input 'values' must have shape [2], got "
                            f"{list(_shape(values))}")
    if dtypes.from_ir(indices.type.get_element_type()) not in dtypes.INTEGERS:  # type: ignore[attr-defined]
        indices = ctx.append(graph.CastOp(indices, i64), f"{names[0]}_int")
    rank = len(_shape(indices))
    axis = ctx.axis_of(int(attrs.get("axis", -1)), rank + 1)  # type: ignore[call-overload]
    shape = _shape(indices)
    result_type = TensorType(values.type.get_element_type(),  # type: ignore[attr-defined]
                             [*shape[:axis], depth, *shape[axis:]])
    ctx.check_inferred(node, result_type)
    ctx.define(node.output[0], graph.OneHotOp(indices, values, axis, result_type))
