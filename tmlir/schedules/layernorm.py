"""``layernorm_kernel``: each row of a `RowProblem` normalized to zero mean and unit
variance, times a scale and plus a bias, on the row schedule of ``reduce.py`` (two
statistics, the sum and the sum of squared differences, then one pass for the output).
ONNX's ``LayerNormalization`` (with its optional ``Mean`` / ``InvStdDev`` outputs), and
the normalizations the frontend composes from it (``InstanceNormalization``,
``GroupNormalization``, ``MeanVarianceNormalization``), are scheduled here.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.ir import SSAValue

from tmlir.dialects import tm
from tmlir.schedules.common import broadcast_index
from tmlir.schedules.reduce import SUM, ReduceParams, RowProblem, RowSchedule, fdiv


def layernorm_kernel(name: str, problem: RowProblem, epsilon: float = 1e-5,
                     scale_shape: Sequence[int] | None = None,
                     bias_shape: Sequence[int] | None = None,
                     params: ReduceParams | None = None,
                     statistics: bool = False) -> tm.KernelOp:
    """A kernel ``(x, [scale,] [bias,] out[, mean, inv_std_dev])``: each row normalized to
    zero mean and unit variance, then times ``scale`` and plus ``bias`` (each optional,
    broadcast numpy-style to the reduced dims ``problem.col_shape``):
    ``(x - mean) / sqrt(var + epsilon) * scale + bias``. With `statistics`, also each row's
    mean and ``1 / sqrt(var + epsilon)``, of shape ``problem.keepdims_shape`` (ONNX
    LayerNormalization's optional outputs).

    The variance is two-pass, ``mean((x - mean)^2)``: no cancellation as in
    ``E[x^2] - E[x]^2``.
    """
    P = params or ReduceParams.default_for(problem)
    for what, shape in (("scale", scale_shape), ("bias", bias_shape)):
        if shape is not None and not _broadcasts(tuple(shape), problem.col_shape):
            raise ValueError(f"{what} shape {list(shape)} does not broadcast to the normalized "
                             f"shape {list(problem.col_shape)}")
    args = [("x", problem.shape)]
    args += [("scale", tuple(scale_shape))] if scale_shape is not None else []
    args += [("bias", tuple(bias_shape))] if bias_shape is not None else []
    args += [("out", problem.shape)]
    stats_shape = problem.keepdims_shape
    args += [("mean", stats_shape), ("inv_std_dev", stats_shape)] if statistics else []
    s = RowSchedule(name, "layernorm", problem, P, args, ["row_sum", "row_sq"], cache_row=True)
    b = s.b
    cols = float(problem.cols)
    with s.rows():
        mean = fdiv(b, s.statistic("row_sum", SUM), cols, "mean")

        def square(x: SSAValue) -> SSAValue:
            d = b.fop(arith.SubfOp, x, mean)
            return b.fop(arith.MulfOp, d, d)

        var = fdiv(b, s.statistic("row_sq", SUM, square), cols, "var")
        std = b.fop(xmath.SqrtOp, b.fop(arith.AddfOp, var, b.f32(epsilon)))
        rstd = b.fop(arith.DivfOp, b.f32(1.0), std, name="rstd")
        if statistics:
            with s.single_thread():
                at = b.unravel(s.row, stats_shape, in_range=True)
                b.store(mean, s.args["mean"], at)
                b.store(rstd, s.args["inv_std_dev"], at)
        with s.columns() as (index, col):
            x = s.load_x(index)
            y = b.fop(arith.MulfOp, b.fop(arith.SubfOp, x, mean), rstd)
            for what, hint, op_type in (("scale", "gamma", arith.MulfOp),
                                        ("bias", "beta", arith.AddfOp)):
                if what in s.args:
                    shape = s.args[what].type.get_shape()
                    v = b.load(s.args[what], broadcast_index(col, problem.col_shape, shape),
                               name=hint)
                    y = b.fop(op_type, y, v)
            b.store(y, s.args["out"], index)
    return s.kernel


def _broadcasts(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    return len(shape) <= len(to) and all(
        d in (1, t) for d, t in zip(reversed(shape), reversed(to)))
