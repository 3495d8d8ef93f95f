"""The pooling template (tmlir/schedules/pool.py): max and average pooling in 1, 2 and 3
spatial dims run on emu against a float64 numpy reference written from the definition
(relative error < 1e-5; max exact), with padding, strides, dilations, ceil_mode windows
past the end padding, count_include_pad, and partial last blocks; the bounds checks that
cannot fail are not emitted; problems and output sizes; and, where nvcc is on
PATH, ptxas statistics (no spills)."""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import ptxas_stats
from tmlir.dialects import tm
from tmlir.dialects.graph import pool_output_size
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.pool import PoolParams, PoolProblem, pool_kernel

RTOL = 1e-5


def pool_reference(x: np.ndarray, p: PoolProblem) -> np.ndarray:
    """Pooling by its definition, in float64: padding takes no part in a max and counts as
    0 in an average; the divisor counts the taps inside the input, or with
    count_include_pad inside the padded input."""
    k = p.spatial_rank
    x64 = x.astype(np.float64)
    y = np.empty(p.out_shape)
    for o in itertools.product(*map(range, p.out_spatial)):
        values, padded_taps = [], 0
        for t in itertools.product(*map(range, p.kernel)):
            pos = [o[d] * p.strides[d] - p.pads[d] + t[d] * p.dilations[d] for d in range(k)]
            if all(pos[d] < p.input_shape[2 + d] + p.pads[k + d] for d in range(k)):
                padded_taps += 1
            if all(0 <= pos[d] < p.input_shape[2 + d] for d in range(k)):
                values.append(x64[(slice(None), slice(None), *pos)])
        window = np.stack(values)
        index = (slice(None), slice(None), *o)
        if p.kind == "max":
            y[index] = window.max(0)
        else:
            y[index] = window.sum(0) / (padded_taps if p.count_include_pad else len(values))
    return y


def run(problem: PoolProblem, x: np.ndarray, block: int | None = None) -> np.ndarray:
    kernel = pool_kernel("pool", problem, PoolParams(block) if block else PoolParams())
    module = ModuleOp([kernel])
    module.verify()
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    y = np.full(problem.out_shape, np.nan, np.float32)
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        emu.launch("pool", kernel.grid.data, kernel.block.data, [x, y])
    return y


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


CASES = {
    # name: (input shape, kernel, strides, pads, dilations, ceil_mode)
    "2d_3x3_s2_p1": ((2, 3, 9, 10), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    "2d_default": ((1, 2, 5, 6), (2, 2), (), (), (), False),
    "2d_asymmetric_pads": ((1, 2, 7, 7), (3, 2), (1, 2), (2, 0, 1, 1), (1, 1), False),
    "2d_dilated": ((1, 3, 8, 9), (2, 3), (1, 1), (1, 1, 1, 1), (2, 2), False),
    "2d_ceil": ((1, 2, 6, 6), (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True),
    # the last window starts on the begin padding's far side only because of ceil_mode
    "2d_ceil_pads": ((2, 1, 5, 8), (2, 3), (2, 3), (1, 1, 0, 1), (1, 1), True),
    "2d_ceil_dilated": ((1, 2, 10, 7), (3, 2), (3, 2), (1, 0, 1, 0), (2, 2), True),
    "1d": ((2, 3, 17), (4,), (3,), (2, 1), (1,), True),
    "3d": ((1, 2, 5, 6, 7), (2, 3, 2), (2, 1, 2), (0, 1, 1, 1, 1, 0), (1, 2, 1), False),
    "3d_ceil": ((1, 1, 4, 5, 6), (2, 2, 3), (2, 2, 2), (0, 0, 0, 1, 0, 0), (1, 1, 1), True),
    "global_like": ((2, 4, 7, 7), (7, 7), (1, 1), (0, 0, 0, 0), (1, 1), False),
}


@pytest.mark.parametrize("variant", ["max", "average", "average_include_pad"])
@pytest.mark.parametrize("case", CASES)
def test_pool_matches_numpy(case, variant):
    kind, count_include_pad = variant.split("_")[0], variant.endswith("include_pad")
    shape, kernel, strides, pads, dilations, ceil_mode = CASES[case]
    problem = PoolProblem(kind, shape, kernel, strides, pads, dilations, ceil_mode,
                          count_include_pad)
    x = (3 * np.random.default_rng(0).standard_normal(shape)).astype(np.float32)
    got = run(problem, x)
    want = pool_reference(x, problem)
    if kind == "max":
        assert np.array_equal(got, want.astype(np.float32))
    else:
        assert relative_error(got, want) < RTOL


def test_partial_last_block():
    """1 x 3 x 5 x 5 outputs (75) in blocks of 32: the spare threads load and store nothing."""
    problem = PoolProblem("average", (1, 3, 10, 10), (2, 2), (2, 2))
    x = np.random.default_rng(1).standard_normal(problem.input_shape).astype(np.float32)
    got = run(problem, x, block=32)
    assert relative_error(got, pool_reference(x, problem)) < RTOL


def ops_of(problem: PoolProblem) -> list:
    return list(pool_kernel("pool", problem).walk())


def test_only_checks_that_can_fail_are_emitted():
    # No padding, windows that fit: no condition, no divisor register, a constant divisor.
    plain = ops_of(PoolProblem("average", (1, 8, 8, 8), (2, 2), (2, 2)))
    assert not any(isinstance(op, scf.IfOp | arith.CmpiOp) for op in plain)
    assert sum(isinstance(op, tm.AllocOp) for op in plain) == 1
    # Begin padding only (3x3, stride 1, pad 1 at the top and left): two lower checks.
    top_left = ops_of(PoolProblem("max", (1, 8, 9, 9), (3, 3), (1, 1), (1, 1, 0, 0)))
    compares = [op for op in top_left if isinstance(op, arith.CmpiOp)]
    assert [op.predicate.value.data for op in compares] == [9, 9]  # uge, uge
    # count_include_pad without ceil_mode: the divisor is the window size.
    include = ops_of(PoolProblem("average", (1, 8, 8, 8), (3, 3), (1, 1), (1, 1, 1, 1),
                                 count_include_pad=True))
    assert sum(isinstance(op, tm.AllocOp) for op in include) == 1


@pytest.mark.parametrize(("args", "expected"), [
    ((5, 2, 2, 1, 0, 0, False), 2),
    ((5, 2, 2, 1, 0, 0, True), 3),
    ((6, 3, 2, 1, 0, 0, True), 3),  # ceil((6 - 3) / 2) + 1 = 3: starts at 4 < 6
    ((5, 2, 2, 1, 0, 1, True), 3),
    ((4, 3, 3, 1, 1, 1, True), 2),  # ceil(3 / 3) + 1 = 2, starts at 3 < 4 + 1
    ((4, 2, 3, 1, 0, 1, True), 2),  # ceil(3 / 3) + 1 = 2, starts at 3 < 4
    ((3, 2, 2, 1, 1, 1, True), 2),  # ceil(3 / 2) + 1 = 3 starts at 4 >= 3 + 1: dropped
    ((3, 5, 1, 1, 0, 0, False), 0),  # the window does not fit
])
def test_output_size(args, expected):
    assert pool_output_size(*args) == expected


def test_problems():
    with pytest.raises(ValueError, match="window does not fit"):
        PoolProblem("max", (1, 1, 2, 2), (3, 3))
    with pytest.raises(ValueError, match="must have 2 values"):
        PoolProblem("max", (1, 1, 4, 4), (3,))
    with pytest.raises(ValueError, match="unknown kind 'min'"):
        PoolProblem("min", (1, 1, 4, 4), (3, 3))
    with pytest.raises(ValueError, match="p must be >= 1, got 0"):
        PoolProblem("lp", (1, 1, 4, 4), (3, 3), p=0)
    assert PoolProblem("max", (1, 2, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1)).out_shape == (1, 2, 4, 4)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("problem", [
    PoolProblem("max", (1, 64, 112, 112), (3, 3), (2, 2), (1, 1, 1, 1)),  # the ResNet stem's
    PoolProblem("average", (1, 64, 56, 56), (3, 3), (2, 2), (1, 1, 1, 1), ceil_mode=True,
                count_include_pad=True),
    PoolProblem("average", (1, 8, 9, 10, 11), (2, 3, 3), (2, 2, 2), (1, 0, 1, 1, 1, 0)),
], ids=["max_stem", "average_ceil_include_pad", "average_3d"])
def test_kernels_compile_without_spills(problem):
    module = ModuleOp([pool_kernel("pool", problem)])
    LowerToCuda().apply(make_context(), module)
    stats = ptxas_stats(emit_cuda(module).source, "sm_90")["pool"]
    assert stats.spill_bytes == 0 and stats.local_bytes == 0 and stats.shared_bytes == 0
    assert 0 < stats.registers <= 40
