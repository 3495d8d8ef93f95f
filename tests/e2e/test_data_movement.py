"""Data-movement ONNX operators through the whole pipeline on emu, against onnxruntime.

Copies must be exact, so outputs are compared with ``assert_array_equal`` (Resize's
linear mode computes, and is held to 1e-6). Shapes are chosen to need several blocks and
to leave the last block partly idle; every model runs fused and unfused. Also: reshapes cost no kernel (the host views the
buffer), and the CUDA C of a model with every op compiles to PTX with nvcc and NVRTC.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from models import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

import tmlir
from tmlir.backends import ptx
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names
from tmlir.frontends.onnx import FrontendError


def model(nodes, inputs: dict[str, tuple[int, ...]], outputs: list[str],
          constants: dict[str, np.ndarray] | None = None, opset: int = 17,
          types: dict[str, int] | None = None):
    """A model whose `constants` keep their dtype (int64 shapes, axes, ...); inputs and
    outputs are float32 unless `types` says otherwise."""
    types = types or {}
    graph = helper.make_graph(
        nodes, "data_movement",
        [helper.make_tensor_value_info(n, types.get(n, TensorProto.FLOAT), list(s))
         for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, types.get(n, TensorProto.FLOAT), None)
         for n in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (constants or {}).items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 10
    return proto


def ints(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def feed(proto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    constants = {t.name for t in proto.graph.initializer}
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
            .astype(np.float32) for i in proto.graph.input if i.name not in constants}


def check(proto, *, exact: bool = True, fusion: bool = True) -> tmlir.InferenceSession:
    """Outputs on emu, compiled with and without fusion, equal onnxruntime's (shape and
    values); returns the session compiled with `fusion`."""
    data = feed(proto)
    want = run_onnxruntime(proto, data)
    sessions = {}
    for fused in (True, False):
        session = sessions[fused] = tmlir.InferenceSession(proto, device="emu", fusion=fused)
        got = session.run(None, data)
        for name, g, w in zip([o.name for o in proto.graph.output], got, want):
            assert g.shape == w.shape, name
            if exact:
                np.testing.assert_array_equal(g, w, err_msg=f"{name} (fusion={fused})")
            else:
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5,
                                           err_msg=f"{name} (fusion={fused})")
    return sessions[fusion]


def one(op: str, inputs: dict[str, tuple[int, ...]], constants=None, opset: int = 17,
        outputs: int = 1, **attributes) -> tmlir.InferenceSession:
    """A model of one node: its float inputs, then its constant inputs (by name order)."""
    names = [*inputs, *(constants or {})]
    outs = [f"y{i}" for i in range(outputs)]
    return check(model([helper.make_node(op, names, outs, **attributes)], inputs, outs,
                       constants, opset))


SHAPE = (3, 70, 33)  # 6930 elements: 28 blocks of 256, the last one part idle


@pytest.mark.parametrize("perm", [None, (0, 2, 1), (2, 0, 1), (1, 0, 2)])
def test_transpose(perm):
    attrs = {} if perm is None else {"perm": list(perm)}
    one("Transpose", {"x": SHAPE}, **attrs)


def test_transpose_4d():
    one("Transpose", {"x": (2, 3, 5, 7)}, perm=[0, 2, 3, 1])


@pytest.mark.parametrize("axis, shapes", [
    (0, [(2, 5), (3, 5), (1, 5)]),
    (1, [(4, 3), (4, 300)]),
    (-1, [(2, 3, 4), (2, 3, 1), (2, 3, 7)]),
    (1, [(2, 0, 3), (2, 4, 3)]),  # an empty input takes no part
])
def test_concat(axis, shapes):
    inputs = {f"x{i}": s for i, s in enumerate(shapes)}
    one("Concat", inputs, axis=axis)


@pytest.mark.parametrize("opset, axis, split, outputs, extra", [
    (11, 1, [10, 60], 2, {}),          # sizes as an attribute
    (13, 2, [1, 30, 2], 3, {}),        # sizes as a constant input
    (13, 0, None, 3, {}),              # equal parts
    (18, 1, None, 3, {"num_outputs": 3}),  # 70 = 24 + 24 + 22
])
def test_split(opset, axis, split, outputs, extra):
    constants, attrs = {}, {"axis": axis, **extra}
    if split is not None and opset >= 13:
        constants["split"] = ints(*split)
    elif split is not None:
        attrs["split"] = split
    one("Split", {"x": SHAPE}, constants, opset=opset, outputs=outputs, **attrs)


@pytest.mark.parametrize("starts, ends, axes, steps", [
    ((1, 5), (3, 60), (0, 1), (1, 7)),
    ((-1, 40), (-100, 2), (2, 1), (-2, -3)),           # negative steps, clamped start
    ((0,), (2**62,), (1,), (1,)),                       # INT64-sized end
    ((2, -5), (1000, -1), (-3, -1), None),              # negative axes, default steps
    ((5,), (5,), (1,), (1,)),                           # empty result
])
def test_slice(starts, ends, axes, steps):
    constants = {"starts": ints(*starts), "ends": ints(*ends), "axes": ints(*axes)}
    if steps is not None:
        constants["steps"] = ints(*steps)
    one("Slice", {"x": SHAPE}, constants, opset=13)


def test_slice_attributes_before_opset_10():
    one("Slice", {"x": SHAPE}, opset=9, starts=[1, -20], ends=[3, 10**9], axes=[0, 2])


@pytest.mark.parametrize("axis, indices", [
    (0, np.array(2)),                     # a scalar index drops the axis
    (1, ints(0, 3, 6, 9)),               # a progression
    (1, ints(5, 4, 3)),                   # a decreasing progression
    (2, np.array([[0, -1], [7, 3], [3, 7]], np.int64)),  # negative, 2-D: a select chain
    (-1, np.array([4, 1, 1, 30], np.int32)),
    (1, ints(7)),                         # one index, the axis kept
    (1, np.zeros((0,), np.int64)),        # no indices: an empty result
])
def test_gather(axis, indices):
    one("Gather", {"x": SHAPE}, {"indices": indices}, axis=axis)


@pytest.mark.parametrize("x, shape", [((3, 1), (2, 3, 70)), ((70, 1), (70, 33)),
                                      ((1,), (5, 1)), ((2, 1, 4), (2, 3, 4))])
def test_expand(x, shape):
    one("Expand", {"x": x}, {"shape": ints(*shape)})


def test_tile():
    one("Tile", {"x": (3, 7, 5)}, {"repeats": ints(2, 1, 40)})


@pytest.mark.parametrize("shape, blocksize, mode", [
    ((2, 8, 3, 5), 2, None), ((2, 8, 3, 5), 2, "CRD"), ((1, 18, 5, 4), 3, "DCR"),
    ((1, 36, 7, 9), 3, "CRD"), ((1, 3, 4, 4), 1, None)])
def test_depth_to_space(shape, blocksize, mode):
    one("DepthToSpace", {"x": shape}, blocksize=blocksize, **({"mode": mode} if mode else {}))


@pytest.mark.parametrize("shape, blocksize", [((2, 3, 4, 6), 2), ((1, 5, 9, 12), 3),
                                              ((1, 2, 3, 3), 1)])
def test_space_to_depth(shape, blocksize):
    one("SpaceToDepth", {"x": shape}, blocksize=blocksize)


@pytest.mark.parametrize("mode, perm", [("DCR", (0, 3, 5, 1, 2, 4)), ("CRD", (0, 1, 3, 5, 2, 4))])
def test_space_to_depth_modes_and_back(mode, perm):
    """SpaceToDepth takes a mode since opset 25, which onnxruntime does not run yet: against
    ONNX's definition in numpy (reshape, transpose, reshape), and DepthToSpace in the same
    mode undoes it exactly."""
    n, c, h, w, b = 2, 3, 6, 9, 3
    nodes = [helper.make_node("SpaceToDepth", ["x"], ["s"], blocksize=b, mode=mode),
             helper.make_node("DepthToSpace", ["s"], ["y"], blocksize=b, mode=mode)]
    proto = model(nodes, {"x": (n, c, h, w)}, ["s", "y"], opset=25)
    x = feed(proto)["x"]
    want = x.reshape(n, c, h // b, b, w // b, b).transpose(perm).reshape(n, c * b * b, h // b, w // b)
    for fusion in (True, False):
        s, y = tmlir.InferenceSession(proto, fusion=fusion).run(None, {"x": x})
        np.testing.assert_array_equal(s, want)
        np.testing.assert_array_equal(y, x)


def test_depth_to_space_fuses_as_a_prologue_and_an_epilogue():
    """A pixel shuffle between two elementwise ops, as in super-resolution models: fused,
    the three ops are one kernel; unfused, three."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("DepthToSpace", ["r"], ["d"], blocksize=2),
             helper.make_node("Sigmoid", ["d"], ["y"])]
    session = check(model(nodes, {"x": (1, 16, 9, 7)}, ["y"]), exact=False)
    assert len(session.program.kernels) == 1
    unfused = tmlir.InferenceSession(model(nodes, {"x": (1, 16, 9, 7)}, ["y"]), fusion=False)
    assert len(unfused.program.kernels) == 3


def test_depth_to_space_and_back_of_int64():
    nodes = [helper.make_node("SpaceToDepth", ["x"], ["s"], blocksize=2),
             helper.make_node("DepthToSpace", ["s"], ["y"], blocksize=2, mode="DCR")]
    proto = model(nodes, {"x": (2, 3, 4, 6)}, ["y"], types={"x": INT64, "y": INT64})
    data = {"x": np.arange(2 * 3 * 4 * 6, dtype=np.int64).reshape(2, 3, 4, 6)}
    (y,) = tmlir.InferenceSession(proto).run(None, data)
    np.testing.assert_array_equal(y, data["x"])


@pytest.mark.parametrize("mode, pads, opset", [
    ("constant", (0, 2, 1, 1, 3, 0), 17),
    ("constant", (0, -3, 2, 0, 1, -5), 17),   # negative pads crop
    ("reflect", (1, 5, 0, 2, 0, 32), 17),
    ("edge", (2, 0, 40, 1, 3, 0), 17),
    ("wrap", (2, 70, 5, 0, 71, 40), 19),
])
def test_pad(mode, pads, opset):
    one("Pad", {"x": SHAPE}, {"pads": ints(*pads)}, opset=opset, mode=mode)


def test_pad_value_and_axes():
    constants = {"pads": ints(1, 2, 3, 4), "value": np.array(-1.5, np.float32),
                 "axes": ints(-1, 0)}
    one("Pad", {"x": SHAPE}, constants, opset=18)


def test_pad_attributes_before_opset_11():
    one("Pad", {"x": (4, 5)}, opset=10, pads=[1, 0, 2, 3], value=2.5)


RESIZE_CASES = [
    ("nearest", "asymmetric", "floor", (1, 1, 2, 2)),
    ("nearest", "half_pixel", "round_prefer_floor", (1, 1, 1.7, 2.5)),
    ("nearest", "align_corners", "round_prefer_ceil", (1, 1, 0.6, 3)),
    ("nearest", "pytorch_half_pixel", "ceil", (1, 1, 0.5, 0.4)),
    ("linear", "half_pixel", None, (1, 1, 2, 2)),
    ("linear", "align_corners", None, (1, 1, 1.5, 3)),
    ("linear", "asymmetric", None, (1, 1, 0.75, 2)),
    ("linear", "pytorch_half_pixel", None, (1, 1, 0.3, 1.6)),
    ("linear", "half_pixel_symmetric", None, (1, 1, 1.5, 0.75)),
]


@pytest.mark.parametrize("mode, ctm, nearest_mode, scales", RESIZE_CASES)
def test_resize_scales(mode, ctm, nearest_mode, scales):
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if nearest_mode:
        attrs["nearest_mode"] = nearest_mode
    proto = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)],
                  {"x": (2, 3, 9, 10)}, ["y"], {"scales": np.array(scales, np.float32)}, 19)
    check(proto, exact=mode == "nearest")


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_sizes_and_axes(mode):
    proto = model([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode,
                                    axes=[3, 2])],
                  {"x": (1, 2, 7, 8)}, ["y"], {"sizes": ints(13, 5)}, 19)
    check(proto, exact=mode == "nearest")


def test_resize_linear_trilinear():
    proto = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
                  {"x": (1, 2, 3, 4, 5)}, ["y"],
                  {"scales": np.array([1, 1, 2, 1.5, 0.8], np.float32)}, 13)
    check(proto, exact=False)


def test_dropout_is_the_identity_in_inference():
    nodes = [helper.make_node("Dropout", ["x", "ratio", "training"], ["d", "mask"]),
             helper.make_node("Relu", ["d"], ["y"])]
    constants = {"ratio": np.array(0.5, np.float32), "training": np.array(False)}
    session = check(model(nodes, {"x": (4, 5)}, ["y"], constants, opset=13))
    assert [k.template for k in session.program.kernels] == ["elementwise"]


# -- reshapes cost no kernel -----------------------------------------------------------------


def reshape_chain(outputs: list[str]):
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["flat"]),
             helper.make_node("Unsqueeze", ["flat", "axes"], ["u"]),
             helper.make_node("Squeeze", ["u", "axes"], ["s"]),
             helper.make_node("Flatten", ["s"], ["f"], axis=0),
             helper.make_node("Neg", ["f"], ["y"])]
    return model(nodes, {"x": (2, 3, 4)}, outputs, {"shape": ints(-1), "axes": ints(0)},
                 opset=13)


def launched(session) -> list[str]:
    return [launch.kernel.rsplit("_", 1)[0] for launch in session.program.launches]


def test_reshapes_launch_nothing():
    session = check(reshape_chain(["y"]), fusion=False)
    assert launched(session) == ["relu", "neg"]
    # relu writes its buffer; neg reads the same buffer as a 1x24 view of it
    relu, neg = session.program.launches
    assert relu.args[1] == neg.args[0]
    # fused: neg's kernel computes relu (through the reshapes) where it loads
    assert launched(check(reshape_chain(["y"]))) == ["neg"]


def test_reshape_of_a_kernel_result_as_output_is_written_in_place():
    session = check(reshape_chain(["flat", "y"]))
    assert launched(session) == ["relu", "neg"]  # relu writes output 'flat' directly
    flat = next(i for i, b in enumerate(session.program.buffers) if b.source == "flat")
    assert session.program.launches[0].args[1] == flat


def test_value_and_its_reshape_both_outputs():
    session = check(reshape_chain(["r", "flat", "u"]))
    assert launched(session) == ["relu", "copy", "copy"]  # neg is dead: graph-canonicalize


def test_reshape_of_an_input_as_output_is_copied():
    proto = model([helper.make_node("Reshape", ["x", "shape"], ["y"])], {"x": (3, 70, 33)},
                  ["y"], {"shape": ints(0, -1)})
    assert launched(check(proto)) == ["copy"]


def test_split_results_reshaped_to_outputs():
    nodes = [helper.make_node("Split", ["x"], ["a", "b"], axis=1),
             helper.make_node("Flatten", ["a"], ["fa"]),
             helper.make_node("Reshape", ["b", "shape"], ["rb"])]
    proto = model(nodes, {"x": (2, 6, 5)}, ["fa", "rb", "b"], {"shape": ints(-1)})
    assert launched(check(proto)) == ["split", "copy"]  # 'b' is rb's buffer: copied


# -- errors ------------------------------------------------------------------------------------


INT64, BOOL = TensorProto.INT64, TensorProto.BOOL


@pytest.mark.parametrize("nodes, inputs, constants, opset, types, message", [
    ([helper.make_node("Gather", ["x", "i"], ["y"], name="g")], {"x": (3,), "i": (2,)}, {}, 13,
     {}, "node 'g' (Gather): input 'i' is FLOAT, but Gather takes int64, int32 there"),
    ([helper.make_node("Gather", ["x", "i"], ["y"], name="g")], {"x": (3,)},
     {"i": ints(3)}, 13, {}, "node 'g' (Gather): index 3 is out of range for axis 0 of extent 3"),
    ([helper.make_node("Resize", ["x", "", "s"], ["y"], name="z", mode="area")],
     {"x": (1, 1, 2, 2)}, {"s": np.ones(4, np.float32)}, 13, {},
     "node 'z' (Resize): unsupported value 'area' of attribute 'mode' (expected 'nearest' or "
     "'linear' or 'cubic')"),
    ([helper.make_node("Dropout", ["x", "", "t"], ["y"], name="d")], {"x": (2,)},
     {"t": np.array(True)}, 13, {}, "node 'd' (Dropout): training mode with ratio 0.5 is not "
     "supported: its mask is random, so no reference can match it (only ratio 0)"),
    ([helper.make_node("Pad", ["x", "p"], ["y"], name="p", mode="reflect")], {"x": (2, 3)},
     {"p": ints(0, 3, 0, 0)}, 13, {},
     "node 'p' (Pad): mode \"reflect\" needs pads below the extent 3 of dim 1, got 3, 0"),
    ([helper.make_node("DepthToSpace", ["x"], ["y"], name="d")], {"x": (1, 4, 2, 2)}, {}, 13, {},
     "shape inference failed: node 'd' (DepthToSpace): Blocksize must be positive"),
    ([helper.make_node("DepthToSpace", ["x"], ["y"], name="d", blocksize=2, mode="RCD")],
     {"x": (1, 4, 2, 2)}, {}, 13, {},
     "node 'd' (DepthToSpace): unsupported value 'RCD' of attribute 'mode' (expected 'DCR' or "
     "'CRD')"),
    ([helper.make_node("SpaceToDepth", ["x"], ["y"], name="s", blocksize=2)],
     {"x": (4, 2, 2)}, {}, 13, {}, "node 's' (SpaceToDepth): Input tensor must be 4-dimensional"),
    ([helper.make_node("Slice", ["x", "b", "e"], ["y"], name="s", axes=[0])], {"x": (4,)},
     {"b": ints(0), "e": ints(2)}, 13, {},
     "node 's' (Slice): attributes 'starts', 'ends' and 'axes' are not allowed since opset "
     "10, where they are inputs"),
])
def test_errors(nodes, inputs, constants, opset, types, message):
    outputs = list(nodes[-1].output)
    with pytest.raises(FrontendError) as info:
        tmlir.InferenceSession(model(nodes, inputs, outputs, constants, opset, types))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


# -- PTX ---------------------------------------------------------------------------------------


def every_op_model():
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
        helper.make_node("Reshape", ["t", "flat"], ["r"]),
        helper.make_node("Concat", ["x", "x"], ["c"], axis=1),
        helper.make_node("Split", ["c", "split"], ["s0", "s1"], axis=1),
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["sl"]),
        helper.make_node("Gather", ["x", "idx"], ["g"], axis=2),
        helper.make_node("Expand", ["x", "eshape"], ["e"]),
        helper.make_node("Tile", ["x", "reps"], ["tl"]),
        helper.make_node("Pad", ["x", "pads", "value"], ["pc"]),
        helper.make_node("Pad", ["x", "pads"], ["pr"], mode="reflect"),
        helper.make_node("Pad", ["x", "pads"], ["pe"], mode="edge"),
        helper.make_node("Resize", ["x4", "", "scales"], ["zl"], mode="linear"),
        helper.make_node("Resize", ["x4", "", "scales"], ["zn"], mode="nearest"),
        helper.make_node("SpaceToDepth", ["zn"], ["sd"], blocksize=2),
        helper.make_node("DepthToSpace", ["sd"], ["dc"], blocksize=2, mode="CRD"),
    ]
    constants = {
        "flat": ints(-1), "split": ints(2, 4), "starts": ints(-1), "ends": ints(-100),
        "axes": ints(2), "steps": ints(-2), "idx": ints(3, 0, 2), "eshape": ints(2, 3, 3, 4),
        "reps": ints(1, 2, 2), "pads": ints(0, 1, 2, 0, 1, 1), "value": np.float32(0.5),
        "scales": np.array([1, 1, 2, 1.5], np.float32),
    }
    outputs = ["r", "s0", "s1", "sl", "g", "e", "tl", "pc", "pr", "pe", "zl", "zn", "dc"]
    return model(nodes, {"x": (3, 3, 4), "x4": (1, 2, 3, 4)}, outputs, constants, opset=18)


def test_every_op_in_one_model():
    check(every_op_model(), exact=False)


@pytest.mark.parametrize("compiler, arch", [
    pytest.param("nvcc", "sm_90", marks=pytest.mark.skipif(shutil.which("nvcc") is None,
                                                          reason="nvcc not on PATH")),
    pytest.param("nvrtc", "sm_80", marks=pytest.mark.skipif(ptx.nvrtc_version() is None,
                                                           reason="NVRTC does not load")),
])
def test_every_op_compiles_to_ptx(compiler, arch):
    program = tmlir.InferenceSession(every_op_model(), device="emu").program
    text = compile_ptx(program.source, arch, compiler=compiler)
    assert sorted(ptx_kernel_names(text)) == sorted(k.signature.name for k in program.kernels)
    assert {k.template for k in program.kernels} == {"data_movement"}
