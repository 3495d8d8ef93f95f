"""Op generators of the ONNX fuzzer: elementwise, logic, casts, reductions.

Each generator takes a `GraphBuilder`, draws its operands (`pick`) and attributes in their
legal range, and adds one or a few nodes; it raises `Unsuitable` when what it drew cannot
make its op. `GENERATORS` names every generator, this module's and
``fuzz_onnx_shape_ops.py``'s.
"""

from __future__ import annotations

import numpy as np
from fuzz_onnx_graphs import (
    BOOL,
    F16,
    F32,
    FLOATS,
    FUZZ_DTYPES,
    I32,
    I64,
    NUMPY,
    GraphBuilder,
    Value,
)
from fuzz_onnx_shape_ops import SHAPE_GENERATORS

#: Unary ops and their attributes' legal ranges (None: no attributes).
UNARY = {
    "Relu": None, "Neg": None, "Abs": None, "Sigmoid": None, "Tanh": None, "Exp": None,
    "Log": None, "Sqrt": None, "Erf": None, "Softplus": None, "Softsign": None, "Sign": None,
    "Floor": None, "Ceil": None, "Round": None, "Sin": None, "Cos": None, "Atan": None,
    "Reciprocal": None, "HardSwish": None, "Identity": None,
    "LeakyRelu": {"alpha": (0.01, 0.2, 1.5)}, "Elu": {"alpha": (1.0, 0.5)},
    "HardSigmoid": {"alpha": (0.2, 0.5), "beta": (0.5, 0.1)},
    "Selu": {"alpha": (1.67, 2.0), "gamma": (1.05, 0.5)},
    "ThresholdedRelu": {"alpha": (1.0, 0.25)}, "Shrink": {"lambd": (0.5, 1.0), "bias": (0.0, 0.3)},
    "Gelu": {"approximate": ("none", "tanh")},  # opset 20
}
BINARY = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Mod")
COMPARE = ("Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual")
REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
          "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp")


def broadcastable(b: GraphBuilder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape`: some dims 1, some leading dims dropped, and
    (both ways) a 1 of `shape` sometimes widened."""
    dims = [d if b.integer(0, 2) else 1 for d in shape]
    dims = [b.dim() if d == 1 and shape_dim == 1 and b.integer(0, 4) == 0 else d
            for d, shape_dim in zip(dims, shape)]
    return tuple(dims[b.integer(0, len(dims)):])


def fits_broadcast(shape: tuple[int, ...]):
    def fits(other: tuple[int, ...]) -> bool:
        try:
            return int(np.prod(np.broadcast_shapes(shape, other))) <= 2048
        except ValueError:
            return False
    return fits


def partner(b: GraphBuilder, x: Value, dtypes=None, shape: tuple[int, ...] | None = None) -> Value:
    """A second operand broadcasting with `x` (or with `shape`): a defined value that fits,
    or a new one."""
    dtypes = dtypes or (x.dtype,)
    shape = x.shape if shape is None else shape
    if b.integer(0, 2) == 0:
        return b.pick(dtypes, fits=fits_broadcast(shape))
    return b.pick(dtypes, shape=broadcastable(b, shape))


def nonzero_const(b: GraphBuilder, dtype: int, shape: tuple[int, ...]) -> Value:
    rng = np.random.default_rng(b.integer(0, 2**16))
    values = rng.integers(1, 5, shape) * rng.choice([-1, 1], shape)
    if dtype in FLOATS:
        values = values + rng.random(shape) * 0.5
    return b.const(values.astype(NUMPY[dtype]))


def unary(b: GraphBuilder) -> None:
    names = [n for n in UNARY if n != "Gelu" or b.opset >= 20]
    op = b.choice(names)
    x = b.pick(b.dtypes(op))
    attrs = {k: b.choice(v) for k, v in (UNARY[op] or {}).items() if b.flag()}
    b.node(op, [x], **attrs)


def clip(b: GraphBuilder) -> None:
    x = b.pick(tuple(d for d in b.dtypes("Clip") if d in (F32, F16, I32, I64)))
    low, high = sorted([b.integer(-3, 3), b.integer(-3, 3)])
    bounds = [b.const(np.array(v, NUMPY[x.dtype])) if b.flag() else None for v in (low, high)]
    while bounds and bounds[-1] is None:
        bounds.pop()
    b.node("Clip", [x, *bounds])


def binary(b: GraphBuilder) -> None:
    op = b.choice(BINARY)
    x = b.pick(b.dtypes(op) if op != "Pow" else FLOATS)
    if op in ("Div", "Mod") and (x.dtype not in FLOATS or op == "Mod"):
        y = nonzero_const(b, x.dtype, broadcastable(b, x.shape))
    elif op == "Pow":
        y = b.const(np.array(b.choice([2.0, 3.0, 0.5, -1.0, 1.5])).astype(NUMPY[x.dtype]))
    else:
        y = partner(b, x)
    if b.flag() and op not in ("Div", "Mod", "Pow"):
        x, y = y, x
    attrs = {"fmod": 1} if op == "Mod" and (x.dtype in FLOATS or b.flag()) else {}
    b.node(op, [x, y], **attrs)


def variadic(b: GraphBuilder) -> None:
    op = b.choice(("Max", "Min", "Sum", "Mean"))
    x = b.pick(b.dtypes(op))
    operands, shape = [x], x.shape
    for _ in range(b.integer(0, 2)):
        operands.append(partner(b, x, shape=shape))
        shape = np.broadcast_shapes(shape, operands[-1].shape)
    b.node(op, operands)


def compare(b: GraphBuilder) -> None:
    op = b.choice(COMPARE)
    x = b.pick(tuple(d for d in b.dtypes(op) if op == "Equal" or d != BOOL))
    b.node(op, [x, partner(b, x)])


def logic(b: GraphBuilder) -> None:
    op = b.choice(("And", "Or", "Xor", "Not"))
    x = b.pick((BOOL,))
    b.node(op, [x] if op == "Not" else [x, partner(b, x)])


def where(b: GraphBuilder) -> None:
    cond = b.pick((BOOL,))
    x = partner(b, cond, tuple(d for d in FUZZ_DTYPES if d != BOOL))  # onnxruntime: no bool Where
    y = partner(b, x, shape=np.broadcast_shapes(cond.shape, x.shape))
    b.node("Where", [cond, x, y])


def cast(b: GraphBuilder) -> None:
    x = b.pick(FUZZ_DTYPES)
    to = b.choice(FUZZ_DTYPES)
    if x.dtype in FLOATS and to in (I32, I64):  # out-of-range float to int is undefined
        x = b.node("Clip", [x, b.const(np.array(-1000, NUMPY[x.dtype])),
                            b.const(np.array(1000, NUMPY[x.dtype]))])[0]
    if b.integer(0, 3) == 0:
        like = b.pick((to,))
        b.node("CastLike", [x, like])
    else:
        b.node("Cast", [x], to=to)


def axes_subset(b: GraphBuilder, rank: int) -> list[int]:
    axes = [a for a in range(rank) if b.flag()]
    return [a - rank if b.flag() else a for a in axes]


def reduce(b: GraphBuilder) -> None:
    op = b.choice(REDUCE)
    dtypes = b.dtypes(op)
    if op in ("ReduceMax", "ReduceMin") and b.opset < 20:
        dtypes = tuple(d for d in dtypes if d != BOOL)
    x = b.pick(dtypes, ranks=range(1, 5))
    axes = axes_subset(b, x.rank)
    attrs = {"keepdims": b.integer(0, 1)} if b.flag() else {}
    if not axes and b.flag():
        attrs["noop_with_empty_axes"] = b.integer(0, 1)
    if op == "ReduceSum" or b.opset >= 18:
        axes_input = [b.const(np.array(axes, np.int64))] if axes or b.flag() else []
        b.node(op, [x, *axes_input], **attrs)
    else:
        attrs.pop("noop_with_empty_axes", None)
        b.node(op, [x], **attrs, **({"axes": axes} if axes else {}))


def arg_reduce(b: GraphBuilder) -> None:
    op = b.choice(("ArgMax", "ArgMin"))
    x = b.pick(b.dtypes(op), ranks=range(1, 5))
    attrs = {"axis": b.integer(-x.rank, x.rank - 1)}
    if b.flag():
        attrs["keepdims"] = b.integer(0, 1)
    if b.flag():
        attrs["select_last_index"] = b.integer(0, 1)
    b.node(op, [x], **attrs)


def softmax(b: GraphBuilder) -> None:
    op = b.choice(("Softmax", "LogSoftmax"))
    x = b.pick(b.dtypes(op), ranks=range(1, 5))
    b.node(op, [x], **({"axis": b.integer(-x.rank, x.rank - 1)} if b.flag() else {}))


def cumsum(b: GraphBuilder) -> None:
    x = b.pick(b.dtypes("CumSum"), ranks=range(1, 5))
    axis = b.const(np.array(b.integer(-x.rank, x.rank - 1), b.choice([np.int64, np.int32])))
    b.node("CumSum", [x, axis], exclusive=b.integer(0, 1), reverse=b.integer(0, 1))


GENERATORS = {
    "unary": unary, "clip": clip, "binary": binary, "variadic": variadic, "compare": compare,
    "logic": logic, "where": where, "cast": cast, "reduce": reduce, "arg_reduce": arg_reduce,
    "softmax": softmax, "cumsum": cumsum, **SHAPE_GENERATORS,
}
