"""2-D and 3-D transposed convolution (NCHW, NCDHW), a direct kernel.

``y[n, co, oh, ow] = sum_{c, kh, kw} x[n, g*Cg + c, ih, iw] * w[g*Cg + c, co % Co_g, kh, kw]
(+ bias[co])`` over the taps where ``oh = ih * sh - pt + kh * dh`` (and the same along
the width) has a solution ``ih`` inside the input; ``g = co / Co_g``, ``Cg = C_in /
groups``, ``Co_g = C_out / groups``. The weight is ``(C_in, C_out / groups, KH, KW)``, as
ONNX's ``ConvTranspose`` stores it (the gradient of a convolution with that weight). A
3-D one adds the depth the same way (``od``, ``kd``, ``id``); any number of spatial dims
is built alike.

The kernel gathers: each thread owns one output element (``spatial(grid) *
spatial(block)`` over the flattened output) and walks its ``repeat(Cg, KH, KW)`` taps;
a tap contributes where ``oh + pt - kh * dh`` is a non-negative multiple of the stride
whose quotient is below the input height (likewise for the width). The quotient is taken
of ``oh + pt - kh * dh + M * sh`` with ``M * sh >= (KH - 1) * dh``, which is never
negative, so the unsigned division and remainder are exact; ``M`` is subtracted after the
check. Only the checks that can fail are emitted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import repeat
from tmlir.schedules.common import f32_memref, kernel_attributes, name_args, per_element, spatial_names

Dims = tuple[int, ...]


@dataclass(frozen=True)
class ConvTransposeProblem:
    """Shapes and attributes of one transposed convolution with k >= 1 spatial dims
    (NCHW for k = 2).

    `input_shape` is ``(N, C_in, D1, ..., Dk)`` (``(N, C_in, H, W)``), `weight_shape`
    ``(C_in, C_out / groups, K1, ..., Kk)``; `pads` are the k begins then the k ends
    (``(top, left, bottom, right)``) and `output_padding` extra outputs at the end of each
    spatial dim. Empty strides, pads, dilations and output padding mean 1, 0, 1 and 0.
    Impossible combinations raise a one-line ValueError.
    """

    input_shape: Dims
    weight_shape: Dims
    strides: Dims = ()
    pads: Dims = ()
    dilations: Dims = ()
    output_padding: Dims = ()
    groups: int = 1
    bias: bool = False

    def __post_init__(self) -> None:
        k = len(self.input_shape) - 2
        if k < 1 or len(self.weight_shape) != k + 2:
            raise ValueError(f"conv_transpose: input {tuple(self.input_shape)} and weight "
                             f"{tuple(self.weight_shape)} must be (N, C, D1, ...) and (C, C_out "
                             "/ groups, K1, ...) of one rank")
        for field, default, size in (("strides", 1, k), ("pads", 0, 2 * k), ("dilations", 1, k),
                                     ("output_padding", 0, k)):
            values = tuple(int(v) for v in getattr(self, field)) or (default,) * size
            if len(values) != size:
                raise ValueError(f"conv_transpose: {field} {list(values)} must have {size} values")
            object.__setattr__(self, field, values)
        for field in ("input_shape", "weight_shape"):
            object.__setattr__(self, field, tuple(int(v) for v in getattr(self, field)))
        c_in, g = self.input_shape[1], self.groups
        if g < 1 or c_in % g or self.weight_shape[0] != c_in:
            raise ValueError(f"conv_transpose: weight {self.weight_shape} must have the input's "
                             f"{c_in} channels first, and groups {g} must divide them")
        if min(self.strides) < 1 or min(self.dilations) < 1 or min(self.pads) < 0 \
                or min(self.output_padding) < 0:
            raise ValueError(f"conv_transpose: strides {self.strides} and dilations "
                             f"{self.dilations} must be >= 1, pads {self.pads} and output "
                             f"padding {self.output_padding} >= 0")
        if min(self.out_shape) < 1:
            raise ValueError(f"conv_transpose: no output (shape {self.out_shape})")

    @property
    def batch(self) -> int:
        return self.input_shape[0]

    @property
    def group_in(self) -> int:
        return self.input_shape[1] // self.groups

    @property
    def group_out(self) -> int:
        return self.weight_shape[1]

    @property
    def spatial_rank(self) -> int:
        return len(self.input_shape) - 2

    @property
    def out_shape(self) -> Dims:
        k, sizes = self.spatial_rank, []
        for d, size in enumerate(self.input_shape[2:]):
            window = (self.weight_shape[2 + d] - 1) * self.dilations[d] + 1
            sizes.append(self.strides[d] * (size - 1) + self.output_padding[d] + window
                         - self.pads[d] - self.pads[k + d])
        return (self.input_shape[0], self.weight_shape[1] * self.groups, *sizes)

    @property
    def arg_shapes(self) -> list[tuple[int, ...]]:
        """The kernel's arguments: input, weight, [bias,] output."""
        bias = [(self.out_shape[1],)] if self.bias else []
        return [self.input_shape, self.weight_shape, *bias, self.out_shape]

    def describe(self) -> dict[str, int | str]:
        return {"kernel": _x(self.weight_shape[2:]), "stride": _x(self.strides),
                "dilation": _x(self.dilations), "pads": ",".join(map(str, self.pads)),
                "output_padding": _x(self.output_padding), "groups": self.groups}


def _x(values: Sequence[int]) -> str:
    return "x".join(map(str, values))




@dataclass(frozen=True)
class ConvTransposeParams:
    """Threads per block."""

    block: int = 256


def _input_coordinate(b: IRBuilder, out: Index, tap: Index, stride: int, dilation: int,
                      pad: int, size: int, taps: int, out_size: int,
                      conditions: list[SSAValue], name: str) -> Index:
    """The input coordinate ``(out + pad - tap * dilation) / stride`` that output `out`
    reads through `tap`; appends the checks that it exists and is inside the input (those
    that can fail)."""
    shift = math.ceil((taps - 1) * dilation / stride)  # M: keeps the numerator >= 0
    numerator = b.sub(b.add(out, pad + shift * stride), b.mul(tap, dilation))
    if stride > 1:
        conditions.append(b.eq(b.rem(numerator, stride), 0))
    shifted = b.div(numerator, stride)
    if pad < (taps - 1) * dilation:  # the first outputs' last taps fall before the input
        conditions.append(b.ge(shifted, shift))
    if (out_size - 1 + pad + shift * stride) // stride >= size + shift:
        conditions.append(b.lt(shifted, size + shift))
    coordinate = b.sub(shifted, shift)
    if isinstance(coordinate, SSAValue) and coordinate.name_hint is None:
        coordinate.name_hint = name
    return coordinate


def conv_transpose_kernel(name: str, problem: ConvTransposeProblem,
                          params: ConvTransposeParams = ConvTransposeParams()) -> tm.KernelOp:
    """A kernel ``(x, w, [bias,] y)``: one thread per output element, gathering its taps."""
    p = problem
    total = math.prod(p.out_shape)
    block = min(params.block, WARP_SIZE * math.ceil(total / WARP_SIZE))
    grid = math.ceil(total / block)
    kernel = tm.KernelOp(name, [f32_memref(s) for s in p.arg_shapes], grid, block,
                         kernel_attributes("conv_transpose_direct",
                                           {"block": block, **p.describe()}))
    name_args(kernel, ["x", "w", *(["bias"] if p.bias else []), "y"])
    x, w, *rest = kernel.args
    bias, y = (rest[0], rest[1]) if p.bias else (None, rest[0])
    partial = total % block != 0
    k = p.spatial_rank
    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    acc = b.insert(tm.AllocOp("register", f32_memref((1,))), "acc").results[0]
    with per_element(b, bid, tid, grid, block, p.out_shape, ["n", "co", *spatial_names("o", k)],
                     partial) as (n, co, *out):
        group = b.div(co, p.group_out, "group")
        c0 = b.mul(group, p.group_in, "c0")
        co_in_group = b.rem(co, p.group_out, "cog")
        b.store(b.f32(0.0), acc, [0])
        with b.for_task(repeat(p.group_in, *p.weight_shape[2:]), None,
                        ["c", *spatial_names("k", k)]) as (c, *taps):
            conditions = [b.lt(n, p.batch)] if partial else []
            coords = [_input_coordinate(b, out[d], taps[d], p.strides[d], p.dilations[d],
                                        p.pads[d], p.input_shape[2 + d], p.weight_shape[2 + d],
                                        p.out_shape[2 + d], conditions, spatial_names("i", k)[d])
                      for d in range(k)]
            ci = b.add(c0, c, "ci")
            inside = b.all_of(conditions)
            xv = b.load_if(inside, x, [n, ci, *coords], name="xv")
            wv = b.load(w, [ci, co_in_group, *taps], name="wv")
            b.store(b.fop(arith.AddfOp, b.load(acc, [0]), b.fop(arith.MulfOp, xv, wv)), acc, [0])
        value = b.load(acc, [0], name="sum")
        if bias is not None:
            value = b.fop(arith.AddfOp, value, b.load(bias, [co], name="bias"))
        b.store(value, y, [n, co, *out], [0] if partial else [])
    return kernel
