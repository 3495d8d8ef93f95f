"""Index-of reductions on the row template of ``reduce.py``: arg max / arg min, hardmax.

A row is the elements along the reduced axis (``RowProblem`` with one axis, strided when
dims follow it), and each row takes two statistics with the template's strided slices,
warp butterflies and cross-warp combine:

1. ``best``, the row's max (arg min: min), NaN if the row has a NaN;
2. the first column (``select_last_index``: the last) whose element is ``best``, or is a
   NaN where ``best`` is NaN, as an i32 minimum (maximum) over the columns; a column that
   does not qualify counts as ``2^31 - 1`` (``-1``).

That is numpy's ``argmax`` / ``argmin``: the first extreme wins, and the first NaN where
there is one. ``arg_max`` / ``arg_min`` store the index as i64; ``hardmax`` writes 1 at
that column and 0 at the others, in a third pass over the row. Rows of up to ``2^31 - 1``
columns.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import i32, i64
from xdsl.ir import SSAValue

from tmlir.dialects import tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.schedules.reduce import MAX, MIN, Combine, ReduceParams, RowProblem, RowSchedule

_NOT_FOUND_FIRST = 2**31 - 1
_NOT_FOUND_LAST = -1


def _check_problem(problem: RowProblem) -> None:
    if len(problem.reduced) != 1:
        raise ValueError(f"an index-of reduction takes one axis, got {list(problem.reduced)}")
    if problem.cols > _NOT_FOUND_FIRST:
        raise ValueError(f"rows of {problem.cols} elements are longer than 2^31 - 1")


def _extreme_index(s: RowSchedule, best: SSAValue, last: bool) -> SSAValue:
    """The i32 column of the first (`last`: last) element of the row that is `best` (or a
    NaN when `best` is NaN), in every thread of the row."""
    b = s.b
    sentinel = _NOT_FOUND_LAST if last else _NOT_FOUND_FIRST

    def candidate(x: SSAValue, col: list[Index]) -> SSAValue:
        hit = b.insert(arith.CmpfOp(x, best, "oeq")).results[0]
        x_nan = b.insert(arith.CmpfOp(x, x, "une")).results[0]
        best_nan = b.insert(arith.CmpfOp(best, best, "une")).results[0]
        hit = b.fop(arith.OrIOp, hit, b.fop(arith.AndIOp, x_nan, best_nan), name="hit")
        column = b.fop(arith.IndexCastOp, b.value(col[0]), i32)
        return b.fop(arith.SelectOp, hit, column, b.constant(sentinel, i32))

    def pick(b: IRBuilder, x: SSAValue, y: SSAValue, name: str | None) -> SSAValue:
        better = b.insert(arith.CmpiOp(x, y, "sgt" if last else "slt")).results[0]
        return b.fop(arith.SelectOp, better, x, y, name=name)

    return s.statistic("row_index", Combine(sentinel, pick, i32), element_at=candidate)


def arg_reduce_kernel(name: str, problem: RowProblem, smallest: bool = False, last: bool = False,
                      out_shape: Sequence[int] | None = None,
                      params: ReduceParams | None = None) -> tm.KernelOp:
    """A kernel ``(x, out)``: the i64 index along the one reduced axis of `problem` of each
    row's largest element (`smallest`: smallest; `last`: the last such). `out_shape` is the
    i64 output's shape, any shape of ``rows`` elements (default ``problem.keepdims_shape``)."""
    _check_problem(problem)
    out_shape = tuple(problem.keepdims_shape if out_shape is None else out_shape) or (1,)
    P = params or ReduceParams.default_for(problem)
    op = "arg_min" if smallest else "arg_max"
    s = RowSchedule(name, op, problem, P, [("x", problem.shape), ("out", out_shape, i64)],
                     ["row_best", ("row_index", i32)])
    b = s.b
    with s.rows():
        best = s.statistic("row_best", MIN if smallest else MAX)
        index = _extreme_index(s, best, last)
        with s.single_thread():
            b.store(b.fop(arith.ExtSIOp, index, i64), s.args["out"],
                    b.unravel(s.row, out_shape, in_range=True))
    return s.kernel


def hardmax_kernel(name: str, problem: RowProblem,
                   params: ReduceParams | None = None) -> tm.KernelOp:
    """A kernel ``(x, out)``: 1 at the first largest element of each row of `problem` (the
    first NaN where the row has one), 0 elsewhere."""
    _check_problem(problem)
    P = params or ReduceParams.default_for(problem)
    s = RowSchedule(name, "hardmax", problem, P, [("x", problem.shape), ("out", problem.shape)],
                     ["row_best", ("row_index", i32)])
    b = s.b
    with s.rows():
        index = _extreme_index(s, s.statistic("row_best", MAX), last=False)
        with s.columns() as (at, col):
            column = b.fop(arith.IndexCastOp, b.value(col[0]), i32)
            hit = b.insert(arith.CmpiOp(column, index, "eq")).results[0]
            b.store(b.fop(arith.SelectOp, hit, b.f32(1.0), b.f32(0.0), name="y"), s.args["out"], at)
    return s.kernel
