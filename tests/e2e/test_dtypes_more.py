"""float16, float64, int8, int16 and the unsigned integers end to end, on emu.

Each model is compiled and run on emu and compared with onnxruntime where it implements
the op for the type, else with numpy (computing in float64 or in the integer type, whose
arithmetic wraps as ONNX's does). Integers and bools must match exactly; float64 to
1e-15 relative (it is computed in double, not float); float16 to half precision
(``rtol 2e-3``: float16 is stored as half and computed in float, one rounding per stored
element). The float16 conversions of the generated CUDA C (``tm_half``) are checked on
every one of the 65536 bit patterns and on the rounding cases (ties to even, subnormals,
overflow to infinity, NaN).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from models import run_onnxruntime, typed_model
from onnx import TensorProto, helper

import tmlir
from tmlir import dtypes
from tmlir.backends import ptx
from tmlir.frontends.onnx import FrontendError, import_onnx

RNG = np.random.default_rng(11)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
NEW_INTS = [np.dtype(t) for t in (np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64)]
INTS = [*NEW_INTS, np.dtype(np.int32), np.dtype(np.int64)]


model = typed_model  # name -> (dtype, shape) inputs, name -> dtype outputs


def run(proto: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    return tmlir.InferenceSession(proto, device="emu").run(None, feed)


def compare(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if g.dtype == F16:
            np.testing.assert_allclose(g.astype(F32), w.astype(F32), rtol=2e-3, atol=2e-3)
        elif g.dtype == F64:
            np.testing.assert_allclose(g, w, rtol=1e-15, atol=0)
        elif g.dtype == F32:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)
        else:
            np.testing.assert_array_equal(g, w)


def ints(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Values over the whole range of `dtype` (32-bit and wider: around the sign bit)."""
    info = np.iinfo(dtype)
    low, high = max(info.min, -(2**40)), min(info.max, 2**40)
    return RNG.integers(low, high, shape, endpoint=True).astype(dtype)


# ---- integers --------------------------------------------------------------------------

def _int_reference(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        match op:
            case "Add":
                return x + y
            case "Sub":
                return x - y
            case "Mul":
                return x * y
            case "Max":
                return np.maximum(x, y)
            case "Min":
                return np.minimum(x, y)
    raise AssertionError(op)


@pytest.mark.parametrize("dtype", NEW_INTS, ids=str)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Max", "Min"])
def test_integer_arithmetic_wraps(op, dtype):
    """Sums, differences and products past the type's range wrap (two's complement), and
    unsigned values above the signed range order as unsigned."""
    proto = model([helper.make_node(op, ["x", "y"], ["z"])],
                  {"x": (dtype, (4, 6)), "y": (dtype, (6,))}, {"z": dtype})
    x, y = ints(dtype, (4, 6)), ints(dtype, (6,))
    compare(run(proto, {"x": x, "y": y}), [_int_reference(op, x, y)])


@pytest.mark.parametrize("dtype", NEW_INTS, ids=str)
def test_integer_division_truncates_and_unsigned_divides_unsigned(dtype):
    x, y = ints(dtype, (32,)), ints(dtype, (32,))
    y[y == 0] = 3
    if dtypes.from_numpy(dtype).is_unsigned:
        want = x // y
    else:  # truncation toward zero (numpy's // floors); -min / -1 does not occur here
        y[y == -1] = 2
        want = (np.sign(x.astype(np.int64)) * np.sign(y.astype(np.int64))
                * (np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64)))).astype(dtype)
    proto = model([helper.make_node("Div", ["x", "y"], ["z"])],
                  {"x": (dtype, (32,)), "y": (dtype, (32,))}, {"z": dtype})
    compare(run(proto, {"x": x, "y": y}), [want])


@pytest.mark.parametrize("dtype", NEW_INTS, ids=str)
def test_integer_comparisons_and_where(dtype):
    nodes = [helper.make_node("Less", ["x", "y"], ["lt"]),
             helper.make_node("GreaterOrEqual", ["x", "y"], ["ge"]),
             helper.make_node("Equal", ["x", "x"], ["eq"]),
             helper.make_node("Where", ["lt", "x", "y"], ["w"])]
    proto = model(nodes, {"x": (dtype, (5, 7)), "y": (dtype, (7,))},
                  {"lt": np.dtype(bool), "ge": np.dtype(bool), "eq": np.dtype(bool), "w": dtype})
    x, y = ints(dtype, (5, 7)), ints(dtype, (7,))
    compare(run(proto, {"x": x, "y": y}),
            [x < y, x >= y, np.ones((5, 7), bool), np.where(x < y, x, y)])


@pytest.mark.parametrize("dtype", [np.dtype(np.int8), np.dtype(np.int16)], ids=str)
def test_signed_neg_and_abs(dtype):
    proto = model([helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Abs", ["x"], ["a"])],
                  {"x": (dtype, (16,))}, {"n": dtype, "a": dtype})
    x = ints(dtype, (16,))
    x[x == np.iinfo(dtype).min] = 0
    compare(run(proto, {"x": x}), [-x, np.abs(x)])


# ---- data movement -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [*NEW_INTS, F16, F64], ids=str)
def test_data_movement(dtype):
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Concat", ["x", "x"], ["c"], axis=2),
             helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s"]),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Expand", ["x", "big"], ["e"]),
             helper.make_node("Pad", ["x", "pads", "value"], ["p"], mode="constant"),
             helper.make_node("Gather", ["x", "ids"], ["g"], axis=1)]
    constants = {"starts": np.array([0, 3]), "ends": np.array([2, 0]), "axes": np.array([0, 2]),
                 "steps": np.array([1, -1]), "shape": np.array([6, 4]), "big": np.array([2, 2, 3, 4]),
                 "pads": np.array([0, 1, 0, 0, 1, 2]), "value": np.array(7, dtype),
                 "ids": np.array([[2, 0]])}
    outputs = {name: dtype for name in "tcsrepg"}
    proto = model(nodes, {"x": (dtype, (2, 3, 4))}, outputs, constants)
    x = ints(dtype, (2, 3, 4)) if dtype.kind in "iu" else RNG.standard_normal((2, 3, 4)).astype(dtype)
    want = [x.transpose(1, 0, 2), np.concatenate([x, x], 2), x[0:2, :, 3:0:-1], x.reshape(6, 4),
            np.broadcast_to(x, (2, 2, 3, 4)), np.pad(x, [(0, 0), (1, 1), (0, 2)], constant_values=7),
            x[:, [[2, 0]], :]]
    compare(run(proto, {"x": x}), want)


@pytest.mark.parametrize("dtype", [*NEW_INTS, F16, F64], ids=str)
def test_weights_of_every_new_type(dtype):
    """An initializer of `dtype` becomes a weight buffer of that type, read at run time."""
    w = ints(dtype, (3, 5)) if dtype.kind in "iu" else RNG.standard_normal((3, 5)).astype(dtype)
    proto = model([helper.make_node("Max", ["x", "w"], ["y"])], {"x": (dtype, (3, 5))}, {"y": dtype},
                  {"w": w})
    x = ints(dtype, (3, 5)) if dtype.kind in "iu" else RNG.standard_normal((3, 5)).astype(dtype)
    session = tmlir.InferenceSession(proto, device="emu")
    assert {b.dtype for b in session.program.buffers if b.kind == "weight"} == {dtype.name}
    compare(session.run(None, {"x": x}), [np.maximum(x, w)])


# ---- float64 ----------------------------------------------------------------------------

def test_float64_is_computed_in_double():
    """1 + 1e-12 and a product of 17-digit values survive: float would round them away."""
    nodes = [helper.make_node(op, ["x", "y"], [op.lower()]) for op in ("Add", "Sub", "Mul", "Div", "Max", "Min")]
    nodes += [helper.make_node("Neg", ["x"], ["neg"]), helper.make_node("Abs", ["x"], ["abs"]),
              helper.make_node("Less", ["x", "y"], ["less"])]
    names = ["add", "sub", "mul", "div", "max", "min", "neg", "abs"]
    proto = model(nodes, {"x": (F64, (3, 8)), "y": (F64, (8,))},
                  {**{n: F64 for n in names}, "less": np.dtype(bool)})
    x = RNG.standard_normal((3, 8)) * 1e3
    y = 1 + RNG.standard_normal(8) * 1e-12
    want = [x + y, x - y, x * y, x / y, np.maximum(x, y), np.minimum(x, y), -x, np.abs(x), x < y]
    compare(run(proto, {"x": x, "y": y}), want)
    assert run(proto, {"x": x, "y": y})[1][0, 0] != np.float32(x[0, 0]) - np.float32(y[0])


def test_float64_of_an_op_without_a_float64_path_is_a_one_line_error():
    proto = model([helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="n")],
                  {"x": (F64, (2, 3)), "s": (F64, (3,))}, {"y": F64})
    with pytest.raises(FrontendError, match=r"^node 'n' \(LayerNormalization\): input 'x' is DOUBLE, "
                                             r"but LayerNormalization takes float32, float16, bfloat16 there$"):
        tmlir.InferenceSession(proto)


# ---- float16 -----------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["Relu", "Sigmoid", "Tanh", "Exp", "Erf", "Softsign", "Neg", "Abs"])
def test_float16_unary_ops_against_onnxruntime(op):
    proto = model([helper.make_node(op, ["x"], ["y"])], {"x": (F16, (4, 33))}, {"y": F16})
    x = RNG.standard_normal((4, 33)).astype(F16)
    compare(run(proto, {"x": x}), run_onnxruntime(proto, {"x": x}))


def test_float16_binary_ops_broadcast():
    nodes = [helper.make_node(op, ["x", "y"], [op.lower()]) for op in ("Add", "Sub", "Mul", "Div", "Max", "Min")]
    proto = model(nodes, {"x": (F16, (3, 8)), "y": (F16, (8,))},
                  {op: F16 for op in ("add", "sub", "mul", "div", "max", "min")})
    feed = {"x": RNG.standard_normal((3, 8)).astype(F16), "y": (RNG.random(8) + 0.5).astype(F16)}
    compare(run(proto, feed), run_onnxruntime(proto, feed))


def test_float16_reductions_and_softmax():
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0),
             helper.make_node("ReduceMean", ["x", "axes"], ["m"], keepdims=1),
             helper.make_node("ReduceMax", ["x", "axes"], ["mx"], keepdims=0),
             helper.make_node("Softmax", ["x"], ["p"], axis=-1)]
    proto = model(nodes, {"x": (F16, (6, 40))}, {"s": F16, "m": F16, "mx": F16, "p": F16},
                  {"axes": np.array([1])})
    x = RNG.standard_normal((6, 40)).astype(F16)
    compare(run(proto, {"x": x}), run_onnxruntime(proto, {"x": x}))


@pytest.mark.parametrize("trans_b", [0, 1])
def test_float16_matmul_and_gemm(trans_b):
    w = RNG.standard_normal((24, 20) if trans_b else (20, 24)).astype(F16) * np.float16(0.3)
    nodes = [helper.make_node("MatMul", ["x", "v"], ["mm"]),
             helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=trans_b)]
    proto = model(nodes, {"x": (F16, (5, 20))}, {"mm": F16, "g": F16},
                  {"w": w, "v": RNG.standard_normal((20, 7)).astype(F16),
                   "b": RNG.standard_normal(24).astype(F16)})
    x = RNG.standard_normal((5, 20)).astype(F16)
    compare(run(proto, {"x": x}), run_onnxruntime(proto, {"x": x}))


def test_float16_mlp_end_to_end():
    """MatMul, Add, Relu, MatMul, Softmax with float16 weights, input and output."""
    sizes = [32, 64, 48, 10]
    nodes, constants, last = [], {}, "x"
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        constants[f"w{i}"] = (RNG.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(F16)
        constants[f"b{i}"] = (RNG.standard_normal(n_out) * 0.1).astype(F16)
        nodes += [helper.make_node("MatMul", [last, f"w{i}"], [f"h{i}"]),
                  helper.make_node("Add", [f"h{i}", f"b{i}"], [f"a{i}"])]
        last = f"a{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [last], [f"r{i}"]))
            last = f"r{i}"
    nodes.append(helper.make_node("Softmax", [last], ["y"], axis=-1))
    proto = model(nodes, {"x": (F16, (8, 32))}, {"y": F16}, constants)
    x = RNG.standard_normal((8, 32)).astype(F16)
    compare(run(proto, {"x": x}), run_onnxruntime(proto, {"x": x}))


def test_float16_cnn_end_to_end():
    """Conv (bias, padding), BatchNormalization, Relu, MaxPool, Conv, GlobalAveragePool,
    Flatten, Gemm: a small CNN with float16 weights and input."""
    c = {"w1": RNG.standard_normal((8, 3, 3, 3)) * 0.3, "b1": RNG.standard_normal(8) * 0.1,
         "scale": RNG.random(8) + 0.5, "shift": RNG.standard_normal(8) * 0.1,
         "mean": RNG.standard_normal(8) * 0.1, "var": RNG.random(8) + 0.5,
         "w2": RNG.standard_normal((16, 8, 3, 3)) * 0.2, "wf": RNG.standard_normal((5, 16)) * 0.3,
         "bf": RNG.standard_normal(5) * 0.1}
    constants = {k: v.astype(F16) for k, v in c.items()}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "scale", "shift", "mean", "var"], ["n1"]),
             helper.make_node("Relu", ["n1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    proto = model(nodes, {"x": (F16, (2, 3, 12, 12))}, {"y": F16}, constants)
    x = RNG.standard_normal((2, 3, 12, 12)).astype(F16)
    compare(run(proto, {"x": x}), run_onnxruntime(proto, {"x": x}))


def test_float16_conversions_are_exact_on_every_bit_pattern():
    """float16 -> float32 of all 65536 halves, and float32 -> float16 of the values
    between them (ties round to even), of subnormals, of overflow (to infinity) and of
    NaN, against numpy's conversions."""
    halves = np.arange(65536, dtype=np.uint16).view(F16)
    finite = halves[np.isfinite(halves)].astype(F32)
    finite = np.unique(finite[finite >= 0])  # ascending: the midpoints between neighbours
    midpoints = ((finite[:-1].astype(F64) + finite[1:]) / 2).astype(F32)
    specials = np.array([65504, 65519.99, 65520, 1e10, -1e10, np.inf, -np.inf, np.nan,
                         2.0**-25, 2.0**-25 * 1.0001, 2.0**-24 * 1.5, 2.0**-26, -0.0, 1e-30],
                        F32)
    wide = np.concatenate([midpoints, -midpoints, np.nextafter(midpoints, np.inf, dtype=F32),
                           specials, RNG.standard_normal(4096).astype(F32) * 1e3])
    proto = model([helper.make_node("Cast", ["h"], ["f"], to=TensorProto.FLOAT),
                   helper.make_node("Cast", ["w"], ["n"], to=TensorProto.FLOAT16)],
                  {"h": (F16, halves.shape), "w": (F32, wide.shape)}, {"f": F32, "n": F16})
    widened, narrowed = run(proto, {"h": halves, "w": wide})
    assert np.array_equal(widened.view(np.uint32), halves.astype(F32).view(np.uint32))  # NaN payloads too
    nan = np.isnan(wide)
    assert np.isnan(narrowed[nan]).all()
    with np.errstate(over="ignore"):  # numpy says so when it rounds to infinity
        want = wide[~nan].astype(F16)
    assert np.array_equal(narrowed[~nan].view(np.uint16), want.view(np.uint16))


# ---- Cast and CastLike ------------------------------------------------------------------

def _cast_source(source: dtypes.DType, negative: bool) -> np.ndarray:
    """Values every target represents: fractions for floats (truncated toward zero when
    cast to an integer), small integers, and negatives only when `negative`."""
    if source.is_bool:
        return np.array([True, False, True, True, False, False])
    if source.is_float:
        values = [0.0, 0.25, 1.5, 2.75, 100.5, 7.0]
        return np.array([-v for v in values] if negative else values, source.numpy)
    values = [0, 1, 100, 7, 3, 126]
    return np.array([-v for v in values] if negative else values, source.numpy)


#: The dtypes onnxruntime's Python API takes numpy arrays of (not bfloat16 nor float8: those
#: are checked against onnx's reference in ``test_dtypes_narrow.py``).
ORT_DTYPES = [d for d in dtypes.DTYPES if d not in (dtypes.BFLOAT16, *dtypes.FLOAT8S)]


@pytest.mark.parametrize("source", ORT_DTYPES, ids=lambda d: d.name)
def test_cast_matrix_against_onnxruntime(source):
    """Cast from `source` to every dtype (one model per source), against onnxruntime;
    negative values to the signed, float and bool targets (to an unsigned type they are
    undefined for floats)."""
    for negative in (False, True) if (source.is_float or not source.is_unsigned) and not source.is_bool \
            else (False,):
        targets = [t for t in ORT_DTYPES if not (negative and t.is_unsigned)]
        nodes = [helper.make_node("Cast", ["x"], [f"y_{t.name}"], to=t.onnx) for t in targets]
        x = _cast_source(source, negative)
        proto = model(nodes, {"x": (source.numpy, x.shape)}, {f"y_{t.name}": t.numpy for t in targets})
        compare(run(proto, {"x": x}), run_onnxruntime(proto, {"x": x}))


def test_integer_casts_wrap_and_keep_the_sign_of_the_source():
    """Narrowing wraps; widening sign-extends a signed source and zero-extends an
    unsigned one; int8 <-> uint8 reinterpret the same bits."""
    x8 = np.array([-128, -1, 0, 1, 127], np.int8)
    u8 = np.array([0, 1, 128, 200, 255], np.uint8)
    i32 = np.array([-70000, -129, 128, 255, 70000], np.int32)
    nodes = [helper.make_node("Cast", ["x8"], ["a"], to=TensorProto.UINT8),
             helper.make_node("Cast", ["x8"], ["b"], to=TensorProto.UINT32),
             helper.make_node("Cast", ["u8"], ["c"], to=TensorProto.INT8),
             helper.make_node("Cast", ["u8"], ["d"], to=TensorProto.INT64),
             helper.make_node("Cast", ["i32"], ["e"], to=TensorProto.INT16),
             helper.make_node("Cast", ["i32"], ["f"], to=TensorProto.UINT8),
             helper.make_node("Cast", ["u8"], ["g"], to=TensorProto.FLOAT16)]
    proto = model(nodes, {"x8": (x8.dtype, (5,)), "u8": (u8.dtype, (5,)), "i32": (i32.dtype, (5,))},
                  {"a": np.dtype(np.uint8), "b": np.dtype(np.uint32), "c": np.dtype(np.int8),
                   "d": np.dtype(np.int64), "e": np.dtype(np.int16), "f": np.dtype(np.uint8), "g": F16})
    want = [x8.astype(np.uint8), x8.astype(np.uint32), u8.astype(np.int8), u8.astype(np.int64),
            i32.astype(np.int16), i32.astype(np.uint8), u8.astype(F16)]
    compare(run(proto, {"x8": x8, "u8": u8, "i32": i32}), want)


@pytest.mark.parametrize("like", [F16, F64, np.dtype(np.uint8), np.dtype(np.int16), np.dtype(bool)], ids=str)
def test_cast_like_takes_the_dtype_of_its_second_input(like):
    proto = model([helper.make_node("CastLike", ["x", "like"], ["y"])],
                  {"x": (F32, (6,)), "like": (like, (1,))}, {"y": like})
    x = np.array([0.0, 0.25, 1.5, 2.75, 100.5, 7.0], F32)
    feed = {"x": x, "like": np.zeros(1, like)}
    compare(run(proto, feed), run_onnxruntime(proto, feed))


def test_cast_like_imports_as_one_cast_and_never_reads_its_second_input():
    """A constant `like` gives only its dtype (no weight); `like` of the input's own dtype
    imports as nothing at all."""
    nodes = [helper.make_node("CastLike", ["x", "like"], ["y"]),
             helper.make_node("CastLike", ["x", "same"], ["z"])]
    proto = model(nodes, {"x": (F32, (3,))}, {"y": np.dtype(np.uint8), "z": F32},
                  {"like": np.zeros(5, np.uint8), "same": np.zeros((), F32)})
    text = str(import_onnx(proto).module)
    assert text.count("graph.cast") == 1 and "tensor<3xf32> -> tensor<3xui8>" in text
    assert "graph.weight" not in text


def test_cast_to_an_unsupported_dtype_is_a_one_line_error():
    proto = model([helper.make_node("Cast", ["x"], ["y"], name="c", to=TensorProto.INT4)],
                  {"x": (F32, (2,))}, {"y": np.dtype(np.float32)})
    proto.graph.output[0].type.tensor_type.elem_type = TensorProto.INT4
    with pytest.raises(FrontendError, match=r"^node 'c' \(Cast\): cannot cast to INT4 \(supported: "):
        tmlir.InferenceSession(proto)


@pytest.mark.skipif(ptx.nvrtc_version() is None, reason="NVRTC does not load")
def test_kernels_of_every_new_type_compile_with_nvrtc():
    """tm_half loads and stores (a padded convolution's tm_half zero, a matmul's f16
    arguments), double, narrow and unsigned integer arithmetic."""
    nodes = [helper.make_node("Relu", ["h"], ["hr"]), helper.make_node("Add", ["d", "d"], ["dd"]),
             helper.make_node("Mul", ["u", "u"], ["uu"]), helper.make_node("Div", ["s", "s"], ["ss"]),
             helper.make_node("Cast", ["u"], ["uh"], to=TensorProto.FLOAT16),
             helper.make_node("Conv", ["img", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("MatMul", ["m", "m"], ["mm"])]
    proto = model(nodes, {"h": (F16, (4,)), "d": (F64, (4,)), "u": (np.dtype(np.uint16), (4,)),
                          "s": (np.dtype(np.int8), (4,)), "img": (F16, (1, 2, 5, 5)), "m": (F16, (8, 8))},
                  {"hr": F16, "dd": F64, "uu": np.dtype(np.uint16), "ss": np.dtype(np.int8), "uh": F16,
                   "c": F16, "mm": F16}, {"w": RNG.standard_normal((3, 2, 3, 3)).astype(F16)})
    program = tmlir.InferenceSession(proto).program
    assert "struct tm_half" in program.source and "tm_half{0x0000}" in program.source
    text = ptx.compile_ptx(program.source, "sm_80", compiler="nvrtc")
    assert sorted(ptx.ptx_kernel_names(text)) == sorted(k.signature.name for k in program.kernels)
