"""``graph.resize``: ONNX ``Resize`` in ``nearest``, ``linear`` and ``cubic`` modes, one f32
scale per dim.

    %z = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel",
             scales = array<f32: 1.0, 1.0, 2.0, 2.0>} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
    %c = graph.resize %x {mode = "cubic", coordinate_transformation_mode = "tf_crop_and_resize",
             cubic_coeff_a = -5.000000e-01 : f32, exclude_outside, antialias,
             roi = array<f32: 0.0, 0.0, 0.25, 0.25, 1.0, 1.0, 0.75, 0.75>,
             extrapolation_value = 1.0 : f32,
             scales = array<f32: 1.0, 1.0, 0.5, 0.5>} : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    traits_def,
)
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.graph.data_movement import UnaryShapeOp
from tmlir.dialects.graph.traits import NoOpWhen

__all__ = ["COORDINATE_TRANSFORMATION_MODES", "DEFAULT_CUBIC_COEFF_A", "NEAREST_MODES", "RESIZE_MODES",
           "ResizeOp"]

RESIZE_MODES = ("nearest", "linear", "cubic")
COORDINATE_TRANSFORMATION_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                   "align_corners", "asymmetric", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
DEFAULT_CUBIC_COEFF_A = -0.75


@irdl_op_definition
class ResizeOp(UnaryShapeOp):
    """ONNX ``Resize`` (opset 11 on) in ``nearest``, ``linear`` or ``cubic`` mode: each
    result coordinate ``x`` maps to an input coordinate by ``coordinate_transformation_mode``
    and the dim's scale (``half_pixel``: ``(x + 0.5) / scale - 0.5``; ``asymmetric``:
    ``x / scale``; ``align_corners``: ``x * (n - 1) / (m - 1)``; ``tf_crop_and_resize``:
    ``start * (n - 1) + x * (end - start) * (n - 1) / (m - 1)`` with ``start``/``end`` from
    ``roi``, the result ``extrapolation_value`` (default 0) where a coordinate falls outside
    the input; ...), which ``nearest`` rounds by ``nearest_mode`` (default
    ``round_prefer_floor``), ``linear`` interpolates between its two neighbours and
    ``cubic`` between its four with the cubic kernel of ``cubic_coeff_a`` (default -0.75),
    over the resized dims one after the other. Taps outside the input repeat its edge, or
    with ``exclude_outside`` weigh 0 (the others renormalized). ``antialias`` (linear and
    cubic) widens the kernel by ``1 / scale`` where a dim shrinks, its weights normalized
    (onnxruntime's filter). ``roi`` holds one start per dim, then one end per dim. The
    result type gives the output sizes; a dim with scale 1 is copied."""

    name = "graph.resize"
    mode = prop_def(StringAttr)
    coordinate_transformation_mode = prop_def(StringAttr)
    nearest_mode = opt_prop_def(StringAttr)
    cubic_coeff_a = opt_prop_def(FloatAttr)
    exclude_outside = opt_prop_def(UnitAttr)
    antialias = opt_prop_def(UnitAttr)
    roi = opt_prop_def(DenseArrayBase.constr(f32))
    extrapolation_value = opt_prop_def(FloatAttr)
    scales = prop_def(DenseArrayBase.constr(f32))
    traits = traits_def(NoOpWhen(lambda op: all(s == 1.0 for s in op.scale_values)))

    def __init__(self, input: SSAValue, result_type: TensorType, scales: Sequence[float],
                 mode: str, coordinate_transformation_mode: str,
                 nearest_mode: str | None = None, *, cubic_coeff_a: float = DEFAULT_CUBIC_COEFF_A,
                 exclude_outside: bool = False, antialias: bool = False,
                 roi: Sequence[float] | None = None, extrapolation_value: float = 0.0) -> None:
        """Defaults are left out of the properties: `cubic_coeff_a` is kept for ``cubic``
        only, `exclude_outside` and `antialias` for ``linear`` and ``cubic``, `roi` and
        `extrapolation_value` for ``tf_crop_and_resize``."""
        properties: dict[str, Attribute] = {
            "mode": StringAttr(mode),
            "coordinate_transformation_mode": StringAttr(coordinate_transformation_mode),
            "scales": DenseArrayBase.from_list(f32, [float(v) for v in scales]),
        }
        if nearest_mode is not None and nearest_mode != "round_prefer_floor":
            properties["nearest_mode"] = StringAttr(nearest_mode)
        if mode == "cubic" and cubic_coeff_a != DEFAULT_CUBIC_COEFF_A:
            properties["cubic_coeff_a"] = FloatAttr(cubic_coeff_a, f32)
        if mode != "nearest" and exclude_outside:
            properties["exclude_outside"] = UnitAttr()
        if mode != "nearest" and antialias:
            properties["antialias"] = UnitAttr()
        if coordinate_transformation_mode == "tf_crop_and_resize":
            if roi is not None:
                properties["roi"] = DenseArrayBase.from_list(f32, [float(v) for v in roi])
            if extrapolation_value != 0.0:
                properties["extrapolation_value"] = FloatAttr(extrapolation_value, f32)
        super().__init__(input, result_type, properties)

    @property
    def scale_values(self) -> tuple[float, ...]:
        return tuple(float(v) for v in self.scales.get_values())

    @property
    def nearest_mode_value(self) -> str:
        return "round_prefer_floor" if self.nearest_mode is None else self.nearest_mode.data

    @property
    def cubic_coeff_a_value(self) -> float:
        return DEFAULT_CUBIC_COEFF_A if self.cubic_coeff_a is None else float(self.cubic_coeff_a.value.data)

    @property
    def roi_values(self) -> tuple[float, ...] | None:
        """One start per dim, then one end per dim (``tf_crop_and_resize`` only)."""
        return None if self.roi is None else tuple(float(v) for v in self.roi.get_values())

    @property
    def extrapolation_value_value(self) -> float:
        return 0.0 if self.extrapolation_value is None else float(self.extrapolation_value.value.data)

    def verify_(self) -> None:
        shape, out = self.shapes()
        mode, ctm = self.mode.data, self.coordinate_transformation_mode.data
        for what, value, choices in (
                ("mode", mode, RESIZE_MODES),
                ("coordinate_transformation_mode", ctm, COORDINATE_TRANSFORMATION_MODES),
                ("nearest_mode", self.nearest_mode_value, NEAREST_MODES)):
            if value not in choices:
                raise VerifyException(f"unknown {what} \"{value}\", expected one of "
                                      f"{', '.join(choices)}")
        for what, given, applies, where in (
                ("nearest_mode", self.nearest_mode, mode == "nearest", "nearest mode"),
                ("cubic_coeff_a", self.cubic_coeff_a, mode == "cubic", "cubic mode"),
                ("exclude_outside", self.exclude_outside, mode != "nearest", "linear and cubic modes"),
                ("antialias", self.antialias, mode != "nearest", "linear and cubic modes"),
                ("extrapolation_value", self.extrapolation_value, ctm == "tf_crop_and_resize",
                 "tf_crop_and_resize")):
            if given is not None and not applies:
                raise VerifyException(f"{what} applies to {where} only")
        for attribute in (self.cubic_coeff_a, self.extrapolation_value):
            if attribute is not None and attribute.type != f32:
                raise VerifyException(f"expected f32 attributes, got {attribute.type}")
        scales = self.scale_values
        if len(scales) != len(shape) or len(out) != len(shape):
            raise VerifyException(f"expected {len(shape)} scales and a result of rank "
                                  f"{len(shape)}, got {len(scales)} and rank {len(out)}")
        roi = self.roi_values
        if (roi is None) != (ctm != "tf_crop_and_resize"):
            raise VerifyException("a roi is expected with tf_crop_and_resize, and only there")
        if roi is not None and len(roi) != 2 * len(shape):
            raise VerifyException(f"expected a roi of {2 * len(shape)} values (starts, then "
                                  f"ends), got {len(roi)}")
        if any(not s > 0 for s in scales):
            raise VerifyException(f"scales {list(scales)} must be positive")
        if any(n == 0 and m != 0 for n, m in zip(shape, out)):
            raise VerifyException("cannot resize an empty dim to a non-empty one")
