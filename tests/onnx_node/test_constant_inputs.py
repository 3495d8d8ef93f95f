"""ONNX's node tests of the data-movement ops with their constant inputs made constants.

The node tests feed a Reshape's shape, a Slice's starts, a Resize's scales, ... as run-time
graph inputs (and the Reduce ops' axes), which a compiler for static shapes cannot take (``non_passing.txt`` lists them
with the dtype or constant-input error). Exported models carry these as initializers or
``Constant`` nodes; this module turns each such input into an initializer holding the
test's data and runs the test again, so that ONNX's expected outputs check the ops'
semantics (allowzero, slice clamping, negative steps and indices, zero-size splits,
``keep_aspect_ratio_policy``, ...). The integer-data Pad tests run on float32 copies.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper

from tmlir.frontends.onnx import CONSTANT_INPUTS
from tmlir.tools import onnx_node_tests as tool

OPS = ("Reshape", "Squeeze", "Unsqueeze", "Slice", "Split", "Gather", "Expand", "Tile", "Pad",
       "Resize", "Dropout", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin")
FLOAT_COPIES = ("test_edge_pad", "test_reflect_pad", "test_wrap_pad")  # int32 data
EXPECTED_FAILURES = {  # test name prefix -> the reason it fails for
    "test_training_dropout_zero_ratio": None,  # ratio 0: the input itself, passes
    "test_training_dropout": "its mask is random",  # a nonzero ratio
    "test_resize_downsample_scales_linear_align_corners": "mismatch",  # see below
    "test_resize_downsample_scales_cubic_align_corners": "mismatch",  # the same
}
# test_resize_downsample_scales_linear_align_corners: 2x4 scaled by 0.6 to 1x2. ONNX's
# reference maps x to x * (n - 1) / (scale * n - 1) (with the unrounded output size 2.4);
# onnxruntime, and tmlir, use the output size 2 (x * 3 / 1), which tests/e2e/test_data_movement.py
# checks against onnxruntime. test_resize_downsample_scales_cubic_align_corners (4x4 by 0.8 to
# 3x3) is the same case in cubic mode (tests/e2e/test_resize_modes.py).


def with_constants(test: tool.NodeTest) -> tool.NodeTest:
    """`test` with the inputs its node reads as constants turned into initializers."""
    case = test.case
    proto = onnx.ModelProto()
    proto.CopyFrom(case.model)
    graph, node = proto.graph, proto.graph.node[0]
    constant = {node.input[p] for p in CONSTANT_INPUTS.get(node.op_type, ())
                if p < len(node.input)} - {""}
    inputs, expected = case.data_sets[0]
    if test.name in FLOAT_COPIES:
        inputs = [inputs[0].astype(np.float32), *inputs[1:]]
        expected = [e.astype(np.float32) for e in expected]
        graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT
        graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
    kept, fed = [], []
    for info, value in zip(list(graph.input), inputs):
        if info.name in constant:
            graph.initializer.append(numpy_helper.from_array(np.asarray(value), info.name))
        else:
            kept.append(info)
            fed.append(value)
    del graph.input[:]
    graph.input.extend(kept)
    case = dataclasses.replace(case, model=proto, data_sets=[(fed, expected)])
    return dataclasses.replace(test, case=case)


@functools.cache
def cases() -> tuple[tool.NodeTest, ...]:
    return tuple(t for t in tool.load_node_tests() if t.selected and t.op in OPS)


@pytest.mark.parametrize("test", cases(), ids=[t.name for t in cases()])
def test_node_with_constant_inputs(test: tool.NodeTest) -> None:
    outcome = tool.run_node_test(with_constants(test))
    assert outcome.status != "crashed", outcome.reason
    expected = next((why for prefix, why in EXPECTED_FAILURES.items()
                     if test.name.startswith(prefix)), None)
    if expected is None:  # not listed, or listed as passing before a failing prefix
        assert outcome.status == "passed", outcome.reason
    else:
        assert outcome.status == "failed" and expected in outcome.reason, outcome.reason
