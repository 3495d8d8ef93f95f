"""InstanceNormalization, GroupNormalization, MeanVarianceNormalization, LpNormalization,
GlobalLpPool, LpPool and LRN through the whole pipeline on emu: against onnxruntime (rtol
1e-4, atol 1e-5, as tests/e2e/test_end_to_end.py), fused and unfused, with the number of
kernels the compositions take; what onnxruntime does not run (LRN of an even size) against
ONNX's definition in float64 numpy. Every emitted kernel compiles to PTX with NVRTC for
sm_80 and sm_90. Last, a small AlexNet-like CNN with LRN."""

from __future__ import annotations

import numpy as np
import pytest
from models import make_model, run_onnxruntime
from onnx import helper

import tmlir
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names

RTOL = 1e-4


def feed(shape, seed: int = 1, scale: float = 3.0) -> np.ndarray:
    return (scale * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


def check(model, inputs: dict[str, np.ndarray], kernels: int | None = None) -> np.ndarray:
    """Run on emu, fused and unfused, against onnxruntime; compile the CUDA C to PTX for
    sm_80/sm_90; with fusion, the program has `kernels` kernels. Returns the fused output."""
    (want,) = run_onnxruntime(model, inputs)
    results = []
    for fusion in (True, False):
        session = tmlir.InferenceSession(model, device="emu", fusion=fusion)
        if fusion and kernels is not None:
            assert len(session.program.kernels) == kernels, [
                k.signature.name for k in session.program.kernels]
        for arch in ("sm_80", "sm_90"):
            ptx = compile_ptx(session.program.source, arch)
            assert sorted(ptx_kernel_names(ptx)) == sorted(k.signature.name
                                                          for k in session.program.kernels)
        (got,) = session.run(None, inputs)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-5, err_msg=f"fusion={fusion}")
        results.append(got)
    return results[0]


def one_node(op_type: str, shape, out, initializers=None, opset: int = 18, inputs=("x",),
             **attributes):
    node = helper.make_node(op_type, list(inputs), ["y"], **attributes)
    return make_model([node], {"x": shape}, {"y": out}, initializers, opset=opset)


# -- instance and group normalization: one layer-norm kernel with the affine fused -----------


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 4, 33, 33), (2, 8, 100)])
def test_instance_norm(shape):
    c = shape[1]
    model = one_node("InstanceNormalization", shape, shape,
                     {"s": feed(c, 2, 1.0), "b": feed(c, 3, 1.0)}, inputs=("x", "s", "b"),
                     epsilon=1e-4)
    check(model, {"x": feed(shape) + 10}, kernels=1)  # an offset a one-pass variance loses


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("shape, groups", [((2, 6, 5, 5), 3), ((1, 32, 16, 16), 8),
                                           ((3, 4, 7), 1)])
def test_group_norm(opset, shape, groups):
    affine = shape[1] if opset >= 21 else groups
    model = one_node("GroupNormalization", shape, shape,
                     {"s": feed(affine, 2, 1.0), "b": feed(affine, 3, 1.0)},
                     opset=opset, inputs=("x", "s", "b"), num_groups=groups)
    check(model, {"x": feed(shape)}, kernels=1)


# -- mean-variance and Lp normalization --------------------------------------------------------


@pytest.mark.parametrize("shape, axes", [((2, 3, 5, 7), None), ((2, 3, 5, 7), [2, 3]),
                                         ((4, 6, 9), [0, 1]), ((3, 40, 2), [1])])
def test_mean_variance_norm(shape, axes):
    """Without ``axes``, opset 12: from opset 13 on, the op's function body in onnx 1.23
    reads ``value_ints = @axes``, which has no default, so strict shape inference fails on
    a node without the attribute (tests/onnx_node: test_mvn)."""
    attributes = {} if axes is None else {"axes": axes}
    model = one_node("MeanVarianceNormalization", shape, shape, opset=12 if axes is None else 18,
                     **attributes)
    check(model, {"x": feed(shape)}, kernels=1)


def test_mean_variance_norm_of_a_constant_is_zero():
    """ONNX divides by sqrt(var) + 1e-9: 0, not NaN, where the variance is 0."""
    model = one_node("MeanVarianceNormalization", (2, 3, 4, 4), (2, 3, 4, 4), opset=12)
    x = np.full((2, 3, 4, 4), 7.0, np.float32)
    (got,) = tmlir.InferenceSession(model, device="emu").run(None, {"x": x})
    assert np.array_equal(got, np.zeros_like(x))


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("shape, axis", [((4, 300), -1), ((2, 16, 9, 9), 1), ((5, 3, 7), 0)])
def test_lp_norm(p, shape, axis):
    model = one_node("LpNormalization", shape, shape, p=p, axis=axis)
    x = feed(shape)
    got = check(model, {"x": x}, kernels=2)  # the reduction (sqrt fused), then the division
    x64 = x.astype(np.float64)
    norm = (np.abs(x64) ** p).sum(axis, keepdims=True) ** (1 / p)
    np.testing.assert_allclose(got, x64 / norm, rtol=1e-5, atol=1e-7)


def test_lp_norm_of_a_zero_row_is_zero():
    x = feed((3, 8))
    x[1] = 0
    model = one_node("LpNormalization", (3, 8), (3, 8), p=2, axis=1)
    (got,) = tmlir.InferenceSession(model, device="emu").run(None, {"x": x})
    assert np.array_equal(got[1], np.zeros(8, np.float32))
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 8, 40, 40), (2, 5, 17)])
def test_global_lp_pool(p, shape):
    out = (*shape[:2], *(1 for _ in shape[2:]))
    check(one_node("GlobalLpPool", shape, out, p=p), {"x": feed(shape)}, kernels=1)


# -- LpPool --------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape, attributes, out", [
    ((2, 3, 15, 16), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
     (2, 3, 8, 8)),
    ((1, 4, 9, 10), {"kernel_shape": [3, 2], "strides": [2, 3], "auto_pad": "SAME_LOWER"},
     (1, 4, 5, 4)),
    ((1, 2, 11, 12), {"kernel_shape": [2, 3], "strides": [2, 2], "dilations": [2, 2],
                      "pads": [1, 0, 0, 2]}, (1, 2, 5, 5)),
    ((2, 3, 20), {"kernel_shape": [4], "strides": [3], "pads": [2, 1]}, (2, 3, 7)),
    ((1, 2, 6, 7, 8), {"kernel_shape": [2, 3, 3], "strides": [2, 2, 1],
                       "pads": [0, 1, 1, 1, 1, 1]}, (1, 2, 3, 4, 8)),
])
def test_lp_pool(p, shape, attributes, out):
    check(one_node("LpPool", shape, out, p=p, **attributes), {"x": feed(shape)}, kernels=1)


def test_lp_pool_ceil_mode_against_numpy():
    """ceil_mode: the last window hangs past the input and sums only its part inside."""
    model = one_node("LpPool", (1, 2, 8, 8), (1, 2, 4, 4), kernel_shape=[3, 3],
                     strides=[2, 2], ceil_mode=1, p=2)
    x = feed((1, 2, 8, 8))
    (got,) = tmlir.InferenceSession(model, device="emu").run(None, {"x": x})
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (0, 1), (0, 1)])
    want = np.sqrt(sum(padded[:, :, i:i + 7:2, j:j + 7:2] ** 2
                       for i in range(3) for j in range(3)))
    np.testing.assert_allclose(got, want, rtol=1e-5)


# -- LRN -------------------------------------------------------------------------------------------


def lrn_by_definition(x: np.ndarray, size: int, alpha: float, beta: float, bias: float,
                      ) -> np.ndarray:
    """ONNX's LRN in float64: floor((size - 1) / 2) channels below, ceil(...) above."""
    x64, y = x.astype(np.float64), np.empty(x.shape)
    for c in range(x.shape[1]):
        window = x64[:, max(0, c - (size - 1) // 2):c + size // 2 + 1]
        y[:, c] = x64[:, c] / (bias + alpha / size * (window ** 2).sum(1)) ** beta
    return y


@pytest.mark.parametrize("shape, attributes", [
    ((2, 16, 7, 7), {"size": 5}),
    ((1, 3, 13, 11), {"size": 3, "alpha": 0.01, "beta": 0.5, "bias": 2.0}),
    ((2, 7, 3, 2), {"size": 9, "alpha": 1.0, "beta": 1.0}),  # a window wider than the channels
    ((1, 5, 4, 4), {"size": 1, "alpha": 0.3}),
])
def test_lrn(shape, attributes):
    x = feed(shape)
    got = check(one_node("LRN", shape, shape, opset=13, **attributes), {"x": x}, kernels=1)
    want = lrn_by_definition(x, attributes["size"], attributes.get("alpha", 1e-4),
                             attributes.get("beta", 0.75), attributes.get("bias", 1.0))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("size, shape", [(2, (2, 6, 5, 5)), (4, (2, 6, 5, 5)), (3, (2, 7, 6)),
                                         (5, (1, 6, 2, 3, 4))])
def test_lrn_against_numpy(size, shape):
    """What onnxruntime does not run: even sizes (ONNX defines them: one more channel above
    than below) and inputs that are not 4-D."""
    model = one_node("LRN", shape, shape, opset=13, size=size, alpha=0.5, beta=0.75, bias=1.0)
    x = feed(shape)
    for fusion in (True, False):
        (got,) = tmlir.InferenceSession(model, device="emu", fusion=fusion).run(None, {"x": x})
        np.testing.assert_allclose(got, lrn_by_definition(x, size, 0.5, 0.75, 1.0), rtol=1e-5)


def test_lrn_takes_a_prologue_and_an_epilogue():
    """Relu -> LRN -> Relu: one kernel, the relus computed in the LRN's loads and store."""
    shape = (2, 8, 5, 5)
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("LRN", ["r"], ["n"], size=3, alpha=0.1),
             helper.make_node("Neg", ["n"], ["y"])]
    model = make_model(nodes, {"x": shape}, {"y": shape}, opset=13)
    check(model, {"x": feed(shape)}, kernels=1)


# -- a small AlexNet-like CNN ------------------------------------------------------------------


def alexnet_like(batch: int = 2, seed: int = 0):
    """Conv 5x5 / 1 -> Relu -> LRN -> MaxPool 3x3 / 2 -> Conv 3x3 -> Relu -> LRN -> MaxPool
    3x3 / 2 -> Flatten -> Gemm, on 3x32x32 images, random weights."""
    rng = np.random.default_rng(seed)

    def weight(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        return rng.standard_normal(shape) / np.sqrt(fan_in)

    lrn = {"size": 5, "alpha": 1e-4, "beta": 0.75, "bias": 2.0}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[5, 5], pads=[2] * 4),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("LRN", ["r1"], ["n1"], **lrn),
        helper.make_node("MaxPool", ["n1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("LRN", ["r2"], ["n2"], **lrn),
        helper.make_node("MaxPool", ["n2"], ["p2"], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    initializers = {"w1": weight(16, 3, 5, 5), "b1": weight(16, 1)[:, 0],
                    "w2": weight(24, 16, 3, 3), "b2": weight(24, 1)[:, 0],
                    "w3": weight(10, 24 * 7 * 7), "b3": weight(10, 1)[:, 0]}
    return make_model(nodes, {"x": (batch, 3, 32, 32)}, {"y": (batch, 10)}, initializers,
                      opset=13)


def test_alexnet_like_cnn():
    model = alexnet_like()
    x = feed((2, 3, 32, 32), scale=1.0)
    check(model, {"x": x})
    names = [k.signature.name for k in tmlir.InferenceSession(model, device="emu").program.kernels]
    assert sum(name.startswith("lrn") for name in names) == 2
