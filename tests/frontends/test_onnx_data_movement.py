"""The ONNX frontend's data-movement operators: the graph ops and properties they import to
in each opset's form (attributes before inputs), the normalization of their constant
inputs, and one-line errors for what is not supported. Numerical checks are in
tests/e2e/test_data_movement.py (emu against onnxruntime)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

from tmlir.dialects import graph
from tmlir.frontends.onnx import FrontendError, import_onnx


def make_model(nodes, inputs: dict[str, list[int]], outputs=("y",), constants=None,
               opset: int = 17) -> onnx.ModelProto:
    graph_proto = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (constants or {}).items()])
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def body(model: onnx.ModelProto) -> list:
    (function,) = import_onnx(model).module.ops
    return [op for op in function.body.block.ops if not isinstance(op, func.ReturnOp)]


def only(model: onnx.ModelProto):
    (op,) = body(model)
    return op


def i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def shape(value) -> list[int]:
    return list(value.type.get_shape())


@pytest.mark.parametrize("node, constants, opset, expected", [
    (helper.make_node("Squeeze", ["x"], ["y"], axes=[0, -1]), {}, 11, [3]),
    (helper.make_node("Squeeze", ["x", "a"], ["y"]), {"a": i64(-1)}, 13, [1, 3]),
    (helper.make_node("Squeeze", ["x"], ["y"]), {}, 13, [3]),  # every extent-1 dim
    (helper.make_node("Unsqueeze", ["x"], ["y"], axes=[1, 4]), {}, 11, [1, 1, 3, 1, 1]),
    (helper.make_node("Unsqueeze", ["x", "a"], ["y"]), {"a": i64(-1, 0)}, 13, [1, 1, 3, 1, 1]),
    (helper.make_node("Flatten", ["x"], ["y"], axis=0), {}, 13, [1, 3]),
    (helper.make_node("Reshape", ["x", "s"], ["y"]), {"s": i64(0, -1)}, 13, [1, 3]),
    (helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=1), {"s": i64(3, 1)}, 14, [3, 1]),
])
def test_reshapes_are_graph_reshape(node, constants, opset, expected):
    op = only(make_model([node], {"x": [1, 3, 1]}, constants=constants, opset=opset))
    assert isinstance(op, graph.ReshapeOp) and shape(op.result) == expected


@pytest.mark.parametrize("node, constants, opset", [
    (helper.make_node("Dropout", ["x"], ["y"], ratio=0.3), {}, 10),
    (helper.make_node("Dropout", ["x", "r", "t"], ["y"]),
     {"r": np.float32(0.5), "t": np.array(False)}, 13),
    (helper.make_node("Transpose", ["x"], ["y"], perm=[0, 1, 2]), {}, 13),
    (helper.make_node("Concat", ["x"], ["y"], axis=0), {}, 13),
    (helper.make_node("Slice", ["x", "b", "e"], ["y"]), {"b": i64(0), "e": i64(99)}, 13),
    (helper.make_node("Pad", ["x", "p"], ["y"]), {"p": i64(0, 0, 0, 0, 0, 0)}, 13),
    (helper.make_node("Expand", ["x", "s"], ["y"]), {"s": i64(1)}, 13),
    (helper.make_node("Squeeze", ["x", "a"], ["y"]), {"a": i64()}, 13),
])
def test_no_op_imports_as_the_input_itself(node, constants, opset):
    assert body(make_model([node], {"x": [1, 3, 1]}, constants=constants, opset=opset)) == []


def test_transpose_default_perm_reverses():
    op = only(make_model([helper.make_node("Transpose", ["x"], ["y"])], {"x": [2, 3, 4]}))
    assert op.permutation == (2, 1, 0) and shape(op.result) == [4, 3, 2]


@pytest.mark.parametrize("node, constants, opset, sizes", [
    (helper.make_node("Split", ["x"], ["a", "b"], axis=1, split=[1, 4]), {}, 11, [1, 4]),
    (helper.make_node("Split", ["x", "s"], ["a", "b"], axis=-1), {"s": i64(2, 3)}, 13, [2, 3]),
    (helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3), {}, 18, [2, 2, 1]),
])
def test_split_results(node, constants, opset, sizes):
    op = only(make_model([node], {"x": [2, 5]}, outputs=node.output, constants=constants,
                         opset=opset))
    assert isinstance(op, graph.SplitOp) and op.axis_value == 1
    assert [shape(r)[1] for r in op.outputs] == sizes
    assert [r.name_hint for r in op.outputs] == list(node.output)


@pytest.mark.parametrize("starts, ends, steps, first, step, count", [
    ([1], [4], [2], 1, 2, 2),
    ([-1], [-100], [-1], 9, -1, 10),               # counts down from the end, clamped
    ([100], [0], [-3], 9, -3, 3),                  # start clamped to n - 1
    ([-100], [2**63 - 1], [2], 0, 2, 5),           # start clamped to 0, INT64_MAX end
])  # (an empty slice is an empty constant: tests/frontends/test_zero_size_import.py)
def test_slice_normalization(starts, ends, steps, first, step, count):
    constants = {"b": i64(*starts), "e": i64(*ends), "a": i64(1), "s": i64(*steps)}
    op = only(make_model([helper.make_node("Slice", ["x", "b", "e", "a", "s"], ["y"])],
                         {"x": [2, 10]}, constants=constants, opset=13))
    assert op.starts.get_values() == (0, first) and op.steps.get_values() == (1, step)
    assert shape(op.result) == [2, count]


def test_slice_and_pad_attribute_forms():
    ops = body(make_model([helper.make_node("Slice", ["x"], ["s"], starts=[1], ends=[-1],
                                            axes=[1]),
                           helper.make_node("Pad", ["s"], ["y"], pads=[1, 0, 0, 2], value=3.0)],
                          {"x": [2, 10]}, opset=9))
    assert isinstance(ops[0], graph.SliceOp) and shape(ops[0].result) == [2, 8]
    assert isinstance(ops[1], graph.PadOp) and ops[1].pad_pairs() == [(1, 0), (0, 2)]
    assert ops[1].pad_value == 3.0 and shape(ops[1].result) == [3, 10]


def test_gather_indices_are_normalized():
    op = only(make_model([helper.make_node("Gather", ["x", "i"], ["y"], axis=-1)],
                         {"x": [2, 5]}, constants={"i": np.array([[-1, 0], [4, -5]], np.int32)}))
    assert op.axis_value == 1 and op.index_values == (4, 0, 4, 0)
    assert shape(op.result) == [2, 2, 2] and op.index_shape() == (2, 2)


def test_resize_scales_from_sizes_and_policy():
    node = helper.make_node("Resize", ["x", "", "", "s"], ["y"], axes=[2, 3],
                            keep_aspect_ratio_policy="not_larger", mode="nearest",
                            nearest_mode="floor", coordinate_transformation_mode="asymmetric")
    op = only(make_model([node], {"x": [1, 1, 4, 8]}, constants={"s": i64(8, 8)}, opset=18))
    assert op.scale_values == (1.0, 1.0, 1.0, 1.0) and shape(op.result) == [1, 1, 4, 8]
    node = helper.make_node("Resize", ["x", "r", "sc"], ["y"], mode="linear")
    op = only(make_model([node], {"x": [1, 1, 4, 8]}, opset=11, constants={
        "r": np.zeros(0, np.float32), "sc": np.array([1, 1, 0.5, 2], np.float32)}))
    assert op.scale_values == (1.0, 1.0, 0.5, 2.0) and op.nearest_mode is None
    assert op.coordinate_transformation_mode.data == "half_pixel"


@pytest.mark.parametrize("node, constants, opset, message", [
    (helper.make_node("Squeeze", ["x"], ["y"], axes=[0], name="n"), {}, 13,
     "node 'n' (Squeeze): attribute 'axes' is not allowed since opset 13, where the axes are "
     "an input"),
    (helper.make_node("Split", ["x", "s"], ["y"], axis=1, name="n"), {"s": i64(1, 4)}, 13,
     "shape inference failed"),
    (helper.make_node("Split", ["x"], ["y"], split=[5], name="n"), {}, 13,
     "node 'n' (Split): attribute 'split' is not allowed since opset 13"),
    (helper.make_node("Resize", ["x", "", "s"], ["y"], name="n"), {"s": np.ones(3, np.float32)},
     10, "node 'n' (Resize): Resize before opset 11 (here 10) is not supported"),
    (helper.make_node("Resize", ["x", "", "s", "z"], ["y"], name="n"),
     {"s": np.ones(3, np.float32), "z": i64(1, 3, 1)}, 13,
     "node 'n' (Resize): Either `sizes` or `scales` must be provided"),
    (helper.make_node("Resize", ["x", "", "s"], ["y"], name="n", antialias=2),
     {"s": np.ones(3, np.float32)}, 18,
     "node 'n' (Resize): unsupported value 2 of attribute 'antialias' (expected 0 or 1)"),
    (helper.make_node("Reshape", ["x", "s"], ["y"], name="n"), {"s": np.ones(2, np.float32)},
     13, "shape inference failed"),
    (helper.make_node("Gather", ["x", "i"], ["y"], name="n"), {"i": np.ones(2, np.float32)},
     13, "node 'n' (Gather): input 'indices' must be integers, got float32"),
])
def test_errors(node, constants, opset, message):
    with pytest.raises(FrontendError) as info:
        import_onnx(make_model([node], {"x": [1, 5, 3]}, outputs=node.output,
                               constants=constants, opset=opset))
    assert message in str(info.value)
    assert "\n" not in str(info.value)
