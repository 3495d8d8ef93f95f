"""Conv, ConvTranspose and BatchNormalization through the whole pipeline on emu, against onnxruntime.

Relative error = max |tmlir - onnxruntime| / max |onnxruntime| < 1e-4 for every output.
Every model runs fused and unfused (``fusion=False``). Also: graph-fold-batchnorm leaves
one kernel per convolution (the kernel counts below), fusion puts the ReLUs and residual
adds into the convolutions' epilogues, and folding never changes an existing weight; a ResNet basic block, a MobileNetV2 inverted
residual and an Inception v3 block; their CUDA C compiles to PTX with nvcc and NVRTC. The
exported networks of examples/models/ are in test_hf_models.py.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import numpy as np
import pytest
from models import make_model, run_onnxruntime
from onnx import helper

import tmlir
from tmlir.backends import ptx
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names
from tmlir.runtime.session import compile_model

RTOL = 1e-4


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


@dataclass
class Checked:
    """A model compiled with and without fusion; both matched onnxruntime."""

    fused: tmlir.InferenceSession
    unfused: tmlir.InferenceSession


def check(model, seed: int = 1) -> Checked:
    """Run `model` on random inputs on emu, fused and unfused, and with onnxruntime;
    compare every output."""
    rng = np.random.default_rng(seed)
    initializers = {t.name for t in model.graph.initializer}
    feed = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
            .astype(np.float32) for i in model.graph.input if i.name not in initializers}
    for name in feed:  # variances must be positive
        if "var" in name:
            feed[name] = np.abs(feed[name]) + 0.5
    want = run_onnxruntime(model, feed)
    sessions = []
    for fusion in (True, False):
        session = tmlir.InferenceSession(model, device="emu", fusion=fusion)
        for g, w in zip(session.run(None, feed), want, strict=True):
            assert g.shape == w.shape
            assert relative_error(g, w) < RTOL, f"fusion={fusion}"
        sessions.append(session)
    return Checked(*sessions)


def templates(session: tmlir.InferenceSession) -> list[str]:
    return [k.template for k in session.program.launched()]


def both(checked: Checked) -> list[str]:
    """The templates of the kernels, which fusion does not change here."""
    assert templates(checked.fused) == templates(checked.unfused)
    return templates(checked.fused)


class Weights:
    """Random initializers: conv weights scaled by fan-in, BN statistics of a trained net."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.arrays: dict[str, np.ndarray] = {}

    def conv(self, name: str, shape: tuple[int, ...], bias: bool = False) -> list[str]:
        fan_in = int(np.prod(shape[1:]))
        self.arrays[f"{name}.weight"] = self.rng.standard_normal(shape) / np.sqrt(fan_in)
        if bias:
            self.arrays[f"{name}.bias"] = self.rng.standard_normal(shape[0])
        return [f"{name}.weight", *([f"{name}.bias"] if bias else [])]

    def bn(self, name: str, channels: int) -> list[str]:
        self.arrays.update({
            f"{name}.scale": 1 + 0.2 * self.rng.standard_normal(channels),
            f"{name}.bias": 0.2 * self.rng.standard_normal(channels),
            f"{name}.mean": 0.2 * self.rng.standard_normal(channels),
            f"{name}.var": 0.5 + self.rng.random(channels),
        })
        return [f"{name}.{k}" for k in ("scale", "bias", "mean", "var")]


# -- Conv variants --------------------------------------------------------------------------

CONVS = {  # name: (input shape, weight shape, bias, attributes)
    "3x3_pad1_bias": ((2, 3, 10, 10), (8, 3, 3, 3), True, {"pads": [1, 1, 1, 1]}),
    "stride2_asymmetric_pads": ((1, 4, 11, 9), (12, 4, 3, 3), True,
                                {"strides": [2, 2], "pads": [1, 0, 2, 1]}),
    "dilation2": ((1, 5, 12, 12), (10, 5, 3, 3), False, {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    "rectangular_stride_dilation": ((1, 3, 13, 17), (9, 3, 2, 4), True,
                                    {"strides": [1, 3], "dilations": [3, 1]}),
    "1x1": ((2, 16, 7, 7), (24, 16, 1, 1), True, {}),
    "groups2_gemm": ((1, 16, 9, 9), (32, 8, 3, 3), True, {"group": 2, "pads": [1, 1, 1, 1]}),
    "groups4_direct": ((1, 8, 9, 9), (8, 2, 3, 3), True, {"group": 4, "pads": [1, 1, 1, 1]}),
    "depthwise_stride2": ((2, 12, 11, 11), (12, 1, 3, 3), True,
                          {"group": 12, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "depthwise_multiplier2": ((1, 6, 8, 8), (12, 1, 5, 5), False, {"group": 6, "pads": [2, 2, 2, 2]}),
    "same_upper_stride2": ((1, 3, 10, 9), (8, 3, 3, 3), True, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    "same_lower_stride2": ((1, 3, 10, 9), (8, 3, 4, 4), False, {"auto_pad": "SAME_LOWER", "strides": [2, 2]}),
    "valid_kernel_shape": ((1, 3, 10, 9), (8, 3, 3, 2), True, {"auto_pad": "VALID", "kernel_shape": [3, 2]}),
    "stem_7x7_stride2": ((1, 3, 32, 32), (16, 3, 7, 7), False, {"strides": [2, 2], "pads": [3, 3, 3, 3]}),
    "1d_stride_dilation_pads": ((2, 4, 20), (6, 4, 3), True, {"strides": [2], "dilations": [2], "pads": [1, 2]}),
    "1d_depthwise": ((1, 8, 15), (8, 1, 5), False, {"group": 8, "pads": [2, 2]}),
    "1d_same_lower": ((1, 3, 16), (10, 3, 4), True, {"auto_pad": "SAME_LOWER", "strides": [3]}),
}


@pytest.mark.parametrize("name", CONVS)
def test_conv(name):
    x_shape, w_shape, bias, attributes = CONVS[name]
    w = Weights()
    names = w.conv("conv", w_shape, bias)
    model = make_model([helper.make_node("Conv", ["x", *names], ["y"], **attributes)],
                       {"x": x_shape}, {"y": ()}, w.arrays)
    model.graph.output[0].type.tensor_type.ClearField("shape")  # inferred
    depthwise = attributes.get("group", 1) > 1 and w_shape[0] // attributes["group"] < 8
    assert both(check(model)) == ["conv2d_direct" if depthwise else "conv2d_implicit_gemm"]


def test_conv_weight_as_input():
    """A weight that is a graph input, not an initializer, is an ordinary operand."""
    model = make_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
                       {"x": (1, 4, 6, 6), "w": (8, 4, 3, 3), "b": (8,)}, {"y": (1, 8, 6, 6)})
    check(model)


# -- ConvTranspose --------------------------------------------------------------------------

CONV_TRANSPOSES = {  # name: (input shape, weight shape, bias, attributes)
    "3x3": ((1, 2, 4, 5), (2, 3, 3, 3), True, {}),
    "stride2_pads1_output_padding1": ((2, 4, 5, 5), (4, 6, 3, 3), True,
                                      {"strides": [2, 2], "pads": [1, 1, 1, 1],
                                       "output_padding": [1, 1]}),
    "stride_dilation_asymmetric": ((1, 3, 4, 6), (3, 5, 3, 2), False,
                                   {"strides": [3, 2], "dilations": [2, 1], "pads": [0, 1, 2, 0]}),
    "groups2": ((1, 4, 5, 5), (4, 3, 3, 3), True, {"group": 2, "strides": [2, 2]}),
    "depthwise_upsample": ((1, 6, 4, 4), (6, 1, 4, 4), False,
                           {"group": 6, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "output_shape": ((1, 2, 3, 3), (2, 2, 3, 3), True, {"strides": [3, 2], "output_shape": [10, 8]}),
    "same_upper": ((1, 2, 3, 4), (2, 3, 3, 3), False, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    "1d": ((2, 3, 7), (3, 4, 3), True, {"strides": [2], "pads": [1, 0], "output_padding": [1]}),
}


@pytest.mark.parametrize("name", CONV_TRANSPOSES)
def test_conv_transpose(name):
    x_shape, w_shape, bias, attributes = CONV_TRANSPOSES[name]
    w = Weights()
    names = w.conv("deconv", w_shape, bias)
    if bias:  # one per output channel: C_out = weight dim 1 * group
        w.arrays["deconv.bias"] = np.linspace(-1, 1, w_shape[1] * attributes.get("group", 1))
    model = make_model([helper.make_node("ConvTranspose", ["x", *names], ["y"], **attributes)],
                       {"x": x_shape}, {"y": ()}, w.arrays)
    model.graph.output[0].type.tensor_type.ClearField("shape")  # inferred
    assert both(check(model)) == ["conv_transpose_direct"]


# -- BatchNormalization ---------------------------------------------------------------------

def test_batch_norm_with_statistics_as_inputs():
    """Statistics computed at run time (here graph inputs) use the general formula."""
    model = make_model([helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"],
                                         ["y"], epsilon=1e-3)],
                       {"x": (2, 5, 7, 3), "scale": (5,), "bias": (5,), "mean": (5,), "var": (5,)},
                       {"y": (2, 5, 7, 3)})
    assert both(check(model)) == ["elementwise"]


@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 9), (1, 8, 5, 5)])
def test_batch_norm_alone(shape):
    """Constant statistics that follow no convolution stay a batch_norm kernel (any rank),
    which takes the relu before it as a prologue."""
    w = Weights()
    model = make_model([helper.make_node("Relu", ["x"], ["r"]),
                        helper.make_node("BatchNormalization", ["r", *w.bn("bn", shape[1])], ["y"])],
                       {"x": shape}, {"y": shape}, w.arrays)
    checked = check(model)
    assert templates(checked.unfused) == ["elementwise", "elementwise"]
    assert templates(checked.fused) == ["elementwise"]
    assert checked.fused.program.kernels[0].params["expr"].startswith("batch_norm")


def conv_bn_relu(relu: str = "Relu") -> tuple:
    w = Weights()
    nodes = [helper.make_node("Conv", ["x", *w.conv("conv", (16, 8, 3, 3), bias=True)], ["c"],
                              pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", *w.bn("bn", 16)], ["b"]),
             helper.make_node(relu, ["b"], ["y"])]
    return make_model(nodes, {"x": (2, 8, 12, 12)}, {"y": (2, 16, 12, 12)}, w.arrays), w.arrays


def test_conv_bn_relu_folds_into_one_conv_kernel():
    model, arrays = conv_bn_relu()
    checked = check(model)
    assert templates(checked.unfused) == ["conv2d_implicit_gemm", "elementwise"]
    assert templates(checked.fused) == ["conv2d_implicit_gemm"]  # the relu in its epilogue
    session = checked.fused
    weights = {b.source for b in session.program.buffers if b.kind == "weight"}
    assert weights == {"conv.weight.folded", "conv.bias.folded"}


def test_folding_adds_weights_and_changes_none():
    model, arrays = conv_bn_relu()
    _, weights = compile_model(model)
    for name, array in arrays.items():
        np.testing.assert_array_equal(weights[name], array.astype(np.float32))
    s = arrays["bn.scale"] / np.sqrt(arrays["bn.var"] + 1e-5)
    np.testing.assert_allclose(weights["conv.weight.folded"],
                               arrays["conv.weight"] * s[:, None, None, None], rtol=1e-6)
    np.testing.assert_allclose(weights["conv.bias.folded"],
                               (arrays["conv.bias"] - arrays["bn.mean"]) * s + arrays["bn.bias"],
                               rtol=1e-5, atol=1e-6)


def test_shared_weight_folds_for_one_conv_only():
    """Two convolutions share a weight; the one followed by a BN gets a folded copy."""
    w = Weights()
    weight = w.conv("conv", (8, 4, 3, 3))
    nodes = [helper.make_node("Conv", ["x", *weight], ["c1"]),
             helper.make_node("BatchNormalization", ["c1", *w.bn("bn", 8)], ["y1"]),
             helper.make_node("Conv", ["x", *weight], ["y2"])]
    model = make_model(nodes, {"x": (1, 4, 7, 7)}, {"y1": (1, 8, 5, 5), "y2": (1, 8, 5, 5)},
                       w.arrays)
    session = check(model).fused
    assert templates(session) == ["conv2d_implicit_gemm"] * 2
    weights = {b.source for b in session.program.buffers if b.kind == "weight"}
    assert weights == {"conv.weight", "conv.weight.folded", "conv.weight.folded_bias"}


def test_decomposed_batch_norm_folds():
    """Mul and Add by per-channel constants (a decomposed BN) and a Sub fold too."""
    w = Weights()
    w.arrays.update(s=np.linspace(0.5, 2, 8).reshape(1, 8, 1, 1), t=np.arange(8.0).reshape(8, 1, 1),
                    u=np.array([0.25]))
    nodes = [helper.make_node("Conv", ["x", *w.conv("conv", (8, 3, 3, 3))], ["c"]),
             helper.make_node("Mul", ["c", "s"], ["m"]),
             helper.make_node("Add", ["t", "m"], ["a"]),
             helper.make_node("Sub", ["u", "a"], ["y"])]
    model = make_model(nodes, {"x": (1, 3, 9, 9)}, {"y": (1, 8, 7, 7)}, w.arrays)
    assert both(check(model)) == ["conv2d_implicit_gemm"]


# -- blocks of real networks ----------------------------------------------------------------

def resnet_basic_block(channels: int = 16, size: int = 10, downsample: bool = False):
    """conv3x3-bn-relu-conv3x3-bn + shortcut, relu (torchvision's BasicBlock); with
    `downsample`, stride 2 and a conv1x1-bn projection on the shortcut."""
    w, out = Weights(), channels * (2 if downsample else 1)
    stride = [2, 2] if downsample else [1, 1]
    nodes = [
        helper.make_node("Conv", ["x", *w.conv("conv1", (out, channels, 3, 3))], ["c1"],
                         pads=[1, 1, 1, 1], strides=stride),
        helper.make_node("BatchNormalization", ["c1", *w.bn("bn1", out)], ["b1"]),
        helper.make_node("Relu", ["b1"], ["r1"]),
        helper.make_node("Conv", ["r1", *w.conv("conv2", (out, out, 3, 3))], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c2", *w.bn("bn2", out)], ["b2"]),
    ]
    shortcut = "x"
    if downsample:
        nodes += [helper.make_node("Conv", ["x", *w.conv("down", (out, channels, 1, 1))], ["d"],
                                   strides=stride),
                  helper.make_node("BatchNormalization", ["d", *w.bn("down_bn", out)], ["ds"])]
        shortcut = "ds"
    nodes += [helper.make_node("Add", ["b2", shortcut], ["s"]),
              helper.make_node("Relu", ["s"], ["y"])]
    out_size = size // 2 if downsample else size
    return make_model(nodes, {"x": (2, channels, size, size)}, {"y": (2, out, out_size, out_size)},
                      w.arrays)


@pytest.mark.parametrize("downsample", [False, True])
def test_resnet_basic_block(downsample):
    checked = check(resnet_basic_block(downsample=downsample))
    convs = 3 if downsample else 2
    assert templates(checked.unfused).count("conv2d_implicit_gemm") == convs
    assert len(templates(checked.unfused)) == convs + 3  # relu, add, relu: every BN folded
    # fused: relu in the first conv's epilogue, add and relu in the second's
    assert templates(checked.fused) == ["conv2d_implicit_gemm"] * convs


def inverted_residual(channels: int = 8, expand: int = 6, size: int = 9):
    """MobileNetV2's inverted residual: 1x1 expand-bn-relu6, 3x3 depthwise-bn-relu6, 1x1
    project-bn, + input (stride 1, same channels)."""
    w, hidden = Weights(3), channels * expand
    w.arrays.update(zero=np.array(0.0), six=np.array(6.0))
    nodes = [
        helper.make_node("Conv", ["x", *w.conv("expand", (hidden, channels, 1, 1))], ["e"]),
        helper.make_node("BatchNormalization", ["e", *w.bn("bn1", hidden)], ["eb"]),
        helper.make_node("Clip", ["eb", "zero", "six"], ["er"]),
        helper.make_node("Conv", ["er", *w.conv("dw", (hidden, 1, 3, 3))], ["d"], group=hidden,
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["d", *w.bn("bn2", hidden)], ["db"]),
        helper.make_node("Clip", ["db", "zero", "six"], ["dr"]),
        helper.make_node("Conv", ["dr", *w.conv("project", (channels, hidden, 1, 1))], ["p"]),
        helper.make_node("BatchNormalization", ["p", *w.bn("bn3", channels)], ["pb"]),
        helper.make_node("Add", ["x", "pb"], ["y"]),
    ]
    return make_model(nodes, {"x": (2, channels, size, size)}, {"y": (2, channels, size, size)},
                      w.arrays)


def test_mobilenet_v2_inverted_residual():
    checked = check(inverted_residual())
    assert templates(checked.unfused) == [
        "conv2d_implicit_gemm", "elementwise", "conv2d_direct", "elementwise",
        "conv2d_implicit_gemm", "elementwise"]
    # each clip (relu6) and the residual add in the epilogue of the conv before it
    assert templates(checked.fused) == ["conv2d_implicit_gemm", "conv2d_direct",
                                        "conv2d_implicit_gemm"]


def inception_block(channels: int = 16, size: int = 9, c7: int = 8):
    """Inception v3's 'B/C' block (torchvision's InceptionC): four branches concatenated on
    the channels -- 1x1; 1x1, 1x7, 7x1 (factorized 7x7); 1x1, 7x1, 1x7, 7x1, 1x7; 3x3
    average pool (count_include_pad=0, as torchvision exports it), 1x1 -- each conv
    followed by a BN and a ReLU."""
    w, nodes, branches = Weights(5), [], []

    def conv_bn_relu(name: str, x: str, c_in: int, c_out: int, kernel: tuple[int, int]) -> str:
        pads = [kernel[0] // 2, kernel[1] // 2] * 2
        nodes.extend([
            helper.make_node("Conv", [x, *w.conv(name, (c_out, c_in, *kernel))], [f"{name}_c"],
                             pads=pads),
            helper.make_node("BatchNormalization", [f"{name}_c", *w.bn(f"{name}_bn", c_out)],
                             [f"{name}_b"]),
            helper.make_node("Relu", [f"{name}_b"], [f"{name}_r"])])
        return f"{name}_r"

    branches.append(conv_bn_relu("b1", "x", channels, 12, (1, 1)))
    t = conv_bn_relu("b7_1", "x", channels, c7, (1, 1))
    t = conv_bn_relu("b7_2", t, c7, c7, (1, 7))
    branches.append(conv_bn_relu("b7_3", t, c7, 12, (7, 1)))
    t = conv_bn_relu("d_1", "x", channels, c7, (1, 1))
    for k, kernel in enumerate([(7, 1), (1, 7), (7, 1)]):
        t = conv_bn_relu(f"d_{k + 2}", t, c7, c7, kernel)
    branches.append(conv_bn_relu("d_5", t, c7, 12, (1, 7)))
    nodes.append(helper.make_node("AveragePool", ["x"], ["pool"], kernel_shape=[3, 3],
                                  pads=[1, 1, 1, 1], count_include_pad=0))
    branches.append(conv_bn_relu("bp", "pool", channels, 12, (1, 1)))
    nodes.append(helper.make_node("Concat", branches, ["y"], axis=1))
    return make_model(nodes, {"x": (1, channels, size, size)}, {"y": (1, 48, size, size)},
                      w.arrays)


def test_inception_v3_block():
    checked = check(inception_block())
    for session in (checked.fused, checked.unfused):
        assert templates(session).count("conv2d_implicit_gemm") == 10  # every BN folded
        assert templates(session).count("pool") == 1 and templates(session)[-1] == "data_movement"
    # fused: every relu in its conv's epilogue; the pool and the concat stay
    assert len(templates(checked.fused)) == 12


@pytest.mark.parametrize("compiler, arch", [
    pytest.param("nvcc", "sm_90", marks=pytest.mark.skipif(shutil.which("nvcc") is None,
                                                          reason="nvcc not on PATH")),
    pytest.param("nvrtc", "sm_80", marks=pytest.mark.skipif(ptx.nvrtc_version() is None,
                                                           reason="NVRTC does not load")),
])
def test_models_compile_to_ptx(compiler, arch):
    for model in (resnet_basic_block(downsample=True), inverted_residual(), inception_block()):
        for fusion in (True, False):
            program = tmlir.InferenceSession(model, device="emu", fusion=fusion).program
            text = compile_ptx(program.source, arch, compiler=compiler)
            assert sorted(ptx_kernel_names(text)) == sorted(k.signature.name
                                                            for k in program.kernels)
