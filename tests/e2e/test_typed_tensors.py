"""Integer and bool tensors end to end: comparisons, logic, Where, IsNaN, Cast, integer
arithmetic, run-time gathers (Gather, GatherElements, GatherND) and data movement of
int64/bool tensors, each model compiled and run on emu and compared with onnxruntime
(exactly for integers and bools, rtol 1e-6 for floats); their kernels compile to PTX."""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from models import run_onnxruntime, typed_model
from onnx import TensorProto, helper

import tmlir
from tmlir.backends import ptx
from tmlir.dtypes import BOOL as BOOL_DTYPE
from tmlir.dtypes import FLOAT32, INT32, INT64
from tmlir.frontends.onnx import FrontendError

RNG = np.random.default_rng(7)
F32, I64, I32, BOOL = (np.dtype(t) for t in (np.float32, np.int64, np.int32, np.bool_))


model = typed_model  # name -> (dtype, shape) inputs, name -> dtype outputs


def data(dtype: np.dtype, shape: tuple[int, ...], low: int = -5, high: int = 6) -> np.ndarray:
    if dtype == BOOL:
        return RNG.random(shape) < 0.5
    if dtype == F32:
        return RNG.integers(low, high, shape).astype(np.float32) / 2  # ties for == and <=
    return RNG.integers(low, high, shape).astype(dtype)


def check(proto: onnx.ModelProto, feed: dict[str, np.ndarray],
          want: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """Run on emu; compare with `want`, or with onnxruntime's results."""
    session = tmlir.InferenceSession(proto, device="emu")
    got = session.run(None, feed)
    want = run_onnxruntime(proto, feed) if want is None else want
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype == F32:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)
        else:
            np.testing.assert_array_equal(g, w)
    return got


@pytest.mark.parametrize("op", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", [F32, I64, I32])
def test_comparisons_broadcast(op, dtype):
    proto = model([helper.make_node(op, ["a", "b"], ["y"])],
                  {"a": (dtype, (2, 3, 4)), "b": (dtype, (3, 1))}, {"y": BOOL})
    check(proto, {"a": data(dtype, (2, 3, 4)), "b": data(dtype, (3, 1))})


def test_float_comparisons_with_nan_are_false_and_is_nan_finds_it():
    nodes = [helper.make_node("Equal", ["a", "a"], ["eq"]),
             helper.make_node("Less", ["a", "b"], ["lt"]),
             helper.make_node("IsNaN", ["a"], ["nan"])]
    proto = model(nodes, {"a": (F32, (4,)), "b": (F32, (4,))},
                  {"eq": BOOL, "lt": BOOL, "nan": BOOL})
    a = np.array([1.0, np.nan, -np.inf, np.nan], np.float32)
    eq, lt, nan = check(proto, {"a": a, "b": np.array([2, 2, 2, np.nan], np.float32)})
    assert eq.tolist() == [True, False, True, False] and nan.tolist() == [False, True, False, True]
    assert lt.tolist() == [True, False, True, False]


def test_equal_of_bools_and_boolean_logic():
    nodes = [helper.make_node("Equal", ["p", "q"], ["eq"]),
             helper.make_node("And", ["p", "q"], ["and"]),
             helper.make_node("Or", ["p", "q"], ["or"]),
             helper.make_node("Xor", ["p", "q"], ["xor"]),
             helper.make_node("Not", ["p"], ["not"])]
    proto = model(nodes, {"p": (BOOL, (3, 4)), "q": (BOOL, (4,))},
                  {n: BOOL for n in ("eq", "and", "or", "xor", "not")})
    check(proto, {"p": data(BOOL, (3, 4)), "q": data(BOOL, (4,))})


@pytest.mark.parametrize("dtype", [F32, I64, BOOL])
def test_where_broadcasts_condition_and_branches(dtype):
    proto = model([helper.make_node("Where", ["c", "x", "y"], ["z"])],
                  {"c": (BOOL, (2, 1, 4)), "x": (dtype, (3, 4)), "y": (dtype, (1,))}, {"z": dtype})
    feed = {"c": data(BOOL, (2, 1, 4)), "x": data(dtype, (3, 4)), "y": data(dtype, (1,))}
    # onnxruntime has no bool Where: numpy is the reference there
    check(proto, feed, [np.where(*feed.values())] if dtype == BOOL else None)


@pytest.mark.parametrize("source", [FLOAT32, INT64, INT32, BOOL_DTYPE], ids=lambda d: d.name)
@pytest.mark.parametrize("target", [FLOAT32, INT64, INT32, BOOL_DTYPE], ids=lambda d: d.name)
def test_cast_between_every_pair(source, target):
    """(The other dtypes: ``test_dtypes_more.py``.)"""
    proto = model([helper.make_node("Cast", ["x"], ["y"], to=target.onnx)],
                  {"x": (source.numpy, (7,))}, {"y": target.numpy})
    x = data(source.numpy, (7,))
    if source.numpy == F32:  # truncation toward zero, and nonzero fractions to bool
        x = np.array([-2.75, -0.5, 0.0, 0.25, 1.5, 3.0, -1.0], np.float32)
    check(proto, {"x": x})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Max", "Min"])
@pytest.mark.parametrize("dtype", [I64, I32])
def test_integer_arithmetic(op, dtype):
    proto = model([helper.make_node(op, ["a", "b"], ["y"])],
                  {"a": (dtype, (3, 4)), "b": (dtype, (4,))}, {"y": dtype})
    check(proto, {"a": data(dtype, (3, 4), -1000, 1000), "b": data(dtype, (4,), -1000, 1000)})


@pytest.mark.parametrize("dtype", [I64, I32])
def test_integer_division_truncates_toward_zero(dtype):
    proto = model([helper.make_node("Div", ["a", "b"], ["y"]),
                   helper.make_node("Neg", ["a"], ["n"]), helper.make_node("Abs", ["a"], ["m"])],
                  {"a": (dtype, (8,)), "b": (dtype, (8,))}, {"y": dtype, "n": dtype, "m": dtype})
    a = np.array([7, -7, 7, -7, 0, 9, -9, 5], dtype)
    b = np.array([2, 2, -2, -2, 3, -1, -1, 5], dtype)
    (y, _, _) = check(proto, {"a": a, "b": b})
    assert y.tolist() == [3, -3, -3, 3, 0, -9, 9, 1]


def test_integer_division_by_zero_gives_zero_instead_of_a_trap():
    """ONNX leaves x / 0 undefined; on the CPU it would kill the process."""
    proto = model([helper.make_node("Div", ["a", "b"], ["y"])],
                  {"a": (I32, (3,)), "b": (I32, (3,))}, {"y": I32})
    session = tmlir.InferenceSession(proto, device="emu")
    (y,) = session.run(None, {"a": np.array([5, -2**31, 4], np.int32),
                              "b": np.array([0, -1, 2], np.int32)})
    assert y.tolist() == [0, -2**31, 2]  # INT_MIN / -1 wraps, as two's complement does


@pytest.mark.parametrize("indices", [np.array([[3, 0], [-1, 2]]), np.array(-2),
                                     np.array([5, 0, 4], np.int32)], ids=["2d", "scalar", "int32"])
@pytest.mark.parametrize("axis", [0, 1])
def test_gather_with_run_time_indices(indices, axis):
    shape = (6, 5)
    proto = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)],
                  {"x": (F32, shape), "i": (indices.dtype, indices.shape)}, {"y": F32})
    indices = np.asarray(np.where(indices < 0, indices % 5 - 5, indices % 5), indices.dtype)
    check(proto, {"x": data(F32, shape), "i": indices})


def test_embedding_lookup_of_token_ids():
    """GPT-2's first op: a Gather of an int64 token-id input from a weight table."""
    table = RNG.standard_normal((50, 8)).astype(np.float32)
    proto = model([helper.make_node("Gather", ["wte", "ids"], ["h"], axis=0)],
                  {"ids": (I64, (1, 12))}, {"h": F32}, {"wte": table})
    ids = RNG.integers(0, 50, (1, 12))
    (h,) = check(proto, {"ids": ids})
    np.testing.assert_array_equal(h, table[ids])


def test_out_of_range_indices_are_clamped_not_read_outside():
    proto = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
                  {"x": (F32, (4,)), "i": (I64, (4,))}, {"y": F32})
    session = tmlir.InferenceSession(proto, device="emu")
    x = np.array([10, 11, 12, 13], np.float32)
    (y,) = session.run(None, {"x": x, "i": np.array([9, -9, 2**40, -1])})
    assert y.tolist() == [13, 10, 13, 13]


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis):
    x, indices = data(F32, (3, 4)), RNG.integers(-3, 3, (3, 4))
    if axis == 0:
        indices = RNG.integers(-3, 3, (2, 4))
    proto = model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)],
                  {"x": (F32, x.shape), "i": (I64, indices.shape)}, {"y": F32})
    check(proto, {"x": x, "i": indices})


@pytest.mark.parametrize("data_shape, index_shape, batch_dims", [
    ((2, 3), (4, 2), 0),          # full index: scalars
    ((2, 3, 4), (2, 1), 0),       # partial index: slices
    ((2, 3, 4), (2, 2), 1),       # batch dims
    ((1, 16), (1, 1, 1, 2), 0),   # BERT's attention mask
], ids=["scalars", "slices", "batch", "bert"])
def test_gather_nd(data_shape, index_shape, batch_dims):
    depth = index_shape[-1]
    bounds = data_shape[batch_dims:batch_dims + depth]
    indices = np.stack([RNG.integers(0, n, index_shape[:-1]) for n in bounds], -1)
    proto = model([helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)],
                  {"x": (BOOL, data_shape), "i": (I64, index_shape)}, {"y": BOOL})
    check(proto, {"x": data(BOOL, data_shape), "i": indices})


def test_int64_and_bool_data_movement():
    nodes = [helper.make_node("Transpose", ["ids"], ["t"], perm=[1, 0]),
             helper.make_node("Concat", ["ids", "ids"], ["c"], axis=0),
             helper.make_node("Slice", ["mask", "starts", "ends"], ["s"]),
             helper.make_node("Unsqueeze", ["mask", "axes"], ["u"]),
             helper.make_node("Expand", ["u", "shape"], ["e"])]
    proto = model(nodes, {"ids": (I64, (2, 3)), "mask": (BOOL, (2, 3))},
                  {"t": I64, "c": I64, "s": BOOL, "u": BOOL, "e": BOOL},
                  {"starts": np.array([1]), "ends": np.array([3]), "axes": np.array([1]),
                   "shape": np.array([2, 4, 3])})
    check(proto, {"ids": data(I64, (2, 3)), "mask": data(BOOL, (2, 3))})


def test_pow_with_integer_exponent_and_dropout_mask():
    nodes = [helper.make_node("Pow", ["x", "e"], ["p"]),
             helper.make_node("Dropout", ["x"], ["d", "mask"])]
    proto = model(nodes, {"x": (F32, (2, 3))}, {"p": F32, "d": F32, "mask": BOOL},
                  {"e": np.array([2, 3, 1], np.int64)})
    check(proto, {"x": data(F32, (2, 3))})


def test_rank0_inputs_and_outputs_keep_their_shape():
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("Size", ["v"], ["n"]),
             helper.make_node("Greater", ["a", "b"], ["gt"])]
    proto = model(nodes, {"a": (I64, ()), "b": (I64, ()), "v": (F32, (2, 3))},
                  {"s": I64, "n": I64, "gt": BOOL})
    session = tmlir.InferenceSession(proto)
    assert [o.shape for o in session.get_outputs()] == [(), (), ()]
    assert [i.type for i in session.get_inputs()] == ["tensor(int64)"] * 2 + ["tensor(float)"]
    s, n, gt = check(proto, {"a": np.array(5), "b": np.array(-7), "v": data(F32, (2, 3))})
    assert (s.shape, s.item(), n.item(), gt.item()) == ((), -2, 6, True)


def test_wrong_input_dtype_is_a_one_line_error():
    proto = model([helper.make_node("Gather", ["x", "i"], ["y"])],
                  {"x": (F32, (4,)), "i": (I64, (2,))}, {"y": F32})
    session = tmlir.InferenceSession(proto)
    with pytest.raises(tmlir.SessionError, match="^input 'i': expected int64, got int32$"):
        session.run(None, {"x": data(F32, (4,)), "i": np.array([1, 2], np.int32)})


@pytest.mark.parametrize("nodes, inputs, outputs, message", [
    ([helper.make_node("Where", ["c", "x", "x"], ["y"], name="w")],
     {"c": (I64, (2,)), "x": (F32, (2,))}, {"y": F32},
     "node 'w' (Where): input 'c' is INT64, but Where takes bool there"),
    ([helper.make_node("And", ["p", "p"], ["y"], name="a")], {"p": (F32, (2,))}, {"y": BOOL},
     "node 'a' (And): input 'p' is FLOAT, but And takes bool there"),
    ([helper.make_node("Cast", ["x"], ["y"], name="c", to=TensorProto.STRING)],
     {"x": (F32, (2,))}, {"y": np.dtype(object)},
     "node 'c' (Cast): cannot cast to STRING (supported: float32, int64, int32, bool, float16, "
     "float64, int8, int16, uint8, uint16, uint32, uint64, bfloat16, float8_e4m3fn, float8_e4m3fnuz, "
     "float8_e5m2, float8_e5m2fnuz)"),
])
def test_errors(nodes, inputs, outputs, message):
    with pytest.raises(FrontendError) as info:
        tmlir.InferenceSession(model(nodes, inputs, outputs))
    assert str(info.value) == message


@pytest.mark.parametrize("compiler, arch", [
    pytest.param("nvcc", "sm_90", marks=pytest.mark.skipif(shutil.which("nvcc") is None,
                                                          reason="nvcc not on PATH")),
    pytest.param("nvrtc", "sm_80", marks=pytest.mark.skipif(ptx.nvrtc_version() is None,
                                                           reason="NVRTC does not load")),
])
def test_typed_kernels_compile_to_ptx(compiler, arch):
    """Every kernel kind of this module's ops, with long long, int and bool pointers."""
    nodes = [helper.make_node("Gather", ["x", "ids"], ["g"], axis=0),
             helper.make_node("GatherElements", ["x", "ids32"], ["ge"], axis=1),
             helper.make_node("GatherND", ["mask", "nd"], ["gn"]),
             helper.make_node("Cast", ["ids"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Less", ["ids", "ids"], ["lt"]),
             helper.make_node("Xor", ["lt", "mask"], ["xo"]),
             helper.make_node("Not", ["xo"], ["n"]),
             helper.make_node("IsNaN", ["x"], ["nan"]),
             helper.make_node("Where", ["n", "f", "f"], ["w"]),
             helper.make_node("Div", ["ids32", "ids32"], ["d"]),
             helper.make_node("Transpose", ["mask"], ["t"])]
    proto = model(nodes, {"x": (F32, (3, 3)), "ids": (I64, (3, 3)), "ids32": (I32, (3, 3)),
                          "mask": (BOOL, (3, 3)), "nd": (I64, (2, 2))},
                  {"g": F32, "ge": F32, "gn": BOOL, "nan": BOOL, "w": F32, "d": I32, "t": BOOL})
    program = tmlir.InferenceSession(proto).program
    text = ptx.compile_ptx(program.source, arch, compiler=compiler)
    assert sorted(ptx.ptx_kernel_names(text)) == sorted(k.signature.name for k in program.kernels)
