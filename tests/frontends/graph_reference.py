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
        case graph.ThresholdedReluOp():
            return np.where(x > p["alpha"], x, 0)
        case graph.ShrinkOp():
            return np.where(x < -p["lambd"], x + p["bias"],
                            np.where(x > p["lambd"], x - p["bias"], 0))
        case graph.CeluOp():
            return np.maximum(0, x) + np.minimum(0, p["alpha"] * np.expm1(x / p["alpha"]))
    functions = {
        graph.TanhOp: np.tanh, graph.ExpOp: np.exp, graph.LogOp: np.log, graph.SqrtOp: np.sqrt,
        graph.ReciprocalOp: np.reciprocal, graph.NegOp: np.negative, graph.AbsOp: np.abs,
        graph.ErfOp: _erf, graph.SoftplusOp: lambda v: np.logaddexp(v, 0),
        graph.SoftsignOp: lambda v: v / (1 + np.abs(v)),
        graph.SignOp: np.sign, graph.FloorOp: np.floor, graph.CeilOp: np.ceil,
        graph.RoundOp: np.round, graph.SinOp: np.sin, graph.CosOp: np.cos, graph.TanOp: np.tan,
        graph.AsinOp: np.arcsin, graph.AcosOp: np.arccos, graph.AtanOp: np.arctan,
        graph.SinhOp: np.sinh, graph.CoshOp: np.cosh, graph.AsinhOp: np.arcsinh,
        graph.AcoshOp: np.arccosh, graph.AtanhOp: np.arctanh, graph.BitwiseNotOp: np.invert,
        graph.MishOp: lambda v: v * np.tanh(np.logaddexp(v, 0)),
    }
    return functions[type(op)](x)


def _shift(x: np.ndarray, y: np.ndarray, shift) -> np.ndarray:
    """ONNX BitShift (opset 28): out of [0, bits) 0, or -1 right of a negative x."""
    inside = (y >= 0) & (y < 8 * x.itemsize)
    fill = np.where((x < 0) & (shift is np.right_shift), -1, 0)
    return np.where(inside, shift(x, np.where(inside, y, 0).astype(x.dtype)), fill)


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
    graph.BitwiseAndOp: np.bitwise_and, graph.BitwiseOrOp: np.bitwise_or,
    graph.BitwiseXorOp: np.bitwise_xor, graph.PReluOp: lambda x, s: np.where(x < 0, s * x, x),
    graph.ShiftLeftOp: lambda x, y: _shift(x, y, np.left_shift),
    graph.ShiftRightOp: lambda x, y: _shift(x, y, np.right_shift),
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
        if isinstance(op, graph.MaxPoolOp | graph.MaxPoolWithIndicesOp):
            y[at] = window.max(0)
        elif isinstance(op, graph.LpPoolOp):  # padding adds 0
            y[at] = (np.abs(window.astype(np.float64)) ** op.p_value).sum(0) ** (1 / op.p_value)
        else:
            y[at] = window.sum(0) / (padded if include_pad else len(values))
    return y


def _max_pool_indices(op: graph.MaxPoolWithIndicesOp, x: np.ndarray) -> np.ndarray:
    """ONNX MaxPool's Indices: the flattened input index of each window's first max, the
    spatial dims row-major (column-major with storage_order 1) after (n * C + c)."""
    kernel, strides, pads, dilations = op.window()
    k, spatial = len(kernel), x.shape[2:]
    order = list(reversed(spatial)) if op.column_major is not None else list(spatial)
    out = np.empty(op.indices.type.get_shape(), np.int64)
    for n, c, *o in itertools.product(*map(range, out.shape)):
        taps = [[o[d] * strides[d] - pads[d] + t[d] * dilations[d] for d in range(k)]
                for t in itertools.product(*map(range, kernel))]
        taps = [pos for pos in taps if all(0 <= pos[d] < spatial[d] for d in range(k))]
        best = max(taps, key=lambda pos: (x[(n, c, *pos)], -taps.index(pos)))
        place = best[::-1] if op.column_major is not None else best
        out[(n, c, *o)] = (n * x.shape[1] + c) * math.prod(spatial) + int(np.ravel_multi_index(place, order))
    return out


def _lrn(op: graph.LRNOp, x: np.ndarray) -> np.ndarray:
    """ONNX's LRN: the squares summed over channels [c - floor((size-1)/2), c + ceil(...)]."""
    size, alpha, beta, bias = op.parameters()
    below, above = graph.lrn_window(size)
    squares = np.pad(x.astype(np.float64) ** 2, [(0, 0), (below, above)] + [(0, 0)] * (x.ndim - 2))
    square_sum = sum(squares[:, j:j + x.shape[1]] for j in range(size))
    return x / (bias + alpha / size * square_sum) ** beta


def _reduction(op, x: np.ndarray, *rest: np.ndarray) -> list[np.ndarray]:
    """The results of a reduction, normalization or pooling op."""
    if isinstance(op, graph.MaxPoolWithIndicesOp):
        return [_window_reduction(op, x), _max_pool_indices(op, x)]
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
                 graph.ReduceMaxOp: np.max, graph.ReduceMinOp: np.min,
                 graph.ReduceProdOp: np.prod,
                 graph.ReduceL1Op: lambda v, *a, **k: np.sum(np.abs(v), *a, **k),
                 graph.ReduceL2Op: lambda v, *a, **k: np.sqrt(np.sum(v * v, *a, **k)),
                 graph.ReduceSumSquareOp: lambda v, *a, **k: np.sum(v * v, *a, **k),
                 graph.ReduceLogSumOp: lambda v, *a, **k: np.log(np.sum(v, *a, **k)),
                 graph.ReduceLogSumExpOp: lambda v, *a, **k: np.log(np.sum(np.exp(v), *a, **k))}
    return [functions[type(op)](x, axes, keepdims=op.keepdims is not None)]


def _axis_op(op, x: np.ndarray) -> list[np.ndarray]:
    """The results of arg max / min, hardmax, cumsum, top-k (indices last)."""
    axis = op.axis_value
    if isinstance(op, graph.ArgReduceOp):
        flip = op.select_last_index is not None
        v = np.flip(x, axis) if flip else x
        i = (np.argmin if isinstance(op, graph.ArgMinOp) else np.argmax)(v, axis, keepdims=True)
        i = x.shape[axis] - 1 - i if flip else i
        return [i if op.keepdims is not None else np.squeeze(i, axis)]
    if isinstance(op, graph.HardmaxOp):
        return [(np.arange(x.shape[axis]).reshape([-1 if d == axis else 1 for d in range(x.ndim)])
                 == np.argmax(x, axis, keepdims=True)).astype(x.dtype)]
    if isinstance(op, graph.CumSumOp):
        v = np.flip(x, axis) if op.reverse is not None else x
        y = np.cumsum(v, axis, dtype=x.dtype)
        if op.exclusive is not None:  # shifted by one, from 0
            y = np.concatenate([np.zeros_like(np.take(y, [0], axis)),
                                np.take(y, range(x.shape[axis] - 1), axis)], axis)
        return [np.flip(y, axis) if op.reverse is not None else y]
    order = np.argsort(x if op.smallest is not None else -x, axis, kind="stable")
    indices = np.take(order, range(op.k_value), axis)
    return [np.take_along_axis(x, indices, axis), indices]


def _scatter(op, data: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> np.ndarray:
    """ONNX's ScatterElements / ScatterND, the updates applied in order."""
    out = data.copy()
    combine = {"none": lambda old, new: new, "add": np.add, "mul": np.multiply,
               "max": np.maximum, "min": np.minimum}[op.reduction_value]
    if isinstance(op, graph.ScatterNdOp):
        k = indices.shape[-1]
        rows = indices.reshape(-1, k)
        for row, update in zip(rows, updates.reshape(len(rows), *data.shape[k:])):
            at = tuple(int(i) % n for i, n in zip(row, data.shape))
            out[at] = combine(out[at], update)
        return out
    axis = op.axis_value
    for p in itertools.product(*map(range, indices.shape)):
        at = list(p)
        at[axis] = int(indices[p]) % data.shape[axis]
        out[tuple(at)] = combine(out[tuple(at)], updates[p])
    return out


def _indexing(op, get: list[np.ndarray]) -> np.ndarray | None:
    """The scatters, generated tensors, and the slice and expand of Einsum's lowering;
    None for other ops."""
    shape = op.results[0].type.get_shape()
    match op:
        case graph.ScatterElementsOp() | graph.ScatterNdOp():
            return _scatter(op, *get)
        case graph.EyeOp():
            return np.eye(shape[0], shape[1], op.k_value)
        case graph.TriluOp():
            return (np.triu if op.upper_value else np.tril)(get[0], op.k_value)
        case graph.OneHotOp():
            depth, axis = op.depth, op.axis_value
            indices = np.where(get[0] < 0, get[0] + depth, get[0])
            hot = np.moveaxis(indices[..., None] == np.arange(depth), -1, axis)
            return np.where(hot, get[1][1], get[1][0])
        case graph.SliceOp():
            return get[0][tuple(slice(start, None, step) for start, step in
                                zip(op.starts.get_values(), op.steps.get_values()))][
                tuple(slice(0, n) for n in shape)]
        case graph.ExpandOp():
            return np.broadcast_to(get[0], shape)
    return None


def _recurrence(op: graph.RecurrenceOp, xw: np.ndarray, r: np.ndarray,
                *rest: np.ndarray) -> list[np.ndarray]:
    """``graph.recurrence`` step by step in float64: y, y_h (and y_c), as ONNX defines the
    cells (onnxruntime's clip: every activation's input but the LSTM's ``h(c)``)."""
    names = [n for n in ("bias", "sequence_lens", "initial_h", "initial_c", "peepholes")
             if getattr(op, n) is not None]
    given = dict(zip(names, rest))
    steps, batch, dirs, h = op.sizes()
    g, major, clip = len(graph.CELL_GATES[op.cell_name]), op.batch_major is not None, op.clip_value
    to_time_major = (lambda a: a.swapaxes(0, 1)) if major else (lambda a: a)
    xw, bias = to_time_major(xw).astype(np.float64), given.get("bias", np.zeros((dirs, 2 * g * h)))
    states = [to_time_major(given[n]) if n in given else np.zeros((dirs, batch, h))
              for n in ("initial_h", "initial_c")]
    peep = given.get("peepholes", np.zeros((dirs, 3 * h)))
    lens = np.clip(given.get("sequence_lens", np.full(batch, steps)), 0, steps)
    functions = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
                 "relu": lambda v: np.maximum(v, 0)}
    per = len(op.activation_names) // dirs
    y, finals = np.zeros((steps, dirs, batch, h)), np.zeros((2, dirs, batch, h))
    for d, n in itertools.product(range(dirs), range(batch)):
        f = [functions[a] for a in op.activation_names[d * per:(d + 1) * per]]
        fc = [(lambda v, fn=fn: fn(np.clip(v, -clip, clip)) if clip else fn(v)) for fn in f]
        hs, cs = states[0][d, n].astype(np.float64), states[1][d, n].astype(np.float64)
        wb, rb = np.split(bias[d], 2)
        backward = d == 1 or op.direction.data == "reverse"
        for step in range(lens[n]):
            t = lens[n] - 1 - step if backward else step
            x, rh = xw[t, n, d] + wb, hs @ r[d] + rb  # r: R transposed, [D, H, G*H]
            if op.cell_name == "lstm":
                (xi, xo, xf, xc), (pi, po, pf) = np.split(x + rh, 4), np.split(peep[d], 3)
                i = fc[0](xi + pi * cs)
                forget = 1 - i if op.input_forget else fc[0](xf + pf * cs)
                cs = forget * cs + i * fc[1](xc)
                hs = fc[0](xo + po * cs) * f[2](cs)
            elif op.cell_name == "gru":
                (xz, xr, xh), (hz, hr, hh) = np.split(x, 3), np.split(rh, 3)
                z, reset = fc[0](xz + hz), fc[0](xr + hr)
                if op.linear_before_reset:
                    candidate = fc[1](xh + reset * hh)
                else:
                    candidate = fc[1](xh + (reset * hs) @ r[d][:, 2 * h:] + rb[2 * h:])
                hs = (1 - z) * candidate + z * hs
            else:
                hs = fc[0](x + rh)
            y[t, d, n] = hs
        finals[:, d, n] = (hs, cs) if lens[n] else 0  # an empty row's states: zeros
    if major:
        y, finals = y.transpose(2, 0, 1, 3), finals.swapaxes(1, 2)
    return [y, finals[0], finals[1]][:len(op.results)]


def _resize(op: graph.ResizeOp, x: np.ndarray) -> np.ndarray:
    """ONNX's reference Resize (float64) of one node with the op's attributes and scales, or
    its sizes where the coordinates depend on them only (``align_corners`` and
    ``tf_crop_and_resize``: the reference would take ``scale * n`` for the output size)."""
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    by_sizes = op.coordinate_transformation_mode.data in ("align_corners", "tf_crop_and_resize")
    attributes = {"mode": op.mode.data, "coordinate_transformation_mode": op.coordinate_transformation_mode.data,
                  "nearest_mode": op.nearest_mode_value, "cubic_coeff_a": op.cubic_coeff_a_value,
                  "exclude_outside": int(op.exclude_outside is not None), "antialias": int(op.antialias is not None),
                  "extrapolation_value": op.extrapolation_value_value}
    constants = [numpy_helper.from_array(np.array(op.roi_values or [], np.float64), "roi"),
                 numpy_helper.from_array(np.array(op.scale_values, np.float32), "scales"),
                 numpy_helper.from_array(np.array(op.result.type.get_shape(), np.int64), "sizes")]
    inputs = ["x", "roi", "", "sizes"] if by_sizes else ["x", "roi", "scales"]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Resize", inputs, ["y"], **attributes)], "resize",
        [helper.make_tensor_value_info("x", 11, x.shape)], [helper.make_tensor_value_info("y", 11, None)],
        constants), opset_imports=[helper.make_opsetid("", 19)])
    return ReferenceEvaluator(model).run(None, {"x": x.astype(np.float64)})[0]


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
        elif isinstance(op, graph.LRNOp):
            result = _lrn(op, get[0])
        elif isinstance(op, graph.ReshapeOp):
            result = get[0].reshape(op.result.type.get_shape())
        elif isinstance(op, graph.TransposeOp):
            result = np.transpose(get[0], op.permutation)
        elif isinstance(op, graph.CastOp):
            result = get[0].astype(dtypes.of_ir(op.result.type.get_element_type()).numpy)
        elif isinstance(op, graph.ReduceOp | graph.SoftmaxBaseOp | graph.LayerNormOp |
                        graph.PoolOp):
            result, *more = _reduction(op, *get)  # graph.layer_norm may have three results
            for value, array in zip(op.results[1:], more):  # max pool's indices are i64
                env[value] = np.asarray(array, dtype=dtypes.of_ir(value.type.get_element_type()).numpy)
        elif isinstance(op, graph.ArgReduceOp | graph.HardmaxOp | graph.CumSumOp | graph.TopKOp):
            result, *more = _axis_op(op, get[0])  # graph.top_k's indices second
            for value, array in zip(op.results[1:], more):
                env[value] = np.asarray(array, dtype=np.int64)
        elif isinstance(op, graph.RecurrenceOp):
            result, *more = _recurrence(op, *get)
            for value, array in zip(op.results[1:], more):
                env[value] = np.asarray(array, dtype=np.float32)
        elif (indexed := _indexing(op, get)) is not None:
            result = indexed
        elif isinstance(op, graph.BatchNormOp):
            x, scale, bias, mean, var = (a.reshape(-1, *[1] * (get[0].ndim - 2)) if i else a
                                         for i, a in enumerate(get))
            result = (x - mean) / np.sqrt(var + op.epsilon_value) * scale + bias
        elif isinstance(op, graph.ResizeOp):
            result = _resize(op, get[0])
        elif isinstance(op, graph.ModOp):
            result = (np.fmod if op.fmod is not None else np.mod)(*get)
        elif isinstance(op, graph.IsInfOp):
            negative, positive = op.detects()
            result = (negative & (get[0] == -np.inf)) | (positive & (get[0] == np.inf))
        else:
            result = _NARY[type(op)](*get)
        result = np.asarray(result, dtype=dtypes.of_ir(
            op.results[0].type.get_element_type()).numpy)
        assert list(result.shape) == list(op.results[0].type.get_shape()), op.name
        env[op.results[0]] = result
    raise AssertionError("no func.return")
