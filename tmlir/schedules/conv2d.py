"""2-D convolution (NCHW): implicit GEMM on the SIMT matmul template, and a direct kernel.

``y[n, co, oh, ow] = sum_{c, kh, kw} x[n, g*Cg + c, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw]
* w[co, c, kh, kw] (+ bias[co])`` with ``g = co / (C_out / groups)``, ``Cg = C_in / groups``
and zeros outside the input (the padding).

**Implicit GEMM.** Per group ``g`` the convolution is the GEMM ``Y_g = W_g @ X_g`` with

    M = C_out / groups     rows: output channels   A = W_g, the weight rows of group g
    N = N * OH * OW        cols: output pixels     (C_out/groups x K, row-major as stored)
    K = Cg * KH * KW       (c, kh, kw)             B = X_g, the im2col matrix of group g

where ``X_g[k, p]`` is the input element under tap ``k = (c, kh, kw)`` of output pixel
``p = (n, oh, ow)``. ``X_g`` is never materialized: the template's cooperative B-tile
load (`simt_gemm` in ``matmul_simt.py``, double-buffered as for a matmul) computes each
element's input coordinates and loads it under a computed predicate (inside the padded
border, and within K and N on partial tiles) -- ``tm.load`` inside ``scf.if``, else 0.
Consecutive threads take consecutive pixels, so consecutive input addresses when the
stride is 1. Groups are the GEMM's batch (a grid dimension, ``%group``), output pixels
the GEMM's columns, so a thread's stores run along ``ow`` of one output channel; the
epilogue adds the bias of the row's channel. The parameters and their space are the
matmul's (`MatmulSimtParams`, ``MATMUL_SIMT_SPACE`` on `Conv2dProblem.gemm`).

**Direct.** For depthwise convolutions (``Cg = 1``, ``K = KH * KW``) and other groups of
fewer than 8 output channels a GEMM tile would be mostly padding; `conv2d_direct_kernel`
gives one output element to each thread (``spatial(grid) * spatial(block)`` over the
flattened output), which sums its ``Cg x KH x KW`` taps (``repeat``) from global memory.
`conv2d_kernel` picks between the two (`conv2d_default_params`).

Pads are explicit (top, left, bottom, right: ONNX's order).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import OpResult, SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import repeat, spatial
from tmlir.schedules.common import f32_memref, kernel_attributes, name_args
from tmlir.schedules.gemm import GemmOperand, GemmOperands, MatmulProblem
from tmlir.schedules.matmul_simt import MatmulSimtParams
from tmlir.schedules.simt_copies import CHUNK
from tmlir.schedules.simt_gemm import simt_gemm

Pair = tuple[int, int]
Quad = tuple[int, int, int, int]
#: Per-group output channels below which `conv2d_kernel` prefers the direct kernel: the
#: smallest GEMM tile of the space has 8 rows.
DIRECT_BELOW_GROUP_OUT = 8


@dataclass(frozen=True)
class Conv2dProblem:
    """Shapes and attributes of one 2-D convolution, NCHW.

    `input_shape` is ``(N, C_in, H, W)``, `weight_shape` ``(C_out, C_in / groups, KH, KW)``;
    `pads` are ``(top, left, bottom, right)``; `bias` says whether a ``(C_out,)`` bias is
    added. Impossible combinations raise a one-line ValueError.
    """

    input_shape: Quad
    weight_shape: Quad
    strides: Pair = (1, 1)
    pads: Quad = (0, 0, 0, 0)
    dilations: Pair = (1, 1)
    groups: int = 1
    bias: bool = False

    def __post_init__(self) -> None:
        for field in ("input_shape", "weight_shape", "strides", "pads", "dilations"):
            object.__setattr__(self, field, tuple(int(v) for v in getattr(self, field)))
        for field, size in (("input_shape", 4), ("weight_shape", 4), ("strides", 2),
                            ("pads", 4), ("dilations", 2)):
            if len(getattr(self, field)) != size:
                raise ValueError(f"conv2d: {field} {getattr(self, field)} must have {size} values")
        if min(self.input_shape) < 1 or min(self.weight_shape) < 1:
            raise ValueError(f"conv2d: input {self.input_shape} and weight {self.weight_shape} "
                             "need extents >= 1")
        if min(self.strides) < 1 or min(self.dilations) < 1 or min(self.pads) < 0:
            raise ValueError(f"conv2d: strides {self.strides} and dilations {self.dilations} "
                             f"must be >= 1, pads {self.pads} >= 0")
        c_in, c_out, g = self.input_shape[1], self.weight_shape[0], self.groups
        if g < 1 or c_in % g or c_out % g:
            raise ValueError(f"conv2d: groups {g} must divide the input channels ({c_in}) "
                             f"and the output channels ({c_out})")
        if self.weight_shape[1] != c_in // g:
            raise ValueError(f"conv2d: weight {self.weight_shape} has {self.weight_shape[1]} "
                             f"input channels per group, expected C_in / groups = {c_in // g}")
        for axis, size, k in zip(("height", "width"), self.padded_hw, self.dilated_kernel):
            if k > size:
                raise ValueError(f"conv2d: the dilated kernel's {axis} ({k}) exceeds the padded "
                                 f"input's ({size}): no output")

    # ---- shapes ------------------------------------------------------------------------
    @property
    def batch(self) -> int:
        return self.input_shape[0]

    @property
    def in_channels(self) -> int:
        return self.input_shape[1]

    @property
    def out_channels(self) -> int:
        return self.weight_shape[0]

    @property
    def kernel(self) -> Pair:
        return (self.weight_shape[2], self.weight_shape[3])

    @property
    def group_in(self) -> int:
        """Input channels per group (``Cg``)."""
        return self.in_channels // self.groups

    @property
    def group_out(self) -> int:
        """Output channels per group."""
        return self.out_channels // self.groups

    @property
    def padded_hw(self) -> Pair:
        top, left, bottom, right = self.pads
        return (self.input_shape[2] + top + bottom, self.input_shape[3] + left + right)

    @property
    def dilated_kernel(self) -> Pair:
        return tuple((k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations))  # type: ignore[return-value]

    @property
    def out_hw(self) -> Pair:
        return tuple((size - k) // s + 1 for size, k, s in  # type: ignore[return-value]
                     zip(self.padded_hw, self.dilated_kernel, self.strides))

    @property
    def out_shape(self) -> Quad:
        return (self.batch, self.out_channels, *self.out_hw)

    @property
    def bias_shape(self) -> tuple[int] | None:
        return (self.out_channels,) if self.bias else None

    @property
    def arg_shapes(self) -> list[tuple[int, ...]]:
        """The kernel's arguments: input, weight, [bias,] output."""
        return [self.input_shape, self.weight_shape,
                *([self.bias_shape] if self.bias_shape else []), self.out_shape]

    @property
    def gemm(self) -> MatmulProblem:
        """The implied GEMM: per group, (C_out / groups) x (N * OH * OW) x (Cg * KH * KW)."""
        m, n = self.group_out, self.batch * self.out_hw[0] * self.out_hw[1]
        k = self.group_in * self.kernel[0] * self.kernel[1]
        return MatmulProblem.plain(m, n, k, self.groups)

    @property
    def dense_b(self) -> bool:
        """Whether the im2col matrix is the input itself, copied in 16-byte chunks of 4
        floats (`dense_pixels` with the SIMT engine's chunk)."""
        return self.dense_pixels(CHUNK)

    def dense_pixels(self, chunk: int) -> bool:
        """Whether the im2col matrix is the input itself: a 1x1 kernel, stride 1, no padding
        (any dilation: one tap), so that column ``(n, oh, ow)`` of channel ``c`` is
        ``x[n, c]``'s pixel ``oh * W + ow``, contiguous along the columns; with ``H * W`` a
        multiple of `chunk` (elements per 16-byte copy), chunks of a row of B are aligned and
        never cross an image, so a pipeline copies B 16 bytes at a time without unravelling
        every element."""
        return (self.kernel == (1, 1) and self.strides == (1, 1) and not any(self.pads)
                and (self.out_hw[0] * self.out_hw[1]) % chunk == 0)

    @property
    def prefers_direct(self) -> bool:
        """Grouped with fewer output channels per group than a GEMM tile has rows
        (depthwise convolutions among them)."""
        return self.groups > 1 and self.group_out < DIRECT_BELOW_GROUP_OUT

    def describe(self) -> dict[str, int | str]:
        """The attributes, for the kernel header."""
        return {"kernel": _x(self.kernel), "stride": _x(self.strides),
                "dilation": _x(self.dilations), "pads": ",".join(map(str, self.pads)),
                "groups": self.groups}


def _x(values: Sequence[int]) -> str:
    return "x".join(map(str, values))


@dataclass(frozen=True)
class Conv2dDirectParams:
    """The direct kernel's threads per block."""

    block: int = 256


def conv2d_default_params(problem: Conv2dProblem, arch: str | None = None) -> MatmulSimtParams | Conv2dDirectParams:
    """The direct kernel where a GEMM tile would be mostly padding, else the matmul
    template's default for the implied GEMM on `arch`."""
    if problem.prefers_direct:
        return Conv2dDirectParams()
    return MatmulSimtParams.default_for(problem.gemm, arch)


def conv2d_kernel(name: str, problem: Conv2dProblem,
                  params: MatmulSimtParams | Conv2dDirectParams | None = None, arch: str | None = None,
                  *, gathered: Collection[int] = ()) -> tm.KernelOp:
    """A kernel ``(x, w, [bias,] y)`` for `problem`: implicit GEMM for `MatmulSimtParams`,
    direct for `Conv2dDirectParams`, the default choice on `arch` for None. `gathered`: the
    kernel arguments (0: x, 1: w) a fused prologue computes (see
    `conv2d_implicit_gemm_kernel`)."""
    params = conv2d_default_params(problem, arch) if params is None else params
    if isinstance(params, Conv2dDirectParams):
        return conv2d_direct_kernel(name, problem, params)
    return conv2d_implicit_gemm_kernel(name, problem, params, gathered=gathered)


def _new_kernel(name: str, problem: Conv2dProblem, grid: int, block: int, template: str,
                params: dict[str, int | str]) -> tuple[tm.KernelOp, list[SSAValue]]:
    kernel = tm.KernelOp(name, [f32_memref(s) for s in problem.arg_shapes], grid, block,
                         kernel_attributes(template, {**params, **problem.describe()}))
    name_args(kernel, ["x", "w", *(["bias"] if problem.bias else []), "y"])
    return kernel, list(kernel.args)


def _named(values: Sequence[Index], names: Sequence[str]) -> list[Index]:
    """Give computed indices readable names (kept where a value already has one)."""
    for value, name in zip(values, names):
        if isinstance(value, OpResult) and value.name_hint is None:
            value.name_hint = name
    return list(values)


def _input_coordinate(b: IRBuilder, out: Index, tap: Index, stride: int, dilation: int,
                      pad: int, size: int, max_out: int, max_tap: int,
                      conditions: list[SSAValue], name: str) -> Index:
    """The input coordinate ``out * stride - pad + tap * dilation`` of an output and a
    tap; appends to `conditions` the checks that it is inside the input (only those that
    can fail). The coordinate is computed in the padded input (non-negative) and the pad
    subtracted after the check."""
    padded = b.add(b.mul(out, stride), b.mul(tap, dilation))
    if pad > 0:
        conditions.append(b.ge(padded, pad))
    if (max_out - 1) * stride + (max_tap - 1) * dilation >= size + pad:
        conditions.append(b.lt(padded, size + pad))
    return _named([b.sub(padded, pad)], [name])[0]


def _named_condition(b: IRBuilder, conditions: Sequence[SSAValue]) -> SSAValue | None:
    """All `conditions`, named ``inside`` (the element is in the input, not padding)."""
    condition = b.all_of(conditions)
    return None if condition is None else _named([condition], ["inside"])[0]  # type: ignore[return-value]


def _input_index(b: IRBuilder, problem: Conv2dProblem, n: Index, channel: Index,
                 oh: Index, ow: Index, kh: Index, kw: Index,
                 conditions: list[SSAValue]) -> list[Index]:
    """``x``'s index under tap ``(kh, kw)`` of output pixel ``(n, oh, ow)``."""
    (sh, sw), (dh, dw), (kh_n, kw_n) = problem.strides, problem.dilations, problem.kernel
    top, left = problem.pads[:2]
    oh_n, ow_n = problem.out_hw
    h, w = problem.input_shape[2:]
    ih = _input_coordinate(b, oh, kh, sh, dh, top, h, oh_n, kh_n, conditions, "ih")
    iw = _input_coordinate(b, ow, kw, sw, dw, left, w, ow_n, kw_n, conditions, "iw")
    return [n, channel, ih, iw]


def conv2d_implicit_gemm_kernel(name: str, problem: Conv2dProblem, params: MatmulSimtParams,
                                *, gathered: Collection[int] = (), wait: bool = True) -> tm.KernelOp:
    """The convolution as the SIMT matmul template's GEMM with an im2col B operand. In the
    cp.async pipeline both operands are copied element by element (the im2col ones under
    their padding predicate), except the kernel arguments in `gathered` (0: x, 1: w: a fused
    prologue computes them), read with ``tm.load``. With ``split_k > 1`` the kernel takes
    split-K's workspace and counters after ``y`` (``split_k.py``). `wait=False` leaves out
    the pipeline's waits (a planted race)."""
    p, P, gemm = problem, params, problem.gemm
    kernel, (x, w, *rest) = _new_kernel(
        name, p, P.blocks(gemm), P.threads, "conv2d_implicit_gemm",
        {"M": gemm.m, "N": gemm.n, "K": gemm.k, **P.describe()})
    bias, y = (rest[0], rest[1]) if p.bias else (None, rest[0])

    def block_operands(b: IRBuilder, batch_coords: Sequence[Index]) -> GemmOperands:
        ops = conv_gemm_operands(b, p, (P.block_m, P.block_n, P.block_k), (x, w, bias, y), batch_coords)
        weights = ops.a if 1 not in gathered else GemmOperand(True, ops.a.load)
        pixels = ops.b if 0 not in gathered else GemmOperand(False, ops.b.load)
        return GemmOperands(weights, pixels, ops.store_c)

    simt_gemm(kernel, gemm, P, block_operands, ("group", "tile_m", "tile_n"), wait=wait)
    return kernel


def conv_gemm_operands(b: IRBuilder, problem: Conv2dProblem, block: tuple[int, int, int],
                       args: tuple[SSAValue, SSAValue, SSAValue | None, SSAValue],
                       batch_coords: Sequence[Index]) -> GemmOperands:
    """One block's implicit-GEMM operands (any GEMM template with a `block` tile of
    ``block_m x block_n x block_k``): A the weights of the block's group (``batch_coords``:
    the group), B the im2col matrix (0 in the padding and past K and N), and the store of
    C into ``y`` with the bias of the row's channel. `args` are ``(x, w, bias, y)``. Both
    operands are loads and addresses (``gemm.py``): an im2col element's address has the
    padding predicate, and its input coordinates clamped to 0 where it fails."""
    p, gemm = problem, problem.gemm
    x, w, bias, y = args
    taps = (p.group_in, *p.kernel)  # k = (c, kh, kw)
    pixels = (p.batch, *p.out_hw)  # a GEMM column = (n, oh, ow)
    partial_m, partial_n, partial_k = (extent % tile != 0 for extent, tile in zip((gemm.m, gemm.n, gemm.k), block))
    group = batch_coords[0] if batch_coords else 0
    c0 = b.mul(group, p.group_in, "c0")  # the group's first input channel
    co0 = b.mul(group, p.group_out, "co0")  # and first output channel

    def load_weight(row: Index, k: Index) -> SSAValue:
        # Rows past a partial tile read the next group's weights (or 0 past C_out)
        # into accumulators that are never stored; k past K must give 0.
        c, kh, kw = _named(b.unravel(k, taps, in_range=not partial_k), ["c", "kh", "kw"])
        guard = [d for d, g in ((0, partial_m), (1, partial_k)) if g]
        return b.load(w, [b.add(co0, row), c, kh, kw], guard)

    def load_im2col(col: Index, k: Index) -> SSAValue:
        c, kh, kw = _named(b.unravel(k, taps, in_range=not partial_k), ["c", "kh", "kw"])
        n, oh, ow = _named(b.unravel(col, pixels, in_range=not partial_n), ["n", "oh", "ow"])
        conditions = [b.lt(c, p.group_in)] if partial_k else []
        if partial_n:
            conditions.append(b.lt(n, p.batch))
        index = _input_index(b, p, n, b.add(c0, c, "ci"), oh, ow, kh, kw, conditions)
        return b.load_if(_named_condition(b, conditions), x, index)

    def weight_address(row: Index, k: Index) -> tuple[list[Index], SSAValue | None]:
        c, kh, kw = _named(b.unravel(k, taps, in_range=True), ["c", "kh", "kw"])
        return [b.add(co0, row, "co"), c, kh, kw], None

    def dense_address(col: Index, k: Index) -> tuple[list[Index], SSAValue | None]:
        # `dense_b`: no taps, no padding; the engine asks for a chunk's first column
        n, oh, ow = _named(b.unravel(col, pixels, in_range=True), ["n", "oh", "ow"])
        return [n, b.add(c0, k, "ci"), oh, ow], None

    def im2col_address(col: Index, k: Index) -> tuple[list[Index], SSAValue | None]:
        c, kh, kw = _named(b.unravel(k, taps, in_range=True), ["c", "kh", "kw"])
        n, oh, ow = _named(b.unravel(col, pixels, in_range=True), ["n", "oh", "ow"])
        conditions: list[SSAValue] = []
        index = _input_index(b, p, n, b.add(c0, c, "ci"), oh, ow, kh, kw, conditions)
        inside = _named_condition(b, conditions)
        if inside is not None:  # in the padding: a zero-filled copy from the input's origin row
            index = [*index[:2], *(_select(b, inside, i, "clamped") for i in index[2:])]
        return index, inside

    def store_output(row: Index, col: Index, value: SSAValue) -> None:
        n, oh, ow = _named(b.unravel(col, pixels, in_range=not partial_n), ["n", "oh", "ow"])
        co = b.add(co0, row, "co")
        if bias is not None:
            bv = b.load(bias, [co], [0] if partial_m else [], name="bias")
            value = b.fop(arith.AddfOp, value, bv)
        if partial_m and p.groups > 1:  # a row past the group's channels is the next group's
            with b.if_(b.lt(row, p.group_out)):
                b.store(value, y, [n, co, oh, ow], [0] if partial_n else [])
        else:
            guard = [d for d, g in ((0, partial_n), (1, partial_m)) if g]
            b.store(value, y, [n, co, oh, ow], guard)

    pixels_operand = GemmOperand(False, load_im2col, x, dense_address, chunked=True) if p.dense_b else \
        GemmOperand(False, load_im2col, x, im2col_address)
    return GemmOperands(GemmOperand(True, load_weight, w, weight_address), pixels_operand, store_output)


def _select(b: IRBuilder, condition: SSAValue, x: Index, name: str) -> SSAValue:
    """`x` where `condition` holds, else 0."""
    return b.insert(arith.SelectOp(condition, b.value(x), b.value(0)), name).results[0]


def conv2d_direct_kernel(name: str, problem: Conv2dProblem,
                         params: Conv2dDirectParams = Conv2dDirectParams()) -> tm.KernelOp:
    """One thread per output element, summing its ``Cg x KH x KW`` taps from global memory."""
    p = problem
    total = math.prod(p.out_shape)
    block = min(params.block, WARP_SIZE * math.ceil(total / WARP_SIZE))
    grid = math.ceil(total / block)
    kernel, (x, w, *rest) = _new_kernel(name, p, grid, block, "conv2d_direct", {"block": block})
    bias, y = (rest[0], rest[1]) if p.bias else (None, rest[0])
    partial = total % block != 0  # the last block's spare threads fall past output dim 0
    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    acc = b.insert(tm.AllocOp("register", f32_memref((1,))), "acc").results[0]
    with (b.for_task(spatial(grid), bid, ["blk"]) as (blk,),
          b.for_task(spatial(block), tid, ["t"]) as (t,)):
        n, co, oh, ow = _named(b.unravel(b.add(b.mul(blk, block), t, "idx"), p.out_shape,
                                         in_range=not partial), ["n", "co", "oh", "ow"])
        c0 = b.mul(b.div(co, p.group_out, "group"), p.group_in, "c0")
        b.store(b.f32(0.0), acc, [0])
        with b.for_task(repeat(p.group_in, *p.kernel), None, ["c", "kh", "kw"]) as (c, kh, kw):
            conditions = [b.lt(n, p.batch)] if partial else []
            index = _input_index(b, p, n, b.add(c0, c, "ci"), oh, ow, kh, kw, conditions)
            xv = b.load_if(_named_condition(b, conditions), x, index, name="xv")
            wv = b.load(w, [co, c, kh, kw], name="wv")
            b.store(b.fop(arith.AddfOp, b.load(acc, [0]), b.fop(arith.MulfOp, xv, wv)), acc, [0])
        value = b.load(acc, [0], name="sum")
        if bias is not None:
            value = b.fop(arith.AddfOp, value, b.load(bias, [co], name="bias"))
        b.store(value, y, [n, co, oh, ow], [0] if partial else [])
    return kernel
