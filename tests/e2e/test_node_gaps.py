"""Forms of supported operators that ONNX's node tests use, through the whole pipeline on emu
against onnxruntime (rtol 1e-4, atol 1e-5, as tests/e2e/test_end_to_end.py), fused and
unfused, every emitted kernel compiled to PTX for sm_80: MatMul with 1-D operands (numpy's
promotion, on the matmul template), BatchNormalization in training mode (batch statistics,
running mean and variance), MaxPool's Indices output (row- and column-major, with the batch
and channel offset), and Dropout in training mode with ratio 0, 3-D ConvTranspose; and the
one-line errors for what stays unsupported.
"""

from __future__ import annotations

import numpy as np
import pytest
from models import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

import tmlir
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names
from tmlir.frontends.onnx import FrontendError

RTOL = 1e-4


def feed(shape, seed: int = 1, scale: float = 3.0) -> np.ndarray:
    return (scale * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


def model(nodes, inputs: dict[str, tuple], outputs: dict[str, tuple[int, tuple]],
          initializers: dict[str, np.ndarray] | None = None, opset: int = 18):
    """A model of `nodes`; `outputs` maps a name to (ONNX element type, shape or None)."""
    graph = helper.make_graph(
        nodes, "gaps",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, t, None if s is None else list(s))
         for n, (t, s) in outputs.items()],
        [numpy_helper.from_array(v, n) for n, v in (initializers or {}).items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 10
    return proto


def check(proto, inputs: dict[str, np.ndarray], kernels: int | None = None) -> None:
    """Every output, fused and unfused, against onnxruntime (integers exactly); with
    fusion, the program has `kernels` kernels."""
    want = run_onnxruntime(proto, inputs)
    for fusion in (True, False):
        session = tmlir.InferenceSession(proto, device="emu", fusion=fusion)
        if fusion and kernels is not None:
            assert len(session.program.kernels) == kernels, [
                k.signature.name for k in session.program.kernels]
        ptx = compile_ptx(session.program.source, "sm_80")
        assert sorted(ptx_kernel_names(ptx)) == sorted(k.signature.name for k in session.program.kernels)
        got = session.run(None, inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
            if np.issubdtype(w.dtype, np.integer):
                np.testing.assert_array_equal(g, w, err_msg=f"fusion={fusion}")
            else:
                np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-5, err_msg=f"fusion={fusion}")


F = TensorProto.FLOAT
I64 = TensorProto.INT64


# -- MatMul with 1-D operands -------------------------------------------------------------------


@pytest.mark.parametrize("lhs, rhs, out", [
    ((37,), (37,), ()),
    ((37,), (37, 50), (50,)),
    ((3, 20, 37), (37,), (3, 20)),
    ((37,), (2, 3, 37, 5), (2, 3, 5)),
    ((64, 32), (32,), (64,)),
])
def test_matmul_1d(lhs, rhs, out):
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    check(model([node], {"a": lhs, "b": rhs}, {"y": (F, out)}),
          {"a": feed(lhs, 1), "b": feed(rhs, 2)}, kernels=1)


def test_matmul_1d_with_a_constant_vector():
    node = helper.make_node("MatMul", ["a", "v"], ["y"])
    check(model([node], {"a": (4, 9, 16)}, {"y": (F, (4, 9))}, {"v": feed(16, 3)}),
          {"a": feed((4, 9, 16))}, kernels=1)


# -- BatchNormalization in training mode --------------------------------------------------------


def batch_norm(shape, outputs=("y", "rm", "rv"), **attributes):
    c = shape[1]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], list(outputs),
                            training_mode=1, **attributes)
    stats = (c,)
    return model([node], {"x": shape},
                 {o: (F, shape if o == "y" else stats) for o in outputs if o},
                 {"s": feed(c, 2, 1.0), "b": feed(c, 3, 1.0), "m": feed(c, 4, 1.0),
                  "v": np.abs(feed(c, 5, 1.0)) + 0.5}, opset=15)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 6), (3, 5, 17), (1, 2, 3, 4, 5)])
def test_batch_norm_training(shape):
    check(batch_norm(shape, momentum=0.8, epsilon=1e-3), {"x": feed(shape) + 10})


def test_batch_norm_training_default_momentum():
    shape = (2, 4, 6, 6)
    check(batch_norm(shape), {"x": feed(shape)})


def test_batch_norm_training_absent_running_mean():
    """onnxruntime crashes on an absent output here: against ONNX's definition in float64."""
    shape = (3, 4, 5)
    proto = batch_norm(shape, outputs=("y", "", "rv"), momentum=0.7)
    x = feed(shape)
    s, b, _, v = (numpy_helper.to_array(t).astype(np.float64) for t in proto.graph.initializer)
    mean, var = x.mean((0, 2), dtype=np.float64), x.var((0, 2), dtype=np.float64)
    y = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-5) * s[:, None] + b[:, None]
    for fusion in (True, False):
        got_y, got_rv = tmlir.InferenceSession(proto, device="emu", fusion=fusion).run(None, {"x": x})
        np.testing.assert_allclose(got_y, y, rtol=RTOL, atol=1e-5)
        np.testing.assert_allclose(got_rv, v * 0.7 + var * 0.3, rtol=RTOL, atol=1e-5)


def test_batch_norm_inference_with_used_statistics_is_an_error():
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm"])
    ones = np.ones(3, np.float32)
    proto = model([node], {"x": (2, 3, 4)}, {"y": (F, (2, 3, 4)), "rm": (F, (3,))},
                  {"s": ones, "b": ones, "m": ones, "v": ones}, opset=12)  # no training_mode
    with pytest.raises(FrontendError, match="output 'rm' is used, but the running and saved "
                                            "statistics are only computed with training_mode = 1"):
        tmlir.InferenceSession(proto, device="emu")


# -- MaxPool's Indices --------------------------------------------------------------------------


def max_pool(shape, out, **attributes):
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attributes)
    return model([node], {"x": shape}, {"y": (F, out), "i": (I64, out)}, opset=12)


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("shape, out, attributes", [
    ((2, 3, 5, 7), (2, 3, 5, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ((2, 3, 9, 8), (2, 3, 4, 3), {"kernel_shape": [3, 2], "strides": [2, 3]}),
    ((1, 4, 10, 10), (1, 4, 3, 3), {"kernel_shape": [2, 2], "strides": [3, 3],
                                    "dilations": [2, 2], "pads": [1, 0, 0, 1]}),
    ((1, 2, 6, 6), (1, 2, 3, 3), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((2, 3, 11), (2, 3, 5), {"kernel_shape": [3], "strides": [2]}),
    ((1, 2, 4, 5, 6), (1, 2, 3, 4, 5), {"kernel_shape": [2, 2, 2]}),
])
def test_max_pool_indices(shape, out, attributes, storage_order):
    check(max_pool(shape, out, storage_order=storage_order, **attributes), {"x": feed(shape)},
          kernels=1)


def test_max_pool_indices_ties_take_the_first():
    shape = (2, 2, 6, 6)
    x = np.random.default_rng(3).integers(0, 3, shape).astype(np.float32)  # many equal maxima
    check(max_pool(shape, (2, 2, 3, 3), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
          {"x": x})


def test_max_pool_indices_with_a_prologue_and_an_epilogue():
    """Fusion computes the Sigmoid in the pooling kernel; the Relu after stays a kernel of its
    own (fusion takes no epilogue into an op of two results)."""
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]),
             helper.make_node("MaxPool", ["s"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Relu", ["p"], ["y"])]
    shape = (2, 3, 8, 8)
    check(model(nodes, {"x": shape}, {"y": (F, (2, 3, 4, 4)), "i": (I64, (2, 3, 4, 4))}, opset=12),
          {"x": feed(shape)}, kernels=2)


# -- Dropout in training mode -------------------------------------------------------------------


def dropout(ratio: float, mask: bool):
    outputs = ["y", "mask"] if mask else ["y"]
    node = helper.make_node("Dropout", ["x", "r", "t"], outputs, seed=0)
    typed = {"y": (F, (3, 4, 5))} | ({"mask": (TensorProto.BOOL, (3, 4, 5))} if mask else {})
    return model([node], {"x": (3, 4, 5)}, typed,
                 {"r": np.array(ratio, np.float32), "t": np.array(True)}, opset=13)


@pytest.mark.parametrize("mask", [False, True])
def test_dropout_training_zero_ratio(mask):
    check(dropout(0.0, mask), {"x": feed((3, 4, 5))})


def test_dropout_training_nonzero_ratio_is_an_error():
    with pytest.raises(FrontendError, match=r"training mode with ratio 0.5 is not supported: its "
                                            r"mask is random"):
        tmlir.InferenceSession(dropout(0.5, True), device="emu")


# -- 3-D ConvTranspose ----------------------------------------------------------------------------


@pytest.mark.parametrize("x_shape, w_shape, attributes", [
    ((1, 1, 3, 4, 5), (1, 2, 3, 3, 3), {}),
    ((2, 4, 3, 5, 4), (4, 3, 2, 3, 2), {"strides": [2, 1, 3], "pads": [1, 0, 1, 0, 1, 0],
                                        "group": 2, "output_padding": [1, 0, 2]}),
    ((1, 3, 4, 3, 3), (3, 2, 2, 2, 3), {"dilations": [2, 1, 2], "strides": [1, 2, 1]}),
])
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose_3d(x_shape, w_shape, attributes, bias):
    c_out = w_shape[1] * attributes.get("group", 1)
    inputs = ["x", "w", "b"] if bias else ["x", "w"]
    node = helper.make_node("ConvTranspose", inputs, ["y"], **attributes)
    weights = {"w": feed(w_shape, 2, 1.0)} | ({"b": feed(c_out, 3, 1.0)} if bias else {})
    want = run_onnxruntime(model([node], {"x": x_shape}, {"y": (F, None)}, weights),
                           {"x": feed(x_shape)})[0]
    check(model([node], {"x": x_shape}, {"y": (F, want.shape)}, weights), {"x": feed(x_shape)},
          kernels=1)
