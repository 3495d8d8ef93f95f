"""Pooling (max, average, Lp) over the spatial dims of an ``(N, C, D1, ..., Dk)`` tensor.

One thread per output element, the window as a ``repeat`` over its taps::

    blocks   spatial(ceil(total / block))    on block_id
    threads  spatial(block)                  on thread_id -> output (n, c, o1, ..., ok)
    window   repeat(K1, ..., Kk)             the thread's taps (t1, ..., tk)

Tap ``t`` of output ``o`` reads ``x[n, c, o * stride - pad_begin + t * dilation]`` (per
spatial dim) when that is inside the input. Padding takes no part in a max; in an average
it counts as 0, and the divisor is the number of taps inside the input, or with
``count_include_pad`` inside the padded input (a ``ceil_mode`` window hanging past the end
padding counts only its part inside it, as onnxruntime and PyTorch do). An Lp pool sums
``|v|^p`` (``|v|`` for p = 1, ``v * v`` for p = 2, else ``powf``) and takes the p-th root
of the sum (none, ``sqrtf``, ``powf``); padding adds 0, so it takes no part either. The coordinate is
computed in the padded input (non-negative), and only the bounds checks that can fail are
emitted: none without padding or ``ceil_mode``, where the divisor is the window size.
Consecutive threads take consecutive outputs along the last dim, so their loads are
``stride`` apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, MemRefType
from xdsl.ir import Attribute, SSAValue

from tmlir import dtypes
from tmlir.dialects import tm
from tmlir.dialects.graph import pool_output_size
from tmlir.gpu_limits import WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import repeat
from tmlir.schedules.common import kernel_attributes, name_args, per_element, spatial_names

POOL_KINDS = ("max", "average", "lp")


def _dims(values: Sequence[int], k: int, default: int, what: str) -> tuple[int, ...]:
    values = tuple(int(v) for v in values) or (default,) * k
    if len(values) != k:
        raise ValueError(f"pool: {what} {list(values)} must have {k} values")
    return values


@dataclass(frozen=True)
class PoolProblem:
    """One pooling: `kind` (max, average or lp) of `input_shape` ``(N, C, D1, ..., Dk)``.

    `pads` are the k begins then the k ends (ONNX's order); empty strides, pads and
    dilations mean 1, 0 and 1; `p` (>= 1) is the Lp pool's exponent. Impossible
    combinations raise a one-line ValueError.
    """

    kind: str
    input_shape: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...] = ()
    pads: tuple[int, ...] = ()
    dilations: tuple[int, ...] = ()
    ceil_mode: bool = False
    count_include_pad: bool = False
    p: int = 2

    def __post_init__(self) -> None:
        if self.kind not in POOL_KINDS:
            raise ValueError(f"pool: unknown kind '{self.kind}', expected max, average or lp")
        if self.kind == "lp" and self.p < 1:
            raise ValueError(f"pool: the Lp pool's p must be >= 1, got {self.p}")
        shape = tuple(int(d) for d in self.input_shape)
        if len(shape) < 3 or min(shape) < 1:
            raise ValueError(f"pool: input shape {list(shape)} must be (N, C, D1, ...) with "
                             "extents >= 1")
        k = len(shape) - 2
        kernel = _dims(self.kernel, k, 1, "kernel")
        strides = _dims(self.strides, k, 1, "strides")
        dilations = _dims(self.dilations, k, 1, "dilations")
        pads = tuple(int(p) for p in self.pads) or (0,) * (2 * k)
        if len(pads) != 2 * k:
            raise ValueError(f"pool: pads {list(pads)} must have {2 * k} values")
        if min(kernel + strides + dilations) < 1 or min(pads) < 0:
            raise ValueError(f"pool: kernel {list(kernel)}, strides {list(strides)} and "
                             f"dilations {list(dilations)} must be >= 1, pads {list(pads)} >= 0")
        for name, value in (("input_shape", shape), ("kernel", kernel), ("strides", strides),
                            ("pads", pads), ("dilations", dilations)):
            object.__setattr__(self, name, value)
        for d, size in enumerate(self.out_spatial):
            if size < 1:
                raise ValueError(f"pool: the window does not fit spatial dim {d} "
                                 f"({shape[2 + d]} with pads {pads[d]}, {pads[k + d]})")

    @property
    def spatial_rank(self) -> int:
        return len(self.input_shape) - 2

    @property
    def out_spatial(self) -> tuple[int, ...]:
        k = self.spatial_rank
        return tuple(pool_output_size(self.input_shape[2 + d], self.kernel[d], self.strides[d],
                                      self.dilations[d], self.pads[d], self.pads[k + d],
                                      self.ceil_mode) for d in range(k))

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (*self.input_shape[:2], *self.out_spatial)

    def describe(self) -> dict[str, int | str]:
        """The attributes, for the kernel header."""
        flags = {name: 1 for name in ("ceil_mode", "count_include_pad") if getattr(self, name)}
        exponent = {"p": self.p} if self.kind == "lp" else {}
        return {"op": self.kind, **exponent, "kernel": _x(self.kernel),
                "stride": _x(self.strides), "dilation": _x(self.dilations),
                "pads": ",".join(map(str, self.pads)), **flags}


def _x(values: Sequence[int]) -> str:
    return "x".join(map(str, values))


@dataclass(frozen=True)
class PoolParams:
    """Threads per block."""

    block: int = 256




def _accumulate(b: IRBuilder, register: SSAValue, op_type: type, value: SSAValue) -> None:
    b.store(b.fop(op_type, b.load(register, [0]), value), register, [0])


def _lp_term(b: IRBuilder, v: SSAValue, p: int) -> SSAValue:
    """``|v|^p``: one op for p = 1 and 2."""
    if p == 2:
        return b.fop(arith.MulfOp, v, v, name="sq")
    magnitude = b.fop(xmath.AbsFOp, v, name="magnitude")
    return magnitude if p == 1 else b.fop(xmath.PowFOp, magnitude, b.constant(p, v.type), name="term")


def _lp_root(b: IRBuilder, total: SSAValue, p: int) -> SSAValue:
    """``total^(1/p)``."""
    if p == 1:
        return total
    if p == 2:
        return b.fop(xmath.SqrtOp, total, name="norm")
    return b.fop(xmath.PowFOp, total, b.constant(1.0 / p, total.type), name="norm")


def _larger(b: IRBuilder, acc: SSAValue, v: SSAValue) -> SSAValue:
    """``fmaxf(acc, v)`` of floats (NaN taps take no part); the larger of two integers."""
    if dtypes.is_float(v.type):
        return b.fop(arith.MaxnumfOp, acc, v)
    larger = b.insert(arith.CmpiOp(v, acc, "ugt" if dtypes.is_unsigned(v.type) else "sgt")).results[0]
    return b.fop(arith.SelectOp, larger, v, acc)


def _lowest(b: IRBuilder, element: Attribute) -> SSAValue:
    """The identity of a max: -inf, or the smallest value of an integer type."""
    if dtypes.is_float(element):
        return b.constant(-math.inf, element)
    width = element.width.data  # type: ignore[attr-defined]  (an integer type)
    return b.constant(0 if dtypes.is_unsigned(element) else -(2 ** (width - 1)), element)


def pool_kernel(name: str, problem: PoolProblem, params: PoolParams = PoolParams(),
                element: Attribute = Float32Type()) -> tm.KernelOp:
    """A kernel ``(x, y)``: `problem`'s pooling, one thread per output element, on tensors
    of `element`: f32, f64 (computed in double), or for a max any integer type."""
    p, k = problem, problem.spatial_rank
    if not dtypes.is_float(element) and p.kind != "max":
        raise ValueError(f"pool: {p.kind} pooling of {element} elements is not supported")
    total = math.prod(p.out_shape)
    block = min(params.block, WARP_SIZE * math.ceil(total / WARP_SIZE))
    grid = math.ceil(total / block)
    partial = total % block != 0  # the last block's spare threads fall past output dim 0
    memrefs = [MemRefType(element, list(shape)) for shape in (p.input_shape, p.out_shape)]
    kernel = tm.KernelOp(name, memrefs, grid, block,
                         kernel_attributes("pool", {**p.describe(), "block": block}))
    name_args(kernel, ["x", "y"])
    x, y = kernel.args
    # Per spatial dim: the last padded coordinate a window reaches, and which of its checks
    # can fail (the tap is before the input, past it, or past the end padding).
    reach = [(p.out_spatial[d] - 1) * p.strides[d] + (p.kernel[d] - 1) * p.dilations[d]
             for d in range(k)]
    size = [p.input_shape[2 + d] + p.pads[d] for d in range(k)]  # the input's end, padded
    check_begin = [p.pads[d] > 0 for d in range(k)]
    check_end = [reach[d] >= size[d] for d in range(k)]
    check_padded = [p.count_include_pad and reach[d] >= size[d] + p.pads[k + d]
                    for d in range(k)]
    average, lp = p.kind == "average", p.kind == "lp"
    counted = average and any(check_padded if p.count_include_pad else check_begin + check_end)

    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    register = MemRefType(element, [1])
    acc = b.insert(tm.AllocOp("register", register), "acc").results[0]
    count = b.insert(tm.AllocOp("register", register), "count").results[0] if counted else None
    with per_element(b, bid, tid, grid, block, p.out_shape, ["n", "c", *spatial_names("o", k)],
                     partial) as (n, c, *out):
        n_ok = b.lt(n, p.input_shape[0], "n_ok") if partial else None  # spare threads: n >= N
        b.store(_lowest(b, element) if p.kind == "max" else b.constant(0.0, element), acc, [0])
        if count is not None:
            b.store(b.constant(0.0, element), count, [0])
        with b.for_task(repeat(*p.kernel), None, spatial_names("k", k)) as taps:
            inside = [n_ok] if n_ok is not None else []
            in_padded: list[SSAValue] = []
            coords: list[Index] = []
            for d in range(k):
                begin = p.pads[d]
                padded = b.add(b.mul(out[d], p.strides[d]), b.mul(taps[d], p.dilations[d]),
                               spatial_names("p", k)[d] if begin > 0 else None)
                if check_begin[d]:
                    inside.append(b.ge(padded, begin))
                if check_end[d]:
                    inside.append(b.lt(padded, size[d]))
                if check_padded[d]:
                    in_padded.append(b.lt(padded, size[d] + p.pads[k + d]))
                coords.append(b.sub(padded, begin, spatial_names("i", k)[d]))
                if isinstance(coords[-1], SSAValue) and coords[-1].name_hint is None:
                    coords[-1].name_hint = spatial_names("i", k)[d]  # no begin pad: the same value
            condition = b.all_of(inside)
            if condition is not None and condition.name_hint is None:
                condition.name_hint = "inside"
            with b.if_(condition) if condition is not None else nullcontext():
                v = b.load(x, [n, c, *coords], name="v")
                if lp:
                    v = _lp_term(b, v, p.p)
                if p.kind == "max":
                    b.store(_larger(b, b.load(acc, [0]), v), acc, [0])
                else:
                    _accumulate(b, acc, arith.AddfOp, v)
                if count is not None and not p.count_include_pad:
                    _accumulate(b, count, arith.AddfOp, b.constant(1.0, element))
            if count is not None and p.count_include_pad:
                with b.if_(b.all_of(in_padded)):
                    _accumulate(b, count, arith.AddfOp, b.constant(1.0, element))
        result = b.load(acc, [0], name="max" if p.kind == "max" else "sum")
        if lp:
            result = _lp_root(b, result, p.p)
        if average:
            divisor = (b.load(count, [0], name="count") if count is not None
                       else b.constant(math.prod(p.kernel), element))
            result = b.fop(arith.DivfOp, result, divisor, name="mean")
        b.store(result, y, [n, c, *out], [0] if partial else [])
    return kernel
