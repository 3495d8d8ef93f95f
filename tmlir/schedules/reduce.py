"""Row reductions with warp shuffles: reduce (sum, mean, max, min, ...) and softmax.

A tensor of shape ``(d0, ..., dn)`` is viewed as ``rows x cols``: a row is the elements
that share every coordinate outside the reduced dims, ``cols`` the product of the reduced
extents and ``rows`` that of the kept ones. When the reduced dims are the trailing ones
(from ``axis`` on) the view is a reshape and a row is contiguous in memory; otherwise a
row is strided (softmax over the channels of NCHW: ``cols = C``, columns ``H * W`` apart),
and the element ``(row, col)`` is found by unravelling both over their dims.

Each row belongs to ``T = threads_per_row`` threads of a block holding
``R = rows_per_block`` rows::

    blocks   spatial(ceil(rows / R))                 on block_id
    threads  spatial(R, T)                           on thread_id -> (r, t)
    columns  repeat(ceil(cols / T)) * spatial(T)     on t: a strided slice per thread

and a statistic of a row (its max, its sum, ...) takes three steps:

1. every thread accumulates its strided slice into a register; consecutive threads read
   consecutive columns, so the loads coalesce;
2. a butterfly of warp shuffles, ``v = op(v, shuffle xor v, m)`` for
   ``m = min(T, 32) / 2, ..., 1``, leaves the warp's part of the row in every lane (with
   ``T < 32`` a warp holds ``32 / T`` rows, and masks below ``T`` never cross rows);
3. when a row spans ``W = T / 32`` warps, lane 0 of each warp writes its value to
   ``partial[r][warp]`` in shared memory, the block meets at a barrier, each lane reads
   ``partial[r][lane % W]`` and a second butterfly over ``m = W / 2, ..., 1`` combines them.

Every thread of the row ends with the row's value, the same in all of them (bitwise, but
for the sign of a zero max or min). ``T <= 32`` is a warp (or part of one) per row, for
short rows; ``T > 32`` a block (or a part of one) per row, for long rows; ``T = 1`` a
thread per row, the default for many strided rows: consecutive threads take adjacent rows,
so their loads coalesce where the columns of one row would be far apart, and the schedule
of every f64 row (computed in double; ``tm.shuffle`` takes no f64). A block is whole
warps and every thread executes every shuffle and barrier: rows past the tensor and
columns past the row are masked only around the loads and stores, as CUDA's full-mask
shuffles require. Each statistic has its own shared ``partial`` buffer, so one barrier per
statistic is enough.

Kernels: :func:`reduce_kernel` (sum, mean, max, min, prod, l1, l2, sum_square, log_sum,
log_sum_exp: a statistic with another combine, element function or finalization; its max
and min propagate NaN, as numpy's, and take bools too: any, all),
:func:`softmax_kernel` (and log-softmax); `RowSchedule` is what every row kernel is built on
(``layernorm.py``, ``arg_reduce.py``). One pass over the row per statistic plus one for the output.
A kernel that reads the row more than once (softmax, layer norm: ``cache_row``) keeps each
thread's slice in registers when it is at most `CACHED_ELEMENTS` long: the first pass loads
it from global memory into ``row_cache[k]`` (its ``repeat`` loop unrolled, so the indices
are constants and the array stays in registers), the later passes read the registers. A
row is then one round trip to memory instead of one per pass (the latency model's serial
loads), and a fused prologue computing ``x`` runs once per element, not once per pass.
Longer slices are read again from global memory each pass (L2 hits).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, Float64Type, MemRefType, i1
from xdsl.ir import Attribute, Operation, SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import MAX_THREADS_PER_BLOCK, WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import repeat, spatial
from tmlir.schedules.common import kernel_attributes, name_args

REDUCE_KINDS = ("sum", "mean", "max", "min", "prod", "l1", "l2", "sum_square", "log_sum",
                "log_sum_exp")
#: The target block size of the default parameters.
DEFAULT_BLOCK = 256
#: Above this many columns a row gets more than one warp by default.
WARP_PER_ROW_MAX_COLS = 1024
#: The longest slice of a row one thread keeps in registers (``cache_row``): a warp per
#: row of up to 1024 columns, or 64 to 1024 threads on longer ones, is 32 at most.
CACHED_ELEMENTS = 32


def _is_pow2(x: int) -> bool:
    return x >= 1 and x & (x - 1) == 0


def _next_pow2(x: int) -> int:
    return 1 << max(0, x - 1).bit_length()


@dataclass(frozen=True)
class RowProblem:
    """A tensor of `shape` reduced over the dims `axes`, or without them over its trailing
    dims from `axis` (may be negative) on. Afterwards `axis` is the first reduced dim and
    `axes` the reduced dims, increasing.

    A rank-0 shape is taken as ``(1,)``, as buffers store it.
    """

    shape: tuple[int, ...]
    axis: int = -1
    axes: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        shape = tuple(self.shape) or (1,)
        rank = len(shape)
        if self.axes is None:
            axis = self.axis + rank if self.axis < 0 else self.axis
            if not 0 <= axis < rank:
                raise ValueError(f"axis {self.axis} is out of range for shape {list(shape)}")
            axes = tuple(range(axis, rank))
        else:
            axes = tuple(sorted({a + rank if a < 0 else a for a in self.axes}))
            if not axes or axes[0] < 0 or axes[-1] >= rank:
                raise ValueError(f"axes {list(self.axes)} are not valid dims of a rank-{rank} "
                                 "tensor")
        if any(d < 1 for d in shape):
            raise ValueError(f"shape {list(shape)} must have extents >= 1")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "axis", axes[0])
        object.__setattr__(self, "axes", axes)

    @classmethod
    def from_axes(cls, shape: Sequence[int], axes: Sequence[int]) -> RowProblem:
        """The problem of reducing `axes` (ONNX-style: any order, negative allowed)."""
        return cls(tuple(shape), axes=tuple(axes))

    @property
    def reduced(self) -> tuple[int, ...]:
        """The reduced dims (`axes`, never None after construction)."""
        assert self.axes is not None
        return self.axes

    @property
    def row_shape(self) -> tuple[int, ...]:
        """The extents of the kept dims (a row's coordinates)."""
        return tuple(n for d, n in enumerate(self.shape) if d not in self.reduced)

    @property
    def col_shape(self) -> tuple[int, ...]:
        """The extents of the reduced dims (a column's coordinates)."""
        return tuple(self.shape[d] for d in self.reduced)

    @property
    def col_stride(self) -> int:
        """Elements between consecutive columns of a row: 1 for a contiguous row."""
        return math.prod(self.shape[self.reduced[-1] + 1:])

    @property
    def strided(self) -> bool:
        """Whether a row is not one contiguous run of memory."""
        return any(self.shape[d] > 1 for d in range(self.axis, len(self.shape))
                   if d not in self.reduced)

    def index(self, row: Sequence[Index], col: Sequence[Index]) -> list[Index]:
        """The tensor index of the element with row coordinates `row` (over `row_shape`)
        and column coordinates `col` (over `col_shape`)."""
        rows, cols = iter(row), iter(col)
        return [next(cols) if d in self.reduced else next(rows) for d in range(len(self.shape))]

    @property
    def rows(self) -> int:
        return math.prod(self.row_shape)

    @property
    def cols(self) -> int:
        return math.prod(self.col_shape)

    @property
    def keepdims_shape(self) -> tuple[int, ...]:
        """The reduced tensor with the reduced dims kept as 1 (ONNX's keepdims=1)."""
        return tuple(1 if d in self.reduced else n for d, n in enumerate(self.shape))


@dataclass(frozen=True)
class ReduceParams:
    """Threads per row (a power of two) and rows per block; a block is whole warps."""

    threads_per_row: int = WARP_SIZE
    rows_per_block: int = 8

    def __post_init__(self) -> None:
        t, r = self.threads_per_row, self.rows_per_block
        if not _is_pow2(t) or t > MAX_THREADS_PER_BLOCK:
            raise ValueError(f"threads_per_row must be a power of two in [1, 1024], got {t}")
        if r < 1 or t * r > MAX_THREADS_PER_BLOCK:
            raise ValueError(f"rows_per_block x threads_per_row must be 1 to 1024 threads, got {r} x {t}")
        if (t * r) % WARP_SIZE:
            raise ValueError(
                f"a block must be whole warps (every lane takes part in the shuffles), got {r} x {t}"
            )

    @property
    def threads(self) -> int:
        return self.threads_per_row * self.rows_per_block

    @property
    def lanes_per_row(self) -> int:
        """Lanes of one warp that share a row (the first butterfly's width)."""
        return min(self.threads_per_row, WARP_SIZE)

    @property
    def warps_per_row(self) -> int:
        return max(1, self.threads_per_row // WARP_SIZE)

    def blocks(self, problem: RowProblem) -> int:
        return math.ceil(problem.rows / self.rows_per_block)

    def per_thread(self, problem: RowProblem) -> int:
        """Columns each thread visits (the strided slice's length)."""
        return math.ceil(problem.cols / self.threads_per_row)

    def shared_bytes(self, statistics: int) -> int:
        return 4 * statistics * self.rows_per_block * self.warps_per_row if self.warps_per_row > 1 else 0

    def describe(self) -> dict[str, int | str]:
        return {"threads_per_row": self.threads_per_row, "rows_per_block": self.rows_per_block,
                "threads": self.threads}

    @classmethod
    def default_for(cls, problem: RowProblem) -> ReduceParams:
        """Rows of up to 32 columns: a power-of-two part of a warp per row; up to 1024: a
        warp per row; longer rows: ``cols / 16`` threads (64 to 1024) per row. A strided
        row with at least as many rows as columns gets one thread, so that a warp's loads
        are 32 consecutive rows (adjacent in memory) rather than 32 columns of one row.
        Rows are stacked up to about 256 threads per block, no more than the problem has."""
        cols = problem.cols
        if problem.col_stride > 1 and problem.rows >= cols:
            t = 1
        elif cols <= WARP_SIZE:
            t = _next_pow2(cols)
        elif cols <= WARP_PER_ROW_MAX_COLS:
            t = WARP_SIZE
        else:
            t = min(MAX_THREADS_PER_BLOCK, max(2 * WARP_SIZE, _next_pow2(math.ceil(cols / 16))))
        r = min(max(1, DEFAULT_BLOCK // t), _next_pow2(problem.rows))
        return cls(t, max(r, WARP_SIZE // t))


@dataclass(frozen=True)
class Combine:
    """How two partial results of a statistic combine, the identity they start from, and
    their type (None: the kernel's float type, f32 or f64; or an integer type such as the
    i32 of a column index)."""

    identity: float
    apply: Callable[[IRBuilder, SSAValue, SSAValue, str | None], SSAValue]
    type: Attribute | None = None


def _op_combine(op_type: type[Operation], identity: float) -> Combine:
    return Combine(identity, lambda b, x, y, name: b.fop(op_type, x, y, name=name))


def _nan_extremum(predicate: str, identity: float) -> Combine:
    """numpy's ``maximum`` (``olt``) / ``minimum`` (``ogt``): ``y`` if ``x <pred> y`` or ``y``
    is NaN, else ``x``; NaN when either is NaN."""

    def apply(b: IRBuilder, x: SSAValue, y: SSAValue, name: str | None) -> SSAValue:
        better = b.insert(arith.CmpfOp(x, y, predicate)).results[0]
        y_nan = b.insert(arith.CmpfOp(y, y, "une")).results[0]
        return b.fop(arith.SelectOp, b.fop(arith.OrIOp, better, y_nan), y, x, name=name)

    return Combine(identity, apply)


SUM = _op_combine(arith.AddfOp, 0.0)
PROD = _op_combine(arith.MulfOp, 1.0)
#: ``fmaxf``: NaN is dropped. Enough for softmax, where a NaN still reaches every output
#: of its row through ``exp(x - max)`` and the sum.
MAXNUM = _op_combine(arith.MaxnumfOp, -math.inf)
#: NaN-propagating extrema, for the reductions (numpy's ``max`` / ``min``).
MAX = _nan_extremum("olt", -math.inf)
MIN = _nan_extremum("ogt", math.inf)


class RowSchedule:
    """The skeleton every kernel of this file shares: blocks and threads mapped to rows,
    each thread's strided slice of its row, and row statistics (accumulate, butterfly,
    cross-warp combine)."""

    def __init__(self, name: str, op: str, problem: RowProblem, params: ReduceParams,
                 args: Sequence[tuple[str, Sequence[int]] | tuple[str, Sequence[int], Attribute]],
                 statistics: Sequence[str | tuple[str, Attribute]],
                 float_type: Attribute = Float32Type(), cache_row: bool = False) -> None:
        """`args`: (name, shape[, element type (default `float_type`)]) of each kernel
        argument; `statistics`: the name[, and type (default `float_type`)] of each
        statistic. `float_type` is what the kernel computes in: f32, or f64 (in double).
        `cache_row`: the kernel reads ``x`` in several passes (`load_x`), so a thread's
        slice of at most `CACHED_ELEMENTS` stays in registers after the first."""
        self.float_type = float_type
        self.p, self.P = problem, params
        strided = {"axes": ",".join(map(str, problem.reduced))} if problem.strided else {}
        types = [MemRefType(a[2] if len(a) > 2 else float_type, list(a[1])) for a in args]
        self.kernel = tm.KernelOp(
            name, types, params.blocks(problem),
            params.threads,
            kernel_attributes("reduce", {"op": op, **params.describe(), "rows": problem.rows,
                                         "cols": problem.cols, **strided}),
        )
        name_args(self.kernel, [a[0] for a in args])
        self.args = dict(zip((a[0] for a in args), self.kernel.args))
        b = self.b = IRBuilder.at_end(self.kernel.body.block)
        self.bid = b.insert(tm.BlockIdOp(), "bid").results[0]
        self.tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
        typed = [(s, float_type) if isinstance(s, str) else s for s in statistics]
        self.accs = {float_type: b.insert(tm.AllocOp("register", MemRefType(float_type, [1])), "acc").results[0]}
        for _, type in typed:
            if type not in self.accs:
                register = tm.AllocOp("register", MemRefType(type, [1]))
                self.accs[type] = b.insert(register, f"acc_{type}").results[0]
        k = params.per_thread(problem)
        self.row_cache: SSAValue | None = None
        if cache_row and k <= CACHED_ELEMENTS:
            x_type = self.args["x"].type.element_type  # type: ignore[attr-defined]
            self.row_cache = b.insert(tm.AllocOp("register", MemRefType(x_type, [k])), "row_cache").results[0]
        self.row_cached = False  # a pass has loaded the slice into row_cache
        self._loaded = False  # the current pass loads x from global memory
        shape = [params.rows_per_block, params.warps_per_row]
        self.partials = {
            s: b.insert(tm.AllocOp("shared", MemRefType(type, shape)), f"{s}_partial").results[0]
            for s, type in typed
        } if params.warps_per_row > 1 else {}

    @contextmanager
    def rows(self) -> Iterator[None]:
        """The block's rows and each thread's (row, thread-in-row); sets ``row``, ``t``,
        ``row_ok`` (None when every row is inside the tensor) and the row's coordinates."""
        b, p, P = self.b, self.p, self.P
        with (
            b.for_task(spatial(P.blocks(p)), self.bid, ["blk"]) as (blk,),
            b.for_task(spatial(P.rows_per_block, P.threads_per_row), self.tid, ["r", "t"])
            as (r, t),
        ):
            self.r, self.t = r, t
            self.row = b.add(b.mul(blk, P.rows_per_block), r, "row")
            self.row_ok = b.lt(self.row, p.rows, "row_ok") if p.rows % P.rows_per_block else None
            self.row_coords = b.unravel(self.row, p.row_shape, in_range=True)
            if P.warps_per_row > 1:
                self.warp = b.div(t, WARP_SIZE, "warp")
                self.lane = b.rem(t, WARP_SIZE, "lane")
            yield

    @contextmanager
    def columns(self) -> Iterator[tuple[list[Index], list[Index]]]:
        """The thread's strided slice ``repeat(K) * spatial(T)`` of its row; the body runs
        only for columns inside the row and rows inside the tensor. Yields (the element's
        index in the input, its coordinates in the reduced dims)."""
        b, p, P = self.b, self.p, self.P
        k, t = P.per_thread(p), P.threads_per_row
        self._loaded = False
        with self._slice(k, t) as c:
            conditions = [self.row_ok] if self.row_ok is not None else []
            if p.cols % t:
                conditions.append(b.lt(c, p.cols, "in_row"))
            condition = conditions[0] if conditions else None
            if len(conditions) == 2:
                condition = b.fop(arith.AndIOp, *conditions, name="in_range")
            with b.if_(condition) if condition is not None else nullcontext():
                col = b.unravel(c, p.col_shape, in_range=True)
                yield p.index(self.row_coords, col), col
        if self.row_cache is not None and self._loaded:
            self.row_cached = True

    @contextmanager
    def _slice(self, k: int, t: int) -> Iterator[SSAValue]:
        """The column of each of the thread's `k` tasks (``repeat(k) * spatial(t)``); with
        a row cache, the repeat unrolled and its index kept (``slot``) to address the cache."""
        b = self.b
        if self.row_cache is not None:
            mapping = repeat(k, 1, unroll=[True, True]) * spatial(1, t)
            with b.for_task(mapping, self.t if t > 1 else None, ["slot", "tc"]) as (slot, tc):
                self.slot = slot
                yield b.add(b.mul(slot, t), tc, "c")
            return
        if t == 1:
            mapping, worker = repeat(k), None
        else:
            mapping, worker = (spatial(t) if k == 1 else repeat(k) * spatial(t)), self.t
        with b.for_task(mapping, worker, ["c"]) as (c,):
            yield c

    def load_x(self, index: Sequence[Index], name: str = "v") -> SSAValue:
        """Element `index` of ``x`` in a `columns` pass: from the row cache once a pass has
        filled it, else from global memory (into the cache, if there is one)."""
        b = self.b
        if self.row_cache is not None and self.row_cached:
            return b.load(self.row_cache, [self.slot], name=name)
        value = b.load(self.args["x"], index, name=name)
        if self.row_cache is not None:
            b.store(value, self.row_cache, [self.slot])
            self._loaded = True
        return value

    def statistic(self, name: str, combine: Combine,
                  element: Callable[[SSAValue], SSAValue] = lambda x: x,
                  element_at: Callable[[SSAValue, list[Index]], SSAValue] | None = None
                  ) -> SSAValue:
        """``combine`` over the row of ``element(x)`` (or ``element_at(x, column
        coordinates)``), in every thread of the row."""
        b, P = self.b, self.P
        type = combine.type or self.float_type
        acc = self.accs[type]
        b.store(b.constant(combine.identity, type), acc, [0])
        with self.columns() as (index, col):
            x = self.load_x(index)
            value = element_at(x, col) if element_at is not None else element(x)
            b.store(combine.apply(b, b.load(acc, [0]), value, None), acc, [0])
        value = self._butterfly(b.load(acc, [0], name=name), combine, P.lanes_per_row, name)
        if P.warps_per_row == 1:
            return value
        partial = self.partials[name]
        with b.if_(b.eq(self.lane, 0, "first_lane")):
            b.store(value, partial, [self.r, self.warp])
        b.insert(tm.BarrierOp())
        value = b.load(partial, [self.r, b.rem(self.lane, P.warps_per_row)], name=name)
        return self._butterfly(value, combine, P.warps_per_row, name)

    def _butterfly(self, value: SSAValue, combine: Combine, lanes: int, name: str) -> SSAValue:
        """``value = combine(value, shuffle xor value, m)`` for m = lanes / 2, ..., 1."""
        b = self.b
        mask = lanes // 2
        while mask:
            other = b.insert(tm.ShuffleOp(value, "xor", mask), f"{name}_xor{mask}").results[0]
            value = combine.apply(b, value, other, name)
            mask //= 2
        return value

    def single_thread(self) -> AbstractContextManager[None]:
        """Thread 0 of each row inside the tensor (for a per-row store)."""
        b = self.b
        first = b.eq(self.t, 0, "first")
        if self.row_ok is not None:
            first = b.fop(arith.AndIOp, first, self.row_ok)
        return b.if_(first)


def _params(problem: RowProblem, params: ReduceParams | None, element: Attribute) -> ReduceParams:
    """`params`, or the default schedule of `problem`. An f64 row is reduced by one thread
    (rows stacked 32 or more to a block): ``tm.shuffle`` does not take f64 values."""
    if element != Float64Type():
        return params or ReduceParams.default_for(problem)
    if params is None:
        return ReduceParams(1, max(WARP_SIZE, min(DEFAULT_BLOCK, _next_pow2(problem.rows))))
    if params.threads_per_row != 1:
        raise ValueError(f"an f64 row takes one thread (no f64 shuffles), got threads_per_row "
                         f"{params.threads_per_row}")
    return params


def fdiv(b: IRBuilder, x: SSAValue, y: float, name: str) -> SSAValue:
    return b.fop(arith.DivfOp, x, b.constant(y, x.type), name=name)


def _square(b: IRBuilder, x: SSAValue) -> SSAValue:
    return b.fop(arith.MulfOp, x, x)


#: kind -> (statistic, combine, element function): the row statistic each kind finalizes.
_KIND_STATISTICS: dict[str, tuple[str, Combine, Callable[[IRBuilder, SSAValue], SSAValue] | None]] = {
    "sum": ("row_sum", SUM, None), "mean": ("row_sum", SUM, None),
    "max": ("row_max", MAX, None), "min": ("row_min", MIN, None),
    "prod": ("row_prod", PROD, None), "log_sum": ("row_sum", SUM, None),
    "l1": ("row_sum", SUM, lambda b, x: b.fop(xmath.AbsFOp, x)),
    "l2": ("row_sq", SUM, _square), "sum_square": ("row_sq", SUM, _square),
    "log_sum_exp": ("row_max", MAX, None),
}


def reduce_kernel(name: str, kind: str, problem: RowProblem,
                  out_shape: Sequence[int] | None = None,
                  params: ReduceParams | None = None, element: Attribute = Float32Type()
                  ) -> tm.KernelOp:
    """A kernel ``(x, out)``: `kind` (one of `REDUCE_KINDS`) of each row of `problem`.

    `out_shape` is the output buffer's shape, any shape of ``rows`` elements (default
    ``problem.keepdims_shape``; a rank-0 output is ``(1,)``). `element` is the tensors'
    element type: f32, f64 (computed in double), or ``i1`` for max (any) and min (all),
    computed in f32 as 0 and 1.
    ``log_sum_exp`` is ``m + log(sum(exp(x - m)))`` with ``m`` the row's max where it is
    finite, else 0 (an infinite or NaN max makes the sum infinite or NaN as it should).
    """
    if kind not in REDUCE_KINDS:
        raise ValueError(f"unknown reduction '{kind}', expected one of {', '.join(REDUCE_KINDS)}")
    if element not in (Float32Type(), Float64Type(), i1) or (element == i1 and kind not in ("max", "min")):
        raise ValueError(f"reduction '{kind}' of {element} elements is not supported")
    out_shape = tuple(problem.keepdims_shape if out_shape is None else out_shape) or (1,)
    if math.prod(out_shape) != problem.rows:
        raise ValueError(f"output shape {list(out_shape)} does not hold {problem.rows} rows")
    P = _params(problem, params, element)
    stat, combine, function = _KIND_STATISTICS[kind]
    statistics = [stat, "row_sum"] if kind == "log_sum_exp" else [stat]
    s = RowSchedule(name, kind, problem, P,
                     [("x", problem.shape, element), ("out", out_shape, element)], statistics,
                     float_type=Float32Type() if element == i1 else element)
    b = s.b
    with s.rows():
        if element == i1:  # a bool as 0 or 1, back to a bool after the f32 max or min
            value = s.statistic(stat, combine, lambda x: b.fop(arith.UIToFPOp, x, Float32Type()))
            value = b.insert(arith.CmpfOp(value, b.f32(0.0), "une"), "any" if kind == "max" else "all").results[0]
        else:
            value = s.statistic(stat, combine, (lambda x: function(b, x)) if function else lambda x: x)
        if kind == "mean":
            value = fdiv(b, value, float(problem.cols), "mean")
        elif kind == "l2":
            value = b.fop(xmath.SqrtOp, value, name="norm")
        elif kind == "log_sum":
            value = b.fop(xmath.LogOp, value, name="log_sum")
        elif kind == "log_sum_exp":
            infinity, zero = b.constant(math.inf, element), b.constant(0.0, element)
            finite = b.insert(arith.CmpfOp(b.fop(xmath.AbsFOp, value), infinity, "olt")).results[0]
            shift = b.fop(arith.SelectOp, finite, value, zero, name="shift")
            total = s.statistic("row_sum", SUM, lambda x: b.fop(xmath.ExpOp, b.fop(arith.SubfOp, x, shift)))
            value = b.fop(arith.AddfOp, b.fop(xmath.LogOp, total), shift, name="log_sum_exp")
        with s.single_thread():
            b.store(value, s.args["out"], b.unravel(s.row, out_shape, in_range=True))
    return s.kernel


def softmax_kernel(name: str, problem: RowProblem, log: bool = False,
                   params: ReduceParams | None = None, element: Attribute = Float32Type()
                   ) -> tm.KernelOp:
    """A kernel ``(x, out)``: softmax (``log``: log-softmax) of each row of `problem`:
    ``exp(x - max) / sum(exp(x - max))`` and ``x - max - log(sum(exp(x - max)))``, on
    tensors of `element` (f32, or f64 computed in double)."""
    P = _params(problem, params, element)
    op = "log_softmax" if log else "softmax"
    s = RowSchedule(name, op, problem, P, [("x", problem.shape), ("out", problem.shape)],
                     ["row_max", "row_sum"], float_type=element, cache_row=True)
    b = s.b
    with s.rows():
        row_max = s.statistic("row_max", MAXNUM)
        row_sum = s.statistic(
            "row_sum", SUM,
            lambda x: b.fop(xmath.ExpOp, b.fop(arith.SubfOp, x, row_max)))
        if log:
            log_sum = b.fop(xmath.LogOp, row_sum, name="log_sum")
        else:
            inv_sum = b.fop(arith.DivfOp, b.constant(1.0, element), row_sum, name="inv_sum")
        with s.columns() as (index, _):
            shifted = b.fop(arith.SubfOp, s.load_x(index), row_max)
            y = (b.fop(arith.SubfOp, shifted, log_sum) if log
                 else b.fop(arith.MulfOp, b.fop(xmath.ExpOp, shifted), inv_sum))
            b.store(y, s.args["out"], index)
    return s.kernel
