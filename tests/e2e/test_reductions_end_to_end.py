"""Softmax, LogSoftmax, LayerNormalization, the Reduce ops and pooling through the whole
pipeline on emu: against onnxruntime (rtol 1e-4, atol 1e-5, as tests/e2e/test_end_to_end.py),
and against float64 numpy with a relative error (max abs error / max abs reference)
below 1e-5; every emitted kernel compiles to PTX with NVRTC for sm_80 and sm_90, and one
model's whole program with nvcc."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from models import make_model, run_onnxruntime
from onnx import helper, numpy_helper

import tmlir
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names

RTOL = 1e-4


def feed(shape, seed: int = 1, scale: float = 3.0) -> np.ndarray:
    return (scale * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


def check(model, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run on emu, fused and unfused, against onnxruntime; compile the CUDA C to PTX for
    sm_80/sm_90. Returns the fused outputs."""
    want = run_onnxruntime(model, inputs)
    results = []
    for fusion in (True, False):
        session = tmlir.InferenceSession(model, device="emu", fusion=fusion)
        for arch in ("sm_80", "sm_90"):
            ptx = compile_ptx(session.program.source, arch)
            assert sorted(ptx_kernel_names(ptx)) == sorted(k.signature.name
                                                          for k in session.program.kernels)
        got = session.run(None, inputs)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-5, err_msg=f"fusion={fusion}")
        results.append(got)
    return results[0]


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def softmax64(x: np.ndarray, axes: tuple[int, ...], log: bool = False) -> np.ndarray:
    x = x.astype(np.float64)
    shifted = x - x.max(axes, keepdims=True)
    log_sum = np.log(np.exp(shifted).sum(axes, keepdims=True))
    return shifted - log_sum if log else np.exp(shifted - log_sum)


# -- softmax -------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape, axis, opset, axes", [
    ((8, 1000), -1, 13, (1,)),  # a warp per row
    ((3, 5000), -1, 13, (1,)),  # a block per row
    ((2, 10, 7, 7), 1, 13, (1,)),  # over the channels of NCHW: strided rows
    ((4, 64, 9), 1, 13, (1,)),
    ((3, 4, 5, 6), 1, 11, (1, 2, 3)),  # opset < 13: flattened at the axis
])
def test_softmax(op_type, shape, axis, opset, axes):
    model = make_model([helper.make_node(op_type, ["x"], ["y"], axis=axis)],
                       {"x": shape}, {"y": shape}, opset=opset)
    x = feed(shape)
    (got,) = check(model, {"x": x})
    assert relative_error(got, softmax64(x, axes, op_type == "LogSoftmax")) < 1e-5


# -- reductions ------------------------------------------------------------------------------

REDUCTIONS = {"ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max,
              "ReduceMin": np.min}


@pytest.mark.parametrize("op_type", REDUCTIONS)
@pytest.mark.parametrize("shape, axes, keepdims", [
    ((2, 3, 7, 9), [2, 3], 1),  # contiguous rows (a global pool)
    ((2, 33, 5, 6), [1], 0),  # over channels: strided rows
    ((4, 3, 5, 2), [0, 2], 1),  # two axes apart
    ((37, 70), [0], 1),  # the first axis
    ((3, 2000), [-1], 0),  # long rows
])
def test_reduce(op_type, shape, axes, keepdims):
    out = tuple(1 if d in np.array(axes) % len(shape) else n for d, n in enumerate(shape)
                if keepdims or d not in np.array(axes) % len(shape))
    model = make_model([helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=keepdims)],
                       {"x": shape}, {"y": out}, opset=18)
    model.graph.initializer.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    x = feed(shape) + (2.0 if op_type in ("ReduceSum", "ReduceMean") else 0.0)
    (got,) = check(model, {"x": x})
    want = REDUCTIONS[op_type](x.astype(np.float64), tuple(axes), keepdims=bool(keepdims))
    if op_type in ("ReduceMax", "ReduceMin"):
        assert np.array_equal(got, want.astype(np.float32))
    else:
        assert relative_error(got, want) < 1e-5


def test_reduce_max_and_min_propagate_nan():
    """numpy's (and onnx.reference's) semantics: a NaN in a row makes its max/min NaN."""
    shape = (4, 40, 3)
    nodes = [helper.make_node("ReduceMax", ["x"], ["hi"], axes=[1], keepdims=0),
             helper.make_node("ReduceMin", ["x"], ["lo"], axes=[1], keepdims=0)]
    model = make_model(nodes, {"x": shape}, {"hi": (4, 3), "lo": (4, 3)}, opset=13)
    x = feed(shape)
    x[1, 17, 2] = x[3, 0, 0] = np.nan
    hi, lo = tmlir.InferenceSession(model, device="emu").run(None, {"x": x})
    assert np.array_equal(hi, np.max(x, 1), equal_nan=True)
    assert np.array_equal(lo, np.min(x, 1), equal_nan=True)


# -- layer normalization ---------------------------------------------------------------------


@pytest.mark.parametrize("shape, axis", [((2, 10, 64), -1), ((4, 3, 5, 6), 2), ((3, 3000), 1)])
def test_layer_norm_with_statistics(shape, axis):
    normalized = shape[axis:]
    stats = (*shape[:axis % len(shape)], *(1 for _ in normalized))
    scale, bias = feed(normalized, 2, 1.0), feed(normalized, 3, 1.0)
    model = make_model(
        [helper.make_node("LayerNormalization", ["x", "scale", "bias"],
                          ["y", "mean", "inv_std_dev"], axis=axis, epsilon=1e-4)],
        {"x": shape}, {"y": shape, "mean": stats, "inv_std_dev": stats},
        {"scale": scale, "bias": bias}, opset=17)
    x = feed(shape) + 10  # an offset that a one-pass variance would lose digits to
    y, mean, inv_std = check(model, {"x": x})
    axes = tuple(range(axis % len(shape), len(shape)))
    x64 = x.astype(np.float64)
    mean64 = x64.mean(axes, keepdims=True)
    inv64 = 1 / np.sqrt(x64.var(axes, keepdims=True) + 1e-4)
    assert relative_error(y, (x64 - mean64) * inv64 * scale + bias) < 1e-5
    assert relative_error(mean, mean64) < 1e-5 and relative_error(inv_std, inv64) < 1e-5


# -- pooling -----------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["MaxPool", "AveragePool", "AveragePool_include_pad"])
@pytest.mark.parametrize("shape, attributes, out", [
    ((2, 3, 15, 16), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
     (2, 3, 8, 8)),
    ((1, 4, 16, 16), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, (1, 4, 8, 8)),
    ((1, 4, 9, 10), {"kernel_shape": [3, 2], "strides": [2, 3], "auto_pad": "SAME_UPPER"},
     (1, 4, 5, 4)),
    ((1, 2, 11, 12), {"kernel_shape": [2, 3], "strides": [2, 2], "dilations": [2, 2],
                      "pads": [1, 0, 0, 2], "ceil_mode": 1}, (1, 2, 6, 6)),
    ((2, 3, 20), {"kernel_shape": [4], "strides": [3], "pads": [2, 1]}, (2, 3, 7)),
    ((1, 2, 6, 7, 8), {"kernel_shape": [2, 3, 3], "strides": [2, 2, 1],
                       "pads": [0, 1, 1, 1, 1, 1]}, (1, 2, 3, 4, 8)),
])
def test_pool(variant, shape, attributes, out):
    op_type = variant.split("_")[0]
    if variant.endswith("include_pad"):
        attributes = {**attributes, "count_include_pad": 1}
    model = make_model([helper.make_node(op_type, ["x"], ["y"], **attributes)],
                       {"x": shape}, {"y": out}, opset=19)
    check(model, {"x": feed(shape)})


def test_small_cnn_head():
    """MaxPool -> Relu -> AveragePool (ceil_mode, excluding padding) -> GlobalAveragePool ->
    Softmax over the channels: five kernels of three templates, four with fusion (the relu
    in the max pool's epilogue)."""
    shape = (2, 8, 28, 28)
    nodes = [
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["p"], ["r"]),
        helper.make_node("AveragePool", ["r"], ["a"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], ceil_mode=1),
        helper.make_node("GlobalAveragePool", ["a"], ["g"]),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ]
    model = make_model(nodes, {"x": shape}, {"y": (2, 8, 1, 1)}, opset=13)
    session = tmlir.InferenceSession(model, device="emu", fusion=False)
    assert [k.signature.name for k in session.program.kernels] == [
        "max_pool_0", "relu_1", "average_pool_2", "reduce_mean_3", "softmax_4"]
    session = tmlir.InferenceSession(model, device="emu")
    assert [k.signature.name for k in session.program.kernels] == [
        "max_pool_0", "average_pool_1", "reduce_mean_2", "softmax_3"]
    check(model, {"x": feed(shape)})


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_transformer_block_compiles_with_nvcc():
    """MatMul -> LayerNormalization -> Softmax -> ReduceMean: the whole emitted program
    (with the strided and block-per-row reductions) compiles with nvcc to PTX."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("LayerNormalization", ["h", "gamma", "beta"], ["n"], axis=-1),
        helper.make_node("Softmax", ["n"], ["s"], axis=1),
        helper.make_node("ReduceMean", ["s"], ["y"], axes=[1], keepdims=0),
    ]
    model = make_model(nodes, {"x": (2, 16, 32)}, {"y": (2, 64)},
                       {"w": rng.standard_normal((32, 64)), "gamma": rng.standard_normal(64),
                        "beta": rng.standard_normal(64)}, opset=17)
    check(model, {"x": feed((2, 16, 32))})
    session = tmlir.InferenceSession(model, device="emu")
    ptx = compile_ptx(session.program.source, "sm_90", compiler="nvcc")
    assert len(ptx_kernel_names(ptx)) == 4
