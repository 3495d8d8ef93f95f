"""The ONNX frontend's constants, and the shape ops that only constant folding computes.

- ``Constant``: a ``graph.weight`` holding its value (exactly one of ``value``,
  ``value_float(s)`` (float32), ``value_int(s)`` (int64)).
- ``Shape``, ``Size``, ``ConstantOfShape``, ``Range``: their results are known when the
  model is compiled (static shapes, constant inputs), so ``onnx_fold`` or the importer
  (``ImportContext.fold``) has computed them; one that is left depends on a run-time
  value: a `RunTimeValueError` when that is a model input (compiled per value by the
  session), else a one-line error.
- A ``ConstantOfShape`` of a known shape too large to fold (over
  ``onnx_fold.MAX_FOLDED_ELEMENTS``) is a ``graph.expand`` of its scalar: computed by the
  kernel that reads it, never stored.
"""

from __future__ import annotations

import numpy as np
from onnx import NodeProto, TensorProto

from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError, tensor_array
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import ANY, FLOAT, FLOATS, INT, INT64, INTS, NUMERIC, TENSOR, onnx_op


@onnx_op("Constant", attributes={"value": TENSOR, "value_float": FLOAT, "value_floats": FLOATS,
                                 "value_int": INT, "value_ints": INTS}, one_attribute=True)
def constant(ctx: ImportContext, node: NodeProto) -> None:
    ctx.inputs(node, 0)
    ((attribute, value),) = ctx.attributes(node).items()
    if isinstance(value, TensorProto):
        array = tensor_array(value, f"{ctx.label}: attribute 'value'")
    else:  # value_float(s) are float32, value_int(s) int64
        array = np.array(value, np.float32 if attribute.startswith("value_float") else np.int64)
    ctx.add_weight(node.output[0], array)


@onnx_op("Shape", attributes={"start": INT, "end": INT}, inputs=(ANY,))
@onnx_op("Size", inputs=(ANY,))
@onnx_op("ConstantOfShape", attributes={"value": TENSOR}, inputs=((INT64,),))
@onnx_op("Range", inputs=(NUMERIC,))
def compile_time_only(ctx: ImportContext, node: NodeProto) -> None:
    names = [n for n in node.input if n and ctx.constant_value(n) is None]
    if not names and node.op_type == "ConstantOfShape":
        return _expanded_constant(ctx, node)
    if not names:
        raise FrontendError(f"{ctx.label}: {node.op_type} could not be evaluated when the model "
                            "was compiled")
    raise ctx.run_time_error(names[0], f"input '{names[0]}' of {node.op_type}")


def _expanded_constant(ctx: ImportContext, node: NodeProto) -> None:
    """``ConstantOfShape`` of a known shape, not folded (too large): the scalar, expanded."""
    ctx.attributes(node)
    shape = [int(d) for d in np.asarray(ctx.constant_value(node.input[0])).reshape(-1)]
    if any(d < 0 for d in shape):
        raise FrontendError(f"{ctx.label}: ConstantOfShape shape {shape} has a negative dimension")
    attribute = next((a for a in node.attribute if a.name == "value"), None)
    scalar = (tensor_array(attribute.t, f"{ctx.label}: attribute 'value'") if attribute is not None
              else np.zeros(1, np.float32))
    if scalar.size != 1:
        raise FrontendError(f"{ctx.label}: ConstantOfShape 'value' must have one element, "
                            f"it has {scalar.size}")
    name = f"{node.output[0]}__value"
    ctx.add_weight(name, scalar.reshape(()))
    ctx.define(node.output[0], graph.ExpandOp(ctx.value(name), ctx.result_type(node)))
