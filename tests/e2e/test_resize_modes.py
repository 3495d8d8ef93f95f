"""Resize's ``cubic`` mode, ``antialias`` and ``tf_crop_and_resize`` through the whole pipeline
on emu, against onnxruntime.

onnxruntime runs cubic Resize on 2-D inputs and 4-D ones with batch and channel scales 1
only; the other ranks are held to onnx's reference implementation in float64
(``onnx.reference``), which agrees with onnxruntime wherever both run (but for
``align_corners`` when the output size is not ``scale * input size``: onnxruntime is
followed there, see ``test_resize_downsample_scales_linear_align_corners``). Outputs are
f32 sums of up to hundreds of weighted taps, summed in another order than onnxruntime's:
they are held to 1e-5. Every model runs fused and unfused.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from models import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.utils.exceptions import PassFailedException

import tmlir
from tmlir.backends import ptx
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names
from tmlir.dialects import graph
from tmlir.frontends.onnx import FrontendError, import_onnx

TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def model(nodes, inputs: dict[str, tuple[int, ...]], outputs: list[str],
          constants: dict[str, np.ndarray], opset: int = 19):
    graph = helper.make_graph(
        nodes, "resize_modes",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in constants.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 10
    return proto


def resize(shape: tuple[int, ...], *, scales=None, sizes=None, roi=None, axes=None, opset: int = 19,
           **attributes):
    """A model of one Resize of an input of `shape` by constant `scales` or `sizes`."""
    constants = {"roi": np.array(roi if roi is not None else [], np.float32)}
    if scales is not None:
        constants["scales"] = np.array(scales, np.float32)
    else:
        constants["sizes"] = np.array(sizes, np.int64)
    if axes is not None:
        attributes["axes"] = axes
    names = ["x", "roi", "scales"] if scales is not None else ["x", "roi", "", "sizes"]
    node = helper.make_node("Resize", names, ["y"], **attributes)
    return model([node], {"x": shape}, ["y"], constants, opset)


def check(proto, oracle: str = "onnxruntime", seed: int = 0) -> dict[bool, tmlir.InferenceSession]:
    """Emu's outputs, fused and unfused, equal the `oracle`'s (onnxruntime or the onnx
    reference); returns the sessions by fusion."""
    rng = np.random.default_rng(seed)
    data = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
            .astype(np.float32) for i in proto.graph.input}
    if oracle == "onnxruntime":
        want = run_onnxruntime(proto, data)
    else:
        want = ReferenceEvaluator(proto).run(None, {k: v.astype(np.float64) for k, v in data.items()})
    sessions = {}
    for fused in (True, False):
        session = sessions[fused] = tmlir.InferenceSession(proto, device="emu", fusion=fused)
        for name, got, expected in zip([o.name for o in proto.graph.output], session.run(None, data), want):
            assert got.shape == expected.shape, name
            np.testing.assert_allclose(got, expected, **TOLERANCE, err_msg=f"{name} (fusion={fused})")
    return sessions


# -- cubic -------------------------------------------------------------------------------------

@pytest.mark.parametrize("a, exclude_outside", [(-0.75, 0), (-0.5, 0), (-0.5, 1), (-0.6, 1)])
@pytest.mark.parametrize("scales", [(1, 1, 2, 1.7), (1, 1, 0.6, 0.45), (1, 1, 0.8, 2.5)])
def test_cubic_coefficients_and_exclude_outside(a, exclude_outside, scales):
    check(resize((2, 3, 9, 10), scales=scales, mode="cubic", cubic_coeff_a=a,
                 exclude_outside=exclude_outside))


@pytest.mark.parametrize("ctm", ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                                 "half_pixel_symmetric"])
def test_cubic_coordinate_transformations(ctm):
    check(resize((1, 2, 7, 8), scales=(1, 1, 1.5, 2.25), mode="cubic", coordinate_transformation_mode=ctm))


def test_cubic_align_corners_follows_onnxruntime():
    """4x4 by 0.8 to 3x3: ``x * 3 / 2`` (onnxruntime) rather than ``x * 3 / 2.2`` (the onnx
    reference, with the unrounded output size; its node test
    test_resize_downsample_scales_cubic_align_corners expects that)."""
    check(resize((1, 2, 4, 4), scales=(1, 1, 0.8, 0.8), mode="cubic", coordinate_transformation_mode="align_corners"))


@pytest.mark.parametrize("mode, antialias", [("nearest", 0), ("linear", 0), ("linear", 1), ("cubic", 0)])
@pytest.mark.parametrize("ctm", ["pytorch_half_pixel", "align_corners"])
def test_sizes_with_axes_and_one_output_row(mode, antialias, ctm):
    """One output row: both transformations map it to input row 0."""
    check(resize((1, 2, 7, 8), sizes=(1, 13), axes=[2, 3], mode=mode, antialias=antialias,
                 coordinate_transformation_mode=ctm))


def test_cubic_of_a_2d_input_and_a_resized_batch():
    check(resize((5, 9), scales=(1.5, 0.7), mode="cubic", exclude_outside=1))


@pytest.mark.parametrize("shape, scales", [((2, 3, 11), (1, 1, 1.6)), ((1, 2, 4, 5, 6), (1, 1, 1.5, 0.7, 2))])
def test_cubic_1d_and_3d_against_the_reference(shape, scales):
    check(resize(shape, scales=scales, mode="cubic", cubic_coeff_a=-0.5), oracle="reference")


# -- antialias ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("scales, exclude_outside", [
    ((1, 1, 0.5, 0.5), 0), ((1, 1, 0.35, 0.6), 0), ((1, 1, 0.6, 1.5), 0), ((1, 1, 0.3, 0.45), 1)])
def test_antialias_2d(mode, scales, exclude_outside):
    check(resize((1, 3, 12, 13), scales=scales, mode=mode, antialias=1, exclude_outside=exclude_outside))


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialias_sizes_and_coordinate_transformations(mode):
    check(resize((1, 2, 16, 9), sizes=(1, 2, 5, 4), mode=mode, antialias=1,
                 coordinate_transformation_mode="align_corners"))
    check(resize((1, 2, 16, 9), sizes=(1, 2, 7, 3), mode=mode, antialias=1, cubic_coeff_a=-0.5,
                 coordinate_transformation_mode="asymmetric"))


def test_antialias_1d_and_3d_linear():
    check(resize((2, 3, 20), scales=(1, 1, 0.3), mode="linear", antialias=1))
    check(resize((1, 2, 6, 7, 8), scales=(1, 1, 0.5, 0.7, 0.4), mode="linear", antialias=1))


def test_antialias_3d_cubic_against_the_reference():
    check(resize((1, 1, 6, 7, 9), scales=(1, 1, 0.5, 1.4, 0.45), mode="cubic", antialias=1),
          oracle="reference")


def test_antialias_is_no_change_to_upsampling():
    """Upsampling, the antialiased kernel is the plain one (onnxruntime's windowed sum)."""
    for mode in ("linear", "cubic"):
        check(resize((1, 2, 5, 6), scales=(1, 1, 2, 1.5), mode=mode, antialias=1))


# -- tf_crop_and_resize ------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("roi, extrapolation", [
    ((0, 0, 0.2, 0.3, 1, 1, 0.8, 0.9), 0.0),        # inside the input
    ((0, 0, -0.3, 0.4, 1, 1, 0.7, 1.6), 0.0),      # outside: extrapolation_value's default
    ((0, 0, -0.3, 0.4, 1, 1, 0.7, 1.6), 7.5),
    ((0, 0, 0.9, 0.2, 1, 1, 0.1, 0.6), -2.0)])    # flipped rows
def test_tf_crop_and_resize(mode, roi, extrapolation):
    check(resize((1, 2, 8, 9), sizes=(1, 2, 5, 7), roi=roi, mode=mode,
                 coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=extrapolation))


def test_tf_crop_and_resize_with_axes_and_one_output_column():
    check(resize((2, 3, 8, 9), sizes=(1, 6), axes=[3, 2], roi=(0.4, -0.2, 0.6, 1.1), mode="linear",
                 coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=3.0))


def test_tf_crop_and_resize_antialias_and_3d():
    check(resize((1, 2, 12, 13), scales=(1, 1, 0.4, 0.5), roi=(0, 0, 0.1, -0.1, 1, 1, 0.9, 0.8),
                 mode="linear", antialias=1, coordinate_transformation_mode="tf_crop_and_resize",
                 extrapolation_value=1.0))
    check(resize((1, 1, 5, 6, 7), scales=(1, 1, 1.6, 0.8, 2), roi=(0, 0, 0.1, -0.1, 0.2, 1, 1, 0.9, 0.8, 1.2),
                 mode="linear", coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0))


# -- fusion ------------------------------------------------------------------------------------

@pytest.mark.parametrize("attributes", [
    {"mode": "cubic", "exclude_outside": 1},
    {"mode": "linear", "antialias": 1},
    {"mode": "cubic", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 2.0}])
def test_fused_between_elementwise_ops(attributes):
    """``Relu -> Resize -> Add``: the resize computes the relu at each tap it reads, and the
    add computes the resize, in one kernel."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Resize", ["r", "roi", "scales"], ["z"], **attributes),
             helper.make_node("Add", ["z", "b"], ["y"])]
    constants = {"roi": np.array([0, 0, -0.1, 0.2, 1, 1, 0.9, 1.3], np.float32),
                 "scales": np.array([1, 1, 0.6, 1.5], np.float32),
                 "b": np.linspace(-1, 1, 15, dtype=np.float32)}
    sessions = check(model(nodes, {"x": (1, 3, 10, 10)}, ["y"], constants))
    assert len(sessions[True].program.launches) == 1
    assert len(sessions[False].program.launches) == 3


@pytest.mark.parametrize("compiler, arch", [
    pytest.param("nvcc", "sm_90", marks=pytest.mark.skipif(shutil.which("nvcc") is None,
                                                          reason="nvcc not on PATH")),
    pytest.param("nvrtc", "sm_80", marks=pytest.mark.skipif(ptx.nvrtc_version() is None,
                                                           reason="NVRTC does not load")),
])
def test_kernels_compile_to_ptx(compiler, arch):
    nodes = [helper.make_node("Resize", ["x", "roi", "s1"], ["c"], mode="cubic", exclude_outside=1),
             helper.make_node("Resize", ["x", "roi", "s2"], ["a"], mode="cubic", antialias=1),
             helper.make_node("Resize", ["x", "roi", "s1"], ["t"], mode="linear", extrapolation_value=1.0,
                              coordinate_transformation_mode="tf_crop_and_resize")]
    constants = {"roi": np.array([0, 0, 0.1, -0.2, 1, 1, 0.9, 1.2], np.float32),
                 "s1": np.array([1, 1, 2, 1.5], np.float32), "s2": np.array([1, 1, 0.5, 0.3], np.float32)}
    program = tmlir.InferenceSession(model(nodes, {"x": (1, 2, 8, 8)}, ["c", "a", "t"], constants),
                                     device="emu").program
    text = compile_ptx(program.source, arch, compiler=compiler)
    assert sorted(ptx_kernel_names(text)) == sorted(k.signature.name for k in program.kernels)


# -- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("proto, message", [
    (resize((1, 1, 4, 4), scales=(1, 1, 2, 2), roi=(0, 0, 1, 1), mode="linear",
            coordinate_transformation_mode="tf_crop_and_resize"),
     "node 'n' (Resize): tf_crop_and_resize expects a constant 'roi' of 8 values (starts, then ends, "
     "of the resized axes), got 4"),
    (resize((1, 1, 4, 4), scales=(1, 1, 2, 2), mode="cubic", exclude_outside=2),
     "node 'n' (Resize): unsupported value 2 of attribute 'exclude_outside' (expected 0 or 1)"),
    (resize((1, 1, 400, 400), scales=(1, 1, 0.05, 0.05), mode="linear", antialias=1),
     "convert-graph-to-tm: 'graph.resize': resize: 1681 input elements per output element (at most 1024"),
])
def test_errors(proto, message):
    proto.graph.node[0].name = "n"
    with pytest.raises((FrontendError, PassFailedException)) as info:
        tmlir.InferenceSession(proto, device="emu")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


# -- import ------------------------------------------------------------------------------------

def imported_resize(proto) -> graph.ResizeOp:
    (function,) = import_onnx(proto).module.ops
    (op,) = [op for op in function.body.block.ops if isinstance(op, graph.ResizeOp)]
    return op


def test_import_spreads_the_roi_over_the_dims_and_keeps_what_applies():
    op = imported_resize(resize((2, 3, 8, 9), sizes=(1, 6), axes=[3, 2], roi=(0.4, -0.2, 0.6, 1.1),
                                mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1, antialias=1,
                                coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=3.0))
    assert op.roi_values == tuple(float(np.float32(v)) for v in (0, 0, -0.2, 0.4, 1, 1, 1.1, 0.6))
    assert op.cubic_coeff_a_value == -0.5 and op.extrapolation_value_value == 3.0
    assert op.exclude_outside is not None and op.antialias is not None
    op = imported_resize(resize((1, 1, 4, 4), scales=(1, 1, 0.5, 0.5), roi=(0, 0, 0.5, 0.5, 1, 1, 1, 1),
                                mode="nearest", antialias=1, cubic_coeff_a=-0.5, extrapolation_value=1.0))
    assert op.roi is None and op.antialias is None and op.cubic_coeff_a is None
    assert op.extrapolation_value is None  # each applies to another mode
    op.verify()


@pytest.mark.parametrize("attributes", [
    {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
    {"mode": "linear", "antialias": 1},
    {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 2.0},
    {"mode": "cubic", "coordinate_transformation_mode": "align_corners"}])
def test_graph_reference_interpreter_agrees(attributes):
    """The frontend tests' numpy interpreter of ``graph.resize`` (onnx's reference on the
    imported op's properties) computes what onnxruntime does with the ONNX node."""
    from frontends.graph_reference import evaluate

    proto = resize((1, 2, 9, 10), scales=(1, 1, 0.6, 1.5), roi=(0, 0, 0.1, -0.2, 1, 1, 0.8, 1.1), **attributes)
    x = np.random.default_rng(1).standard_normal((1, 2, 9, 10)).astype(np.float32)
    (got,) = evaluate(import_onnx(proto), {"x": x})
    np.testing.assert_allclose(got, run_onnxruntime(proto, {"x": x})[0], **TOLERANCE)
