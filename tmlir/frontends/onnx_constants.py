"""The ONNX frontend's constants, and the shape ops that only constant folding computes.

- ``Constant``: a ``graph.weight`` holding its value (exactly one of ``value``,
  ``value_float(s)`` (float32), ``value_int(s)`` (int64)).
- ``Shape``, ``Size``, ``ConstantOfShape``, ``Range``: their results are known when the
  model is compiled (static shapes, constant inputs), so ``onnx_fold`` or the importer
  (``ImportContext.fold``) has computed them; one that is left depends on a run-time
  value: a `RunTimeValueError` when that is a model input (compiled per value by the
  session), else a one-line error.
"""

from __future__ import annotations

import numpy as np
from onnx import NodeProto, TensorProto, numpy_helper

from tmlir.frontends.onnx_common import FrontendError
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import ANY, FLOAT, FLOATS, INT, INT64, INTS, NUMERIC, TENSOR, onnx_op


@onnx_op("Constant", attributes={"value": TENSOR, "value_float": FLOAT, "value_floats": FLOATS,
                                 "value_int": INT, "value_ints": INTS}, one_attribute=True)
def constant(ctx: ImportContext, node: NodeProto) -> None:
    ctx.inputs(node, 0)
    ((attribute, value),) = ctx.attributes(node).items()
    if isinstance(value, TensorProto):
        array = numpy_helper.to_array(value)
    else:  # value_float(s) are float32, value_int(s) int64
        array = np.array(value, np.float32 if attribute.startswith("value_float") else np.int64)
    ctx.add_weight(node.output[0], array)


@onnx_op("Shape", attributes={"start": INT, "end": INT}, inputs=(ANY,))
@onnx_op("Size", inputs=(ANY,))
@onnx_op("ConstantOfShape", attributes={"value": TENSOR}, inputs=((INT64,),))
@onnx_op("Range", inputs=(NUMERIC,))
def compile_time_only(ctx: ImportContext, node: NodeProto) -> None:
    names = [n for n in node.input if n and ctx.constant_value(n) is None]
    if not names:
        raise FrontendError(f"{ctx.label}: {node.op_type} could not be evaluated when the model "
                            "was compiled")
    raise ctx.run_time_error(names[0], f"input '{names[0]}' of {node.op_type}")
