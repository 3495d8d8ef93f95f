"""Op generators of the ONNX fuzzer: matmul, data movement, conv, pools, normalizations.

Same contract as ``fuzz_onnx_ops.py``: each takes a `GraphBuilder`, draws operands and
legal attributes, adds nodes, or raises `Unsuitable`.
"""

from __future__ import annotations

import math

import numpy as np
from fuzz_onnx_graphs import FLOATS, FUZZ_DTYPES, NUMPY, GraphBuilder, Unsuitable
from hypothesis import strategies as st


def _weights(b: GraphBuilder, dtype: int, shape, scale: float = 1.0, low: float | None = None):
    rng = np.random.default_rng(b.integer(0, 2**16))
    data = rng.uniform(low, 2.0, shape) if low is not None else rng.standard_normal(shape) * scale
    return b.const(np.asarray(data).astype(NUMPY[dtype]))


def matmul(b: GraphBuilder) -> None:
    x = b.pick(b.dtypes("MatMul"), ranks=range(1, 5))
    k = x.shape[-1]
    rank = b.integer(1, 3)
    if rank == 1:
        shape: tuple[int, ...] = (k,)
    elif rank == 2:
        shape = (k, b.dim())
    else:
        batch = (x.shape[-3] if b.flag() else 1) if x.rank >= 3 else b.dim()
        shape = (batch, k, b.dim())
    b.node("MatMul", [x, b.pick((x.dtype,), shape=shape)])


def gemm(b: GraphBuilder) -> None:
    a = b.pick(b.dtypes("Gemm"), ranks=(2,))
    trans_a, trans_b = b.integer(0, 1), b.integer(0, 1)
    m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
    n = b.dim()
    y = b.pick((a.dtype,), shape=(n, k) if trans_b else (k, n))
    inputs = [a, y]
    if b.flag():
        c_shape = b.choice([(), (n,), (m, 1), (1, n), (m, n)])
        inputs.append(b.pick((a.dtype,), shape=c_shape))
    attrs = {"transA": trans_a, "transB": trans_b}
    if b.flag():
        attrs["alpha"] = b.choice([0.5, -1.0, 2.0])
    if b.flag():
        attrs["beta"] = b.choice([0.5, 0.0, 3.0])
    b.node("Gemm", inputs, **attrs)


def transpose(b: GraphBuilder) -> None:
    x = b.pick(FUZZ_DTYPES, ranks=range(1, 5))
    perm = list(b.draw(st.permutations(range(x.rank))))
    b.node("Transpose", [x], **({"perm": perm} if b.integer(0, 3) else {}))


def _factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out + ([n] if n > 1 else [])


def reshape(b: GraphBuilder) -> None:
    x = b.pick(FUZZ_DTYPES, ranks=range(0, 5))
    factors = _factors(x.size) if x.size else []
    rank = b.integer(0 if x.size == 1 else 1, 4)
    dims = [1] * max(rank, 1)
    for f in factors:
        dims[b.integer(0, len(dims) - 1)] *= f
    if x.size == 0:
        dims[0] = 0
    if rank == 0 and x.size == 1:
        dims = []
    if dims and b.flag() and x.size:
        dims[b.integer(0, len(dims) - 1)] = -1
    dims = [0 if i < x.rank and d == x.shape[i] and d != 0 and b.integer(0, 3) == 0 else d
            for i, d in enumerate(dims)]
    b.node("Reshape", [x, b.const(np.array(dims, np.int64))])


def concat(b: GraphBuilder) -> None:
    x = b.pick(FUZZ_DTYPES, ranks=range(1, 5))
    axis = b.integer(-x.rank, x.rank - 1)
    pos = axis % x.rank

    def fits(shape):
        return len(shape) == x.rank and all(s == d for i, (s, d) in enumerate(zip(shape, x.shape)) if i != pos)

    others = []
    for _ in range(b.integer(1, 2)):
        shape = list(x.shape)
        shape[pos] = b.dim()
        others.append(b.pick((x.dtype,), fits=fits) if b.flag() else b.pick((x.dtype,), shape=tuple(shape)))
    operands = [x, *others]
    order = b.draw(st.permutations(range(len(operands))))
    b.node("Concat", [operands[i] for i in order], axis=axis)


def slice_(b: GraphBuilder) -> None:
    x = b.pick(FUZZ_DTYPES, ranks=range(1, 5))
    axes = [a for a in range(x.rank) if b.flag()] or [b.integer(0, x.rank - 1)]
    starts, ends, steps = [], [], []
    for a in axes:
        d = x.shape[a]
        step = b.choice([1, 1, 2, -1, 3, -2])
        start = b.choice([b.integer(-d - 2, d + 2), 0, -1, 2**63 - 1 if step < 0 else -(2**63)])
        end = b.choice([b.integer(-d - 2, d + 2), 2**63 - 1 if step > 0 else -(2**63), -1])
        if len(range(*slice(start, end, step).indices(d))) == 0 and not b.zero_size:
            start, end, step = 0, d, 1
        starts.append(start), ends.append(end), steps.append(step)
    itype = b.choice([np.int64, np.int32])
    if itype is np.int32:
        starts = [max(min(s, 2**31 - 1), -(2**31)) for s in starts]
        ends = [max(min(e, 2**31 - 1), -(2**31)) for e in ends]
    inputs = [x, b.const(np.array(starts, itype)), b.const(np.array(ends, itype))]
    with_steps = any(s != 1 for s in steps) or b.flag()
    if with_steps or b.flag():
        inputs.append(b.const(np.array([a - x.rank if b.flag() else a for a in axes], itype)))
    elif axes != list(range(len(axes))):
        raise Unsuitable("axes needed")
    if with_steps:
        inputs.append(b.const(np.array(steps, itype)))
    b.node("Slice", inputs)


def gather(b: GraphBuilder) -> None:
    x = b.pick(FUZZ_DTYPES, ranks=range(1, 4))
    axis = b.integer(-x.rank, x.rank - 1)
    d = x.shape[axis]
    if d == 0:
        raise Unsuitable("gather from an empty axis")
    shape = b.shape(b.integer(0, 2), cap=16)
    rng = np.random.default_rng(b.integer(0, 2**16))
    indices = rng.integers(-d, d, shape).astype(b.choice([np.int64, np.int32]))
    b.node("Gather", [x, b.const(indices)], axis=axis)


def _window(b: GraphBuilder, sizes, *, dilate: bool) -> dict:
    """Legal kernel_shape, strides, pads, dilations over spatial `sizes`."""
    kernel, strides, pads_begin, pads_end, dilations = [], [], [], [], []
    for size in sizes:
        dil = b.integer(1, 2) if dilate else 1
        k = b.integer(1, 3)
        pb, pe = b.integer(0, k - 1), b.integer(0, k - 1)
        if dil * (k - 1) + 1 > size + pb + pe:
            k, dil, pb, pe = 1, 1, 0, 0  # onnxruntime wants pads smaller than the kernel
        kernel.append(k), strides.append(b.integer(1, 3)), dilations.append(dil)
        pads_begin.append(pb), pads_end.append(pe)
    attrs = {"kernel_shape": kernel, "strides": strides}
    modes = ["SAME_UPPER", "SAME_LOWER"] if dilations == [1] * len(sizes) else []  # onnxruntime's limit
    if all(d * (k - 1) + 1 <= size for d, k, size in zip(dilations, kernel, sizes)):
        modes.append("VALID")
    if modes and b.integer(0, 3) == 0:
        attrs["auto_pad"] = b.choice(modes)
    elif any(pads_begin + pads_end) or b.flag():
        attrs["pads"] = pads_begin + pads_end
    if dilate and (any(d != 1 for d in dilations) or b.flag()):
        attrs["dilations"] = dilations
    return attrs


def conv(b: GraphBuilder) -> None:
    x = b.pick(tuple(d for d in b.dtypes("Conv") if d in FLOATS), ranks=(3, 4))
    if x.size == 0:
        raise Unsuitable("empty conv input")
    channels = x.shape[1]
    group = b.choice([g for g in (1, 2, 3, channels) if channels % g == 0])
    out_channels = group * b.integer(1, 3)
    attrs = _window(b, x.shape[2:], dilate=True)
    weight = _weights(b, x.dtype, (out_channels, channels // group, *attrs["kernel_shape"]), 0.5)
    if b.flag():
        del attrs["kernel_shape"]
    bias = [_weights(b, x.dtype, (out_channels,))] if b.flag() else []
    b.node("Conv", [x, weight, *bias], **({"group": group} if group > 1 or b.flag() else {}), **attrs)


def _ceil_mode_agrees(sizes, attrs: dict) -> bool:
    """Whether ONNX shape inference and onnxruntime agree on `attrs` with ``ceil_mode=1``:
    not with SAME padding, nor when the last window would start past the input (and its
    begin padding), a window onnxruntime and ONNX's reference drop and shape inference keeps."""
    if attrs.get("auto_pad", "NOTSET").startswith("SAME"):
        return False
    rank = len(sizes)
    pads = attrs.get("pads", [0] * 2 * rank) if attrs.get("auto_pad", "NOTSET") == "NOTSET" else [0] * 2 * rank
    dilations = attrs.get("dilations", [1] * rank)
    for i, size in enumerate(sizes):
        span = dilations[i] * (attrs["kernel_shape"][i] - 1) + 1
        stride = attrs["strides"][i]
        last = -(-(size + pads[i] + pads[i + rank] - span) // stride)  # ceil: the last window's index
        if last * stride >= size + pads[i]:
            return False
    return True


def pool(b: GraphBuilder) -> None:
    op = b.choice(["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"])
    x = b.pick(tuple(d for d in b.dtypes(op) if d in FLOATS), ranks=(3, 4))
    if op.startswith("Global"):
        b.node(op, [x])
        return
    attrs = _window(b, x.shape[2:], dilate=op == "MaxPool" or b.opset >= 19)
    if b.flag() and _ceil_mode_agrees(x.shape[2:], attrs):  # see test_regressions.py
        attrs["ceil_mode"] = b.integer(0, 1)
    if op == "AveragePool" and b.flag():
        attrs["count_include_pad"] = b.integer(0, 1)
    b.node(op, [x], **attrs)


def normalization(b: GraphBuilder) -> None:
    op = b.choice(["BatchNormalization", "LayerNormalization", "InstanceNormalization"])
    dtypes = tuple(d for d in b.dtypes(op) if d in FLOATS)
    x = b.pick(dtypes, ranks=range(2, 5) if op == "BatchNormalization" else
               range(1, 5) if op == "LayerNormalization" else range(3, 5))
    eps = {"epsilon": b.choice([1e-5, 1e-3, 0.1])} if b.flag() else {}
    if op == "LayerNormalization":
        axis = b.integer(-x.rank, x.rank - 1)
        shape = x.shape[axis:]
        bias = [_weights(b, x.dtype, shape)] if b.flag() else []
        b.node(op, [x, _weights(b, x.dtype, shape), *bias], axis=axis, **eps)
        return
    c = (x.shape[1],)
    params = [_weights(b, x.dtype, c), _weights(b, x.dtype, c)]
    if op == "BatchNormalization":
        params += [_weights(b, x.dtype, c), _weights(b, x.dtype, c, low=0.2)]
    b.node(op, [x, *params], **eps)


def unsqueeze_squeeze(b: GraphBuilder) -> None:
    x = b.pick(FUZZ_DTYPES, ranks=range(0, 4))
    op = b.choice(["Unsqueeze", "Squeeze", "Flatten"])
    if op == "Flatten":
        b.node(op, [x], axis=b.integer(-x.rank, x.rank))
    elif op == "Unsqueeze":
        count = b.integer(1, 2)
        out_rank = x.rank + count
        axes = sorted(b.draw(st.lists(st.integers(0, out_rank - 1), min_size=count, max_size=count, unique=True)))
        axes = [a - out_rank if b.flag() else a for a in axes]
        b.node(op, [x, b.const(np.array(axes, np.int64))])
    else:
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        axes = [a for a in ones if b.flag()]
        if not axes and b.flag():
            b.node(op, [x])
        else:
            b.node(op, [x, b.const(np.array(axes or ones, np.int64))] if (axes or ones) else [x])


def expand_tile(b: GraphBuilder) -> None:
    x = b.pick(FUZZ_DTYPES, ranks=range(0, 4))
    if b.flag():
        shape = [d if d != 1 or b.flag() else b.dim() for d in x.shape]
        shape = [1 if b.integer(0, 3) == 0 and d != 0 else d for d in shape]  # 1 keeps x's dim
        lead = [b.dim() for _ in range(b.integer(0, 1))]
        target = lead + shape
        if math.prod(np.broadcast_shapes(tuple(target), x.shape)) > 2048:
            raise Unsuitable("too large")
        b.node("Expand", [x, b.const(np.array(target, np.int64))])
    else:
        if x.rank == 0:
            raise Unsuitable("tile of a scalar")
        repeats = [b.integer(1, 3) for _ in x.shape]
        b.node("Tile", [x, b.const(np.array(repeats, np.int64))])


def pad(b: GraphBuilder) -> None:
    x = b.pick(FUZZ_DTYPES, ranks=range(1, 5))
    mode = b.choice(["constant", "reflect", "edge"])
    limit = (lambda d: max(d - 1, 0)) if mode == "reflect" else (lambda d: 2 if d else 0)
    pads = [b.integer(0, min(2, limit(d))) for d in x.shape] + [b.integer(0, min(2, limit(d))) for d in x.shape]
    if mode == "edge" and x.size == 0:
        raise Unsuitable("edge pad of an empty tensor")
    inputs = [x, b.const(np.array(pads, np.int64))]
    if mode == "constant" and b.flag():
        inputs.append(b.const(np.array(b.choice([0, 1, -2]), NUMPY[x.dtype])))
    b.node("Pad", inputs, mode=mode)


def split(b: GraphBuilder) -> None:
    x = b.pick(FUZZ_DTYPES, ranks=range(1, 4), fits=lambda shape: max(shape) >= 2)
    axis = b.choice([a for a, d in enumerate(x.shape) if d >= 2])
    axis, d = axis - x.rank if b.flag() else axis, x.shape[axis]
    cut = b.integer(1, d - 1)
    if b.flag() or b.opset < 18:
        b.node("Split", [x, b.const(np.array([cut, d - cut], np.int64))], outputs=2, axis=axis)
    else:
        parts = b.integer(2, min(d, 3))
        b.node("Split", [x], outputs=parts, axis=axis, num_outputs=parts)


SHAPE_GENERATORS = {
    "matmul": matmul, "gemm": gemm, "transpose": transpose, "reshape": reshape,
    "concat": concat, "slice": slice_, "gather": gather, "conv": conv, "pool": pool,
    "normalization": normalization, "unsqueeze_squeeze": unsqueeze_squeeze,
    "expand_tile": expand_tile, "pad": pad, "split": split,
}
