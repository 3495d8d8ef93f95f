"""The ONNX frontend's data-movement ops.

`DataMovementConverters` is a mixin of the frontend's importer (``onnx.py``), one method
per op type (`CONVERTERS`); `ATTRIBUTES`, `CHOICES`, `CONSTANT_INPUTS` and `OUTPUTS`
extend the frontend's tables. Shapes, axes, starts, pads and indices that ONNX passes as
int64 inputs must be constants (initializers, or ``Constant`` nodes and shape
computations that constant folding made initializers); they become properties or are
implied by the result type. What each op imports to:

- ``Reshape`` (``allowzero``), ``Flatten``, ``Squeeze``, ``Unsqueeze`` (axes an attribute
  before opset 13, an input since): ``graph.reshape`` to the inferred shape.
- ``Identity`` (in ``onnx.py``) and ``Dropout`` (inference: ``training_mode`` absent or a
  constant false): the input itself, no op; Dropout's ``mask`` is a constant all-true.
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
- ``Resize`` (opset 11 on; ``nearest`` and ``linear`` modes, every coordinate
  transformation but ``tf_crop_and_resize``, constant ``scales`` or ``sizes``, ``axes``
  and ``keep_aspect_ratio_policy``; no antialiasing): ``graph.resize`` with one f32 scale
  per dim, computed as onnxruntime does (``sizes / input sizes`` when sizes are given).
"""

from __future__ import annotations

import numpy as np
from onnx import AttributeProto, NodeProto
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends._onnx_common import FrontendError, sanitize_name, value_type

_INT, _INTS = AttributeProto.INT, AttributeProto.INTS
_FLOAT, _STRING = AttributeProto.FLOAT, AttributeProto.STRING

ATTRIBUTES: dict[str, dict[str, int]] = {  # op type -> supported attribute -> its type
    "Reshape": {"allowzero": _INT}, "Flatten": {"axis": _INT},
    "Squeeze": {"axes": _INTS}, "Unsqueeze": {"axes": _INTS},
    "Dropout": {"seed": _INT, "ratio": _FLOAT, "is_test": _INT},
    "Transpose": {"perm": _INTS}, "Concat": {"axis": _INT},
    "Split": {"axis": _INT, "split": _INTS, "num_outputs": _INT},
    "Slice": {"starts": _INTS, "ends": _INTS, "axes": _INTS},
    "Gather": {"axis": _INT}, "Expand": {}, "Tile": {},
    "Pad": {"mode": _STRING, "pads": _INTS, "value": _FLOAT},
    "Resize": {"mode": _STRING, "coordinate_transformation_mode": _STRING,
               "nearest_mode": _STRING, "cubic_coeff_a": _FLOAT, "exclude_outside": _INT,
               "extrapolation_value": _FLOAT, "antialias": _INT, "axes": _INTS,
               "keep_aspect_ratio_policy": _STRING},
}
CHOICES: dict[tuple[str, str], tuple[object, ...]] = {  # the values an attribute may take
    ("Reshape", "allowzero"): (0, 1),
    ("Pad", "mode"): graph.PAD_MODES,
    ("Resize", "mode"): graph.RESIZE_MODES,
    ("Resize", "coordinate_transformation_mode"): graph.COORDINATE_TRANSFORMATION_MODES,
    ("Resize", "nearest_mode"): graph.NEAREST_MODES,
    ("Resize", "antialias"): (0,),
    ("Resize", "keep_aspect_ratio_policy"): ("stretch", "not_larger", "not_smaller"),
}
#: Inputs (by position) read as constants when the model is imported.
CONSTANT_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "Split": (1,), "Slice": (1, 2, 3, 4),
    "Gather": (1,), "Expand": (1,), "Tile": (1,), "Pad": (1, 2, 3), "Dropout": (1, 2),
    "Resize": (1, 2, 3),
}
_ANY, _INTEGERS, _FLOAT32 = dtypes.DTYPES, dtypes.INTEGERS, (dtypes.FLOAT32,)
#: op type -> the dtypes each input may have (the last entry repeats). Data moves as it is.
INPUT_DTYPES: dict[str, tuple[tuple[dtypes.DType, ...], ...]] = {
    **{op: (_ANY, _INTEGERS) for op in ("Reshape", "Squeeze", "Unsqueeze", "Split", "Slice",
                                         "Gather", "Expand", "Tile")},
    "Flatten": (_ANY,), "Transpose": (_ANY,), "Concat": (_ANY,), "Identity": (_ANY,),
    "Pad": (_ANY, _INTEGERS, _ANY, _INTEGERS),
    "Dropout": (_FLOAT32, _FLOAT32, (dtypes.BOOL,)),
    "Resize": (_FLOAT32, _FLOAT32, _FLOAT32, _INTEGERS),
}
#: Op types with more than one output: how many they may have (None: any number).
OUTPUTS: dict[str, int | None] = {"Split": None, "Dropout": 2}
#: Op types whose outputs after the first are accepted when nothing uses them.
UNUSED_EXTRA_OUTPUTS: tuple[str, ...] = ()
_INPUT_NAMES = {  # for error messages
    "Reshape": ("data", "shape"), "Squeeze": ("data", "axes"), "Unsqueeze": ("data", "axes"),
    "Split": ("input", "split"), "Slice": ("data", "starts", "ends", "axes", "steps"),
    "Gather": ("data", "indices"), "Expand": ("input", "shape"), "Tile": ("input", "repeats"),
    "Pad": ("data", "pads", "constant_value", "axes"),
    "Dropout": ("data", "ratio", "training_mode"), "Resize": ("X", "roi", "scales", "sizes"),
}


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _element(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.get_element_type()


class DataMovementConverters:
    """Converters of the frontend's importer (``_GraphImporter``, whose helpers they use:
    ``inputs``, ``input_names``, ``value``, ``define``, ``attributes``, ``label``, ...)."""

    # -- constants ------------------------------------------------------------------------

    def constant_input(self, node: NodeProto, position: int) -> np.ndarray | None:
        """The value of the node's input at `position` (None when it is absent); an error
        unless it is an initializer (a constant folded before import)."""
        names = list(node.input)
        name = names[position] if position < len(names) else ""
        if not name:
            return None
        what = _INPUT_NAMES[node.op_type][position]
        if name not in self.initializers:
            raise FrontendError(f"{self.label}: input '{what}' ('{name}') must be a constant "
                                "(an initializer or a Constant node), not computed at run time")
        return self.initializer_array(name)

    def constant_ints(self, node: NodeProto, position: int) -> list[int] | None:
        """An integer constant input as a list (see `constant_input`)."""
        array = self.constant_input(node, position)
        if array is None:
            return None
        if not np.issubdtype(array.dtype, np.integer):
            what = _INPUT_NAMES[node.op_type][position]
            raise FrontendError(f"{self.label}: input '{what}' must be integers, got {array.dtype}")
        return [int(v) for v in array.reshape(-1)]

    def axis_of(self, axis: int, rank: int, what: str = "axis") -> int:
        """`axis` normalized to [0, rank)."""
        if not -rank <= axis < rank:
            raise FrontendError(f"{self.label}: {what} {axis} is out of range for rank {rank}")
        return axis % rank

    def axes_of(self, node: NodeProto, attrs: dict[str, object], since: int, rank: int,
                position: int = 1) -> list[int] | None:
        """Axes given as an attribute before opset `since`, as a constant input after;
        normalized (None: not given)."""
        if self.opset >= since and "axes" in attrs:
            raise FrontendError(f"{self.label}: attribute 'axes' is not allowed since opset "
                                f"{since}, where the axes are an input")
        axes = self.constant_ints(node, position) if self.opset >= since else attrs.get("axes")
        return None if axes is None else self.normalized_axes(axes, rank)  # type: ignore[arg-type]

    def normalized_axes(self, axes: list[int], rank: int) -> list[int]:
        """`axes` in [0, rank), without repeats."""
        normalized = [self.axis_of(a, rank) for a in axes]
        if len(set(normalized)) != len(normalized):
            raise FrontendError(f"{self.label}: axes {list(axes)} repeat an axis")
        return normalized

    # -- reshapes -------------------------------------------------------------------------

    def reshape(self, node: NodeProto) -> None:
        """Reshape, Flatten, Squeeze, Unsqueeze: one ``graph.reshape`` to the inferred
        shape, once the inputs that give the shape are known to be constants."""
        attrs = self.attributes(node)
        names = self.input_names(node, 1, optional=1)
        x = self.value(names[0])
        shape = _shape(x)
        if node.op_type == "Reshape":
            if not names[1]:
                raise FrontendError(f"{self.label}: expected 2 inputs, got 1")
            self.constant_ints(node, 1)
        elif node.op_type == "Squeeze":
            axes = self.axes_of(node, attrs, 13, len(shape))
            if axes is not None and any(shape[a] != 1 for a in axes):
                raise FrontendError(f"{self.label}: cannot squeeze axes {axes} of shape "
                                    f"{list(shape)}: not all of extent 1")
        elif node.op_type == "Unsqueeze":
            given = self.constant_ints(node, 1) if self.opset >= 13 else attrs.get("axes")
            if given is None:
                raise FrontendError(f"{self.label}: the axes are required")
            self.axes_of(node, attrs, 13, len(shape) + len(given))  # type: ignore[arg-type]
        result_type = self.result_type(node)
        if result_type == x.type:
            self.values[node.output[0]] = x  # nothing to reshape
        else:
            self.define(node.output[0], graph.ReshapeOp(x, result_type))

    def broadcast(self, node: NodeProto) -> None:
        """Expand and Tile: the result shape (inferred from the constant shape or repeats)
        says everything."""
        self.attributes(node)
        x = self.value(self.input_names(node, 2)[0])
        self.constant_ints(node, 1)
        result_type = self.result_type(node)
        if result_type == x.type:
            self.values[node.output[0]] = x
            return
        op_type = graph.ExpandOp if node.op_type == "Expand" else graph.TileOp
        self.define(node.output[0], op_type(x, result_type))

    def dropout(self, node: NodeProto) -> None:
        """Inference: the input itself, whatever the ratio (``is_test`` before opset 7 is
        ignored, as inference runtimes do). ``training_mode`` a constant true is not
        supported."""
        self.attributes(node)
        names = self.input_names(node, 1, optional=2)
        training = self.constant_input(node, 2) if len(names) > 2 else None
        if training is not None and bool(np.asarray(training).reshape(-1)[0]):
            raise FrontendError(f"{self.label}: training mode is not supported (inference only)")
        x = self.value(names[0])
        self.values[node.output[0]] = x
        if len(node.output) > 1 and node.output[1]:  # the mask: every element kept
            self.add_weight(node.output[1], np.ones(_shape(x), np.bool_))

    # -- index maps -----------------------------------------------------------------------

    def transpose(self, node: NodeProto) -> None:
        (x,) = self.inputs(node, 1)
        rank = len(_shape(x))
        perm = list(self.attributes(node).get("perm", range(rank - 1, -1, -1)))  # type: ignore[call-overload]
        if sorted(perm) != list(range(rank)):
            raise FrontendError(f"{self.label}: perm {perm} is not a permutation of "
                                f"{list(range(rank))}")
        if perm == list(range(rank)):
            self.values[node.output[0]] = x
            return
        self.define(node.output[0], graph.TransposeOp(x, self.result_type(node), perm))

    def concat(self, node: NodeProto) -> None:
        attrs = self.attributes(node)
        inputs = self.inputs(node, max(len(node.input), 1))
        if "axis" not in attrs:
            raise FrontendError(f"{self.label}: attribute 'axis' is required")
        axis = self.axis_of(int(attrs["axis"]), len(_shape(inputs[0])))  # type: ignore[call-overload]
        if len(inputs) == 1:
            self.values[node.output[0]] = inputs[0]
            return
        self.define(node.output[0], graph.ConcatOp(inputs, self.result_type(node), axis))

    def split(self, node: NodeProto) -> None:
        """The outputs' shapes come from shape inference; sizes given as an input must be
        constants (they determined those shapes)."""
        attrs = self.attributes(node)
        names = self.input_names(node, 1, optional=1)
        x = self.value(names[0])
        axis = self.axis_of(int(attrs.get("axis", 0)), len(_shape(x)))  # type: ignore[call-overload]
        if self.opset >= 13 and "split" in attrs:
            raise FrontendError(f"{self.label}: attribute 'split' is not allowed since opset "
                                "13, where the sizes are an input")
        sizes = self.constant_ints(node, 1) if self.opset >= 13 else attrs.get("split")
        outputs = list(node.output)
        types = [self.result_type_of(name) for name in outputs]
        if sizes is not None and list(sizes) != [t.get_shape()[axis] for t in types]:  # type: ignore[call-overload]
            raise FrontendError(f"{self.label}: split sizes {list(sizes)} do not match the "  # type: ignore[call-overload]
                                f"{len(outputs)} outputs")
        op = graph.SplitOp(x, types, axis)
        self.define(outputs[0], op)
        for name, result in zip(outputs[1:], op.outputs[1:]):
            result.name_hint = sanitize_name(name)
            self.values[name] = result

    def result_type_of(self, name: str) -> TensorType:
        """The inferred type of output `name` of the current node."""
        return value_type(self.infos, name, f"{self.label}: output '{name}'")

    def slice(self, node: NodeProto) -> None:
        """``graph.slice`` with ONNX's clamping: negative starts and ends count from the end;
        then with a positive step start and end are clamped to [0, n], with a negative one
        start to [0, n - 1] and end to [-1, n - 1]."""
        if self.opset < 10:
            attrs = self.attributes(node)
            (x,) = self.inputs(node, 1)
            starts, ends = attrs.get("starts"), attrs.get("ends")
            if starts is None or ends is None:
                raise FrontendError(f"{self.label}: attributes 'starts' and 'ends' are required")
            axes, steps = attrs.get("axes"), None
        else:
            self.attributes(node)  # none allowed since opset 10
            if any(a.name in ("starts", "ends", "axes") for a in node.attribute):
                raise FrontendError(f"{self.label}: attributes 'starts', 'ends' and 'axes' are "
                                    "not allowed since opset 10, where they are inputs")
            names = self.input_names(node, 3, optional=2)
            x = self.value(names[0])
            starts, ends = self.constant_ints(node, 1), self.constant_ints(node, 2)
            axes, steps = self.constant_ints(node, 3), self.constant_ints(node, 4)
        shape = _shape(x)
        rank = len(shape)
        starts, ends = list(starts), list(ends)  # type: ignore[call-overload]
        axes = list(range(len(starts))) if axes is None else list(axes)  # type: ignore[call-overload]
        steps = [1] * len(starts) if steps is None else list(steps)
        if not len(starts) == len(ends) == len(axes) == len(steps):
            raise FrontendError(f"{self.label}: starts, ends, axes and steps differ in length "
                                f"({len(starts)}, {len(ends)}, {len(axes)}, {len(steps)})")
        first, step_of, out = [0] * rank, [1] * rank, list(shape)
        seen = set()
        for start, end, axis, step in zip(starts, ends, axes, steps):
            d = self.axis_of(axis, rank)
            if d in seen:
                raise FrontendError(f"{self.label}: axis {axis} is sliced twice")
            seen.add(d)
            if step == 0:
                raise FrontendError(f"{self.label}: step of axis {axis} must not be 0")
            first[d], out[d] = _slice_range(shape[d], start, end, step)
            step_of[d] = step
        result_type = TensorType(_element(x), out)
        self.check_inferred(node, result_type)
        if out == list(shape) and all(s == 1 for s in step_of):
            self.values[node.output[0]] = x
            return
        self.define(node.output[0], graph.SliceOp(x, result_type, first, step_of))

    def check_inferred(self, node: NodeProto, result_type: TensorType) -> None:
        """`result_type` (computed here) agrees with what shape inference found, if it
        found a static shape."""
        try:
            inferred = value_type(self.infos, node.output[0], "")
        except FrontendError:
            return
        if inferred != result_type:
            raise FrontendError(f"{self.label}: result shape {list(result_type.get_shape())} "
                                f"differs from the inferred {list(inferred.get_shape())}")

    def gather(self, node: NodeProto) -> None:
        names = self.input_names(node, 2)
        x = self.value(names[0])
        shape = _shape(x)
        axis = self.axis_of(int(self.attributes(node).get("axis", 0)), len(shape))  # type: ignore[call-overload]
        if names[1] not in self.initializers:  # computed at run time (token ids, say)
            indices = self.value(names[1])
            self.define(node.output[0], graph.TakeOp(x, indices, axis, self.result_type(node)))
            return
        array = self.initializer_array(names[1])
        if not np.issubdtype(array.dtype, np.integer):
            raise FrontendError(f"{self.label}: input 'indices' must be integers, got {array.dtype}")
        n = shape[axis]
        bad = next((int(i) for i in array.reshape(-1) if not -n <= i < n), None)
        if bad is not None:
            raise FrontendError(f"{self.label}: index {bad} is out of range for axis {axis} of "
                                f"extent {n}")
        out = [*shape[:axis], *array.shape, *shape[axis + 1:]]
        result_type = TensorType(_element(x), out)
        self.check_inferred(node, result_type)
        indices = [int(i) % n for i in array.reshape(-1)] if n else []
        self.define(node.output[0], graph.GatherOp(x, result_type, axis, indices))

    def pad(self, node: NodeProto) -> None:
        attrs = self.attributes(node)
        mode = str(attrs.get("mode", "constant"))
        if self.opset < 11:
            (x,) = self.inputs(node, 1)
            pads, value, axes = attrs.get("pads"), float(attrs.get("value", 0.0)), None  # type: ignore[arg-type]
            if pads is None:
                raise FrontendError(f"{self.label}: attribute 'pads' is required")
        else:
            if "pads" in attrs or "value" in attrs:
                raise FrontendError(f"{self.label}: attributes 'pads' and 'value' are not "
                                    "allowed since opset 11, where they are inputs")
            names = self.input_names(node, 2, optional=2)
            x = self.value(names[0])
            pads = self.constant_ints(node, 1)
            constant = self.constant_input(node, 2)
            if constant is not None and constant.size != 1:
                raise FrontendError(f"{self.label}: input 'constant_value' must be a scalar, "
                                    f"got shape {list(constant.shape)}")
            value = float(constant.reshape(-1)[0]) if constant is not None else 0.0
            axes = self.axes_of(node, {}, 18, len(_shape(x)), position=3)
        rank = len(_shape(x))
        axes = list(range(rank)) if axes is None else axes
        pads = list(pads)  # type: ignore[call-overload]
        if len(pads) != 2 * len(axes):
            raise FrontendError(f"{self.label}: expected {2 * len(axes)} pads (begins, then "
                                f"ends, for {len(axes)} axes), got {len(pads)}")
        full = [0] * (2 * rank)
        for k, d in enumerate(axes):
            full[d], full[rank + d] = pads[k], pads[len(axes) + k]
        if mode != "constant" and value != 0.0:
            value = 0.0  # the value applies to constant mode only
        shape = _shape(x)
        result_type = TensorType(_element(x), [n + full[d] + full[rank + d]
                                                 for d, n in enumerate(shape)])
        self.check_inferred(node, result_type)
        if not any(full):
            self.values[node.output[0]] = x
            return
        self.define(node.output[0], graph.PadOp(x, result_type, full, mode, value))

    def resize(self, node: NodeProto) -> None:
        attrs = self.attributes(node)
        if self.opset < 11:
            raise FrontendError(f"{self.label}: Resize before opset 11 (here {self.opset}) is "
                                "not supported")
        names = self.input_names(node, 1, optional=3)
        x = self.value(names[0])
        shape = _shape(x)
        axes = self.normalized_axes(list(attrs.get("axes", range(len(shape)))), len(shape))  # type: ignore[call-overload]
        scales = self.constant_input(node, 2)
        sizes = self.constant_ints(node, 3)
        if scales is not None and scales.size == 0:
            scales = None  # opset 11 passes an empty scales tensor along with sizes
        if (scales is None) == (sizes is None):
            raise FrontendError(f"{self.label}: expected either 'scales' or 'sizes'")
        given = [float(v) for v in scales.reshape(-1)] if scales is not None else sizes
        if len(given) != len(axes):  # type: ignore[arg-type]
            raise FrontendError(f"{self.label}: expected {len(axes)} "
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
                raise FrontendError(f"{self.label}: scale {scale} of axis {d} must be positive")
            full[d] = scale
        mode = str(attrs.get("mode", "nearest"))
        op = graph.ResizeOp(x, self.result_type(node), full, mode,
                            str(attrs.get("coordinate_transformation_mode", "half_pixel")),
                            str(attrs.get("nearest_mode", "round_prefer_floor"))
                            if mode == "nearest" else None)
        self.define(node.output[0], op)


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


CONVERTERS: dict[str, str] = {  # op type -> DataMovementConverters method
    **{op: "reshape" for op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze")},
    "Expand": "broadcast", "Tile": "broadcast",
    "Dropout": "dropout", "Transpose": "transpose", "Concat": "concat", "Split": "split",
    "Slice": "slice", "Gather": "gather", "Pad": "pad", "Resize": "resize",
}
assert set(CONVERTERS) == set(ATTRIBUTES)
