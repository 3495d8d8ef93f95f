"""Rounding, trigonometric and hyperbolic functions, Mish, ThresholdedRelu, Shrink, Celu,
Sign, Mod, the bitwise operators, BitShift, PRelu and IsInf through the whole pipeline on
the emu backend, against numpy in float64 on the same float32 inputs (or exactly, for
integers, rounding, Mod and the masks).

The float bound is a relative error of 1e-5; inputs are 33x65 (not a multiple of the
block) of 3 * N(0, 1), mapped into the function's domain where it has one. Every operator
also fuses: a chain of them is one kernel, and the model of all of them compiles to PTX.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from models import make_model
from onnx import TensorProto, helper

import tmlir
from tmlir.backends import ptx
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names

SHAPE = (33, 65)
RTOL = 1e-5
TINY = float(np.finfo(np.float32).tiny)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 1e-40],
                   np.float32)


def f32(value: float) -> float:
    return float(np.float32(value))


def data(shape=SHAPE, seed: int = 0) -> np.ndarray:
    return (3 * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


def session(model) -> tmlir.InferenceSession:
    return tmlir.InferenceSession(model, device="emu")


def typed_model(nodes, inputs: dict[str, tuple[int, tuple[int, ...]]],
                outputs: dict[str, tuple[int, tuple[int, ...]]], opset: int = 18):
    """A model whose inputs and outputs have the given (ONNX dtype, shape)."""
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, t, list(s)) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, list(s)) for n, (t, s) in outputs.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def assert_close(got: np.ndarray, want: np.ndarray, atol: float = 0.0) -> None:
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=max(atol, TINY))  # NaN == NaN


@dataclass(frozen=True)
class Unary:
    op: str
    reference: Callable[[np.ndarray], np.ndarray]
    attributes: dict[str, float] = field(default_factory=dict)
    domain: Callable[[np.ndarray], np.ndarray] = lambda x: x

    @property
    def id(self) -> str:
        return self.op + "".join(f"-{k}={v}" for k, v in self.attributes.items())


def softplus(x):
    return np.logaddexp(x, 0)


UNARY = [
    Unary("Sign", np.sign),
    Unary("Floor", np.floor),
    Unary("Ceil", np.ceil),
    Unary("Round", np.round),  # halves to even
    Unary("Sin", np.sin),
    Unary("Cos", np.cos),
    Unary("Tan", np.tan),
    Unary("Asin", np.arcsin, domain=np.tanh),
    Unary("Acos", np.arccos, domain=np.tanh),
    Unary("Atan", np.arctan),
    Unary("Sinh", np.sinh),
    Unary("Cosh", np.cosh),
    Unary("Asinh", np.arcsinh),
    Unary("Acosh", np.arccosh, domain=lambda x: np.abs(x) + np.float32(1)),
    Unary("Atanh", np.arctanh, domain=lambda x: np.tanh(x) * np.float32(0.99)),
    Unary("Mish", lambda x: x * np.tanh(softplus(x))),
    Unary("ThresholdedRelu", lambda x: np.where(x > 1, x, 0)),
    Unary("ThresholdedRelu", lambda x: np.where(x > f32(-0.3), x, 0), {"alpha": -0.3}),
    Unary("Shrink", lambda x: np.where(x < -0.5, x, np.where(x > 0.5, x, 0))),
    Unary("Shrink", lambda x: np.where(x < f32(-1.2), x + f32(0.4),
                                       np.where(x > f32(1.2), x - f32(0.4), 0)),
          {"lambd": 1.2, "bias": 0.4}),
    Unary("Celu", lambda x: np.where(x > 0, x, np.expm1(x))),
    Unary("Celu", lambda x: np.where(x > 0, x, f32(0.7) * np.expm1(x / f32(0.7))), {"alpha": 0.7}),
]


@pytest.mark.parametrize("case", UNARY, ids=[c.id for c in UNARY])
def test_unary(case: Unary):
    model = make_model([helper.make_node(case.op, ["x"], ["y"], **case.attributes)],
                       {"x": SHAPE}, {"y": SHAPE}, opset=22)
    x = case.domain(data()).astype(np.float32)
    x[0, :6] = [0.5, 1.5, -0.5, -2.5, 0.0, 1.0]  # halves round to even; outside a domain: NaN
    (y,) = session(model).run(None, {"x": x})
    with np.errstate(invalid="ignore", divide="ignore"):
        want = case.reference(x.astype(np.float64))
    assert_close(y, want)


@pytest.mark.parametrize("case", UNARY, ids=[c.id for c in UNARY])
def test_unary_nan_infinities_and_zeros(case: Unary):
    """NaN stays NaN (ThresholdedRelu and Shrink give 0, as onnxruntime and ONNX's
    reference); infinities and signed zeros as numpy has them."""
    model = make_model([helper.make_node(case.op, ["x"], ["y"], **case.attributes)],
                       {"x": SPECIAL.shape}, {"y": SPECIAL.shape}, opset=22)
    (y,) = session(model).run(None, {"x": SPECIAL})
    with np.errstate(all="ignore"):
        want = case.reference(SPECIAL.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
    np.testing.assert_allclose(y, want, rtol=RTOL, atol=TINY)


# -- Mod -------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmod", [0, 1])
def test_float_mod(fmod):
    """numpy.mod (the sign of the divisor) and numpy.fmod (of the dividend), exactly, with
    ONNX's special cases: NaN for an infinite dividend or a zero divisor, x or the divisor
    for an infinite divisor, a zero's sign."""
    a = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 0.0, np.inf, 3.0, 3.0, -3.0, 3.0, np.nan,
                  1e30, 7.0, -1e-30], np.float32)
    b = np.array([2, 2, -2, -2, 2, 2, -2, 2, 0, np.inf, np.inf, -np.inf, 1, 0.1, np.nan, 3],
                 np.float32)
    model = make_model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)],
                       {"a": a.shape, "b": b.shape}, {"y": a.shape}, opset=13)
    (y,) = session(model).run(None, {"a": a, "b": b})
    with np.errstate(all="ignore"):
        want = (np.fmod if fmod else np.mod)(a, b)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(want))


@pytest.mark.parametrize("fmod", [0, 1])
def test_float_mod_broadcasts(fmod):
    a, b = data(SHAPE, 1), data((65,), 2)
    model = make_model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)],
                       {"a": SHAPE, "b": (65,)}, {"y": SHAPE}, opset=13)
    (y,) = session(model).run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(y, (np.fmod if fmod else np.mod)(a, b))


@pytest.mark.parametrize("dtype, numpy_type", [(TensorProto.INT32, np.int32),
                                               (TensorProto.INT64, np.int64)])
@pytest.mark.parametrize("fmod", [0, 1])
def test_integer_mod(fmod, dtype, numpy_type):
    """Python's % (fmod = 0) and C's (fmod = 1); by 0 the remainder is 0 (undefined in
    ONNX, numpy's answer), and the most negative value by -1 does not trap."""
    low = np.iinfo(numpy_type).min
    a = np.array([[5, -5, 5, -5, 0, 7, low, low, 13], [9, -9, 1, -1, 4, -7, 3, low + 1, -13]],
                 numpy_type)
    b = np.array([3, 3, -3, -3, 4, 0, -1, 7, 1], numpy_type)
    model = typed_model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)],
                        {"a": (dtype, a.shape), "b": (dtype, b.shape)}, {"y": (dtype, a.shape)})
    (y,) = session(model).run(None, {"a": a, "b": b})
    with np.errstate(all="ignore"):
        want = np.where(b == -1, 0, (np.fmod if fmod else np.mod)(a, np.where(b == -1, 1, b)))
    np.testing.assert_array_equal(y, want.astype(numpy_type))


@pytest.mark.parametrize("dtype, numpy_type", [
    (TensorProto.UINT8, np.uint8), (TensorProto.UINT64, np.uint64), (TensorProto.INT8, np.int8),
    (TensorProto.INT16, np.int16), (TensorProto.FLOAT16, np.float16), (TensorProto.DOUBLE, np.float64)])
@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_of_other_types(fmod, dtype, numpy_type):
    """Unsigned remainders are C's either way (and by the largest value, not a trap);
    float16 is computed in float32, exactly, and rounded."""
    if np.dtype(numpy_type).kind == "f":
        a = np.array([5.5, -5.5, 5.5, -0.0, 7.25, 1e3], numpy_type)
        b = np.array([2, 2, -2, 3, 0.5, -0.75], numpy_type)
    else:
        info = np.iinfo(numpy_type)
        a = np.array([5, info.max, 7, 0, info.min, 100 if info.min else 3], numpy_type)
        b = np.array([3, 7, info.max, 4, 3, -7 if info.min else 200], numpy_type)
    model = typed_model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)],
                        {"a": (dtype, a.shape), "b": (dtype, b.shape)}, {"y": (dtype, a.shape)})
    (y,) = session(model).run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(y, (np.fmod if fmod else np.mod)(a, b))


# -- bitwise operators and BitShift -------------------------------------------------------------


@pytest.mark.parametrize("dtype, numpy_type", [(TensorProto.INT32, np.int32),
                                               (TensorProto.INT64, np.int64)])
@pytest.mark.parametrize("op, reference", [("BitwiseAnd", np.bitwise_and),
                                           ("BitwiseOr", np.bitwise_or),
                                           ("BitwiseXor", np.bitwise_xor)])
def test_bitwise_binary(op, reference, dtype, numpy_type):
    rng = np.random.default_rng(3)
    info = np.iinfo(numpy_type)
    a = rng.integers(info.min, info.max, (3, 1, 31), dtype=numpy_type)
    b = rng.integers(info.min, info.max, (17, 1), dtype=numpy_type)
    model = typed_model([helper.make_node(op, ["a", "b"], ["y"])],
                        {"a": (dtype, a.shape), "b": (dtype, b.shape)}, {"y": (dtype, (3, 17, 31))})
    (y,) = session(model).run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(y, reference(a, b))


@pytest.mark.parametrize("dtype, numpy_type", [(TensorProto.INT32, np.int32),
                                               (TensorProto.INT64, np.int64)])
def test_bitwise_not(dtype, numpy_type):
    info = np.iinfo(numpy_type)
    x = np.array([0, -1, 1, info.min, info.max, 12345], numpy_type)
    model = typed_model([helper.make_node("BitwiseNot", ["x"], ["y"])], {"x": (dtype, x.shape)},
                        {"y": (dtype, x.shape)})
    (y,) = session(model).run(None, {"x": x})
    np.testing.assert_array_equal(y, np.invert(x))


def bit_shift_reference(x: np.ndarray, y: np.ndarray, left: bool) -> np.ndarray:
    """Opset 28's BitShift of signed integers: out of [0, bits) the fill alone."""
    bits = 8 * x.itemsize
    inside = (y >= 0) & (y < bits)
    safe = np.where(inside, y, 0).astype(x.dtype)
    if x.dtype.kind == "u":
        return np.where(inside, (x << safe) if left else (x >> safe), 0).astype(x.dtype)
    if left:
        return np.where(inside, x << safe, 0).astype(x.dtype)
    return np.where(inside, x >> safe, np.where(x < 0, -1, 0)).astype(x.dtype)


@pytest.mark.parametrize("dtype, numpy_type", [(TensorProto.INT32, np.int32),
                                               (TensorProto.INT64, np.int64)])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift(direction, dtype, numpy_type):
    bits = 8 * np.dtype(numpy_type).itemsize
    info = np.iinfo(numpy_type)
    x = np.array([16, -8, 1, -1, info.min, info.max, 5, -5, 3, -3, 7, -7], numpy_type)
    y = np.array([2, 1, bits - 1, bits - 1, 1, 1, bits, bits, 100, -1, -bits, 0], numpy_type)
    model = typed_model([helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)],
                        {"x": (dtype, x.shape), "y": (dtype, y.shape)}, {"z": (dtype, x.shape)})
    (z,) = session(model).run(None, {"x": x, "y": y})
    np.testing.assert_array_equal(z, bit_shift_reference(x, y, direction == "LEFT"))


@pytest.mark.parametrize("dtype, numpy_type", [(TensorProto.UINT8, np.uint8),
                                               (TensorProto.UINT32, np.uint32),
                                               (TensorProto.INT8, np.int8)])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_of_narrow_and_unsigned_types(direction, dtype, numpy_type):
    """Unsigned shifts are logical; a shift by the width or more gives 0."""
    bits = 8 * np.dtype(numpy_type).itemsize
    info = np.iinfo(numpy_type)
    x = np.array([16, 4, 1, info.max, info.max, 3, info.min], numpy_type)
    y = np.array([1, 2, bits - 1, 1, bits, bits + 3, 1], numpy_type)
    model = typed_model([helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)],
                        {"x": (dtype, x.shape), "y": (dtype, y.shape)}, {"z": (dtype, x.shape)})
    (z,) = session(model).run(None, {"x": x, "y": y})
    np.testing.assert_array_equal(z, bit_shift_reference(x, y, direction == "LEFT"))


# -- PRelu, Sign of integers, IsInf ------------------------------------------------------------


@pytest.mark.parametrize("slope_shape", [SHAPE, (65,), (33, 1), ()])
def test_prelu(slope_shape):
    x, slope = data(), data(slope_shape, 4) / 3
    x[0, :3] = [np.nan, -np.inf, -0.0]
    model = make_model([helper.make_node("PRelu", ["x", "slope"], ["y"])],
                       {"x": SHAPE, "slope": slope_shape}, {"y": SHAPE}, opset=16)
    (y,) = session(model).run(None, {"x": x, "slope": slope})
    with np.errstate(all="ignore"):
        want = np.where(x < 0, slope.astype(np.float64) * x, x)
    assert_close(y, want)


def test_integer_prelu_and_sign():
    x = np.array([[-5, 0, 7], [3, -1, -2**31]], np.int32)
    slope = np.array([2, 3, -1], np.int32)
    model = typed_model([helper.make_node("PRelu", ["x", "slope"], ["p"]),
                         helper.make_node("Sign", ["x"], ["s"])],
                        {"x": (TensorProto.INT32, x.shape), "slope": (TensorProto.INT32, (3,))},
                        {"p": (TensorProto.INT32, x.shape), "s": (TensorProto.INT32, x.shape)})
    p, s = session(model).run(None, {"x": x, "slope": slope})
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(p, np.where(x < 0, x * slope, x))
    np.testing.assert_array_equal(s, np.sign(x))


@pytest.mark.parametrize("attributes", [{}, {"detect_negative": 0}, {"detect_positive": 0},
                                        {"detect_negative": 0, "detect_positive": 0}])
def test_is_inf(attributes):
    node = helper.make_node("IsInf", ["x"], ["y"], **attributes)
    model = typed_model([node], {"x": (TensorProto.FLOAT, SPECIAL.shape)},
                        {"y": (TensorProto.BOOL, SPECIAL.shape)}, opset=20)
    (y,) = session(model).run(None, {"x": SPECIAL})
    negative = attributes.get("detect_negative", 1) and SPECIAL == -np.inf
    positive = attributes.get("detect_positive", 1) and SPECIAL == np.inf
    np.testing.assert_array_equal(y, negative | positive)


# -- fusion, and every operator compiled to PTX -------------------------------------------------


def test_a_chain_of_them_is_one_kernel():
    nodes = [helper.make_node("Sin", ["x"], ["a"]), helper.make_node("Mish", ["a"], ["b"]),
             helper.make_node("Mod", ["b", "m"], ["c"], fmod=0),
             helper.make_node("PRelu", ["c", "s"], ["d"]), helper.make_node("Round", ["d"], ["y"])]
    model = make_model(nodes, {"x": SHAPE, "m": (65,), "s": (33, 1)}, {"y": SHAPE}, opset=16)
    x, m, s = data(), np.abs(data((65,), 1)) + np.float32(0.1), data((33, 1), 2)
    compiled = session(model)
    assert len(compiled.program.kernels) == 1
    (y,) = compiled.run(None, {"x": x, "m": m, "s": s})
    x64 = x.astype(np.float64)
    b = (np.sin(x64) * np.tanh(softplus(np.sin(x64)))).astype(np.float32)
    d = np.mod(b, m).astype(np.float64)
    want = np.round(np.where(d < 0, s * d, d))
    np.testing.assert_allclose(y, want, atol=1.0)  # rounding may flip at a half
    assert np.mean(y == want) > 0.99


def test_prologue_and_epilogue_of_a_matmul():
    """Cos before a MatMul and Mod, PRelu, Celu after it are computed inside its kernel."""
    nodes = [helper.make_node("Cos", ["a"], ["c"]), helper.make_node("MatMul", ["c", "w"], ["m"]),
             helper.make_node("Mod", ["m", "k"], ["r"], fmod=1),
             helper.make_node("PRelu", ["r", "s"], ["p"]), helper.make_node("Celu", ["p"], ["y"])]
    model = make_model(nodes, {"a": (33, 40), "w": (40, 65), "k": (65,), "s": (65,)},
                       {"y": (33, 65)}, opset=16)
    a, w = data((33, 40), 1), data((40, 65), 2) / 8
    k, s = np.abs(data((65,), 3)) + np.float32(2), data((65,), 4) / 3
    compiled = session(model)
    assert len(compiled.program.kernels) == 1
    (y,) = compiled.run(None, {"a": a, "w": w, "k": k, "s": s})
    m = np.cos(a.astype(np.float64)) @ w
    r = np.fmod(m, k)  # fmod is continuous except where m crosses a multiple of k
    p = np.where(r < 0, s * r, r)
    want = np.where(p > 0, p, np.expm1(p))
    assert np.count_nonzero(np.abs(y - want) > 1e-4) <= 2  # at most a jump or two of fmod


def test_an_integer_chain_and_a_mask_are_one_kernel_each():
    i32 = TensorProto.INT32
    nodes = [helper.make_node("BitwiseAnd", ["a", "b"], ["c"]),
             helper.make_node("BitShift", ["c", "n"], ["d"], direction="LEFT"),
             helper.make_node("Mod", ["d", "b"], ["e"]), helper.make_node("BitwiseNot", ["e"], ["y"])]
    model = typed_model(nodes, {"a": (i32, (4, 5)), "b": (i32, (5,)), "n": (i32, ())},
                        {"y": (i32, (4, 5))})
    rng = np.random.default_rng(5)
    a, b = rng.integers(-100, 100, (4, 5), dtype=np.int32), np.array([3, -7, 5, 9, -2], np.int32)
    compiled = session(model)
    assert len(compiled.program.kernels) == 1
    (y,) = compiled.run(None, {"a": a, "b": b, "n": np.array(3, np.int32)})
    np.testing.assert_array_equal(y, np.invert(np.mod((a & b) << 3, b)))

    model = typed_model([helper.make_node("Tan", ["x"], ["t"]), helper.make_node("IsInf", ["t"], ["y"])],
                        {"x": (TensorProto.FLOAT, SPECIAL.shape)}, {"y": (TensorProto.BOOL, SPECIAL.shape)})
    compiled = session(model)
    assert len(compiled.program.kernels) == 1
    (y,) = compiled.run(None, {"x": SPECIAL})
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(y, np.isinf(np.tan(SPECIAL)))


def every_operator_model():
    nodes, outputs = [], {}
    for i, case in enumerate(UNARY):
        nodes.append(helper.make_node(case.op, ["x"], [f"y{i}"], **case.attributes))
        outputs[f"y{i}"] = SHAPE
    nodes += [helper.make_node("Mod", ["x", "b"], ["mod"]),
              helper.make_node("Mod", ["x", "b"], ["fmod"], fmod=1),
              helper.make_node("PRelu", ["x", "b"], ["prelu"])]
    outputs.update(dict.fromkeys(["mod", "fmod", "prelu"], SHAPE))
    return make_model(nodes, {"x": SHAPE, "b": (65,)}, outputs, opset=22)


def integer_operator_model():
    i64 = TensorProto.INT64
    nodes = [helper.make_node(op, ["a", "b"], [op.lower()]) for op in
             ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "Mod")]
    nodes += [helper.make_node("BitShift", ["a", "b"], ["left"], direction="LEFT"),
              helper.make_node("BitShift", ["a", "b"], ["right"], direction="RIGHT"),
              helper.make_node("BitwiseNot", ["a"], ["not"])]
    outputs = {n.output[0]: (i64, (4, 5)) for n in nodes}
    return typed_model(nodes, {"a": (i64, (4, 5)), "b": (i64, (5,))}, outputs)


@pytest.mark.parametrize("compiler, arch", [
    pytest.param("nvcc", "sm_90", marks=pytest.mark.skipif(shutil.which("nvcc") is None,
                                                          reason="nvcc not on PATH")),
    pytest.param("nvrtc", "sm_80", marks=pytest.mark.skipif(ptx.nvrtc_version() is None,
                                                           reason="NVRTC does not load")),
])
def test_every_operator_compiles_to_ptx(compiler, arch):
    for model in (every_operator_model(), integer_operator_model()):
        program = session(model).program
        text = compile_ptx(program.source, arch, compiler=compiler)
        assert sorted(ptx_kernel_names(text)) == sorted(k.signature.name for k in program.kernels)
    source = session(every_operator_model()).program.source
    for function in ("sinf", "acoshf", "atanhf", "rintf", "fmodf", "copysignf", "floorf"):
        assert f"{function}(" in source
