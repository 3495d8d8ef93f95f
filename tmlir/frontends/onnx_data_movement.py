"""The ONNX frontend's data-movement ops.

Shapes, axes, starts, pads and indices that ONNX passes as
int64 inputs must be constants (initializers, or ``Constant`` nodes and shape
computations that constant folding made initializers); they become properties or are
implied by the result type. What each op imports to:

- ``Reshape`` (``allowzero``), ``Flatten``, ``Squeeze``, ``Unsqueeze`` (axes an attribute
  before opset 13, an input since): ``graph.reshape`` to the inferred shape.
- ``Identity`` and ``Dropout`` (inference: ``training_mode`` absent or a constant false;
  or training with a constant ``ratio`` of exactly 0): the input itself, no op; Dropout's
  ``mask`` is a constant all-true. Training with another ratio (a random mask) is rejected.
- ``Transpose`` (``perm``, default reversed), ``Concat``, ``Expand``, ``Tile``:
  ``graph.transpose`` / ``graph.concat`` / ``graph.expand`` / ``graph.tile``.
- ``Split`` (sizes from the ``split`` attribute before opset 13, the input since, or equal
  parts, ``num_outputs`` since 18): ``graph.split`` with one result per output.
- ``Slice`` (attributes before opset 10, inputs since; negative steps, ONNX's clamping):
  ``graph.slice`` with one start and step per dim.
- ``Gather`` with constant indices: ``graph.gather``; with indices computed at run time
  (an embedding's token ids): ``graph.take``.
- ``Pad`` (``pads`` and ``value`` attributes before opset 11, then inputs; ``axes``
  since 18; modes constant, reflect, edge, wrap): ``graph.pad``.
- ``DepthToSpace`` and ``SpaceToDepth`` (``blocksize``, ``mode`` DCR or CRD) of 4-D
  tensors: ``graph.depth_to_space`` / ``graph.space_to_depth``.
- ``Resize`` (opset 11 on; ``nearest``, ``linear`` and ``cubic`` modes with
  ``cubic_coeff_a``, ``exclude_outside`` and ``antialias``, every coordinate
  transformation, ``tf_crop_and_resize`` with a constant ``roi`` and
  ``extrapolation_value``, constant ``scales`` or ``sizes``, ``axes`` and
  ``keep_aspect_ratio_policy``): ``graph.resize`` with one f32 scale per dim, computed as
  onnxruntime does (``sizes / input sizes`` when sizes are given), and a roi per dim.
"""

from __future__ import annotations

import numpy as np
from onnx import NodeProto
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import (
    ANY,
    BOOL,
    F32,
    FLOAT,
    INT,
    INTEGERS,
    INTS,
    STRING,
    Attr,
    onnx_op,
)


def _data_then_constant(names: tuple[str, str]) -> dict[str, object]:
    """The record of an op whose data moves as it is and whose second input, integers,
    is read as a constant."""
    return {"inputs": (ANY, INTEGERS), "constant_inputs": (1,), "input_names": names}


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _element(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.get_element_type()


@onnx_op("Identity", inputs=(ANY,))
def identity(ctx: ImportContext, node: NodeProto) -> None:
    (x,) = ctx.inputs(node, 1)
    ctx.alias(node.output[0], x)


# -- reshapes -------------------------------------------------------------------------

@onnx_op("Reshape", attributes={"allowzero": Attr(INT, (0, 1))},
         **_data_then_constant(("data", "shape")))
@onnx_op("Flatten", attributes={"axis": INT}, inputs=(ANY,))
@onnx_op("Squeeze", attributes={"axes": INTS}, **_data_then_constant(("data", "axes")))
@onnx_op("Unsqueeze", attributes={"axes": INTS}, **_data_then_constant(("data", "axes")))
def reshape(ctx: ImportContext, node: NodeProto) -> None:
    """Reshape, Flatten, Squeeze, Unsqueeze: one ``graph.reshape`` to the inferred
    shape, once the inputs that give the shape are known to be constants."""
    attrs = ctx.attributes(node)
    names = ctx.input_names(node, 1, optional=1)
    x = ctx.value(names[0])
    shape = _shape(x)
    if node.op_type == "Reshape":
        if not names[1]:
            raise FrontendError(f"{ctx.label}: expected 2 inputs, got 1")
        ctx.constant_ints(node, 1)
    elif node.op_type == "Squeeze":
        axes = ctx.axes_of(node, attrs, 13, len(shape))
        if axes is not None and any(shape[a] != 1 for a in axes):
            raise FrontendError(f"{ctx.label}: cannot squeeze axes {axes} of shape "
                                f"{list(shape)}: not all of extent 1")
    elif node.op_type == "Unsqueeze":
        given = ctx.constant_ints(node, 1) if ctx.opset >= 13 else attrs.get("axes")
        if given is None:
            raise FrontendError(f"{ctx.label}: the axes are required")
        ctx.axes_of(node, attrs, 13, len(shape) + len(given))  # type: ignore[arg-type]
    result_type = ctx.result_type(node)
    if result_type == x.type:
        ctx.alias(node.output[0], x)  # nothing to reshape
    else:
        ctx.define(node.output[0], graph.ReshapeOp(x, result_type))


@onnx_op("Expand", **_data_then_constant(("input", "shape")))
@onnx_op("Tile", **_data_then_constant(("input", "repeats")))
def broadcast(ctx: ImportContext, node: NodeProto) -> None:
    """Expand and Tile: the result shape (inferred from the constant shape or repeats)
    says everything."""
    ctx.attributes(node)
    x = ctx.value(ctx.input_names(node, 2)[0])
    ctx.constant_ints(node, 1)
    result_type = ctx.result_type(node)
    if result_type == x.type:
        ctx.alias(node.output[0], x)
        return
    op_type = graph.ExpandOp if node.op_type == "Expand" else graph.TileOp
    ctx.define(node.output[0], op_type(x, result_type))


@onnx_op("Dropout", attributes={"seed": INT, "ratio": FLOAT, "is_test": INT},
         inputs=(F32, F32, (BOOL,)), constant_inputs=(1, 2),
         input_names=("data", "ratio", "training_mode"), outputs=2)
def dropout(ctx: ImportContext, node: NodeProto) -> None:
    """Inference: the input itself, whatever the ratio (``is_test`` before opset 7 is
    ignored, as inference runtimes do). Training mode (``training_mode`` a constant true)
    with a ratio of exactly 0 keeps every element, so it is the same; with any other ratio
    the mask is random and is rejected."""
    ctx.attributes(node)
    names = ctx.input_names(node, 1, optional=2)
    training = ctx.constant_input(node, 2) if names[2] else None
    if training is not None and bool(np.asarray(training).reshape(-1)[0]):
        given = ctx.constant_input(node, 1) if names[1] else None
        ratio = float(np.asarray(given).reshape(-1)[0]) if given is not None else 0.5
        if ratio != 0.0:
            raise FrontendError(f"{ctx.label}: training mode with ratio {ratio:g} is not supported: "
                                "its mask is random, so no reference can match it (only ratio 0)")
    x = ctx.value(names[0])
    ctx.alias(node.output[0], x)
    if len(node.output) > 1 and node.output[1]:  # the mask: every element kept
        ctx.add_weight(node.output[1], np.ones(_shape(x), np.bool_))


# -- index maps -----------------------------------------------------------------------

@onnx_op("Transpose", attributes={"perm": INTS}, inputs=(ANY,))
def transpose(ctx: ImportContext, node: NodeProto) -> None:
    (x,) = ctx.inputs(node, 1)
    rank = len(_shape(x))
    perm = list(ctx.attributes(node).get("perm", range(rank - 1, -1, -1)))  # type: ignore[call-overload]
    if sorted(perm) != list(range(rank)):
        raise FrontendError(f"{ctx.label}: perm {perm} is not a permutation of "
                            f"{list(range(rank))}")
    if perm == list(range(rank)):
        ctx.alias(node.output[0], x)
        return
    ctx.define(node.output[0], graph.TransposeOp(x, ctx.result_type(node), perm))


@onnx_op("Concat", attributes={"axis": INT}, inputs=(ANY,))
def concat(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    inputs = ctx.inputs(node, max(len(node.input), 1))
    if "axis" not in attrs:
        raise FrontendError(f"{ctx.label}: attribute 'axis' is required")
    axis = ctx.axis_of(int(attrs["axis"]), len(_shape(inputs[0])))  # type: ignore[call-overload]
    if len(inputs) == 1:
        ctx.alias(node.output[0], inputs[0])
        return
    ctx.define(node.output[0], graph.ConcatOp(inputs, ctx.result_type(node), axis))


@onnx_op("Split", attributes={"axis": INT, "split": INTS, "num_outputs": INT},
         **_data_then_constant(("input", "split")), outputs=None)
def split(ctx: ImportContext, node: NodeProto) -> None:
    """The outputs' shapes come from shape inference; sizes given as an input must be
    constants (they determined those shapes)."""
    attrs = ctx.attributes(node)
    names = ctx.input_names(node, 1, optional=1)
    x = ctx.value(names[0])
    axis = ctx.axis_of(int(attrs.get("axis", 0)), len(_shape(x)))  # type: ignore[call-overload]
    if ctx.opset >= 13 and "split" in attrs:
        raise FrontendError(f"{ctx.label}: attribute 'split' is not allowed since opset "
                            "13, where the sizes are an input")
    sizes = ctx.constant_ints(node, 1) if ctx.opset >= 13 else attrs.get("split")
    outputs = list(node.output)
    types = [ctx.result_type_of(name) for name in outputs]
    if sizes is not None and list(sizes) != [t.get_shape()[axis] for t in types]:  # type: ignore[call-overload]
        raise FrontendError(f"{ctx.label}: split sizes {list(sizes)} do not match the "  # type: ignore[call-overload]
                            f"{len(outputs)} outputs")
    op = graph.SplitOp(x, types, axis)
    ctx.define(outputs[0], op)
    for name, result in zip(outputs[1:], op.outputs[1:]):
        ctx.name_result(name, result)


@onnx_op("Slice", attributes={"starts": INTS, "ends": INTS, "axes": INTS},
         inputs=(ANY, INTEGERS), constant_inputs=(1, 2, 3, 4), input_names=("data", "starts", "ends", "axes", "steps"))
def strided_slice(ctx: ImportContext, node: NodeProto) -> None:
    """``graph.slice`` with ONNX's clamping: negative starts and ends count from the end;
    then with a positive step start and end are clamped to [0, n], with a negative one
    start to [0, n - 1] and end to [-1, n - 1]."""
    if ctx.opset < 10:
        attrs = ctx.attributes(node)
        (x,) = ctx.inputs(node, 1)
        starts, ends = attrs.get("starts"), attrs.get("ends")
        if starts is None or ends is None:
            raise FrontendError(f"{ctx.label}: attributes 'starts' and 'ends' are required")
        axes, steps = attrs.get("axes"), None
    else:
        ctx.attributes(node)  # none allowed since opset 10
        if any(a.name in ("starts", "ends", "axes") for a in node.attribute):
            raise FrontendError(f"{ctx.label}: attributes 'starts', 'ends' and 'axes' are "
                                "not allowed since opset 10, where they are inputs")
        names = ctx.input_names(node, 3, optional=2)
        x = ctx.value(names[0])
        starts, ends = ctx.constant_ints(node, 1), ctx.constant_ints(node, 2)
        axes, steps = ctx.constant_ints(node, 3), ctx.constant_ints(node, 4)
    shape = _shape(x)
    rank = len(shape)
    starts, ends = list(starts), list(ends)  # type: ignore[call-overload]
    axes = list(range(len(starts))) if axes is None else list(axes)  # type: ignore[call-overload]
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise FrontendError(f"{ctx.label}: starts, ends, axes and steps differ in length "
                            f"({len(starts)}, {len(ends)}, {len(axes)}, {len(steps)})")
    first, step_of, out = [0] * rank, [1] * rank, list(shape)
    seen = set()
    for start, end, axis, step in zip(starts, ends, axes, steps):
        d = ctx.axis_of(axis, rank)
        if d in seen:
            raise FrontendError(f"{ctx.label}: axis {axis} is sliced twice")
        seen.add(d)
        if step == 0:
            raise FrontendError(f"{ctx.label}: step of axis {axis} must not be 0")
        first[d], out[d] = _slice_range(shape[d], start, end, step)
        step_of[d] = step
    result_type = TensorType(_element(x), out)
    ctx.check_inferred(node, result_type)
    if out == list(shape) and all(s == 1 for s in step_of):
        ctx.alias(node.output[0], x)
        return
    ctx.define(node.output[0], graph.SliceOp(x, result_type, first, step_of))


@onnx_op("Gather", attributes={"axis": INT}, **_data_then_constant(("data", "indices")))
def gather(ctx: ImportContext, node: NodeProto) -> None:
    names = ctx.input_names(node, 2)
    x = ctx.value(names[0])
    shape = _shape(x)
    axis = ctx.axis_of(int(ctx.attributes(node).get("axis", 0)), len(shape))  # type: ignore[call-overload]
    if not ctx.is_constant(names[1]):  # computed at run time (token ids, say)
        indices = ctx.value(names[1])
        ctx.define(node.output[0], graph.TakeOp(x, indices, axis, ctx.result_type(node)))
        return
    array = ctx.initializer_array(names[1])
    if not np.issubdtype(array.dtype, np.integer):
        raise FrontendError(f"{ctx.label}: input 'indices' must be integers, got {array.dtype}")
    n = shape[axis]
    bad = next((int(i) for i in array.reshape(-1) if not -n <= i < n), None)
    if bad is not None:
        raise FrontendError(f"{ctx.label}: index {bad} is out of range for axis {axis} of "
                            f"extent {n}")
    out = [*shape[:axis], *array.shape, *shape[axis + 1:]]
    result_type = TensorType(_element(x), out)
    ctx.check_inferred(node, result_type)
    indices = [int(i) % n for i in array.reshape(-1)] if n else []
    ctx.define(node.output[0], graph.GatherOp(x, result_type, axis, indices))


@onnx_op("Pad", attributes={"mode": Attr(STRING, graph.PAD_MODES), "pads": INTS,
                            "value": FLOAT},
         inputs=(ANY, INTEGERS, ANY, INTEGERS), constant_inputs=(1, 2, 3),
         input_names=("data", "pads", "constant_value", "axes"))
def pad(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    mode = str(attrs.get("mode", "constant"))
    if ctx.opset < 11:
        (x,) = ctx.inputs(node, 1)
        pads, value, axes = attrs.get("pads"), float(attrs.get("value", 0.0)), None  # type: ignore[arg-type]
        if pads is None:
            raise FrontendError(f"{ctx.label}: attribute 'pads' is required")
    else:
        if "pads" in attrs or "value" in attrs:
            raise FrontendError(f"{ctx.label}: attributes 'pads' and 'value' are not "
                                "allowed since opset 11, where they are inputs")
        names = ctx.input_names(node, 2, optional=2)
        x = ctx.value(names[0])
        pads = ctx.constant_ints(node, 1)
        constant = ctx.constant_input(node, 2)
        if constant is not None and constant.size != 1:
            raise FrontendError(f"{ctx.label}: input 'constant_value' must be a scalar, "
                                f"got shape {list(constant.shape)}")
        value = float(constant.reshape(-1)[0]) if constant is not None else 0.0
        axes = ctx.axes_of(node, {}, 18, len(_shape(x)), position=3)
    rank = len(_shape(x))
    axes = list(range(rank)) if axes is None else axes
    pads = list(pads)  # type: ignore[call-overload]
    if len(pads) != 2 * len(axes):
        raise FrontendError(f"{ctx.label}: expected {2 * len(axes)} pads (begins, then "
                            f"ends, for {len(axes)} axes), got {len(pads)}")
    full = [0] * (2 * rank)
    for k, d in enumerate(axes):
        full[d], full[rank + d] = pads[k], pads[len(axes) + k]
    if mode != "constant" and value != 0.0:
        value = 0.0  # the value applies to constant mode only
    shape = _shape(x)
    result_type = TensorType(_element(x), [n + full[d] + full[rank + d]
                                             for d, n in enumerate(shape)])
    ctx.check_inferred(node, result_type)
    if not any(full):
        ctx.alias(node.output[0], x)
        return
    ctx.define(node.output[0], graph.PadOp(x, result_type, full, mode, value))


@onnx_op("Resize", attributes={
    "mode": Attr(STRING, graph.RESIZE_MODES),
    "coordinate_transformation_mode": Attr(STRING, graph.COORDINATE_TRANSFORMATION_MODES),
    "nearest_mode": Attr(STRING, graph.NEAREST_MODES), "cubic_coeff_a": FLOAT,
    "exclude_outside": Attr(INT, (0, 1)), "extrapolation_value": FLOAT, "antialias": Attr(INT, (0, 1)),
    "axes": INTS,
    "keep_aspect_ratio_policy": Attr(STRING, ("stretch", "not_larger", "not_smaller")),
}, inputs=(F32, F32, F32, INTEGERS), constant_inputs=(1, 2, 3),
   input_names=("X", "roi", "scales", "sizes"))
def resize(ctx: ImportContext, node: NodeProto) -> None:
    """``roi`` is read (a constant) with ``tf_crop_and_resize`` only: a start per resized
    axis, then an end per resized axis; the other dims keep ``[0, 1]``. ``antialias`` and
    ``exclude_outside`` apply to the linear and cubic modes and are ignored in nearest mode,
    as ONNX's reference does (onnxruntime rejects antialias there)."""
    attrs = ctx.attributes(node)
    if ctx.opset < 11:
        raise FrontendError(f"{ctx.label}: Resize before opset 11 (here {ctx.opset}) is "
                            "not supported")
    names = ctx.input_names(node, 1, optional=3)
    x = ctx.value(names[0])
    shape = _shape(x)
    axes = ctx.normalized_axes(list(attrs.get("axes", range(len(shape)))), len(shape))  # type: ignore[call-overload]
    scales = ctx.constant_input(node, 2)
    sizes = ctx.constant_ints(node, 3)
    if scales is not None and scales.size == 0:
        scales = None  # opset 11 passes an empty scales tensor along with sizes
    if (scales is None) == (sizes is None):
        raise FrontendError(f"{ctx.label}: expected either 'scales' or 'sizes'")
    given = [float(v) for v in scales.reshape(-1)] if scales is not None else sizes
    if len(given) != len(axes):  # type: ignore[arg-type]
        raise FrontendError(f"{ctx.label}: expected {len(axes)} "
                            f"{'scales' if scales is not None else 'sizes'} (one per "
                            f"resized axis), got {len(given)}")  # type: ignore[arg-type]
    per_axis = [float(np.float32(v)) for v in given] if scales is not None else [
        float(np.float32(m) / np.float32(shape[d])) if shape[d] else 1.0
        for d, m in zip(axes, given)]  # type: ignore[arg-type]
    policy = attrs.get("keep_aspect_ratio_policy", "stretch")
    if sizes is not None and policy != "stretch":
        pick = min if policy == "not_larger" else max
        per_axis = [pick(per_axis)] * len(axes)
    full = [1.0] * len(shape)
    for d, scale in zip(axes, per_axis):
        if not scale > 0:
            raise FrontendError(f"{ctx.label}: scale {scale} of axis {d} must be positive")
        full[d] = scale
    mode = str(attrs.get("mode", "nearest"))
    ctm = str(attrs.get("coordinate_transformation_mode", "half_pixel"))
    roi: list[float] | None = None
    if ctm == "tf_crop_and_resize":
        given_roi = ctx.constant_input(node, 1)
        if given_roi is None or given_roi.size != 2 * len(axes):
            raise FrontendError(f"{ctx.label}: tf_crop_and_resize expects a constant 'roi' of "
                                f"{2 * len(axes)} values (starts, then ends, of the resized axes), got "
                                f"{'none' if given_roi is None else given_roi.size}")
        values = [float(v) for v in given_roi.reshape(-1)]
        roi = [0.0] * len(shape) + [1.0] * len(shape)
        for k, d in enumerate(axes):
            roi[d], roi[len(shape) + d] = values[k], values[len(axes) + k]
    op = graph.ResizeOp(x, ctx.result_type(node), full, mode, ctm,
                        str(attrs.get("nearest_mode", "round_prefer_floor"))
                        if mode == "nearest" else None,
                        cubic_coeff_a=float(attrs.get("cubic_coeff_a", graph.DEFAULT_CUBIC_COEFF_A)),  # type: ignore[arg-type]
                        exclude_outside=bool(attrs.get("exclude_outside", 0)),
                        antialias=bool(attrs.get("antialias", 0)), roi=roi,
                        extrapolation_value=float(attrs.get("extrapolation_value", 0.0)))  # type: ignore[arg-type]
    ctx.define(node.output[0], op)


def _slice_range(n: int, start: int, end: int, step: int) -> tuple[int, int]:
    """(first index, count) of ONNX's slice of an extent `n`."""
    start, end = (start + n if start < 0 else start), (end + n if end < 0 else end)
    if step > 0:
        start, end = min(max(start, 0), n), min(max(end, 0), n)
        count = max(0, -(-(end - start) // step))
    else:
        start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
        count = max(0, -(-(start - end) // -step))
    return (start if count else 0), count


@onnx_op("DepthToSpace", attributes={"blocksize": INT, "mode": Attr(STRING, ("DCR", "CRD"))},
         inputs=(ANY,))
@onnx_op("SpaceToDepth", attributes={"blocksize": INT, "mode": Attr(STRING, ("DCR", "CRD"))},
         inputs=(ANY,))
def block_rearrange(ctx: ImportContext, node: NodeProto) -> None:
    """DepthToSpace and SpaceToDepth of a 4-D tensor (the graph op's verifier checks the
    shapes); ``blocksize`` is required."""
    attrs = ctx.attributes(node)
    (x,) = ctx.inputs(node, 1)
    if "blocksize" not in attrs:
        raise FrontendError(f"{ctx.label}: attribute 'blocksize' is required")
    op_type = graph.DepthToSpaceOp if node.op_type == "DepthToSpace" else graph.SpaceToDepthOp
    ctx.define(node.output[0], op_type(x, ctx.result_type(node), attrs["blocksize"],
                                       attrs.get("mode", "DCR")))
