"""The element of ``graph.resize``: each output element as a weighted sum of input taps.

Per resized dim, the output coordinate becomes an input coordinate in f32 (as onnxruntime
computes it), which gives that dim's taps, ``(input index, weight)``: ``nearest`` one
(rounded and clamped), ``linear`` two (the clamped coordinate's neighbours), ``cubic`` four
(``floor(x) - 1 .. floor(x) + 2`` with the cubic kernel's weights of ``x - floor(x)``) and
``antialias`` a window of ``2 * ceil(support) + 1`` (onnxruntime's filter, widened by
``1 / scale`` where the dim shrinks, weights normalized). The output element is the sum over
every combination of one tap per dim of the weights' product times the input there,
computed dim after dim, one thread per output element, no table. For example a 2-D cubic
resize reads 16 inputs: ``sum_r wy[r] * sum_c wx[c] * x[y0 + r - 1, x0 + c - 1]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, IndexType, IntegerType
from xdsl.ir import SSAValue

from tmlir.ir.builder import Index, IRBuilder

__all__ = ["MAX_RESIZE_TAPS", "ResizeOptions", "resize_element"]

MAX_RESIZE_TAPS = 1024
"""At most this many input elements per output element (an antialiased shrink by a large
factor reads a wide window): beyond it the kernel would be unrolled too far."""

ResizeElement = Callable[[IRBuilder, list[Index], Callable[[int, Sequence[Index]], SSAValue]], SSAValue]
"""``data_movement_elements.Element``: the output element from the input's (a `Load`)."""

Tap = tuple[Index, SSAValue | None]
"""An input index along one dim and its weight (None: the only tap, weight 1)."""


@dataclass(frozen=True)
class ResizeOptions:
    """What ``graph.resize`` says beyond its mode and coordinate transformation: see there."""

    nearest_mode: str = "round_prefer_floor"
    cubic_coeff_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False
    roi: tuple[float, ...] | None = None
    extrapolation_value: float = 0.0


def _window(mode: str, scale: float) -> tuple[float, float, int]:
    """onnxruntime's antialias filter along one dim: (support, 1 / kernel stretch, taps)."""
    support = np.float32(1.0 if mode == "linear" else 2.0)
    stretch = np.float32(1.0) / np.float32(scale)
    if stretch >= 1.0:
        support = support * stretch
    inverse = np.float32(1.0) / stretch if stretch >= 1.0 else np.float32(1.0)
    return float(support), float(inverse), 2 * math.ceil(float(support)) + 1


def resize_element(in_shape: Sequence[int], out_shape: Sequence[int], scales: Sequence[float],
                   mode: str, coordinate_transformation_mode: str,
                   options: ResizeOptions | None = None) -> ResizeElement:
    """The `Element` (see ``data_movement_elements``) of ONNX ``Resize``. Raises ValueError
    when an output element would read more than `MAX_RESIZE_TAPS` inputs."""
    options = options or ResizeOptions()
    ctm, rank = coordinate_transformation_mode, len(in_shape)
    resized = [d for d, (n, m, s) in enumerate(zip(in_shape, out_shape, scales))
               if n != 1 and not (s == 1.0 and n == m)]
    if options.antialias and mode != "nearest":
        taps = math.prod(_window(mode, scales[d])[2] for d in resized)
    else:
        taps = {"nearest": 1, "linear": 2, "cubic": 4}[mode] ** len(resized)
    if taps > MAX_RESIZE_TAPS:
        raise ValueError(f"resize: {taps} input elements per output element (at most "
                         f"{MAX_RESIZE_TAPS}; an antialiased shrink by a large factor)")

    def source(b: IRBuilder, c: Index, d: int) -> SSAValue:
        """The input coordinate (f32) of output coordinate `c` along dim `d`."""
        n, m, scale = in_shape[d], out_shape[d], scales[d]
        if ctm in ("pytorch_half_pixel", "align_corners") and m == 1:
            return b.f32(0.0)
        x = _to_f32(b, c)
        if ctm == "tf_crop_and_resize":
            assert options.roi is not None
            start, end = np.float32(options.roi[d]), np.float32(options.roi[rank + d])
            if m == 1:
                return b.f32(float(np.float32(0.5) * (start + end) * np.float32(n - 1)))
            x = b.fop(arith.MulfOp, x, b.f32(float(end - start)))
            x = b.fop(arith.MulfOp, x, b.f32(float(n - 1)))
            x = b.fop(arith.DivfOp, x, b.f32(float(m - 1)))
            return b.fop(arith.AddfOp, b.f32(float(start * np.float32(n - 1))), x)
        if ctm == "align_corners":
            x = b.fop(arith.MulfOp, x, b.f32(float(n - 1)))
            return b.fop(arith.DivfOp, x, b.f32(float(m - 1)))
        if ctm == "asymmetric":
            return b.fop(arith.DivfOp, x, b.f32(scale))
        x = b.fop(arith.DivfOp, b.fop(arith.AddfOp, x, b.f32(0.5)), b.f32(scale))
        x = b.fop(arith.SubfOp, x, b.f32(0.5))
        if ctm == "half_pixel_symmetric":
            offset = n / 2 * (1 - m / (scale * n))
            x = b.fop(arith.AddfOp, x, b.f32(float(np.float32(offset))))
        return x

    def clamp(b: IRBuilder, x: SSAValue, n: int) -> SSAValue:
        x = b.fop(arith.MaximumfOp, x, b.f32(0.0))
        return b.fop(arith.MinimumfOp, x, b.f32(float(n - 1)))

    def nearest(b: IRBuilder, x: SSAValue, d: int) -> list[Tap]:
        rounding = {"round_prefer_floor": (xmath.CeilOp, -0.5), "round_prefer_ceil": (xmath.FloorOp, 0.5),
                    "floor": (xmath.FloorOp, 0.0), "ceil": (xmath.CeilOp, 0.0)}
        op_type, shift = rounding[options.nearest_mode]
        if shift:
            x = b.fop(arith.AddfOp, x, b.f32(shift))
        return [(_to_index(b, clamp(b, b.fop(op_type, x), in_shape[d]), f"src{d}"), None)]

    def linear(b: IRBuilder, x: SSAValue, d: int) -> list[Tap]:
        n = in_shape[d]
        x = clamp(b, x, n)
        x.name_hint = f"x{d}"
        low = _to_index(b, x, f"low{d}")
        high = b.fop(arith.SelectOp, b.lt(low, n - 1), b.value(b.add(low, 1)), b.value(n - 1), name=f"high{d}")
        weight = b.fop(arith.SubfOp, x, _to_f32(b, low), name=f"w{d}")
        return [(low, b.fop(arith.SubfOp, b.f32(1.0), weight)), (high, weight)]

    def along(b: IRBuilder, first: SSAValue, weights: list[SSAValue], d: int) -> list[Tap]:
        """Taps at ``first, first + 1, ...`` (an integral f32, maybe outside the input):
        outside taps repeat the edge, or weigh 0 with `exclude_outside`; the weights are
        divided by their sum but for the plain cubic kernel (whose four add up to 1)."""
        n, result = in_shape[d], []
        for k, w in enumerate(weights):
            at = b.fop(arith.AddfOp, first, b.f32(float(k)), name=f"at{d}") if k else first
            if options.exclude_outside:
                inside = b.fop(arith.AndIOp, _cmpf(b, "oge", at, b.f32(0.0)),
                               _cmpf(b, "ole", at, b.f32(float(n - 1))))
                w = b.fop(arith.SelectOp, inside, w, b.f32(0.0))
            result.append((_to_index(b, clamp(b, at, n), f"tap{d}_{k}"), w))
        if not (options.antialias or options.exclude_outside):
            return result  # the cubic kernel's four weights add up to 1
        total = result[0][1]
        assert total is not None
        for _, w in result[1:]:
            total = b.fop(arith.AddfOp, total, w)  # type: ignore[arg-type]
        if options.antialias:  # onnxruntime: a zero sum leaves the weights as they are
            zero = _cmpf(b, "oeq", total, b.f32(0.0))
            total = b.fop(arith.SelectOp, zero, b.f32(1.0), total)
        scale = b.fop(arith.DivfOp, b.f32(1.0), total, name=f"norm{d}")
        return [(i, b.fop(arith.MulfOp, w, scale)) for i, w in result]

    def cubic(b: IRBuilder, x: SSAValue, d: int) -> list[Tap]:
        floor = b.fop(xmath.FloorOp, x, name=f"floor{d}")
        s = b.fop(arith.SubfOp, x, floor, name=f"s{d}")
        one_minus = b.fop(arith.SubfOp, b.f32(1.0), s)
        distances = (b.fop(arith.AddfOp, s, b.f32(1.0)), s, one_minus,
                     b.fop(arith.AddfOp, one_minus, b.f32(1.0)))
        weights = [_named(_cubic_kernel(b, t, options.cubic_coeff_a, near=k in (1, 2)), f"w{d}_{k}")
                   for k, t in enumerate(distances)]
        return along(b, b.fop(arith.SubfOp, floor, b.f32(1.0), name=f"at{d}"), weights, d)

    def antialiased(b: IRBuilder, x: SSAValue, d: int) -> list[Tap]:
        support, inverse, window = _window(mode, scales[d])
        center = b.fop(arith.AddfOp, x, b.f32(0.5), name=f"center{d}")
        first = b.fop(arith.SubfOp, center, b.f32(support))
        first = b.fop(xmath.FloorOp, b.fop(arith.AddfOp, first, b.f32(0.5)), name=f"first{d}")
        offset = b.fop(arith.SubfOp, b.fop(arith.AddfOp, first, b.f32(0.5)), center)  # tap 0's distance
        weights = []
        for k in range(window):
            t = b.fop(arith.AddfOp, offset, b.f32(float(k))) if k else offset
            if inverse != 1.0:
                t = b.fop(arith.MulfOp, t, b.f32(inverse))
            t = b.fop(xmath.AbsFOp, t)
            if mode == "linear":
                w = b.fop(arith.MaximumfOp, b.fop(arith.SubfOp, b.f32(1.0), t), b.f32(0.0))
            else:
                near = _cubic_kernel(b, t, options.cubic_coeff_a, near=True)
                far = _cubic_kernel(b, t, options.cubic_coeff_a, near=False)
                w = b.fop(arith.SelectOp, _cmpf(b, "olt", t, b.f32(2.0)), far, b.f32(0.0))
                w = b.fop(arith.SelectOp, _cmpf(b, "olt", t, b.f32(1.0)), near, w)
            weights.append(_named(w, f"w{d}_{k}"))
        return along(b, first, weights, d)

    def element(b: IRBuilder, i: list[Index], load: Callable[[int, Sequence[Index]], SSAValue]) -> SSAValue:
        j: list[Index] = [0 if in_shape[d] == 1 else c for d, c in enumerate(i)]
        per_dim: list[tuple[int, list[Tap]]] = []
        outside: SSAValue | None = None
        for d in resized:
            if ctm in ("pytorch_half_pixel", "align_corners") and out_shape[d] == 1 and (
                    mode == "nearest" or (mode == "linear" and not options.antialias)):
                per_dim.append((d, [(0, None)]))  # the coordinate is 0: element 0 exactly
                continue
            x = source(b, i[d], d)
            if not x.name_hint:
                x.name_hint = f"coord{d}"
            if ctm == "tf_crop_and_resize":
                out = b.fop(arith.OrIOp, _cmpf(b, "olt", x, b.f32(0.0)),
                            _cmpf(b, "ogt", x, b.f32(float(in_shape[d] - 1))))
                outside = out if outside is None else b.fop(arith.OrIOp, outside, out)
            if mode == "nearest":
                taps = nearest(b, x, d)
            elif options.antialias:
                taps = antialiased(b, x, d)
            else:
                taps = (linear if mode == "linear" else cubic)(b, x, d)
            per_dim.append((d, taps))

        def blend(level: int, at: list[Index]) -> SSAValue:
            if level == len(per_dim):
                return load(0, at)
            d, taps = per_dim[level]
            total: SSAValue | None = None
            for index, weight in taps:
                v = blend(level + 1, [*at[:d], index, *at[d + 1:]])
                term = v if weight is None else b.fop(arith.MulfOp, v, weight)
                total = term if total is None else b.fop(arith.AddfOp, total, term)
            assert total is not None
            return total

        value = blend(0, j)
        if outside is None:
            return value
        return b.fop(arith.SelectOp, outside, b.f32(options.extrapolation_value), value, name="v")
    return element


def _cubic_kernel(b: IRBuilder, t: SSAValue, a: float, *, near: bool) -> SSAValue:
    """The cubic convolution kernel at distance ``t >= 0``: ``((a + 2) t - (a + 3)) t^2 + 1``
    for ``t <= 1`` (`near`), ``((a t - 5 a) t + 8 a) t - 4 a`` for ``1 <= t <= 2``."""
    if near:
        w = _plus(b, b.fop(arith.MulfOp, b.f32(a + 2), t), -(a + 3))
        return _plus(b, b.fop(arith.MulfOp, b.fop(arith.MulfOp, w, t), t), 1.0)
    w = _plus(b, b.fop(arith.MulfOp, b.f32(a), t), -5 * a)
    w = _plus(b, b.fop(arith.MulfOp, w, t), 8 * a)
    return _plus(b, b.fop(arith.MulfOp, w, t), -4 * a)


def _plus(b: IRBuilder, x: SSAValue, c: float) -> SSAValue:
    """``x + c``, written ``x - |c|`` for a negative `c` (the same f32 value)."""
    return b.fop(arith.AddfOp, x, b.f32(c)) if c >= 0 else b.fop(arith.SubfOp, x, b.f32(-c))


def _named(value: SSAValue, name: str) -> SSAValue:
    value.name_hint = name
    return value


def _cmpf(b: IRBuilder, predicate: str, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(arith.CmpfOp(x, y, predicate)).results[0]


def _to_f32(b: IRBuilder, i: Index) -> SSAValue:
    if isinstance(i, int):
        return b.f32(float(i))
    as_int = b.insert(arith.IndexCastOp(i, IntegerType(32))).results[0]
    return b.insert(arith.SIToFPOp(as_int, Float32Type())).results[0]


def _to_index(b: IRBuilder, x: SSAValue, name: str) -> SSAValue:
    """A non-negative f32 truncated to an index."""
    as_int = b.insert(arith.FPToSIOp(x, IntegerType(32))).results[0]
    return b.insert(arith.IndexCastOp(as_int, IndexType()), name).results[0]
