"""The ONNX frontend's convolutions and batch normalization.

What each op imports to:

- ``Conv``: ``graph.conv``, 1-D and 2-D, any pads, strides, dilations and groups, with the
  optional bias. ``auto_pad`` becomes explicit pads here (``auto_pads``; with it,
  ``pads`` must be absent), and ``kernel_shape``, when given, must be the weight's. 3-D
  convolutions are rejected.
- ``ConvTranspose``: ``graph.conv_transpose``, 1-D, 2-D and 3-D. ``output_shape`` and
  ``auto_pad`` (``SAME_UPPER`` / ``SAME_LOWER``: ``output_shape = input * strides``) set
  the pads as the ONNX specification says (``pads`` is then ignored); a negative end pad
  (an output larger than the natural one) becomes ``output_padding``, a negative begin pad
  is rejected.
- ``BatchNormalization`` (opset 7 on, per-channel ``spatial = 1``): ``graph.batch_norm``.
  In inference (``training_mode = 0``) the outputs after ``Y`` (running and saved
  statistics) must be unused; the statistics are operands, constant or not, and folding
  constant ones into a preceding convolution is the ``graph-fold-batchnorm`` pass's job.
  With ``training_mode = 1`` (opset 14 on) the batch's mean and population variance
  (``graph.reduce_mean`` over N and the spatial dims) normalize ``Y``, and the optional
  ``running_mean`` / ``running_var`` are ``input * momentum + batch * (1 - momentum)``.
"""

from __future__ import annotations

import numpy as np
from onnx import NodeProto
from xdsl.dialects.builtin import TensorType
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
    """The attributes, the number of spatial dims k (1 or 2; 3 too for ConvTranspose), and
    strides, dilations and pads with their defaults, checked."""
    label, attrs = ctx.label, ctx.attributes(node)
    shape, kernel = list(x.type.get_shape()), list(w.type.get_shape())[2:]
    k = len(shape) - 2
    transposed = node.op_type == "ConvTranspose"
    if k not in ((1, 2, 3) if transposed else (1, 2)):
        noun = "transposed convolution" if transposed else "convolution"
        what = f"{k}-D {noun}" if k > 2 else f"a {noun} without spatial dims"
        raise FrontendError(f"{label}: {what} (input shape {shape}) is not supported; "
                            f"only 1-D{', 2-D and 3-D' if transposed else ' and 2-D'}")
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
    "training_mode": Attr(INT, (0, 1)),
    "spatial": Attr(INT, (1,)),  # opsets 7 and 8: per-channel statistics
}, outputs=5)
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
    epsilon = float(attrs.get("epsilon", 1e-5))
    if attrs.get("training_mode", 0) == 1:
        if len(node.output) > 3:
            raise FrontendError(f"{ctx.label}: training mode has at most 3 outputs (Y, "
                                f"running_mean, running_var), got {len(node.output)}")
        _batch_norm_training(ctx, node, x, scale, bias, mean, var, epsilon,
                             float(attrs.get("momentum", 0.9)))
        return
    if used := [n for n in node.output[1:] if ctx.is_used(n)]:
        raise FrontendError(f"{ctx.label}: output '{used[0]}' is used, but the running and "
                            "saved statistics are only computed with training_mode = 1")
    ctx.define(node.output[0], graph.BatchNormOp(x, scale, bias, mean, var, epsilon))


def _batch_norm_training(ctx: ImportContext, node: NodeProto, x: SSAValue, scale: SSAValue,
                         bias: SSAValue, mean: SSAValue, var: SSAValue, epsilon: float,
                         momentum: float) -> None:
    """Training-mode batch normalization from graph ops: ``Y`` normalized with the batch's
    mean and (population) variance over N and the spatial dims; the optional outputs
    ``running_mean = mean * momentum + batch_mean * (1 - momentum)`` and likewise
    ``running_var``, as the ONNX reference and onnxruntime compute them."""
    shape = list(x.type.get_shape())
    element, name = x.type.get_element_type(), node.output[0]
    axes = [0, *range(2, len(shape))]
    per_channel = TensorType(element, [shape[1]])
    batch_mean_kept = ctx.append(graph.ReduceMeanOp(x, axes, keepdims=True), f"{name}_mean_nc")
    centered = ctx.append(graph.SubOp(x, batch_mean_kept, x.type), f"{name}_centered")
    squared = ctx.append(graph.MulOp(centered, centered, x.type), f"{name}_squared")
    batch_var = ctx.append(graph.ReduceMeanOp(squared, axes, keepdims=False), f"{name}_batch_var")
    batch_mean = ctx.append(graph.ReshapeOp(batch_mean_kept, per_channel), f"{name}_batch_mean")
    ctx.define(name, graph.BatchNormOp(x, scale, bias, batch_mean, batch_var, epsilon))
    for output, running, batch in zip(node.output[1:3], (mean, var), (batch_mean, batch_var)):
        if not output:
            continue
        ctx.add_weight(f"{output}_momentum", np.array(momentum, np.float32))
        ctx.add_weight(f"{output}_1_minus_momentum", np.array(1.0 - momentum, np.float32))
        kept_part = ctx.append(graph.MulOp(running, ctx.value(f"{output}_momentum"), per_channel),
                               f"{output}_kept")
        new_part = ctx.append(graph.MulOp(batch, ctx.value(f"{output}_1_minus_momentum"),
                                          per_channel), f"{output}_new")
        ctx.define(output, graph.AddOp(kept_part, new_part, per_channel))
