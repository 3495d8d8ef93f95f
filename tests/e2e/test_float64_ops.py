"""float64 in the float-only ops, and the integer forms of Clip, Pow and MaxPool, on emu.

The unary elementwise ops, Softmax / LogSoftmax, the reductions, MatMul / Gemm and the
pools compute float64 tensors in double: each is compared with numpy in float64 (or
onnxruntime) to ``rtol 1e-12``, which a float computation (about 1e-7) cannot meet.
Integer Clip (bounds as graph inputs or initializers, int64 bounds past 2**53 too), Pow
with an integer base (onnxruntime's ``static_cast<T>(std::pow(x, y))``) and MaxPool on
int8 / uint8 (padding takes no part, also for negative values) must match exactly.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from models import run_onnxruntime, typed_model
from onnx import helper

import tmlir
from tmlir.frontends.onnx import FrontendError, import_onnx

RNG = np.random.default_rng(64)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
RTOL = 1e-12


model = typed_model  # name -> (dtype, shape) inputs, name -> dtype outputs


def run(proto: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    return tmlir.InferenceSession(proto, device="emu").run(None, feed)


def check_double(got: list[np.ndarray], want: list[np.ndarray], names: list[str],
                 rtol: float = RTOL, atol: float = 1e-14) -> None:
    for name, g, w in zip(names, got, want, strict=True):
        assert g.dtype == F64 and g.shape == w.shape, (name, g.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


def check_exact(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g, w)


# ---- unary elementwise ops ------------------------------------------------------------------

def _f32(value: float) -> float:
    """An ONNX float attribute as the kernels see it: rounded to float32."""
    return float(np.float32(value))


_ERF = np.vectorize(math.erf)
_SELU = (_f32(1.67326319217681884765625), _f32(1.05070102214813232421875))

#: op -> (numpy float64 reference, input domain: "any", "positive", "unit" (-1, 1) or "above1")
UNARY = {
    "Relu": (lambda x: np.maximum(x, 0), "any"),
    "Sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "any"),
    "Tanh": (np.tanh, "any"),
    "Exp": (np.exp, "any"),
    "Log": (np.log, "positive"),
    "Sqrt": (np.sqrt, "positive"),
    "Reciprocal": (lambda x: 1 / x, "any"),
    "Erf": (_ERF, "any"),
    "Softplus": (lambda x: np.logaddexp(0, x), "any"),
    "Softsign": (lambda x: x / (1 + np.abs(x)), "any"),
    "HardSwish": (lambda x: x * np.clip(x / 6 + 0.5, 0, 1), "any"),
    "LeakyRelu": (lambda x: np.where(x < 0, _f32(0.01) * x, x), "any"),
    "HardSigmoid": (lambda x: np.clip(_f32(0.2) * x + 0.5, 0, 1), "any"),
    "Elu": (lambda x: np.where(x < 0, np.expm1(x), x), "any"),
    "Selu": (lambda x: _SELU[1] * np.where(x <= 0, _SELU[0] * np.expm1(x), x), "any"),
    "Gelu": (lambda x: 0.5 * x * (1 + _ERF(x / math.sqrt(2))), "any"),
    "Floor": (np.floor, "any"),
    "Ceil": (np.ceil, "any"),
    "Round": (np.round, "any"),
    "Sin": (np.sin, "any"),
    "Cos": (np.cos, "any"),
    "Tan": (np.tan, "unit"),
    "Asin": (np.arcsin, "unit"),
    "Acos": (np.arccos, "unit"),
    "Atan": (np.arctan, "any"),
    "Sinh": (np.sinh, "any"),
    "Cosh": (np.cosh, "any"),
    "Asinh": (np.arcsinh, "any"),
    "Acosh": (np.arccosh, "above1"),
    "Atanh": (np.arctanh, "unit"),
    "Mish": (lambda x: x * np.tanh(np.logaddexp(0, x)), "any"),
    "ThresholdedRelu": (lambda x: np.where(x > 1, x, 0.0), "any"),
    "Shrink": (lambda x: np.where(x < -0.5, x, np.where(x > 0.5, x, 0.0)), "any"),
    "Celu": (lambda x: np.where(x > 0, x, np.expm1(x)), "any"),
    "Sign": (np.sign, "any"),
    "Neg": (np.negative, "any"),
    "Abs": (np.abs, "any"),
}


def _domain(kind: str, shape: tuple[int, ...]) -> np.ndarray:
    x = RNG.standard_normal(shape) * 3
    return {"any": x, "positive": np.abs(x) + 1e-3, "unit": np.tanh(x) * 0.999,
            "above1": 1 + np.abs(x)}[kind]


def test_unary_ops_compute_float64_in_double():
    """Every float-only unary op in one model, each on its own input, to 1e-12 relative."""
    shape = (3, 37)
    ops = list(UNARY)
    nodes = [helper.make_node(op, [f"x_{op}"], [f"y_{op}"], name=op) for op in ops]
    proto = model(nodes, {f"x_{op}": (F64, shape) for op in ops}, {f"y_{op}": F64 for op in ops},
                  opset=20)
    feed = {f"x_{op}": _domain(UNARY[op][1], shape) for op in ops}
    want = [UNARY[op][0](feed[f"x_{op}"]) for op in ops]
    check_double(run(proto, feed), want, ops)


def test_float64_is_not_rounded_to_float():
    """``exp(x)`` of values 1e-12 apart stay apart, as they would not through float32."""
    x = 1 + np.arange(8) * 1e-12
    proto = model([helper.make_node("Exp", ["x"], ["y"])], {"x": (F64, (8,))}, {"y": F64})
    (y,) = run(proto, {"x": x})
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-15)
    assert len(set(y.tolist())) == 8


def test_binary_float_ops_and_clip_in_double():
    """Pow, Mean and Clip (constant and run-time bounds) of float64 tensors."""
    x = RNG.uniform(0.5, 2.0, (4, 9))
    e = RNG.uniform(-3, 3, (9,))
    nodes = [helper.make_node("Pow", ["x", "e"], ["pow"]),
             helper.make_node("Mean", ["x", "x2"], ["mean"]),
             helper.make_node("Clip", ["x", "lo", "hi"], ["clip"]),
             helper.make_node("Clip", ["x", "lo_in"], ["clip_lower"])]
    constants = {"lo": np.array(0.7), "hi": np.array(1.3)}
    proto = model(nodes, {"x": (F64, x.shape), "e": (F64, e.shape), "x2": (F64, x.shape),
                          "lo_in": (F64, ())},
                  {"pow": F64, "mean": F64, "clip": F64, "clip_lower": F64}, constants)
    x2 = RNG.standard_normal(x.shape)
    got = run(proto, {"x": x, "e": e, "x2": x2, "lo_in": np.array(1.1)})
    check_double(got, [x ** e, (x + x2) / 2, np.clip(x, 0.7, 1.3), np.maximum(x, 1.1)],
                 ["pow", "mean", "clip", "clip_lower"])


def test_fused_float64_chain():
    """Elementwise ops fused around a softmax and a matmul stay in double."""
    x, w = RNG.standard_normal((6, 33)), RNG.standard_normal((33, 5))
    nodes = [helper.make_node("Tanh", ["x"], ["t"]), helper.make_node("Mul", ["t", "k"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "w"], ["m"]), helper.make_node("Sigmoid", ["m"], ["y"])]
    proto = model(nodes, {"x": (F64, x.shape), "w": (F64, w.shape)}, {"y": F64}, {"k": np.array(3.0)})
    s = np.tanh(x) * 3
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    check_double(run(proto, {"x": x, "w": w}), [1 / (1 + np.exp(-(p @ w)))], ["y"])


# ---- softmax and reductions -------------------------------------------------------------------

@pytest.mark.parametrize("shape, axis", [((4, 50), -1), ((3, 5, 6), 1)])
def test_softmax_and_log_softmax_in_double(shape, axis):
    x = RNG.standard_normal(shape) * 30 + 500  # large values: the max is subtracted
    nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=axis),
             helper.make_node("LogSoftmax", ["x"], ["ls"], axis=axis)]
    proto = model(nodes, {"x": (F64, shape)}, {"s": F64, "ls": F64})
    shifted = x - x.max(axis=axis, keepdims=True)
    log_sum = np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    check_double(run(proto, {"x": x}), [np.exp(shifted - log_sum), shifted - log_sum],
                 ["softmax", "log_softmax"])


REDUCTIONS = {
    "ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max, "ReduceMin": np.min,
    "ReduceProd": np.prod,
    "ReduceL1": lambda x, axis, keepdims: np.abs(x).sum(axis=axis, keepdims=keepdims),
    "ReduceL2": lambda x, axis, keepdims: np.sqrt((x * x).sum(axis=axis, keepdims=keepdims)),
    "ReduceSumSquare": lambda x, axis, keepdims: (x * x).sum(axis=axis, keepdims=keepdims),
    "ReduceLogSum": lambda x, axis, keepdims: np.log(np.abs(x).sum(axis=axis, keepdims=keepdims)),
    "ReduceLogSumExp": lambda x, axis, keepdims: np.log(
        np.exp(x - x.max(axis=axis, keepdims=True)).sum(axis=axis, keepdims=keepdims))
    + x.max(axis=axis, keepdims=keepdims),
}


@pytest.mark.parametrize("shape, axes, keepdims", [
    ((5, 700), [1], 0),  # long rows
    ((4, 6, 3), [0, 2], 1),  # strided rows
    ((7, 3), None, 0),  # everything
])
def test_reductions_in_double(shape, axes, keepdims):
    ops = list(REDUCTIONS)
    x = RNG.uniform(0.5, 1.5, shape) * 8  # positive, for ReduceLogSum; the product stays finite
    if shape[-1] > 100:
        x = RNG.uniform(0.99, 1.01, shape)
    constants = {"axes": np.array(axes, np.int64)} if axes is not None else {}
    nodes = [helper.make_node(op, ["x", *(["axes"] if axes is not None else [])], [op],
                              keepdims=keepdims) for op in ops]
    proto = model(nodes, {"x": (F64, shape)}, {op: F64 for op in ops}, constants)
    axis = tuple(axes) if axes is not None else None
    want = [REDUCTIONS[op](x, axis=axis, keepdims=bool(keepdims)) for op in ops]
    check_double(run(proto, {"x": x}), want, ops)


# ---- matrix products and pools ------------------------------------------------------------------

def test_matmul_and_gemm_in_double():
    """A batched, broadcast MatMul with partial tiles and a long k; Gemm with transposes,
    alpha, beta and a broadcast bias."""
    a, b = RNG.standard_normal((2, 37, 301)), RNG.standard_normal((301, 45))
    ga, gb, gc = RNG.standard_normal((19, 13)), RNG.standard_normal((21, 19)), RNG.standard_normal((21,))
    nodes = [helper.make_node("MatMul", ["a", "b"], ["mm"]),
             helper.make_node("Gemm", ["ga", "gb", "gc"], ["gemm"], transA=1, transB=1,
                              alpha=0.75, beta=-2.0)]
    proto = model(nodes, {"a": (F64, a.shape), "b": (F64, b.shape), "ga": (F64, ga.shape),
                          "gb": (F64, gb.shape), "gc": (F64, gc.shape)}, {"mm": F64, "gemm": F64})
    got = run(proto, {"a": a, "b": b, "ga": ga, "gb": gb, "gc": gc})
    want = run_onnxruntime(proto, {"a": a, "b": b, "ga": ga, "gb": gb, "gc": gc})
    check_double(got, want, ["matmul", "gemm"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[1], 0.75 * ga.T @ gb.T - 2.0 * gc, rtol=1e-12, atol=1e-12)


def _pool_2d(x: np.ndarray, kernel: tuple[int, int], strides: tuple[int, int],
             pads: tuple[int, int, int, int], reduce) -> np.ndarray:
    """numpy's pooling: `reduce` over the taps of each window inside the input."""
    (kh, kw), (sh, sw), (top, left, bottom, right) = kernel, strides, pads
    h, w = x.shape[2:]
    out_h, out_w = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    out = np.empty((*x.shape[:2], out_h, out_w), x.dtype)
    for i in range(out_h):
        for j in range(out_w):
            r0, c0 = i * sh - top, j * sw - left
            window = x[:, :, max(r0, 0):r0 + kh, max(c0, 0):c0 + kw]
            out[:, :, i, j] = reduce(window, axis=(2, 3))
    return out


def test_pools_in_double():
    x = RNG.standard_normal((2, 3, 9, 8))
    nodes = [helper.make_node("MaxPool", ["x"], ["max"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("AveragePool", ["x"], ["avg"], kernel_shape=[3, 2], pads=[1, 0, 1, 1],
                              count_include_pad=0),
             helper.make_node("GlobalAveragePool", ["x"], ["gap"])]
    proto = model(nodes, {"x": (F64, x.shape)}, {"max": F64, "avg": F64, "gap": F64})
    want = [_pool_2d(x, (3, 3), (2, 2), (1, 1, 1, 1), np.max),
            _pool_2d(x, (3, 2), (1, 1), (1, 0, 1, 1), np.mean), x.mean(axis=(2, 3), keepdims=True)]
    check_double(run(proto, {"x": x}), want, ["max", "avg", "gap"])


# ---- integer Clip, Pow and MaxPool -------------------------------------------------------------

INT_TYPES = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64)]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=str)
def test_integer_clip(dtype):
    """Run-time bounds, constant bounds, one bound, and min > max (then max everywhere)."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (5, 7), endpoint=True, dtype=dtype)
    lo, hi = (np.array(v, dtype) for v in sorted(RNG.integers(info.min, info.max, 2, dtype=dtype)))
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["run_time"]),
             helper.make_node("Clip", ["x", "c_lo", "c_hi"], ["constant"]),
             helper.make_node("Clip", ["x", "", "c_hi"], ["upper"]),
             helper.make_node("Clip", ["x", "c_hi", "c_lo"], ["crossed"])]
    constants = {"c_lo": lo, "c_hi": hi}
    proto = model(nodes, {"x": (dtype, x.shape), "lo": (dtype, ()), "hi": (dtype, ())},
                  {n: dtype for n in ("run_time", "constant", "upper", "crossed")}, constants, opset=13)
    got = run(proto, {"x": x, "lo": lo, "hi": hi})
    check_exact(got, [np.clip(x, lo, hi), np.clip(x, lo, hi), np.minimum(x, hi),
                      np.full_like(x, lo)])


def test_int64_clip_bounds_are_exact():
    """Bounds past 2**53 (an f32 or f64 property would round them)."""
    x = np.array([2**62 + 1, 2**62 + 3, -(2**62) - 5, 7], np.int64)
    lo, hi = np.array(-(2**62) - 3, np.int64), np.array(2**62 + 2, np.int64)
    proto = model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": (np.int64, (4,))},
                  {"y": np.int64}, {"lo": lo, "hi": hi}, opset=13)
    check_exact(run(proto, {"x": x}), [np.clip(x, lo, hi)])


@pytest.mark.parametrize("base, exponent", [
    (np.int32, np.int32), (np.int64, np.int64), (np.int64, np.float32), (np.int32, np.int64),
    (np.int32, np.float64), (np.int64, np.uint8),
], ids=lambda t: np.dtype(t).name)
def test_integer_pow_matches_onnxruntime(base, exponent):
    """Small and large powers, negative bases, negative and fractional exponents (no NaN:
    its conversion to an integer is undefined)."""
    x = np.array([2, -3, 5, 1, -1, 7, 0, 10, 2, -2, 3, 9], base)
    if np.dtype(exponent).kind == "u":
        y = np.array([3, 2, 3, 9, 5, 4, 2, 1, 30, 31, 0, 7], exponent)
    elif np.dtype(exponent).kind == "f":
        y = np.array([3, 2, 0.5, -1, 5, 1.5, 2, 0.3, 30, 31, 0, 7.9], exponent)
    else:
        y = np.array([3, 2, 13, -4, -3, 4, 2, 9, 30, -1, 0, 7], exponent)
    proto = model([helper.make_node("Pow", ["x", "y"], ["z"])],
                  {"x": (base, x.shape), "y": (exponent, y.shape)}, {"z": base}, opset=15)
    got = run(proto, {"x": x, "y": y})
    with np.errstate(divide="ignore"):
        want = np.trunc(np.power(x.astype(F64), y.astype(F64))).astype(base)
    check_exact(got, [want])
    if np.dtype(exponent).kind != "u":  # onnxruntime has no unsigned exponents
        check_exact(got, run_onnxruntime(proto, {"x": x, "y": y}))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda t: np.dtype(t).name)
def test_integer_max_pool(dtype):
    """Padding takes no part: windows of negative int8 values stay negative."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (2, 3, 7, 6), endpoint=True, dtype=dtype)
    x[0, 0] = info.min
    nodes = [helper.make_node("MaxPool", ["x"], ["padded"], kernel_shape=[3, 2], strides=[2, 1],
                              pads=[1, 1, 1, 0]),
             helper.make_node("MaxPool", ["x"], ["ceil"], kernel_shape=[2, 2], strides=[2, 2],
                              ceil_mode=1, dilations=[1, 2])]
    proto = model(nodes, {"x": (dtype, x.shape)}, {"padded": dtype, "ceil": dtype}, opset=12)
    check_exact(run(proto, {"x": x}), run_onnxruntime(proto, {"x": x}))


def test_integer_pow_and_clip_import():
    """An integer Pow is computed in f64 between two casts; integer Clip bounds (and f64
    ones) are tensors, not f32 properties."""
    nodes = [helper.make_node("Pow", ["x", "e"], ["p"]),
             helper.make_node("Clip", ["x", "lo", "hi"], ["c"]),
             helper.make_node("Clip", ["d", "dlo"], ["dc"])]
    proto = model(nodes, {"x": (np.int32, (3,)), "e": (np.int64, (3,)), "d": (F64, (3,))},
                  {"p": np.int32, "c": np.int32, "dc": F64},
                  {"lo": np.array(-2, np.int32), "hi": np.array(5, np.int32), "dlo": np.array(0.1)},
                  opset=15)
    text = str(import_onnx(proto).module)
    assert "graph.pow %x_f, %e_f : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>" in text
    assert "graph.cast %p_f : tensor<3xf64> -> tensor<3xi32>" in text
    assert "graph.clip" not in text
    assert text.count("graph.max") == 2 and text.count("graph.min") == 1


# ---- what stays unsupported ------------------------------------------------------------------

@pytest.mark.parametrize("node, dtype, opset, message", [
    (helper.make_node("Clip", ["x"], ["y"], min=0.0, name="c"), np.int32, 10,
     r"node 'c' \(Clip\): integer inputs need opset 11 or later"),
    (helper.make_node("Pow", ["x", "x"], ["y"], name="p"), np.uint8, 15,
     r"node 'p' \(Pow\): input 'x' is UINT8, but Pow takes float32, float16, [a-z0-9, ]*float64, "
     r"int64, int32 there"),
    (helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2], name="a"), np.int8, 18,
     r"node 'a' \(AveragePool\): input 'x' is INT8, but AveragePool takes float32, float16, "
     r"[a-z0-9, ]*float64 there"),
])
def test_unsupported_forms_are_one_line_errors(node, dtype, opset, message):
    proto = model([node], {"x": (dtype, (1, 2, 4))}, {"y": dtype}, opset=opset)
    with pytest.raises(FrontendError, match=f"^{message}$"):
        tmlir.InferenceSession(proto)
