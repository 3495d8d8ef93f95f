"""A reference interpreter of the graph dialect in numpy, for the frontend tests.

It gives every graph op its meaning independently of the compiler's lowering, so that
importing an ONNX model and evaluating its graph IR can be compared with onnxruntime.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from xdsl.dialects import func

from tmlir import dtypes
from tmlir.dialects import graph
from tmlir.frontends.onnx import ImportedModel

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _unary(op: graph.UnaryElementwiseOp, x: np.ndarray) -> np.ndarray:
    p = op.parameters()
    match op:
        case graph.ReluOp():
            return np.maximum(x, 0)
        case graph.SigmoidOp():
            return 1 / (1 + np.exp(-x))
        case graph.LeakyReluOp():
            return np.where(x < 0, p["alpha"] * x, x)
        case graph.HardSigmoidOp():
            return np.clip(p["alpha"] * x + p["beta"], 0, 1)
        case graph.HardSwishOp():
            return x * np.clip(x / 6 + 0.5, 0, 1)
        case graph.EluOp():
            return np.where(x < 0, p["alpha"] * np.expm1(x), x)
        case graph.SeluOp():
            return p["gamma"] * np.where(x <= 0, p["alpha"] * np.expm1(x), x)
        case graph.GeluOp() if p.get("approximate") == "tanh":
            return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
        case graph.GeluOp():
            return 0.5 * x * (1 + _erf(x / np.sqrt(2)))
        case graph.ClipOp():
            return np.clip(x, p.get("min", -np.inf), p.get("max", np.inf))
    functions = {
        graph.TanhOp: np.tanh, graph.ExpOp: np.exp, graph.LogOp: np.log, graph.SqrtOp: np.sqrt,
        graph.ReciprocalOp: np.reciprocal, graph.NegOp: np.negative, graph.AbsOp: np.abs,
        graph.ErfOp: _erf, graph.SoftplusOp: lambda v: np.logaddexp(v, 0),
        graph.SoftsignOp: lambda v: v / (1 + np.abs(v)),
    }
    return functions[type(op)](x)


_NARY = {
    graph.AddOp: np.add, graph.SubOp: np.subtract, graph.MulOp: np.multiply,
    graph.DivOp: np.divide, graph.PowOp: np.power,
    graph.MaxOp: lambda *xs: np.maximum.reduce(np.broadcast_arrays(*xs)),
    graph.MinOp: lambda *xs: np.minimum.reduce(np.broadcast_arrays(*xs)),
    graph.SumOp: lambda *xs: sum(xs[1:], xs[0]),
    graph.MeanOp: lambda *xs: sum(xs[1:], xs[0]) / len(xs),
    graph.EqualOp: np.equal, graph.LessOp: np.less, graph.LessEqualOp: np.less_equal,
    graph.GreaterOp: np.greater, graph.GreaterEqualOp: np.greater_equal,
    graph.AndOp: np.logical_and, graph.OrOp: np.logical_or, graph.XorOp: np.logical_xor,
    graph.NotOp: np.logical_not, graph.IsNanOp: np.isnan, graph.WhereOp: np.where,
}


def _window_reduction(op: graph.PoolOp, x: np.ndarray) -> np.ndarray:
    """Max or average pooling by its definition (padding takes no part in a max and counts
    as 0 in an average, whose divisor counts the taps inside the input, or with
    count_include_pad inside the padded input)."""
    kernel, strides, pads, dilations = op.window()
    k = len(kernel)
    out_shape = op.result.type.get_shape()
    y = np.empty(out_shape, x.dtype)
    include_pad = isinstance(op, graph.AveragePoolOp) and op.count_include_pad is not None
    for o in itertools.product(*map(range, out_shape[2:])):
        values, padded = [], 0
        for t in itertools.product(*map(range, kernel)):
            pos = [o[d] * strides[d] - pads[d] + t[d] * dilations[d] for d in range(k)]
            padded += all(pos[d] < x.shape[2 + d] + pads[k + d] for d in range(k))
            if all(0 <= pos[d] < x.shape[2 + d] for d in range(k)):
                values.append(x[(slice(None), slice(None), *pos)])
        window = np.stack(values)
        at = (slice(None), slice(None), *o)
        if isinstance(op, graph.MaxPoolOp):
            y[at] = window.max(0)
        else:
            y[at] = window.sum(0) / (padded if include_pad else len(values))
    return y


def _reduction(op, x: np.ndarray, *rest: np.ndarray) -> list[np.ndarray]:
    """The results of a reduction, normalization or pooling op."""
    if isinstance(op, graph.PoolOp):
        return [_window_reduction(op, x)]
    if isinstance(op, graph.LayerNormOp):
        axes = tuple(range(op.axis_value, x.ndim))
        mean = x.mean(axes, keepdims=True)
        inv_std = 1 / np.sqrt(((x - mean) ** 2).mean(axes, keepdims=True) + op.epsilon_value)
        y = (x - mean) * inv_std * rest[0] + (rest[1] if len(rest) > 1 else 0)
        return [y, mean, inv_std][:len(op.results)]
    axes = op.reduced_axes
    if isinstance(op, graph.SoftmaxBaseOp):
        shifted = x - x.max(axes, keepdims=True)
        log_sum = np.log(np.exp(shifted).sum(axes, keepdims=True))
        return [shifted - log_sum if isinstance(op, graph.LogSoftmaxOp)
                else np.exp(shifted - log_sum)]
    functions = {graph.ReduceSumOp: np.sum, graph.ReduceMeanOp: np.mean,
                 graph.ReduceMaxOp: np.max, graph.ReduceMinOp: np.min}
    return [functions[type(op)](x, axes, keepdims=op.keepdims is not None)]


def evaluate(imported: ImportedModel, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs of the imported model's ``@main`` on `feeds`, computed op by op."""
    (function,) = imported.module.ops
    env = {arg: feeds[name] for arg, name in zip(function.args, imported.input_names)}
    for op in function.body.block.ops:
        get = [env[v] for v in op.operands]
        if isinstance(op, func.ReturnOp):
            return get
        if isinstance(op, graph.WeightOp):
            result = imported.weights[op.weight_name.data]
        elif isinstance(op, graph.MatmulOp):
            lhs, rhs = get[0], get[1]
            lhs = np.swapaxes(lhs, -1, -2) if op.transpose_lhs else lhs
            rhs = np.swapaxes(rhs, -1, -2) if op.transpose_rhs else rhs
            result = op.alpha_value * (lhs @ rhs)
            if op.bias is not None:
                result = result + op.beta_value * get[2]
        elif isinstance(op, graph.UnaryElementwiseOp):
            result = _unary(op, get[0])
        elif isinstance(op, graph.CastOp):
            result = get[0].astype(dtypes.of_ir(op.result.type.get_element_type()).numpy)
        elif isinstance(op, graph.ReduceOp | graph.SoftmaxBaseOp | graph.LayerNormOp |
                        graph.PoolOp):
            result, *more = _reduction(op, *get)  # graph.layer_norm may have three results
            for value, array in zip(op.results[1:], more):
                env[value] = np.asarray(array, dtype=get[0].dtype)
        else:
            result = _NARY[type(op)](*get)
        result = np.asarray(result, dtype=dtypes.of_ir(
            op.results[0].type.get_element_type()).numpy)
        assert list(result.shape) == list(op.results[0].type.get_shape()), op.name
        env[op.results[0]] = result
    raise AssertionError("no func.return")
