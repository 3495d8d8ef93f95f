"""The ONNX frontend's normalizations, Lp pools and LRN.

What each op imports to (``S`` is the product of the spatial dims of ``(N, C, D1, ...)``):

- ``GroupNormalization`` (``num_groups`` G, ``epsilon`` 1e-5, ``stash_type`` 1 only):
  ``graph.layer_norm`` of the input viewed as ``(N, G, C / G * S)`` over its last dim
  (scale 1, no bias), then the affine: since opset 21 per channel, on the ``(N, C, S)``
  view with ``scale`` and ``bias`` as ``(C, 1)``; in opset 18 per group, on the
  ``(N, G, C / G * S)`` view with them as ``(G, 1)``. The views are ``graph.reshape``s and
  the affine is a ``graph.mul`` and a ``graph.add``, which fuse into the layer norm's
  kernel as its epilogue.
- ``InstanceNormalization``: the same with one group per channel (G = C, per channel).
- ``MeanVarianceNormalization`` (``axes`` default ``[0, 2, 3]``): ``graph.layer_norm`` over
  the axes moved last by a ``graph.transpose`` (none when they already are), and moved
  back. ONNX divides by ``sqrt(var) + 1e-9``; the layer norm's epsilon 1e-18 under the
  root gives the same 0 for a constant input and the same float32 result wherever the
  variance is not below about 1e-16.
- ``LpNormalization`` (``axis`` default -1, ``p`` 1 or 2): ``x / norm`` with the norm a
  ``graph.reduce_sum`` of ``|x|`` or ``x * x`` kept as extent 1 (then ``graph.sqrt``); 0
  where the norm is 0 (``graph.where``), as ONNX's reference does.
- ``GlobalLpPool`` (``p`` default 2, >= 1): ``(sum |x|^p)^(1/p)`` over the spatial dims
  with ``graph.reduce_sum`` (``keepdims``); p = 1 and 2 need no ``graph.pow``.
- ``LpPool`` (``p`` default 2): ``graph.lp_pool`` with explicit pads (``auto_pad``
  resolved; ``ceil_mode`` applies to explicit pads only, as for ``AveragePool``).
- ``LRN`` (``size`` required; ``alpha`` 1e-4, ``beta`` 0.75, ``bias`` 1): ``graph.lrn``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from onnx import NodeProto
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError, pool_window
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import FLOAT, INT, INTS, POOL_ATTRIBUTES, Attr, onnx_op

_LP_POOL_ATTRIBUTES = {**POOL_ATTRIBUTES, "p": INT}


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _like(value: SSAValue, shape: Sequence[int]) -> TensorType:
    """A tensor type of `shape` with the element type of `value`."""
    return TensorType(value.type.get_element_type(), list(shape))  # type: ignore[attr-defined]


def _constant(ctx: ImportContext, node: NodeProto, what: str, array: np.ndarray,
              like: SSAValue) -> SSAValue:
    """A ``graph.weight`` of `like`'s dtype named after the node's output and `what`."""
    name = f"{node.output[0]}_{what}"
    while name in ctx.values or ctx.is_constant(name):
        name += "_"
    dtype = dtypes.of_ir(like.type.get_element_type()).numpy  # type: ignore[attr-defined]
    ctx.add_weight(name, np.asarray(array, dtype))
    return ctx.values[name]


def _reshape(ctx: ImportContext, value: SSAValue, shape: Sequence[int], hint: str) -> SSAValue:
    if _shape(value) == tuple(shape):
        return value
    return ctx.append(graph.ReshapeOp(value, _like(value, shape)), hint)


def _spatial_input(ctx: ImportContext, x: SSAValue) -> tuple[int, ...]:
    shape = _shape(x)
    if len(shape) < 3:
        raise FrontendError(f"{ctx.label}: input must be (N, C, D1, ...), got shape {list(shape)}")
    return shape


def _check_vector(ctx: ImportContext, value: SSAValue, what: str, size: int, per: str) -> None:
    if _shape(value) != (size,):
        raise FrontendError(f"{ctx.label}: {what} must have shape [{size}] (one value per "
                            f"{per}), got {list(_shape(value))}")


def _group_norm(ctx: ImportContext, node: NodeProto, groups: int | None, per_channel: bool,
                epsilon: float) -> None:
    """Normalize each of `groups` channel groups (None: one per channel) of each sample,
    then scale and shift per channel or per group."""
    x, scale, bias = ctx.inputs(node, 3)
    shape = _shape(x)
    if len(shape) < 2:
        raise FrontendError(f"{ctx.label}: input must be (N, C, ...), got shape {list(shape)}")
    n, c, s = shape[0], shape[1], math.prod(shape[2:])
    groups = c if groups is None else groups
    if groups < 1 or c % groups != 0:
        raise FrontendError(f"{ctx.label}: num_groups {groups} must divide the {c} channels")
    affine = c if per_channel else groups
    for what, value in (("scale", scale), ("bias", bias)):
        _check_vector(ctx, value, what, affine, "channel" if per_channel else "group")
    out = node.output[0]
    grouped = _reshape(ctx, x, (n, groups, c // groups * s), f"{out}_groups")
    ones = _constant(ctx, node, "ones", np.ones(1), x)
    normalized = ctx.append(graph.LayerNormOp(grouped, ones, None, 2, epsilon), f"{out}_normalized")
    view = (n, c, s) if per_channel else (n, groups, c // groups * s)
    normalized = _reshape(ctx, normalized, view, f"{out}_channels")
    scale = _reshape(ctx, scale, (affine, 1), f"{out}_scale")
    bias = _reshape(ctx, bias, (affine, 1), f"{out}_bias")
    scaled = ctx.append(graph.MulOp(normalized, scale, _like(x, view)), f"{out}_scaled")
    shifted = graph.AddOp(scaled, bias, _like(x, view))
    if view == shape:
        ctx.define(out, shifted)
    else:
        ctx.define(out, graph.ReshapeOp(ctx.append(shifted, f"{out}_shifted"), _like(x, shape)))


@onnx_op("InstanceNormalization", attributes={"epsilon": FLOAT})
def instance_norm(ctx: ImportContext, node: NodeProto) -> None:
    _group_norm(ctx, node, None, True,
                float(ctx.attributes(node).get("epsilon", 1e-5)))  # type: ignore[arg-type]


@onnx_op("GroupNormalization", attributes={"epsilon": FLOAT, "num_groups": INT,
                                           "stash_type": Attr(INT, (1,))})
def group_norm(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    if "num_groups" not in attrs:
        raise FrontendError(f"{ctx.label}: attribute 'num_groups' is required")
    _group_norm(ctx, node, int(attrs["num_groups"]), ctx.opset >= 21,  # type: ignore[call-overload]
                float(attrs.get("epsilon", 1e-5)))  # type: ignore[arg-type]


@onnx_op("MeanVarianceNormalization", attributes={"axes": INTS})
def mean_variance_norm(ctx: ImportContext, node: NodeProto) -> None:
    (x,) = ctx.inputs(node, 1)
    shape = _shape(x)
    axes = sorted(ctx.normalized_axes(list(ctx.attributes(node).get("axes", [0, 2, 3])),  # type: ignore[call-overload]
                                      len(shape)))
    if not axes:
        raise FrontendError(f"{ctx.label}: axes must not be empty")
    perm = [d for d in range(len(shape)) if d not in axes] + axes
    out = node.output[0]
    moved = x
    if perm != sorted(perm):
        moved = ctx.append(graph.TransposeOp(x, _like(x, [shape[d] for d in perm]), perm),
                           f"{out}_moved")
    ones = _constant(ctx, node, "ones", np.ones(1), x)
    op: Operation = graph.LayerNormOp(moved, ones, None, len(shape) - len(axes), 1e-18)
    if perm != sorted(perm):
        inverse = [perm.index(d) for d in range(len(shape))]
        op = graph.TransposeOp(ctx.append(op, f"{out}_normalized"), _like(x, shape), inverse)
    ctx.define(out, op)


def _sum_of_powers(ctx: ImportContext, node: NodeProto, x: SSAValue, p: int,
                   axes: Sequence[int]) -> SSAValue:
    """``sum(|x|^p)`` over `axes`, kept as extent 1."""
    out = node.output[0]
    if p == 2:
        term = ctx.append(graph.MulOp(x, x, x.type), f"{out}_squares")
    else:
        term = ctx.append(graph.AbsOp(x), f"{out}_magnitudes")
        if p != 1:
            exponent = _constant(ctx, node, "p", np.array(p), x)
            term = ctx.append(graph.PowOp(term, exponent, x.type), f"{out}_powers")
    return ctx.append(graph.ReduceSumOp(term, axes, keepdims=True), f"{out}_sum")


def _root(ctx: ImportContext, node: NodeProto, total: SSAValue, p: int) -> Operation | None:
    """``total^(1/p)`` as an op not yet appended; None for p = 1 (the total itself)."""
    if p == 1:
        return None
    if p == 2:
        return graph.SqrtOp(total)
    return graph.PowOp(total, _constant(ctx, node, "inverse_p", np.array(1 / p), total), total.type)


@onnx_op("LpNormalization", attributes={"axis": INT, "p": Attr(INT, (1, 2))})
def lp_norm(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    (x,) = ctx.inputs(node, 1)
    shape, out = _shape(x), node.output[0]
    axis = ctx.axis_of(int(attrs.get("axis", -1)), len(shape))  # type: ignore[call-overload]
    p = int(attrs.get("p", 2))  # type: ignore[call-overload]
    norm = _sum_of_powers(ctx, node, x, p, [axis])
    if (root := _root(ctx, node, norm, p)) is not None:
        norm = ctx.append(root, f"{out}_norm")
    zero = _constant(ctx, node, "zero", np.array(0), x)
    is_zero = ctx.append(graph.EqualOp(norm, zero, _shape(norm)), f"{out}_zero_norm")
    quotient = ctx.append(graph.DivOp(x, norm, x.type), f"{out}_quotient")
    ctx.define(out, graph.WhereOp(is_zero, zero, quotient, x.type))


@onnx_op("GlobalLpPool", attributes={"p": INT})
def global_lp_pool(ctx: ImportContext, node: NodeProto) -> None:
    (x,) = ctx.inputs(node, 1)
    shape = _spatial_input(ctx, x)
    p = _exponent(ctx, node)
    total = _sum_of_powers(ctx, node, x, p, range(2, len(shape)))
    root = _root(ctx, node, total, p)
    if root is None:
        ctx.alias(node.output[0], total)
    else:
        ctx.define(node.output[0], root)


def _exponent(ctx: ImportContext, node: NodeProto) -> int:
    p = int(ctx.attributes(node).get("p", 2))  # type: ignore[call-overload]
    if p < 1:
        raise FrontendError(f"{ctx.label}: p must be >= 1, got {p}")
    return p


@onnx_op("LpPool", attributes=_LP_POOL_ATTRIBUTES)
def lp_pool(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    (x,) = ctx.inputs(node, 1)
    kernel, strides, pads, dilations, ceil_mode = pool_window(ctx.label, attrs, _spatial_input(ctx, x))
    ctx.define(node.output[0], graph.LpPoolOp(x, ctx.result_type(node), kernel, strides, pads,
                                              dilations, _exponent(ctx, node), ceil_mode))


@onnx_op("LRN", attributes={"size": INT, "alpha": FLOAT, "beta": FLOAT, "bias": FLOAT})
def lrn(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    (x,) = ctx.inputs(node, 1)
    if "size" not in attrs:
        raise FrontendError(f"{ctx.label}: attribute 'size' is required")
    size = int(attrs["size"])  # type: ignore[call-overload]
    if size < 1:
        raise FrontendError(f"{ctx.label}: size must be >= 1, got {size}")
    _spatial_input(ctx, x)
    ctx.define(node.output[0], graph.LRNOp(x, size, float(attrs.get("alpha", 1e-4)),  # type: ignore[arg-type]
                                           float(attrs.get("beta", 0.75)),  # type: ignore[arg-type]
                                           float(attrs.get("bias", 1.0))))  # type: ignore[arg-type]
