"""ONNX models through the whole pipeline on the emu backend, against onnxruntime; every
emitted kernel also compiles to PTX for sm_80 and sm_90 (NVRTC)."""

from __future__ import annotations

import numpy as np
import pytest
from models import make_model, mlp, run_onnxruntime
from onnx import helper

import tmlir
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names

RTOL = 1e-4  # fp32 accumulation order differs from onnxruntime's


def check(model, feed, *, atol: float = 1e-5) -> tmlir.InferenceSession:
    """Run on emu against onnxruntime, and compile the same CUDA C to PTX for sm_80/sm_90."""
    session = tmlir.InferenceSession(model, device="emu")
    assert_compiles_to_ptx(session.program)
    got = session.run(None, feed)
    want = run_onnxruntime(model, feed)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=atol)
    return session


def assert_compiles_to_ptx(program) -> None:
    for arch in ("sm_80", "sm_90"):
        ptx = compile_ptx(program.source, arch)
        assert sorted(ptx_kernel_names(ptx)) == sorted(k.signature.name for k in program.kernels)
        assert f".target {arch}" in ptx


def inputs(model, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(
            np.float32)
        for i in model.graph.input
        if i.name not in {t.name for t in model.graph.initializer}
    }


@pytest.mark.parametrize(
    "batch, dims",
    [(1, (7, 5)), (8, (784, 128, 10)), (33, (65, 40, 17)), (3, (31, 64, 64, 7)), (128, (64, 96, 32))],
)
def test_mlp_matches_onnxruntime(batch, dims):
    model = mlp(batch, dims)
    check(model, inputs(model))


BINARY = ["Add", "Sub", "Mul", "Div"]


@pytest.mark.parametrize(
    "shape_a, shape_b",
    [((1, 7), (1, 7)), ((33, 65), (65,)), ((3, 17, 31), (17, 1)), ((3, 1, 31), (1, 17, 31)), ((5,), ())],
)
@pytest.mark.parametrize("op", BINARY)
def test_broadcast_binary(op, shape_a, shape_b):
    out = np.broadcast_shapes(shape_a, shape_b)
    model = make_model([helper.make_node(op, ["a", "b"], ["y"])], {"a": shape_a, "b": shape_b},
                       {"y": out})
    feed = inputs(model)
    if op == "Div":
        feed["b"] = np.where(np.abs(feed["b"]) < 0.1, 1.0, feed["b"]).astype(np.float32)
    check(model, feed)


@pytest.mark.parametrize("shape", [(1, 7), (33, 65), (3, 17, 31), (256,), (4, 64)])
def test_elementwise_chain(shape):
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["s"]),
        helper.make_node("Tanh", ["x"], ["t"]),
        helper.make_node("Mul", ["s", "t"], ["m"]),
        helper.make_node("Relu", ["m"], ["r"]),
        helper.make_node("Sub", ["r", "x"], ["d"]),
        helper.make_node("Identity", ["d"], ["y"]),
    ]
    model = make_model(nodes, {"x": shape}, {"y": shape})
    check(model, inputs(model))


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((1, 7), (7, 3)), ((33, 65), (65, 17)), ((3, 17, 31), (31, 9)), ((3, 17, 31), (3, 31, 9)),
     ((3, 1, 4, 5), (2, 5, 6)), ((64, 64), (64, 64)), ((2, 1, 100), (1, 100, 130))],
)
def test_matmul(a_shape, b_shape):
    out = np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                       {"a": a_shape, "b": b_shape}, {"y": out})
    check(model, inputs(model), atol=1e-4)


@pytest.mark.parametrize("trans_a, trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("c_shape", [None, (17,), (33, 1), (1, 1), (33, 17), ()])
def test_gemm(trans_a, trans_b, c_shape):
    m, n, k = 33, 17, 20
    rng = np.random.default_rng(3)
    a = rng.standard_normal((k, m) if trans_a else (m, k))
    b = rng.standard_normal((n, k) if trans_b else (k, n))
    inits = {"b": b}
    names = ["a", "b"]
    if c_shape is not None:
        inits["c"] = rng.standard_normal(c_shape)
        names.append("c")
    node = helper.make_node("Gemm", names, ["y"], transA=trans_a, transB=trans_b, alpha=0.5,
                            **({"beta": 2.0} if c_shape == (17,) else {}))
    model = make_model([node], {"a": a.shape}, {"y": (m, n)}, inits)
    check(model, {"a": a.astype(np.float32)}, atol=1e-4)


def test_outputs_that_are_inputs_and_multiple_outputs():
    nodes = [helper.make_node("Identity", ["x"], ["y0"]), helper.make_node("Relu", ["x"], ["y1"]),
             helper.make_node("Identity", ["y1"], ["y2"])]
    model = make_model(nodes, {"x": (4, 5)}, {"y0": (4, 5), "y1": (4, 5), "y2": (4, 5)})
    feed = inputs(model)
    session = check(model, feed)
    (y1,) = session.run(["y1"], feed)
    np.testing.assert_array_equal(y1, np.maximum(feed["x"], 0))
