"""Scatters, generated tensors and Einsum through the whole pipeline on emu, against
onnxruntime.

Scatters and generated tensors move data and must be exact (a reduction sums or
multiplies the updates in their order, as onnxruntime does, and is held to 1e-6);
Einsum computes with the tuned matmul in float32 and is held to 1e-5. Shapes need
several blocks and leave the last one partly idle; every model runs fused and unfused.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import onnx
import pytest
from models import run_onnxruntime
from onnx import helper, numpy_helper

import tmlir
from tmlir.backends import ptx
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names
from tmlir.frontends.onnx import FrontendError

RNG = np.random.default_rng(7)


def model(nodes, feeds: dict[str, np.ndarray], outputs: list[str],
          constants: dict[str, np.ndarray] | None = None, opset: int = 18):
    """A model whose inputs have the dtypes and shapes of `feeds`."""
    graph = helper.make_graph(
        nodes, "indexing",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in feeds.items()],
        [helper.make_value_info(n, onnx.TypeProto()) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (constants or {}).items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 10
    return onnx.shape_inference.infer_shapes(proto)  # the outputs' types


def check(proto, feeds: dict[str, np.ndarray], *, tolerance: float = 0.0
          ) -> dict[bool, tmlir.InferenceSession]:
    """Outputs on emu, fused and unfused, equal onnxruntime's (exactly, or to `tolerance`)."""
    want = run_onnxruntime(proto, feeds)
    sessions = {}
    for fused in (True, False):
        session = sessions[fused] = tmlir.InferenceSession(proto, device="emu", fusion=fused)
        for got, ref in zip(session.run(None, feeds), want, strict=True):
            assert got.shape == ref.shape and got.dtype == ref.dtype
            np.testing.assert_allclose(got, ref, rtol=tolerance, atol=tolerance,
                                       err_msg=f"fusion={fused}")
    return sessions


def one(op: str, feeds: dict[str, np.ndarray], constants=None, *, tolerance: float = 0.0,
        opset: int = 18, **attributes) -> dict[bool, tmlir.InferenceSession]:
    node = helper.make_node(op, [*feeds, *(constants or {})], ["y"], **attributes)
    return check(model([node], feeds, ["y"], constants, opset), feeds, tolerance=tolerance)


def unique_indices(shape: tuple[int, ...], axis: int, extent: int) -> np.ndarray:
    """Indices along `axis` without repeats on any line (ONNX leaves repeats undefined
    without a reduction), half of them negative."""
    lines = np.moveaxis(np.zeros(shape, np.int64), axis, -1)
    flat = lines.reshape(-1, shape[axis])
    for row in flat:
        row[:] = RNG.permutation(extent)[:shape[axis]]
    flat[::2] -= extent  # count from the end
    return np.moveaxis(flat.reshape(lines.shape), -1, axis)


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# -- ScatterElements ------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("index_type", [np.int64, np.int32])
def test_scatter_elements_replaces(axis, index_type):
    data = floats(23, 37)
    shape = (9, 37) if axis == 0 else (23, 6)  # indices shorter than data along axis
    indices = unique_indices(shape, axis % 2, data.shape[axis]).astype(index_type)
    one("ScatterElements", {"data": data, "indices": indices, "updates": floats(*shape)},
        axis=axis)


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_elements_reduces_duplicates(reduction):
    data = floats(3, 40, 9)
    indices = RNG.integers(-9, 9, (3, 40, 5))  # many repeats on each line
    one("ScatterElements", {"data": data, "indices": indices, "updates": floats(3, 40, 5)},
        tolerance=1e-6, axis=2, reduction=reduction)


def test_scatter_elements_of_a_smaller_block_and_integers():
    data = RNG.integers(-50, 50, (30, 20)).astype(np.int32)
    indices = RNG.integers(0, 30, (4, 3))  # a corner of the data, with repeats
    updates = RNG.integers(-50, 50, (4, 3)).astype(np.int32)
    one("ScatterElements", {"data": data, "indices": indices, "updates": updates}, axis=0,
        reduction="add")


def test_scatter_elements_fuses_prologue_and_epilogue():
    """The scatter writes each output element once, so it takes an epilogue and its
    operands a prologue: one kernel, the same numbers as unfused."""
    feeds = {"x": floats(40, 33), "i": unique_indices((40, 4), 1, 33), "u": floats(40, 4)}
    nodes = [helper.make_node("Neg", ["x"], ["nx"]), helper.make_node("Exp", ["u"], ["eu"]),
             helper.make_node("ScatterElements", ["nx", "i", "eu"], ["s"], axis=1),
             helper.make_node("Relu", ["s"], ["y"])]
    sessions = check(model(nodes, feeds, ["y"]), feeds, tolerance=1e-6)
    assert len(sessions[True].program.kernels) == 1
    assert len(sessions[False].program.kernels) == 4


def test_scatter_nd_fuses_a_prologue_into_its_scan_and_an_epilogue():
    feeds = {"x": floats(9, 40), "r": np.array([[7], [-9], [3]], np.int64), "u": floats(3, 40)}
    nodes = [helper.make_node("Sigmoid", ["u"], ["su"]),
             helper.make_node("ScatterND", ["x", "r", "su"], ["s"], reduction="add"),
             helper.make_node("Transpose", ["s"], ["y"], perm=[1, 0])]
    sessions = check(model(nodes, feeds, ["y"]), feeds, tolerance=1e-6)
    assert len(sessions[True].program.kernels) == 1


def test_generated_tensors_take_an_epilogue():
    feeds = {"x": floats(30, 37), "h": RNG.integers(-5, 5, (40,)),
             "v": np.array([0.25, 4.0], np.float32)}
    nodes = [helper.make_node("EyeLike", ["x"], ["e"], k=2),
             helper.make_node("Add", ["e", "x"], ["y"]),
             helper.make_node("OneHot", ["h", "depth", "v"], ["o"]),
             helper.make_node("Sqrt", ["o"], ["z"])]
    sessions = check(model(nodes, feeds, ["y", "z"], {"depth": np.array(5, np.int64)}), feeds,
                     tolerance=1e-6)
    assert len(sessions[True].program.kernels) == 2


def test_deprecated_scatter_is_scatter_elements():
    data = floats(5, 70)
    indices = unique_indices((5, 3), 1, 70)
    one("Scatter", {"data": data, "indices": indices, "updates": floats(5, 3)}, opset=10,
        axis=1)


# -- ScatterND ------------------------------------------------------------------------------

def test_scatter_nd_replaces_slices():
    data = floats(6, 17, 11)
    indices = np.array([[4], [-6], [2]], np.int64)  # rows 4, 0, 2
    one("ScatterND", {"data": data, "indices": indices, "updates": floats(3, 17, 11)})


def test_scatter_nd_replaces_elements():
    data = floats(12, 40)
    cells = RNG.permutation(12 * 40)[:50]
    indices = np.stack([cells // 40, cells % 40 - 40], axis=-1).reshape(5, 10, 2)
    one("ScatterND", {"data": data, "indices": indices, "updates": floats(5, 10)})


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_nd_reduces_duplicates(reduction):
    data = floats(8, 5, 30)
    indices = RNG.integers(0, 8, (7, 2))
    indices[:, 1] = RNG.integers(-5, 5, 7)
    one("ScatterND", {"data": data, "indices": indices, "updates": floats(7, 30)},
        tolerance=1e-6, reduction=reduction)


def test_scatter_nd_with_one_index_row():
    data = RNG.integers(0, 9, (4, 70)).astype(np.int64)
    one("ScatterND", {"data": data, "indices": np.array([3], np.int64),
                      "updates": RNG.integers(0, 9, (70,))})


# -- Trilu, EyeLike, OneHot ---------------------------------------------------------------

@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -3, 40, -40])
def test_trilu(upper, k):
    constants = {} if k is None else {"k": np.array(k, np.int64)}
    one("Trilu", {"x": floats(3, 19, 23)}, constants, opset=14, upper=upper)


def test_trilu_of_integers_fused_after_an_add():
    feeds = {"x": RNG.integers(-9, 9, (33, 20)).astype(np.int32),
             "z": RNG.integers(-9, 9, (33, 20)).astype(np.int32)}
    nodes = [helper.make_node("Add", ["x", "z"], ["s"]),
             helper.make_node("Trilu", ["s", "k"], ["y"], upper=0)]
    sessions = check(model(nodes, feeds, ["y"], {"k": np.array(1, np.int64)}, opset=14), feeds)
    assert len(sessions[True].program.kernels) == 1


@pytest.mark.parametrize(("shape", "k", "dtype"), [
    ((40, 40), 0, None), ((17, 45), 3, 7), ((45, 17), -5, 1), ((9, 9), 20, 6)])
def test_eye_like(shape, k, dtype):
    attributes = {"k": k} | ({"dtype": dtype} if dtype is not None else {})
    one("EyeLike", {"x": floats(*shape)}, opset=22, **attributes)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    indices = RNG.integers(-14, 14, (6, 25))  # some out of [-depth, depth): all off
    feeds = {"indices": indices, "values": np.array([-2, 5], np.int64)}
    node = helper.make_node("OneHot", ["indices", "depth", "values"], ["y"], axis=axis)
    check(model([node], feeds, ["y"], {"depth": np.array(11, np.int64)}), feeds)


def test_one_hot_with_float_indices_and_depth():
    indices = RNG.uniform(-6, 6, (50,)).astype(np.float32)
    node = helper.make_node("OneHot", ["indices", "depth", "values"], ["y"])
    feeds = {"indices": indices, "values": np.array([0.5, 2.0], np.float32)}
    check(model([node], feeds, ["y"], {"depth": np.array([6.0], np.float32)}), feeds)


# -- Einsum ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("equation", "shapes"), [
    ("bij, bjk -> bik", [(5, 33, 17), (5, 17, 40)]),
    ("ij->ji", [(33, 45)]),
    ("ij->i", [(33, 45)]),
    ("...ii ->...i", [(3, 5, 5)]),
    ("ii", [(7, 7)]),
    ("i,i", [(50,), (50,)]),
    ("i,j->ij", [(30,), (20,)]),
    ("ij,jk", [(20, 30), (30, 10)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 9, 16), (2, 3, 11, 16)]),
    ("...ij,jk->...ik", [(2, 3, 4, 5), (5, 6)]),
    ("...ij,...jk->...ik", [(2, 1, 4, 5), (1, 3, 5, 6)]),
    ("ij,jk,kl->il", [(6, 7), (7, 8), (8, 9)]),
    ("abc,cb->a", [(4, 5, 6), (6, 5)]),
    ("iij,jk->ik", [(4, 4, 6), (6, 3)]),
    ("->", [()]),
])
def test_einsum(equation, shapes):
    feeds = {f"x{k}": floats(*shape) for k, shape in enumerate(shapes)}
    one("Einsum", feeds, tolerance=1e-5, opset=12, equation=equation)


def test_einsum_batch_matmul_is_one_matmul():
    feeds = {"a": floats(4, 8, 16), "b": floats(4, 16, 8)}
    sessions = one("Einsum", feeds, tolerance=1e-5, opset=12, equation="bij,bjk->bik")
    assert [k.template for k in sessions[True].program.kernels] == ["matmul_simt"]


# -- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("op", "feeds", "attributes", "message"), [
    ("Einsum", {"x": floats(3, 4)}, {"equation": "ij->k"}, "label missing from the inputs"),
    ("Einsum", {"x": floats(3, 4)}, {"equation": "ijk->i"}, "does not match the equation"),
    ("Einsum", {"x": floats(3, 4)}, {"equation": "ij->jj"}, "must be distinct letters"),
    ("Einsum", {"x": floats(3, 4), "y": floats(5, 4)}, {"equation": "ij,ij->i"},
     "label 'i' has extents 3 and 5"),
    ("Trilu", {"x": floats(5)}, {}, "Input rank must be >= 2"),
    ("ScatterElements", {"d": floats(3, 3), "i": np.zeros((1, 1), np.int64),
                         "u": floats(1, 1)}, {"reduction": "mean"},
     "unsupported value 'mean' of attribute 'reduction'"),
    ("ScatterElements", {"d": np.zeros((3, 3), bool), "i": np.zeros((1, 1), np.int64),
                         "u": np.ones((1, 1), bool)}, {"reduction": "add"},
     "reduction 'add' is supported for f32"),
    ("ScatterND", {"d": floats(3, 3), "i": np.zeros((2, 1), np.int64), "u": floats(3, 3)}, {},
     "updates shape [3, 3] does not match expected [2, 3]"),
    ("EyeLike", {"x": floats(2, 3, 4)}, {}, "Input tensor must be 2-dimensional"),
])
def test_unsupported_forms_are_one_line_errors(op, feeds, attributes, message):
    node = helper.make_node(op, list(feeds), ["out"], **attributes)
    with pytest.raises(FrontendError, match=re.escape(message)) as error:
        tmlir.InferenceSession(model([node], feeds, ["out"], opset=18), device="emu")
    assert "\n" not in str(error.value)


def test_one_hot_depth_must_be_positive():
    node = helper.make_node("OneHot", ["i", "depth", "v"], ["y"])
    feeds = {"i": np.zeros(3, np.int64), "v": np.array([0, 1], np.float32)}
    with pytest.raises(FrontendError, match="depth must be at least 1"):
        tmlir.InferenceSession(model([node], feeds, ["y"], {"depth": np.array(0, np.int64)}),
                               device="emu")


# -- the CUDA C compiles --------------------------------------------------------------------

def every_op_model():
    """One model with every op of this file (unfused: one kernel each)."""
    feeds = {"x": floats(6, 7), "i": unique_indices((6, 2), 1, 7), "u": floats(6, 2),
             "r": np.array([[1], [-2]], np.int64), "v": floats(2, 7),
             "h": RNG.integers(-3, 3, (5,)), "hv": np.array([0, 1], np.float32)}
    nodes = [helper.make_node("ScatterElements", ["x", "i", "u"], ["se"], axis=1,
                              reduction="min"),
             helper.make_node("ScatterND", ["x", "r", "v"], ["sn"], reduction="mul"),
             helper.make_node("OneHot", ["h", "depth", "hv"], ["oh"]),
             helper.make_node("EyeLike", ["x"], ["ey"], k=-1),
             helper.make_node("Trilu", ["x"], ["tr"]),
             helper.make_node("Einsum", ["x", "v"], ["es"], equation="ij,kj->ik")]
    outputs = ["se", "sn", "oh", "ey", "tr", "es"]
    return model(nodes, feeds, outputs, {"depth": np.array(3, np.int64)}), feeds


def test_every_op_in_one_model():
    proto, feeds = every_op_model()
    check(proto, feeds, tolerance=1e-5)


@pytest.mark.parametrize("compiler, arch", [
    pytest.param("nvcc", "sm_90", marks=pytest.mark.skipif(shutil.which("nvcc") is None,
                                                          reason="nvcc not on PATH")),
    pytest.param("nvrtc", "sm_80", marks=pytest.mark.skipif(ptx.nvrtc_version() is None,
                                                           reason="NVRTC does not load")),
])
def test_every_op_compiles_to_ptx(compiler, arch):
    program = tmlir.InferenceSession(every_op_model()[0], device="emu", fusion=False).program
    text = compile_ptx(program.source, arch, compiler=compiler)
    assert sorted(ptx_kernel_names(text)) == sorted(k.signature.name for k in program.kernels)
    assert len(program.kernels) == 6
