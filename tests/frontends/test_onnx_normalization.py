"""The ONNX frontend's normalizations, Lp pools and LRN: the graph ops they import to
(compositions of ``graph.layer_norm``, reductions and elementwise ops, or ``graph.lp_pool``
and ``graph.lrn``), one-line errors for what is not supported, and their meaning: the
imported IR evaluated with the numpy interpreter of the graph dialect (graph_reference.py)
against onnxruntime (rtol 1e-5, atol 1e-5)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_reference import evaluate
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

from tmlir.dialects import graph
from tmlir.frontends.onnx import FrontendError, import_onnx

RNG = np.random.default_rng(0)


def make_model(node: onnx.NodeProto, x_shape, initializers=(), opset: int = 18,
               ) -> onnx.ModelProto:
    """One node of input ``x`` (float32) and output ``y`` (shape inferred)."""
    graph_proto = helper.make_graph(
        [node], "test", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(a, np.float32), name)
         for name, a in dict(initializers).items()])
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def rand(*shape: int) -> np.ndarray:
    return (3 * RNG.standard_normal(shape)).astype(np.float32)


def body_ops(model: onnx.ModelProto) -> list:
    (function,) = import_onnx(model).module.ops
    return [op for op in function.body.block.ops
            if not isinstance(op, func.ReturnOp | graph.WeightOp)]


def check_against_onnxruntime(model: onnx.ModelProto, x: np.ndarray) -> None:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x})
    (actual,) = evaluate(import_onnx(model), {"x": x})
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def import_error(model: onnx.ModelProto) -> str:
    with pytest.raises(FrontendError) as info:
        import_onnx(model)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- InstanceNormalization, GroupNormalization ----------------------------------------------


def test_instance_norm_is_a_layer_norm_of_each_channel_with_an_affine_epilogue():
    model = make_model(helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"],
                                        epsilon=1e-3),
                       [2, 3, 4, 5], {"s": rand(3), "b": rand(3)})
    ops = body_ops(model)
    assert [op.name for op in ops] == ["graph.reshape", "graph.layer_norm", "graph.reshape",
                                       "graph.reshape", "graph.mul", "graph.add", "graph.reshape"]
    norm = ops[1]
    assert list(norm.input.type.get_shape()) == [2, 3, 20]
    assert norm.axis_value == 2 and norm.epsilon_value == pytest.approx(1e-3)
    assert list(ops[3].result.type.get_shape()) == [3, 1]  # the scale, per channel
    check_against_onnxruntime(model, rand(2, 3, 4, 5))


@pytest.mark.parametrize("opset, affine", [(18, 2), (21, 6)])
def test_group_norm_affine_is_per_group_in_opset_18_and_per_channel_since_21(opset, affine):
    model = make_model(helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"],
                                        num_groups=2, epsilon=1e-4),
                       [2, 6, 3, 3], {"s": rand(affine), "b": rand(affine)}, opset=opset)
    (norm,) = [op for op in body_ops(model) if isinstance(op, graph.LayerNormOp)]
    assert list(norm.input.type.get_shape()) == [2, 2, 27]
    (mul,) = [op for op in body_ops(model) if isinstance(op, graph.MulOp)]
    assert list(mul.result.type.get_shape()) == ([2, 2, 27] if opset == 18 else [2, 6, 9])
    check_against_onnxruntime(model, rand(2, 6, 3, 3))


@pytest.mark.parametrize("node, initializers, opset, message", [
    (helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=4),
     {"s": np.ones(6), "b": np.ones(6)}, 21, "num_groups 4 must divide the 6 channels"),
    (helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2),
     {"s": np.ones(6), "b": np.ones(6)}, 18,
     "scale must have shape [2] (one value per group), got [6]"),
    (helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2,
                      stash_type=0),
     {"s": np.ones(6), "b": np.ones(6)}, 21, "attribute 'stash_type'"),
    (helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"]),
     {"s": np.ones(6), "b": np.ones(3)}, 18,
     "bias must have shape [6] (one value per channel), got [3]"),
])
def test_group_and_instance_norm_errors(node, initializers, opset, message):
    assert message in import_error(make_model(node, [1, 6, 2, 2], initializers, opset=opset))


# -- MeanVarianceNormalization ----------------------------------------------------------------


@pytest.mark.parametrize("axes, moved", [(None, True), ([2, 3], False), ([0, 1, 2, 3], False),
                                         ([1], True)])
def test_mean_variance_norm_moves_its_axes_last(axes, moved):
    attrs = {} if axes is None else {"axes": axes}
    model = make_model(helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **attrs),
                       [2, 3, 4, 5], opset=12)
    names = [op.name for op in body_ops(model)]
    assert names == (["graph.transpose", "graph.layer_norm", "graph.transpose"] if moved
                     else ["graph.layer_norm"])
    check_against_onnxruntime(model, rand(2, 3, 4, 5))


def test_mean_variance_norm_of_a_constant_is_zero():
    model = make_model(helper.make_node("MeanVarianceNormalization", ["x"], ["y"]), [2, 3, 2, 2],
                       opset=12)
    (y,) = evaluate(import_onnx(model), {"x": np.full((2, 3, 2, 2), 5, np.float32)})
    np.testing.assert_array_equal(y, 0)


# -- LpNormalization, GlobalLpPool --------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:invalid value encountered in divide")  # the reference's 0 / 0
@pytest.mark.parametrize("p, axis", [(1, 0), (2, -1), (2, 1)])
def test_lp_norm(p, axis):
    model = make_model(helper.make_node("LpNormalization", ["x"], ["y"], p=p, axis=axis),
                       [3, 4, 5])
    (reduce,) = [op for op in body_ops(model) if isinstance(op, graph.ReduceSumOp)]
    assert reduce.reduced_axes == (axis % 3,) and reduce.keepdims is not None
    x = rand(3, 4, 5)
    x[:, 1] = 0  # zero norms along some axis
    check_against_onnxruntime(model, x)


@pytest.mark.filterwarnings("ignore:invalid value encountered in divide")
def test_lp_norm_of_zeros_is_zero():
    model = make_model(helper.make_node("LpNormalization", ["x"], ["y"]), [2, 3])
    (y,) = evaluate(import_onnx(model), {"x": np.zeros((2, 3), np.float32)})
    np.testing.assert_array_equal(y, 0)


def test_global_lp_pool_rejects_p_0():
    model = make_model(helper.make_node("GlobalLpPool", ["x"], ["y"], p=0), [1, 2, 3, 3])
    assert "node #0 (GlobalLpPool): p must be >= 1, got 0" in import_error(model)


def test_lp_norm_rejects_p_3():
    model = make_model(helper.make_node("LpNormalization", ["x"], ["y"], p=3), [2, 3])
    assert "unsupported value 3 of attribute 'p'" in import_error(model)


@pytest.mark.parametrize("p, names", [
    (1, ["graph.abs", "graph.reduce_sum"]),
    (2, ["graph.mul", "graph.reduce_sum", "graph.sqrt"]),
    (3, ["graph.abs", "graph.pow", "graph.reduce_sum", "graph.pow"]),
])
def test_global_lp_pool(p, names):
    model = make_model(helper.make_node("GlobalLpPool", ["x"], ["y"], p=p), [2, 3, 4, 5])
    assert [op.name for op in body_ops(model)] == names
    check_against_onnxruntime(model, rand(2, 3, 4, 5))


# -- LpPool -------------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs, shape, pads", [
    ({"kernel_shape": [3, 3], "p": 3, "pads": [1, 0, 2, 1], "strides": [2, 1]}, [1, 2, 7, 6],
     (1, 0, 2, 1)),
    ({"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2]}, [1, 2, 5, 5],
     (0, 0, 1, 1)),
    ({"kernel_shape": [3], "p": 1, "dilations": [2]}, [2, 3, 9], (0, 0)),
])
def test_lp_pool(attrs, shape, pads):
    model = make_model(helper.make_node("LpPool", ["x"], ["y"], **attrs), shape)
    (op,) = body_ops(model)
    assert isinstance(op, graph.LpPoolOp)
    assert op.window()[2] == pads and op.p_value == attrs.get("p", 2)
    check_against_onnxruntime(model, rand(*shape))


@pytest.mark.parametrize("attrs, message", [
    ({"p": 2}, "LpPool node: Attribute kernel_shape must be specified"),  # shape inference's
    ({"kernel_shape": [2, 2], "p": 0}, "node #0 (LpPool): p must be >= 1, got 0"),
    ({"kernel_shape": [2, 2], "auto_pad": "SAME"},
     "node #0 (LpPool): unsupported value 'SAME' of attribute 'auto_pad'"),
])
def test_lp_pool_errors(attrs, message):
    model = make_model(helper.make_node("LpPool", ["x"], ["y"], **attrs), [1, 2, 6, 6])
    assert message in import_error(model)


# -- LRN ------------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs", [{"size": 3}, {"size": 5, "alpha": 1e-2, "beta": 0.6,
                                                  "bias": 2.0}, {"size": 1, "alpha": 0.5}])
def test_lrn(attrs):
    model = make_model(helper.make_node("LRN", ["x"], ["y"], **attrs), [2, 5, 3, 3])
    (op,) = body_ops(model)
    assert isinstance(op, graph.LRNOp)
    size, alpha, beta, bias = op.parameters()
    assert (size, beta, bias) == pytest.approx((attrs["size"], attrs.get("beta", 0.75),
                                                attrs.get("bias", 1.0)))
    assert alpha == pytest.approx(attrs.get("alpha", 1e-4))
    check_against_onnxruntime(model, rand(2, 5, 3, 3))


@pytest.mark.parametrize("attrs, shape, message", [
    ({}, [1, 4, 2, 2], "attribute 'size' is required"),
    ({"size": 0}, [1, 4, 2, 2], "size must be >= 1, got 0"),
    ({"size": 3}, [4, 2], "input must be (N, C, D1, ...), got shape [4, 2]"),
])
def test_lrn_errors(attrs, shape, message):
    model = make_model(helper.make_node("LRN", ["x"], ["y"], **attrs), shape)
    assert message in import_error(model)


def lrn_by_definition(x: np.ndarray, size: int, alpha: float, beta: float, bias: float,
                      ) -> np.ndarray:
    """ONNX's LRN, channel by channel in float64: floor((size - 1) / 2) channels below,
    ceil((size - 1) / 2) above."""
    x64, y = x.astype(np.float64), np.empty(x.shape)
    for c in range(x.shape[1]):
        window = x64[:, max(0, c - (size - 1) // 2):c + int(np.ceil((size - 1) / 2)) + 1]
        y[:, c] = x64[:, c] / (bias + alpha / size * (window ** 2).sum(1)) ** beta
    return y


@pytest.mark.parametrize("size", [2, 4, 6])
def test_lrn_even_size(size):
    """onnxruntime takes odd sizes only; ONNX defines even ones (one more channel above)."""
    model = make_model(helper.make_node("LRN", ["x"], ["y"], size=size, alpha=0.1), [2, 5, 3])
    x = rand(2, 5, 3)
    (y,) = evaluate(import_onnx(model), {"x": x})
    np.testing.assert_allclose(y, lrn_by_definition(x, size, 0.1, 0.75, 1.0), rtol=1e-5)
