"""The ONNX frontend's convolutions and batch normalization.

What each op imports to:

- ``Conv``: ``graph.conv``, 1-D and 2-D, any pads, strides, dilations and groups, with the
  optional bias. ``auto_pad`` becomes explicit pads here (``auto_pads``; with it,
  ``pads`` must be absent), and ``kernel_shape``, when given, must be the weight's. 3-D
  convolutions are rejected.
- ``ConvTranspose``: ``graph.conv_transpose``, 1-D and 2-D. ``output_shape`` and
  ``auto_pad`` (``SAME_UPPER`` / ``SAME_LOWER``: ``output_shape = input * strides``) set
  the pads as the ONNX specification says (``pads`` is then ignored); a negative end pad
  (an output larger than the natural one) becomes ``output_padding``, a negative begin pad
  is rejected.
- ``BatchNormalization`` (opset 7 on): ``graph.batch_norm``, inference only
  (``training_mode = 0``, per-channel ``spatial = 1``); the outputs after ``Y`` (running
  and saved statistics) must be unused. The statistics are operands, constant or not;
  folding constant ones into a preceding convolution is the ``graph-fold-batchnorm``
  pass's job.
"""

from __future__ import annotations

from onnx import NodeProto
from xdsl.ir import SSAValue

from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError, auto_pads
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import FLOAT, INT, INTS, STRING, Attr, onnx_op

_AUTO_PAD = Attr(STRING, ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"))
_CONV_ATTRIBUTES = {"auto_pad": _AUTO_PAD, "dilations": INTS, "group": INT, "kernel_shape": INTS,
                    "pads": INTS, "strides": INTS}


def _conv_attributes(ctx: ImportContext, node: NodeProto, x: SSAValue, w: SSAValue,
                     ) -> tuple[dict[str, object], int, list[int], list[int], list[int]]:
    """The attributes, the number of spatial dims k (1 or 2), and strides, dilations
    and pads with their defaults, checked."""
    label, attrs = ctx.label, ctx.attributes(node)
    shape, kernel = list(x.type.get_shape()), list(w.type.get_shape())[2:]
    k = len(shape) - 2
    if k not in (1, 2):
        noun = "transposed convolution" if node.op_type == "ConvTranspose" else "convolution"
        what = f"{k}-D {noun}" if k > 2 else f"a {noun} without spatial dims"
        raise FrontendError(f"{label}: {what} (input shape {shape}) is not supported; "
                            "only 1-D and 2-D")
    if "kernel_shape" in attrs and list(attrs["kernel_shape"]) != kernel:
        raise FrontendError(f"{label}: kernel_shape {list(attrs['kernel_shape'])} does not "
                            f"match the weight's spatial shape {kernel}")
    strides = list(attrs.get("strides", [1] * k))
    dilations = list(attrs.get("dilations", [1] * k))
    pads = list(attrs.get("pads", [0] * 2 * k))
    for what, values, size in (("strides", strides, k), ("dilations", dilations, k),
                               ("pads", pads, 2 * k),
                               ("output_padding", attrs.get("output_padding", [0] * k), k)):
        if len(values) != size:
            raise FrontendError(f"{label}: {what} {list(values)} must have {size} values "
                                f"for a {k}-D convolution")
    return attrs, k, strides, dilations, pads


@onnx_op("Conv", attributes=_CONV_ATTRIBUTES)
def conv(ctx: ImportContext, node: NodeProto) -> None:
    x, w, b = ctx.inputs(node, 2, optional=1)
    attrs, k, strides, dilations, pads = _conv_attributes(ctx, node, x, w)
    shape, kernel = list(x.type.get_shape()), list(w.type.get_shape())[2:]
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad != "NOTSET":
        if "pads" in attrs:
            raise FrontendError(f"{ctx.label}: attributes 'pads' and 'auto_pad' ({auto_pad}) "
                                "cannot both be given")
        pads = list(auto_pads(auto_pad, shape[2:], kernel, strides, dilations))
    op = graph.ConvOp(x, w, b, strides, pads, dilations, int(attrs.get("group", 1)),
                      ctx.result_type(node))
    ctx.define(node.output[0], op)


@onnx_op("ConvTranspose", attributes={**_CONV_ATTRIBUTES, "output_padding": INTS,
                                      "output_shape": INTS})
def conv_transpose(ctx: ImportContext, node: NodeProto) -> None:
    x, w, b = ctx.inputs(node, 2, optional=1)
    attrs, k, strides, dilations, pads = _conv_attributes(ctx, node, x, w)
    shape, kernel = list(x.type.get_shape()), list(w.type.get_shape())[2:]
    output_padding = list(attrs.get("output_padding", [0] * k))
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if "output_shape" in attrs or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = list(attrs.get("output_shape", [n * s for n, s in zip(shape[2:], strides)]))
        out = out[-k:]  # the spatial dims, also of a full (N, C, ...) output_shape
        total = [s * (n - 1) + p + (kk - 1) * d + 1 - o for n, s, p, kk, d, o in
                 zip(shape[2:], strides, output_padding, kernel, dilations, out)]
        if auto_pad == "SAME_UPPER":
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
        else:
            pads = [t - t // 2 for t in total] + [t // 2 for t in total]
    elif auto_pad == "VALID":
        pads = [0] * 2 * k
    for d in range(k):  # an output past the natural end is output padding
        if pads[k + d] < 0:
            output_padding[d] -= pads[k + d]
            pads[k + d] = 0
    if min(pads) < 0:
        raise FrontendError(f"{ctx.label}: the output shape needs negative begin pads {pads}, "
                            "which are not supported")
    op = graph.ConvTransposeOp(x, w, b, strides, pads, dilations, output_padding,
                               int(attrs.get("group", 1)), ctx.result_type(node))
    ctx.define(node.output[0], op)


@onnx_op("BatchNormalization", attributes={
    "epsilon": FLOAT, "momentum": FLOAT,
    "training_mode": Attr(INT, (0,)),  # inference only
    "spatial": Attr(INT, (1,)),  # opsets 7 and 8: per-channel statistics
}, unused_outputs=True)
def batch_norm(ctx: ImportContext, node: NodeProto) -> None:
    if ctx.opset < 7:
        raise FrontendError(f"{ctx.label}: BatchNormalization before opset 7 (is_test, "
                            "consumed_inputs) is not supported; this model has opset "
                            f"{ctx.opset}")
    attrs = ctx.attributes(node)  # training_mode and spatial are checked there
    x, scale, bias, mean, var = ctx.inputs(node, 5)
    if len(x.type.get_shape()) < 2:
        raise FrontendError(f"{ctx.label}: input must be (N, C, ...), got shape "
                            f"{list(x.type.get_shape())}")
    op = graph.BatchNormOp(x, scale, bias, mean, var, float(attrs.get("epsilon", 1e-5)))
    ctx.define(node.output[0], op)
