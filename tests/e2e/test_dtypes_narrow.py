"""bfloat16 and the float8 family (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ) end to end, on emu.

The conversions of the generated CUDA C (``tm_bf16``, ``tm_f8e4m3fn``, ...) are checked
bit for bit against ``ml_dtypes`` (what ``onnx.numpy_helper`` and onnx's reference use):
every bit pattern widened to float32, and float32 values narrowed: the midpoints between
neighbouring values (ties to even), their next floats, subnormals, overflow, infinities
and NaN (NaN only as NaN: its bits are the type's), with ``saturate`` 0 and 1 for float8
(onnx's reference: ``numpy.clip`` to the largest finite value, then ``astype``). A float64
is narrowed through float32, as ``ml_dtypes`` narrows it (two roundings, not one). bfloat16 arithmetic is compared with
float32 arithmetic rounded to bfloat16 (one rounding per stored element: exact).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from models import typed_model
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.builtin import BFloat16Type, Float8E4M3FNType, Float8E4M3FNUZType, Float8E5M2Type

import tmlir
from tmlir import dtypes
from tmlir.backends import ptx
from tmlir.backends.cuda_types import float_literal
from tmlir.frontends.onnx import FrontendError, import_onnx

RNG = np.random.default_rng(19)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT8S = [d.numpy for d in dtypes.FLOAT8S]
NARROW = [BF16, *FLOAT8S]


def model(nodes, inputs, outputs, constants=None, opset: int = 21) -> onnx.ModelProto:
    return typed_model(nodes, inputs, outputs, constants, opset)


def run(proto: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    return tmlir.InferenceSession(proto, device="emu").run(None, feed)


def bits(x: np.ndarray) -> np.ndarray:
    return x.view(f"u{x.dtype.itemsize}")


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """The same dtype and shape, NaN where `want` has NaN, the same bits elsewhere."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape)
    nan = np.isnan(want.astype(F32))
    assert np.array_equal(np.isnan(got.astype(F32)), nan)
    assert np.array_equal(bits(got)[~nan], bits(want)[~nan])


def every_value(dtype: np.dtype) -> np.ndarray:
    return np.arange(2 ** (8 * dtype.itemsize), dtype=f"u{dtype.itemsize}").view(dtype)


def narrowing_cases(dtype: np.dtype) -> np.ndarray:
    """float32 values to narrow to `dtype`: the midpoints between its neighbouring finite
    values and the floats just above them, both signs, and the special cases."""
    finite = every_value(dtype).astype(F32)
    finite = np.unique(finite[np.isfinite(finite) & (finite >= 0)])
    midpoints = ((finite[:-1].astype(F64) + finite[1:]) / 2).astype(F32)
    largest, smallest = finite[-1], finite[1]
    with np.errstate(over="ignore"):
        specials = np.array([largest, largest * 1.0625, largest * 1.2, largest * 2, 1e30, np.inf, np.nan,
                             smallest / 2, smallest / 2 * 1.001, smallest / 4, 0.0, -0.0, 1e-40, 3.0e38], F32)
        cases = np.concatenate([midpoints, np.nextafter(midpoints, np.inf, dtype=F32),
                                np.nextafter(midpoints, 0, dtype=F32), specials,
                                RNG.standard_normal(512).astype(F32) * float(largest) ** 0.5])
    return np.concatenate([cases, -cases])


@pytest.mark.parametrize("dtype", NARROW, ids=str)
def test_conversions_are_exact_on_every_bit_pattern(dtype):
    """Widening every value of `dtype` and narrowing the rounding cases, both ways of
    ``saturate`` for float8 (bfloat16 has no saturate: it rounds to infinity)."""
    code = helper.np_dtype_to_tensor_dtype(dtype)
    values, wide = every_value(dtype), narrowing_cases(dtype)
    proto = model([helper.make_node("Cast", ["n"], ["f"], to=TensorProto.FLOAT),
                   helper.make_node("Cast", ["w"], ["exact"], to=code, saturate=0),
                   helper.make_node("Cast", ["w"], ["saturated"], to=code)],
                  {"n": (dtype, values.shape), "w": (F32, wide.shape)},
                  {"f": F32, "exact": dtype, "saturated": dtype})
    widened, exact, saturated = run(proto, {"n": values, "w": wide})
    assert_same(widened, values.astype(F32))
    assert np.array_equal(bits(widened)[~np.isnan(widened)], bits(values.astype(F32))[~np.isnan(widened)])
    with np.errstate(over="ignore", invalid="ignore"):
        assert_same(exact, wide.astype(dtype))
        want = wide.astype(dtype) if dtype == BF16 else np.clip(wide, -ml_dtypes.finfo(dtype).max,
                                                                ml_dtypes.finfo(dtype).max).astype(dtype)
    assert_same(saturated, want)


def test_float8_cases_of_the_onnx_specification():
    """The table of ``Cast``'s specification: NaN, infinities, negative zero, overflow."""
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 1e6, -1e6, 0.0], F32)
    codes = [helper.np_dtype_to_tensor_dtype(d) for d in FLOAT8S]
    nodes = [helper.make_node("Cast", ["x"], [f"y{i}{s}"], to=c, saturate=s)
             for i, c in enumerate(codes) for s in (0, 1)]
    proto = model(nodes, {"x": (F32, x.shape)}, {f"y{i}{s}": d for i, d in enumerate(FLOAT8S) for s in (0, 1)})
    got = run(proto, {"x": x})
    want = ReferenceEvaluator(proto).run(None, {"x": x})
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)
    e4m3fn, e4m3fnuz = got[0], got[2]  # no saturate: no infinities; FNUZ: no negative zero
    assert np.isnan(e4m3fn[1:3].astype(F32)).all() and bits(e4m3fn)[3] == 0x80
    assert bits(e4m3fnuz)[3] == 0 and got[5].astype(F32)[1] == 57344  # E5M2 saturated


def test_float64_is_narrowed_through_float32_as_onnx_reference_does():
    """float64 values just off a tie of the narrow type, which float32 rounds to the tie
    (then rounded to even), narrow as ml_dtypes narrows them: a single rounding from
    float64 would round half of them the other way."""
    cases = {}
    for dtype in NARROW:
        with np.errstate(invalid="ignore"):
            finite = every_value(dtype).astype(F64)
        finite = np.unique(finite[np.isfinite(finite) & (finite > 0)])[:-1]
        midpoints = (finite[:-1] + finite[1:]) / 2
        cases[dtype] = np.concatenate([midpoints * (1 + 2.0**-40), midpoints * (1 - 2.0**-40), midpoints])
    nodes = [helper.make_node("Cast", [f"x{i}"], [f"y{i}"], to=helper.np_dtype_to_tensor_dtype(d), saturate=0)
             for i, d in enumerate(NARROW)]
    proto = model(nodes, {f"x{i}": (F64, cases[d].shape) for i, d in enumerate(NARROW)},
                  {f"y{i}": d for i, d in enumerate(NARROW)})
    got = run(proto, {f"x{i}": cases[d] for i, d in enumerate(NARROW)})
    for g, dtype in zip(got, NARROW, strict=True):
        assert_same(g, cases[dtype].astype(dtype))


_SOURCES = [dtypes.FLOAT32, dtypes.FLOAT16, dtypes.FLOAT64, dtypes.INT8, dtypes.UINT16, dtypes.INT64,
            dtypes.BOOL, dtypes.BFLOAT16, *dtypes.FLOAT8S]


def _values(dtype: dtypes.DType) -> np.ndarray:
    if dtype.is_bool:
        return np.array([True, False, True, False, True, False])
    if dtype.is_float:
        with np.errstate(over="ignore"):  # -100000 is beyond E4M3's range: NaN
            return np.array([0.0, -1.5, 3.25, 200.0, -100000.0, 0.001], F32).astype(dtype.numpy)
    info = np.iinfo(dtype.numpy)
    return np.array([0, 1, 100, max(info.min, -1000), min(info.max, 60000), 7], dtype.numpy)


@pytest.mark.parametrize("target", [dtypes.BFLOAT16, *dtypes.FLOAT8S], ids=lambda d: d.name)
def test_cast_matrix_against_the_onnx_reference(target):
    """Every source type to `target` (saturating) and back, against onnx's reference."""
    nodes, inputs, outputs = [], {}, {}
    for i, source in enumerate(_SOURCES):
        if source == target:
            continue
        inputs[f"x{i}"] = (source.numpy, (6,))
        nodes += [helper.make_node("Cast", [f"x{i}"], [f"y{i}"], to=target.onnx),
                  helper.make_node("Cast", [f"y{i}"], [f"z{i}"], to=source.onnx)]
        outputs.update({f"y{i}": target.numpy, f"z{i}": source.numpy})
    proto = model(nodes, inputs, outputs)
    feed = {name: _values(dtypes.from_numpy(dtype)) for name, (dtype, _) in inputs.items()}
    with np.errstate(over="ignore", invalid="ignore"):
        want = ReferenceEvaluator(proto).run(None, feed)
    for g, w in zip(run(proto, feed), want, strict=True):
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w)
        else:
            assert_same(g, w)


def test_a_fused_round_trip_rounds_through_the_narrow_type():
    """float32 -> narrow -> float32 with only the float32 result: one fused kernel,
    which still rounds (and saturates) as the narrow type does."""
    x = narrowing_cases(BF16)[::7]
    nodes, outputs = [], {}
    for i, dtype in enumerate(NARROW):
        nodes += [helper.make_node("Cast", ["x"], [f"n{i}"], to=helper.np_dtype_to_tensor_dtype(dtype)),
                  helper.make_node("Cast", [f"n{i}"], [f"y{i}"], to=TensorProto.FLOAT)]
        outputs[f"y{i}"] = F32
    proto = model(nodes, {"x": (F32, x.shape)}, outputs)
    with np.errstate(over="ignore", invalid="ignore"):
        want = ReferenceEvaluator(proto).run(None, {"x": x})
    for g, w in zip(run(proto, {"x": x}), want, strict=True):
        assert_same(g, w)


def test_a_saturating_cast_imports_as_a_clip_then_the_cast():
    nodes = [helper.make_node("Cast", ["x"], ["s"], to=TensorProto.FLOAT8E4M3FNUZ),
             helper.make_node("Cast", ["x"], ["n"], to=TensorProto.FLOAT8E4M3FNUZ, saturate=0),
             helper.make_node("Cast", ["i"], ["w"], to=TensorProto.FLOAT8E5M2)]
    proto = model(nodes, {"x": (F32, (3,)), "i": (np.dtype(np.int32), (3,))},
                  {"s": FLOAT8S[1], "n": FLOAT8S[1], "w": FLOAT8S[2]})
    text = str(import_onnx(proto).module)
    assert "graph.clip %x {min = -2.400000e+02 : f32, max = 2.400000e+02 : f32}" in text
    assert "graph.cast %x : tensor<3xf32> -> tensor<3xf8E4M3FNUZ>" in text  # saturate = 0: no clip
    assert "graph.cast %i : tensor<3xi32> -> tensor<3xf32>" in text  # an integer is clipped as f32
    assert "max = 5.734400e+04 : f32" in text and text.count("graph.clip") == 2


@pytest.mark.parametrize("like", [BF16, np.dtype(ml_dtypes.float8_e5m2fnuz)], ids=str)
def test_cast_like_saturates_by_default_and_takes_saturate_zero(like):
    x = np.array([1e6, -3.3, np.inf, 0.1], F32)
    nodes = [helper.make_node("CastLike", ["x", "like"], ["y"]),
             helper.make_node("CastLike", ["x", "like"], ["z"], saturate=0)]
    proto = model(nodes, {"x": (F32, (4,)), "like": (like, (1,))}, {"y": like, "z": like})
    feed = {"x": x, "like": np.zeros(1, like)}
    with np.errstate(over="ignore", invalid="ignore"):
        want = ReferenceEvaluator(proto).run(None, feed)
    for g, w in zip(run(proto, feed), want, strict=True):
        assert_same(g, w)


@pytest.mark.parametrize("dtype", NARROW, ids=str)
def test_data_movement(dtype):
    """Ops that take any type move the bits of narrow floats unchanged (NaN too)."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Concat", ["x", "x"], ["c"], axis=2),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Gather", ["x", "ids"], ["g"], axis=1),
             helper.make_node("Pad", ["x", "pads", "value"], ["p"], mode="constant"),
             helper.make_node("Where", ["cond", "x", "w"], ["wh"]),
             helper.make_node("Identity", ["x"], ["i"])]
    w = RNG.standard_normal((2, 3, 4)).astype(F32).astype(dtype)
    constants = {"shape": np.array([6, 4]), "ids": np.array([[2, 0]]), "pads": np.array([0, 1, 0, 0, 1, 2]),
                 "value": np.array(1.5, dtype), "w": w}
    proto = model(nodes, {"x": (dtype, (2, 3, 4)), "cond": (np.dtype(bool), (3, 4))},
                  {n: dtype for n in ("t", "c", "r", "g", "p", "wh", "i")}, constants)
    x = every_value(dtype)[RNG.integers(0, 2 ** (8 * dtype.itemsize), 24)].reshape(2, 3, 4)
    cond = RNG.integers(0, 2, (3, 4)).astype(bool)
    want = [x.transpose(1, 0, 2), np.concatenate([x, x], 2), x.reshape(6, 4), x[:, [[2, 0]], :],
            np.pad(x, [(0, 0), (1, 1), (0, 2)], constant_values=np.array(1.5, dtype)), np.where(cond, x, w), x]
    for g, want_ in zip(run(proto, {"x": x, "cond": cond}), want, strict=True):
        assert g.dtype == dtype and np.array_equal(bits(g), bits(want_))


def test_bfloat16_arithmetic_is_float32_rounded_once():
    """Elementwise ops and a matmul on bfloat16 tensors compute in float and round each
    stored element once: exactly numpy float32 rounded to bfloat16."""
    nodes = [helper.make_node("Add", ["x", "y"], ["add"]), helper.make_node("Mul", ["x", "y"], ["mul"]),
             helper.make_node("Relu", ["x"], ["relu"]), helper.make_node("Exp", ["x"], ["exp"]),
             helper.make_node("MatMul", ["x", "m"], ["mm"]), helper.make_node("Less", ["x", "y"], ["less"])]
    x, y = (RNG.standard_normal((4, 8)).astype(F32).astype(BF16) for _ in range(2))
    m = RNG.standard_normal((8, 3)).astype(F32).astype(BF16)
    proto = model(nodes, {"x": (BF16, (4, 8)), "y": (BF16, (4, 8))},
                  {"add": BF16, "mul": BF16, "relu": BF16, "exp": BF16, "mm": BF16, "less": np.dtype(bool)},
                  {"m": m})
    add, mul, relu, exp, mm, less = run(proto, {"x": x, "y": y})
    xf, yf = x.astype(F32), y.astype(F32)
    for got, want in ((add, xf + yf), (mul, xf * yf), (relu, np.maximum(xf, 0))):
        assert_same(got, want.astype(BF16))
    np.testing.assert_allclose(exp.astype(F32), np.exp(xf), rtol=2**-8)
    np.testing.assert_allclose(mm.astype(F32), xf @ m.astype(F32), rtol=2**-7, atol=1e-2)
    np.testing.assert_array_equal(less, xf < yf)


def test_narrow_float_weights_and_ir():
    """A float8 initializer is a weight of that type; the IR names the types."""
    w = RNG.standard_normal((3,)).astype(F32).astype(ml_dtypes.float8_e4m3fn)
    proto = model([helper.make_node("Concat", ["x", "w"], ["y"], axis=0)],
                  {"x": (np.dtype(ml_dtypes.float8_e4m3fn), (2,))}, {"y": np.dtype(ml_dtypes.float8_e4m3fn)},
                  {"w": w})
    text = str(import_onnx(proto).module)
    assert "tensor<3xf8E4M3FN>" in text and "tensor<5xf8E4M3FN>" in text
    x = np.array([1.0, -2.0], ml_dtypes.float8_e4m3fn)
    assert np.array_equal(bits(run(proto, {"x": x})[0]), bits(np.concatenate([x, w])))


def test_constants_are_the_bits_of_their_type():
    assert float_literal(1.5, BFloat16Type()) == "tm_bf16{0x3fc0}"
    assert float_literal(-448.0, Float8E4M3FNType()) == "tm_f8e4m3fn{0xfe}"
    assert float_literal(float("nan"), Float8E4M3FNUZType()) == "tm_f8e4m3fnuz{0x80}"
    assert float_literal(float("inf"), Float8E5M2Type()) == "tm_f8e5m2{0x7c}"


def test_float8_arithmetic_is_a_one_line_error():
    proto = model([helper.make_node("Add", ["x", "x"], ["y"], name="add")],
                  {"x": (np.dtype(ml_dtypes.float8_e5m2), (2,))}, {"y": np.dtype(ml_dtypes.float8_e5m2)})
    with pytest.raises(FrontendError, match=r"^node 'add' \(Add\): .*FLOAT8E5M2") as info:
        tmlir.InferenceSession(proto)
    assert "\n" not in str(info.value)


def test_saturate_other_than_0_or_1_is_a_one_line_error():
    proto = model([helper.make_node("Cast", ["x"], ["y"], name="c", to=TensorProto.FLOAT8E4M3FN, saturate=2)],
                  {"x": (F32, (2,))}, {"y": np.dtype(ml_dtypes.float8_e4m3fn)})
    with pytest.raises(FrontendError, match=r"^node 'c' \(Cast\): .*saturate"):
        tmlir.InferenceSession(proto)


@pytest.mark.skipif(ptx.nvrtc_version() is None, reason="NVRTC does not load")
def test_kernels_of_every_narrow_type_compile_with_nvrtc():
    """Every narrow type's struct and conversions, a bfloat16 matmul and padded
    convolution (a tm_bf16 zero), and float8 data movement compile with NVRTC."""
    nodes = [helper.make_node("Cast", ["x"], [f"c{i}"], to=d.onnx) for i, d in enumerate(dtypes.FLOAT8S)]
    nodes += [helper.make_node("Cast", [f"c{i}"], [f"f{i}"], to=TensorProto.FLOAT) for i in range(4)]
    nodes += [helper.make_node("Transpose", ["c0"], ["t"], perm=[1, 0]),
              helper.make_node("MatMul", ["m", "m"], ["mm"]),
              helper.make_node("Conv", ["img", "w"], ["conv"], pads=[1, 1, 1, 1])]
    outputs = {f"f{i}": F32 for i in range(4)} | {"t": FLOAT8S[0], "mm": BF16, "conv": BF16}
    proto = model(nodes, {"x": (F32, (8, 8)), "m": (BF16, (8, 8)), "img": (BF16, (1, 2, 5, 5))}, outputs,
                  {"w": RNG.standard_normal((3, 2, 3, 3)).astype(F32).astype(BF16)})
    program = tmlir.InferenceSession(proto).program
    for ctype in ("tm_bf16", "tm_f8e4m3fn", "tm_f8e4m3fnuz", "tm_f8e5m2", "tm_f8e5m2fnuz"):
        assert f"struct {ctype} " in program.source
    text = ptx.compile_ptx(program.source, "sm_80", compiler="nvrtc")
    assert sorted(ptx.ptx_kernel_names(text)) == sorted(k.signature.name for k in program.kernels)
