"""Graphs the fuzzers found, shrunk and kept as explicit cases (``docs/testing.md``).

Each test names its finding: what went wrong, and where it was fixed or why it stays.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from fuzz_harness import run_case, run_onnxruntime
from fuzz_ir_mutants import check_result, run_tm_opt
from models import typed_model
from onnx import helper

import tmlir
from tmlir.frontends.onnx import FrontendError

F32 = np.float32


def _outcome(nodes, inputs, outputs, constants=None, opset=18, feed=None):
    model = typed_model(nodes, inputs, outputs, constants, opset=opset)
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    rng = np.random.default_rng(0)
    feed = feed or {name: rng.standard_normal(shape).astype(dtype) for name, (dtype, shape) in inputs.items()}
    return run_case(model, feed)


def test_reductions_over_no_axes_still_map_each_element():
    """Found: ``ReduceSumSquare(x, axes=[]) {noop_with_empty_axes=1}`` returned x, where
    ONNX's reference and onnxruntime return x*x (|x| for ReduceL1 and ReduceL2, log x for
    ReduceLogSum). Fixed in ``frontends/onnx_reductions.py``."""
    ops = ["ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceSum", "ReduceLogSumExp"]
    nodes = [helper.make_node(op, ["x", "none"], [f"y{i}"], noop_with_empty_axes=1) for i, op in enumerate(ops)]
    outcome = _outcome(nodes, {"x": (F32, (2, 3))}, {f"y{i}": F32 for i in range(len(ops))},
                       {"none": np.zeros(0, np.int64)})
    assert outcome.kind == "pass", str(outcome)


def test_reductions_of_a_scalar_map_its_element():
    """The same for a rank-0 input, whose every-dim reduction has nothing to reduce."""
    ops = ["ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum"]
    nodes = [helper.make_node(op, ["x"], [f"y{i}"]) for i, op in enumerate(ops)]
    outcome = _outcome(nodes, {"x": (F32, ())}, {f"y{i}": F32 for i in range(len(ops))},
                       feed={"x": np.array(-1.5, F32)})
    assert outcome.kind == "pass", str(outcome)


def test_same_padded_pool_with_ceil_mode_is_refused_in_one_line():
    """Found: ``MaxPool {auto_pad=SAME_UPPER, ceil_mode=1}`` over 4 elements with stride 2.
    ONNX shape inference declares 3 outputs; ONNX's reference evaluator, onnxruntime and
    tmlir compute 2 (they drop a last window that would start past the input; the same
    without ``auto_pad``). Not a tmlir bug: tmlir refuses the model's declared shape in one
    line naming the node; the strategy no longer draws ``ceil_mode`` where the two disagree
    (``fuzz_onnx_shape_ops._ceil_mode_agrees``)."""
    node = helper.make_node("MaxPool", ["x"], ["y"], auto_pad="SAME_LOWER", ceil_mode=1,
                            kernel_shape=[1], strides=[2], dilations=[2])
    model = onnx.shape_inference.infer_shapes(typed_model([node], {"x": (F32, (4, 5, 4))}, {"y": F32}))
    assert [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim] == [4, 5, 3]
    assert run_onnxruntime(model, {"x": np.zeros((4, 5, 4), F32)})[0].shape == (4, 5, 2)
    with pytest.raises(FrontendError) as info:
        tmlir.InferenceSession(model, device="emu")
    message = str(info.value)
    assert "\n" not in message and "MaxPool" in message and "[4, 5, 3]" in message, message


def test_global_max_pool_of_a_constant_keeps_its_rank():
    """Found: ``GlobalMaxPool`` of a rank-3 initializer, folded before import with onnx's
    reference implementation, came out [5, 1] instead of [5, 5, 1], and the model was
    refused ("shape inference failed"). Fixed in ``frontends/onnx_fold.py`` (numpy)."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("GlobalMaxPool", ["w"], ["p"]),
             helper.make_node("Transpose", ["p"], ["t"], perm=[2, 1, 0]),
             helper.make_node("Add", ["t", "x"], ["y"])]
    outcome = _outcome(nodes, {"x": (F32, (1, 5, 5))}, {"y": F32},
                       {"w": rng.standard_normal((5, 5, 8)).astype(F32)})
    assert outcome.kind == "pass", str(outcome)


def test_reduction_of_an_empty_tensor_to_a_scalar():
    """Found with ``zero_size=True``: ``ReduceMean(x: float[1, 1, 0]) {keepdims=0}`` (every
    axis) is refused: "shape inference failed: ... differ in rank: (1) vs (0)";
    onnxruntime gives a scalar NaN (0 for ReduceSum). Fixed in ``frontends/onnx_empty.py``:
    the folded constant kept rank 0 (``np.ascontiguousarray`` made it rank 1)."""
    node = helper.make_node("ReduceMean", ["x"], ["y"], keepdims=0)
    outcome = _outcome([node], {"x": (F32, (1, 1, 0))}, {"y": F32}, feed={"x": np.zeros((1, 1, 0), F32)})
    assert outcome.kind == "pass", str(outcome)


# -- tm-opt on mutated lit inputs (test_fuzz_ir.py) ------------------------------------------

def _tm_opt_problem(text: str, passes: str | None = None) -> str | None:
    return check_result(run_tm_opt(text, passes))


def test_huge_integer_width_is_a_parse_error():
    """Found by ``change_number``: ``{axis = 1 : i699999999999999999999}`` overflowed in
    xDSL (exit 70), and ``array<i64294967296: ...>`` ran for minutes. Fixed in
    ``tmlir/ir/ssa.py``: widths over MLIR's 2^24 - 1 are a parse error naming the type."""
    text = """func.func @f(%x: tensor<4x2xf32>, %i: tensor<3xi64>) {
  %y = graph.take %x, %i {axis = 1 : i699999999999999999999} : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return
}
"""
    assert _tm_opt_problem(text) is None


def test_operand_naming_its_own_regions_argument_is_an_error():
    """Found by ``ssa_later``: ``tm.for_task (%i) in ... on %i`` left a forward reference the
    parser never bound, and the dominance check asserted (exit 70). Fixed in
    ``tmlir/ir/ssa.py``: such an operand is "not defined where it is used"."""
    text = """tm.kernel @two_spatial(%x: memref<32xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%i) in spatial(4) * spatial(8) on %i {
    %v = tm.load %x[%i] : memref<32xf32>
  }
}
"""
    assert _tm_opt_problem(text, "tm-lower-mappings") is None
