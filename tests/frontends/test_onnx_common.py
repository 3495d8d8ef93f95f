"""ONNX's ``auto_pad`` as explicit pads (tmlir.frontends.onnx_common.auto_pads): onnx's
reference implementation (Conv) and onnxruntime (MaxPool: the reference's ``SAME_LOWER``
pooling disagrees with onnxruntime) give the same output, exactly, with the ``auto_pad``
attribute and with the explicit pads; ``SAME_*`` keeps ``ceil(in / stride)``
outputs; ``NOTSET`` keeps the given pads; an unknown mode is a one-line error."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from tmlir.dialects.graph import pool_output_size
from tmlir.frontends.onnx_common import FrontendError, auto_pads


def run(op_type: str, shapes: dict[str, tuple[int, ...]], runtime: str = "reference",
        **attributes) -> np.ndarray:
    """One `op_type` node on random inputs of `shapes` (seeded: the same for each call),
    run by onnx's reference implementation or by onnxruntime."""
    node = helper.make_node(op_type, list(shapes), ["y"], **attributes)
    graph = helper.make_graph(
        [node], op_type.lower(),
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in shapes.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=10)
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    if runtime == "reference":
        (y,) = ReferenceEvaluator(model).run(None, feeds)
    else:
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        (y,) = session.run(None, feeds)
    return y


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize(("size", "kernel", "stride", "dilation"), [
    ((9, 8), (3, 2), (2, 3), (1, 2)),
    ((7, 7), (4, 4), (1, 1), (1, 1)),  # an odd total pad of 3
    ((10,), (3,), (3,), (2,)),  # 1-D
])
def test_conv_auto_pad_matches_onnx_reference(auto_pad, size, kernel, stride, dilation):
    pads = auto_pads(auto_pad, size, kernel, stride, dilation)
    shapes = {"x": (1, 2, *size), "w": (3, 2, *kernel)}
    common = {"strides": list(stride), "dilations": list(dilation)}
    want = run("Conv", shapes, auto_pad=auto_pad, **common)
    got = run("Conv", shapes, pads=list(pads), **common)
    if auto_pad.startswith("SAME"):
        assert want.shape[2:] == tuple(-(-s // t) for s, t in zip(size, stride))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_max_pool_auto_pad_matches_onnx_reference(auto_pad):
    size, kernel, stride = (5, 6, 7), (2, 2, 4), (1, 2, 3)
    pads = auto_pads(auto_pad, size, kernel, stride, (1, 1, 1))
    shapes = {"x": (1, 2, *size)}
    common = {"kernel_shape": list(kernel), "strides": list(stride), "runtime": "onnxruntime"}
    want = run("MaxPool", shapes, auto_pad=auto_pad, **common)
    assert want.shape[2:] == tuple(-(-s // t) for s, t in zip(size, stride))
    np.testing.assert_array_equal(run("MaxPool", shapes, pads=list(pads), **common), want)


def test_auto_pads_by_mode():
    assert auto_pads("SAME_UPPER", (5, 6), (3, 2), (2, 2), (1, 1)) == (1, 0, 1, 0)
    assert auto_pads("SAME_LOWER", (5, 6, 7), (2, 2, 4), (1, 1, 1), (1, 1, 1)) == (1, 1, 2, 0, 0, 1)
    assert auto_pads("VALID", (5,), (3,), (1,), (1,), (1, 1)) == (0, 0)
    assert auto_pads("NOTSET", (5,), (3,), (1,), (1,)) == (0, 0)
    assert auto_pads("NOTSET", (8, 8), (3, 3), (1, 1), (1, 1), (1, 2, 3, 4)) == (1, 2, 3, 4)
    for size, kernel, stride in ((5, 3, 2), (6, 2, 2), (7, 4, 3)):
        pads = auto_pads("SAME_UPPER", (size,), (kernel,), (stride,), (1,))
        assert pool_output_size(size, kernel, stride, 1, *pads, False) == math.ceil(size / stride)
    with pytest.raises(FrontendError, match="auto_pad 'SAME', expected NOTSET"):
        auto_pads("SAME", (5,), (3,), (1,), (1,))
