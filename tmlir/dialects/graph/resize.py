"""``graph.resize``: ONNX ``Resize`` in ``nearest`` and ``linear`` modes, one f32 scale per dim.

    %z = graph.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel",
             scales = array<f32: 1.0, 1.0, 2.0, 2.0>} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    StringAttr,
    TensorType,
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

__all__ = ["COORDINATE_TRANSFORMATION_MODES", "NEAREST_MODES", "RESIZE_MODES", "ResizeOp"]

RESIZE_MODES = ("nearest", "linear")
COORDINATE_TRANSFORMATION_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                   "align_corners", "asymmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@irdl_op_definition
class ResizeOp(UnaryShapeOp):
    """ONNX ``Resize`` (opset 11 on) in ``nearest`` or ``linear`` mode: each result
    coordinate ``x`` maps to an input coordinate by ``coordinate_transformation_mode`` and
    the dim's scale (``half_pixel``: ``(x + 0.5) / scale - 0.5``; ``asymmetric``:
    ``x / scale``; ``align_corners``: ``x * (n - 1) / (m - 1)``; ...), which ``nearest``
    rounds by ``nearest_mode`` (default ``round_prefer_floor``) and ``linear`` interpolates
    between its two neighbours (multilinear over the resized dims), clamped to the input.
    The result type gives the output sizes; a dim with scale 1 is copied."""

    name = "graph.resize"
    mode = prop_def(StringAttr)
    coordinate_transformation_mode = prop_def(StringAttr)
    nearest_mode = opt_prop_def(StringAttr)
    scales = prop_def(DenseArrayBase.constr(f32))
    traits = traits_def(NoOpWhen(lambda op: all(s == 1.0 for s in op.scale_values)))

    def __init__(self, input: SSAValue, result_type: TensorType, scales: Sequence[float],
                 mode: str, coordinate_transformation_mode: str,
                 nearest_mode: str | None = None) -> None:
        properties: dict[str, Attribute] = {
            "mode": StringAttr(mode),
            "coordinate_transformation_mode": StringAttr(coordinate_transformation_mode),
            "scales": DenseArrayBase.from_list(f32, [float(v) for v in scales]),
        }
        if nearest_mode is not None and nearest_mode != "round_prefer_floor":
            properties["nearest_mode"] = StringAttr(nearest_mode)
        super().__init__(input, result_type, properties)

    @property
    def scale_values(self) -> tuple[float, ...]:
        return tuple(float(v) for v in self.scales.get_values())

    @property
    def nearest_mode_value(self) -> str:
        return "round_prefer_floor" if self.nearest_mode is None else self.nearest_mode.data

    def verify_(self) -> None:
        shape, out = self.shapes()
        for what, value, choices in (
                ("mode", self.mode.data, RESIZE_MODES),
                ("coordinate_transformation_mode", self.coordinate_transformation_mode.data,
                 COORDINATE_TRANSFORMATION_MODES),
                ("nearest_mode", self.nearest_mode_value, NEAREST_MODES)):
            if value not in choices:
                raise VerifyException(f"unknown {what} \"{value}\", expected one of "
                                      f"{', '.join(choices)}")
        scales = self.scale_values
        if len(scales) != len(shape) or len(out) != len(shape):
            raise VerifyException(f"expected {len(shape)} scales and a result of rank "
                                  f"{len(shape)}, got {len(scales)} and rank {len(out)}")
        if any(not s > 0 for s in scales):
            raise VerifyException(f"scales {list(scales)} must be positive")
        if any(n == 0 and m != 0 for n, m in zip(shape, out)):
            raise VerifyException("cannot resize an empty dim to a non-empty one")
