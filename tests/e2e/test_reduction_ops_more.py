"""ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp, bool
ReduceMax / ReduceMin, ArgMax, ArgMin, Hardmax, CumSum and TopK through the whole
pipeline on emu, fused and unfused: against onnxruntime (floats: rtol 1e-4, atol 1e-5;
integers and indices exactly) and float64 numpy (relative error below 1e-5), with ties,
NaN and infinities where the op defines them; every emitted kernel compiles to PTX with
NVRTC for sm_80 and sm_90."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from models import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

import tmlir
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def model_of(nodes, inputs, outputs, initializers=(), opset: int = 18) -> onnx.ModelProto:
    """inputs / outputs: (name, shape, ONNX dtype); initializers: (name, array)."""
    graph = helper.make_graph(
        nodes, "test", [helper.make_tensor_value_info(n, t, s) for n, s, t in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, s, t in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def feed(shape, seed: int = 1, scale: float = 3.0) -> np.ndarray:
    return (scale * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


def run(model, inputs, fusion: bool = True) -> list[np.ndarray]:
    return tmlir.InferenceSession(model, device="emu", fusion=fusion).run(None, inputs)


def check(model, inputs: dict[str, np.ndarray], ptx: bool = True) -> list[np.ndarray]:
    """Run on emu, fused and unfused, against onnxruntime (floats within rtol 1e-4, atol
    1e-5; anything else exactly); compile the CUDA C to PTX. Returns the fused outputs."""
    want = run_onnxruntime(model, inputs)
    results = []
    for fusion in (True, False):
        session = tmlir.InferenceSession(model, device="emu", fusion=fusion)
        if ptx and fusion:
            for arch in ("sm_80", "sm_90"):
                names = ptx_kernel_names(compile_ptx(session.program.source, arch))
                assert sorted(names) == sorted(k.signature.name for k in session.program.kernels)
        got = session.run(None, inputs)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            if np.issubdtype(w.dtype, np.floating):
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"fusion={fusion}")
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"fusion={fusion}")
        results.append(got)
    return results[0]


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


# -- reductions with other combines ------------------------------------------------------------

REFERENCES = {
    "ReduceProd": lambda x, a, k: np.prod(x, a, keepdims=k),
    "ReduceL1": lambda x, a, k: np.abs(x).sum(a, keepdims=k),
    "ReduceL2": lambda x, a, k: np.sqrt((x * x).sum(a, keepdims=k)),
    "ReduceSumSquare": lambda x, a, k: (x * x).sum(a, keepdims=k),
    "ReduceLogSum": lambda x, a, k: np.log(x.sum(a, keepdims=k)),
    "ReduceLogSumExp": lambda x, a, k: np.log(np.exp(x).sum(a, keepdims=k)),
}


def _reduce_model(op_type, shape, axes, keepdims) -> onnx.ModelProto:
    out = tuple(1 if d in axes else n for d, n in enumerate(shape) if keepdims or d not in axes)
    return model_of([helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=keepdims)],
                    [("x", shape, F32)], [("y", out, F32)],
                    [("axes", np.array(axes, np.int64))])


def _reduce_input(op_type, shape) -> np.ndarray:
    x = feed(shape)
    if op_type == "ReduceProd":  # products of order 1, neither overflow nor underflow
        return (np.exp(x / 30) * np.sign(x)).astype(np.float32)
    return np.abs(x) + 0.1 if op_type == "ReduceLogSum" else x


@pytest.mark.parametrize("op_type", REFERENCES)
@pytest.mark.parametrize("shape, axes, keepdims", [
    ((2, 3, 7, 9), [2, 3], 1),  # contiguous rows
    ((2, 33, 5, 6), [1], 0),  # over channels: strided rows
    ((3, 2000), [1], 0),  # long rows: a block per row, the shared-memory combine
])
def test_more_reductions(op_type, shape, axes, keepdims):
    x = _reduce_input(op_type, shape)
    (got,) = check(_reduce_model(op_type, shape, axes, keepdims), {"x": x})
    want = REFERENCES[op_type](x.astype(np.float64), tuple(axes), bool(keepdims))
    assert relative_error(got, want) < 1e-5


def test_log_sum_exp_is_shifted_by_the_max():
    """exp(x) overflows float32 above 88: the max-shifted form does not; a row with +inf
    gives inf, a row of -inf gives -inf, a NaN gives NaN (numpy in float64)."""
    x = feed((5, 300), scale=200.0)
    x[2, 7] = np.inf
    x[3] = -np.inf
    x[4, 100] = np.nan
    model = _reduce_model("ReduceLogSumExp", (5, 300), [1], 0)
    (got,) = run(model, {"x": x})
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x64 = x.astype(np.float64)
        m = np.where(np.isfinite(x64.max(1)), x64.max(1), 0)
        want = m + np.log(np.exp(x64 - m[:, None]).sum(1))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[2] == np.inf and got[3] == -np.inf and np.isnan(got[4])


@pytest.mark.parametrize("op_type, meaning", [("ReduceL1", np.abs), ("ReduceLogSum", np.log),
                                              ("ReduceSumSquare", np.square)])
def test_reduction_over_extent_one_dims_is_not_the_input(op_type, meaning):
    """``graph-canonicalize`` turns a reduction over extent-1 dims into a reshape only
    where the reduction of one element is the element: not for |x|, log x, x^2."""
    x = feed((4, 1, 5)) + (10.0 if op_type == "ReduceLogSum" else 0.0)
    (got,) = run(_reduce_model(op_type, (4, 1, 5), [1], 0), {"x": x})
    np.testing.assert_allclose(got, meaning(x[:, 0]), rtol=1e-6)


@pytest.mark.parametrize("op_type, numpy_op", [("ReduceMax", np.any), ("ReduceMin", np.all)])
@pytest.mark.parametrize("shape, axes", [((6, 40), [1]), ((3, 2000), [1]), ((5, 4, 3), [0, 2])])
def test_max_and_min_of_bools(op_type, numpy_op, shape, axes):
    """Any and all, on rows of a warp and of a block."""
    B = TensorProto.BOOL
    out = tuple(n for d, n in enumerate(shape) if d not in axes)
    model = model_of([helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=0)],
                     [("x", shape, B)], [("y", out, B)], [("axes", np.array(axes, np.int64))],
                     opset=20)
    x = np.random.default_rng(3).random(shape) < 0.5
    x[0] = op_type == "ReduceMin"  # one row all true for min (all false for max)
    (got,) = check(model, {"x": x})
    np.testing.assert_array_equal(got, numpy_op(x, tuple(axes)))


# -- ArgMax, ArgMin, Hardmax -----------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("shape, axis, keepdims", [
    ((8, 100), 1, 0),  # a warp per row
    ((2, 37, 6), 1, 1),  # strided rows
    ((3, 5000), -1, 0),  # a block per row: the index combine through shared memory
])
def test_arg_reduce(op_type, last, shape, axis, keepdims):
    out = tuple(1 if d == axis % len(shape) else n for d, n in enumerate(shape)
                if keepdims or d != axis % len(shape))
    model = model_of([helper.make_node(op_type, ["x"], ["y"], axis=axis, keepdims=keepdims,
                                       select_last_index=last)],
                     [("x", shape, F32)], [("y", out, I64)], opset=13)
    check(model, {"x": np.round(feed(shape))})  # rounded: many ties


@pytest.mark.parametrize("op_type, numpy_op", [("ArgMax", np.argmax), ("ArgMin", np.argmin)])
def test_arg_reduce_takes_the_first_nan(op_type, numpy_op):
    x = np.round(feed((4, 300)))
    x[1, 17] = x[1, 250] = x[3, 0] = np.nan
    model = model_of([helper.make_node(op_type, ["x"], ["y"], axis=1, keepdims=0)],
                     [("x", (4, 300), F32)], [("y", (4,), I64)], opset=13)
    (got,) = run(model, {"x": x})
    np.testing.assert_array_equal(got, numpy_op(x, 1))


@pytest.mark.parametrize("shape, axis", [((8, 100), -1), ((2, 37, 6), 1), ((3, 5000), 1)])
def test_hardmax(shape, axis):
    model = model_of([helper.make_node("Hardmax", ["x"], ["y"], axis=axis)],
                     [("x", shape, F32)], [("y", shape, F32)], opset=13)
    x = np.round(feed(shape))
    (got,) = check(model, {"x": x})
    assert np.all(got.sum(axis) == 1)


def test_arg_max_of_a_fused_prologue_into_an_epilogue():
    """Abs before ArgMax is fused into its loads; Hardmax's result feeds a Mul."""
    nodes = [helper.make_node("Abs", ["x"], ["a"]),
             helper.make_node("ArgMax", ["a"], ["i"], axis=1, keepdims=0),
             helper.make_node("Hardmax", ["a"], ["h"], axis=1),
             helper.make_node("Mul", ["h", "x"], ["y"])]
    model = model_of(nodes, [("x", (6, 50), F32)], [("i", (6,), I64), ("y", (6, 50), F32)],
                     opset=13)
    check(model, {"x": np.round(feed((6, 50)))})


# -- CumSum ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, shape, axis, exclusive, reverse", [
    (TensorProto.FLOAT, (5, 300), 1, 0, 0),  # along the last axis
    (TensorProto.FLOAT, (4, 6, 5), 1, 1, 1),  # a middle axis: coalesced rows
    (TensorProto.FLOAT, (40, 3), 0, 1, 0),
    (TensorProto.FLOAT, (7,), -1, 0, 1),  # one row
    (TensorProto.DOUBLE, (4, 6, 5), 2, 1, 0),
    (TensorProto.INT32, (4, 6, 5), 0, 0, 1),
    (TensorProto.INT32, (40, 3), 0, 1, 1),
    (TensorProto.INT64, (5, 300), 1, 1, 0),
])
def test_cumsum(dtype, shape, axis, exclusive, reverse):
    model = model_of([helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive,
                                       reverse=reverse)],
                     [("x", shape, dtype)], [("y", shape, dtype)],
                     [("axis", np.array(axis, np.int64))], opset=14)
    x = feed(shape, scale=10.0)
    x = x.astype(helper.tensor_dtype_to_np_dtype(dtype))
    check(model, {"x": x})


def test_cumsum_between_fused_ops():
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("CumSum", ["r", "axis"], ["c"], reverse=1),
             helper.make_node("Sqrt", ["c"], ["y"])]
    model = model_of(nodes, [("x", (3, 64), F32)], [("y", (3, 64), F32)],
                     [("axis", np.array(-1, np.int64))], opset=14)
    check(model, {"x": feed((3, 64))})


# -- TopK ------------------------------------------------------------------------------------


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("shape, axis, k", [
    ((4, 50), -1, 5),
    ((3, 17, 4), 1, 17),  # k = n: a full sort, strided rows
    ((2, 1000), 1, 10),
    ((6, 1), 1, 1),
])
def test_top_k(largest, shape, axis, k):
    out = tuple(k if d == axis % len(shape) else n for d, n in enumerate(shape))
    model = model_of([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis,
                                       largest=largest)],
                     [("x", shape, F32)], [("v", out, F32), ("i", out, I64)],
                     [("k", np.array([k], np.int64))], opset=11)
    check(model, {"x": np.round(feed(shape))})  # rounded: ties, broken by the lower index


@pytest.mark.parametrize("dtype", [TensorProto.INT32, TensorProto.INT64])
def test_top_k_of_integers(dtype):
    model = model_of([helper.make_node("TopK", ["x", "k"], ["v", "i"], largest=0)],
                     [("x", (5, 30), dtype)], [("v", (5, 4), dtype), ("i", (5, 4), I64)],
                     [("k", np.array([4], np.int64))], opset=11)
    x = np.random.default_rng(2).integers(-5, 5, (5, 30))
    check(model, {"x": x.astype(helper.tensor_dtype_to_np_dtype(dtype))}, ptx=False)


def test_top_k_of_unsigned_integers():
    """uint64 above 2^63 compares as unsigned (numpy's order; onnxruntime has no kernel)."""
    model = model_of([helper.make_node("TopK", ["x", "k"], ["v", "i"])],
                     [("x", (2, 6), TensorProto.UINT64)],
                     [("v", (2, 3), TensorProto.UINT64), ("i", (2, 3), I64)],
                     [("k", np.array([3], np.int64))], opset=11)
    x = np.array([[1, 2**63 + 5, 7, 2**64 - 1, 0, 7], [3, 3, 3, 1, 2, 3]], np.uint64)
    values, indices = run(model, {"x": x})
    order = np.argsort(-x.astype(np.float64), 1, kind="stable")[:, :3]
    np.testing.assert_array_equal(indices, [[3, 1, 2], [0, 1, 2]])
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, 1))


@pytest.mark.parametrize("largest", [1, 0])
def test_top_k_puts_nan_above_every_number(largest):
    """As torch.topk: NaNs first among the largest, last among the smallest."""
    x = np.array([[1.0, np.nan, 3.0, -np.inf, np.nan, np.inf]], np.float32)
    model = model_of([helper.make_node("TopK", ["x", "k"], ["v", "i"], largest=largest)],
                     [("x", (1, 6), F32)], [("v", (1, 6), F32), ("i", (1, 6), I64)],
                     [("k", np.array([6], np.int64))], opset=11)
    values, indices = run(model, {"x": x})
    want = [1, 4, 5, 2, 0, 3] if largest else [3, 0, 2, 5, 1, 4]
    np.testing.assert_array_equal(indices[0], want)
    np.testing.assert_array_equal(values[0], x[0, want])
