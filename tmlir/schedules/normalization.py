"""The windowed normalizations on their templates: ``graph.lp_pool`` and ``graph.lrn``.

``graph.lp_pool`` is a pooling, built by the pooling template (``pool.py``, kind ``lp``).
``graph.lrn`` has its own, one thread per output element, the channel window as a
``repeat`` over its taps::

    blocks   spatial(ceil(total / block))    on block_id
    threads  spatial(block)                  on thread_id -> output (n, c, d1, ..., dk)
    window   repeat(size)                    the thread's taps k

Tap ``k`` of channel ``c`` reads ``x[n, c - below + k, d]`` (``below = floor((size - 1) / 2)``)
when that channel is in ``[0, C)``; only the checks that can fail are emitted (none for
``size = 1``). The thread then stores ``x / powf(bias + alpha / size * square_sum, beta)``.
Consecutive threads take consecutive elements along the last dim, so every tap's loads
are coalesced. The kernel's arguments are ``(x, y)``, the op's operand and result.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.gpu_limits import WARP_SIZE
from tmlir.ir.builder import IRBuilder
from tmlir.mapping import repeat
from tmlir.schedules.common import f32_memref, kernel_attributes, name_args, per_element
from tmlir.schedules.pool import PoolParams, PoolProblem, pool_kernel
from tmlir.schedules.registry import schedules


@dataclass(frozen=True)
class LRNProblem:
    """One LRN of an ``(N, C, D1, ..., Dk)`` tensor (k >= 0) over `size` channels."""

    shape: tuple[int, ...]
    size: int
    alpha: float = 1e-4
    beta: float = 0.75
    bias: float = 1.0

    def __post_init__(self) -> None:
        shape = tuple(int(d) for d in self.shape)
        if len(shape) < 2 or min(shape) < 1:
            raise ValueError(f"lrn: shape {list(shape)} must be (N, C, ...) with extents >= 1")
        if self.size < 1:
            raise ValueError(f"lrn: size must be >= 1, got {self.size}")
        object.__setattr__(self, "shape", shape)

    def describe(self) -> dict[str, int | str]:
        """The attributes, for the kernel header."""
        return {"size": self.size, "alpha": _g(self.alpha), "beta": _g(self.beta),
                "bias": _g(self.bias)}


def _g(value: float) -> str:
    return f"{value:.7g}"


def lrn_kernel(name: str, problem: LRNProblem, params: PoolParams = PoolParams()) -> tm.KernelOp:
    """A kernel ``(x, y)``: `problem`'s LRN, one thread per output element."""
    p = problem
    channels = p.shape[1]
    below, above = graph.lrn_window(p.size)
    total = math.prod(p.shape)
    block = min(params.block, WARP_SIZE * math.ceil(total / WARP_SIZE))
    grid = math.ceil(total / block)
    partial = total % block != 0  # the last block's spare threads fall past dim 0
    kernel = tm.KernelOp(name, [f32_memref(p.shape), f32_memref(p.shape)], grid, block,
                         kernel_attributes("lrn", {**p.describe(), "block": block}))
    name_args(kernel, ["x", "y"])
    x, y = kernel.args

    b = IRBuilder.at_end(kernel.body.block)
    bid = b.insert(tm.BlockIdOp(), "bid").results[0]
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    acc = b.insert(tm.AllocOp("register", f32_memref((1,))), "acc").results[0]
    with per_element(b, bid, tid, grid, block, p.shape,
                     ["n", "c", *(f"d{i}" for i in range(len(p.shape) - 2))], partial) as (n, c, *rest):
        n_ok = b.lt(n, p.shape[0], "n_ok") if partial else None  # spare threads: n >= N
        b.store(b.f32(0.0), acc, [0])
        with b.for_task(repeat(p.size), None, ["k"]) as (k,):
            shifted = b.add(c, k, "shifted")  # the tap's channel + below: never negative
            inside = [n_ok] if n_ok is not None else []
            if below > 0:
                inside.append(b.ge(shifted, below))
            if above > 0:
                inside.append(b.lt(shifted, channels + below))
            channel = b.sub(shifted, below, "j")
            if isinstance(channel, SSAValue) and channel.name_hint is None:
                channel.name_hint = "j"  # no channel below: the same value as c + k
            condition = b.all_of(inside)
            if condition is not None and condition.name_hint is None:
                condition.name_hint = "inside"
            with b.if_(condition) if condition is not None else nullcontext():
                v = b.load(x, [n, channel, *rest], name="v")
                square = b.fop(arith.MulfOp, v, v, name="sq")
                b.store(b.fop(arith.AddfOp, b.load(acc, [0]), square), acc, [0])
        square_sum = b.load(acc, [0], name="square_sum")
        scaled = b.fop(arith.MulfOp, b.f32(p.alpha / p.size), square_sum)
        base = b.fop(arith.AddfOp, b.f32(p.bias), scaled, name="base")
        divisor = b.fop(xmath.PowFOp, base, b.f32(p.beta), name="divisor")
        guard = [0] if partial else []
        center = b.load(x, [n, c, *rest], guard, name="center")
        b.store(b.fop(arith.DivfOp, center, divisor, name="out"), y, [n, c, *rest], guard)
    return kernel


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


@schedules(graph.LpPoolOp, graph.LRNOp)
def normalization_kernel(name: str, op: Operation) -> tm.KernelOp:
    """The kernel of an Lp pool or an LRN; a ValueError for what the templates cannot do."""
    match op:
        case graph.LpPoolOp():
            kernel, strides, pads, dilations = op.window()
            return pool_kernel(name, PoolProblem("lp", _shape(op.input), kernel, strides, pads,
                                                 dilations, op.ceil_mode is not None,
                                                 p=op.p_value))
        case graph.LRNOp():
            size, alpha, beta, bias = op.parameters()
            return lrn_kernel(name, LRNProblem(_shape(op.input), size, alpha, beta, bias))
    raise AssertionError(f"not a windowed normalization: {op.name}")
