"""The converter of the ONNX op ``Swish`` of domain ``com.example`` (one float32 input,
one output of its shape): an ``example.swish``. ONNX's shape inference does not know a
custom-domain op: the output's type is the op's result type."""

from __future__ import annotations

from onnx import NodeProto

from tmlir.frontends.onnx_context import ImportContext
from tmlir_example_plugin.dialect import SwishOp


def convert_swish(ctx: ImportContext, node: NodeProto) -> None:
    (x,) = ctx.inputs(node, 1)
    assert x is not None
    ctx.define(node.output[0], SwishOp(x))
