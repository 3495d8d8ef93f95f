"""ONNX control flow through the whole pipeline on emu, against onnxruntime.

``If`` on a constant, on a folded shape comparison and on a model input (compiled per
value fed); ``Loop`` unrolled with loop-carried state and scan outputs (a small RNN that
reads its step's input by the iteration number, a cumulative product, a ``while i < k``
loop, a ``while`` loop on a loop-carried counter), an ``If`` nested in a ``Loop``, and
``Scan`` in both directions with several states (and opset 8's batched form). Outputs
are compared with rtol 1e-5 / atol 1e-5 (float32 arithmetic in the same order as
onnxruntime up to fusion). Structural checks and the one-line errors are in
tests/frontends/test_onnx_control_flow.py; here one error is checked through a session.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from models import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

import tmlir
from tmlir.frontends.onnx import FrontendError

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def info(name: str, elem: int = F, shape: list[int] | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def constants(values: dict[str, np.ndarray] | None) -> list[onnx.TensorProto]:
    return [numpy_helper.from_array(np.asarray(v), n) for n, v in (values or {}).items()]


def subgraph(nodes, inputs, outputs, values=None) -> onnx.GraphProto:
    outputs = [info(o) if isinstance(o, str) else o for o in outputs]
    return helper.make_graph(nodes, "body", inputs, outputs, constants(values))


def model(nodes, inputs, outputs, values=None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "control_flow", inputs, [info(o) for o in outputs],
                              constants(values))
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 10
    return proto


def check(proto: onnx.ModelProto, feed: dict[str, np.ndarray]) -> tmlir.InferenceSession:
    """The outputs on emu equal onnxruntime's (shape and values)."""
    session = tmlir.InferenceSession(proto, device="emu")
    want = run_onnxruntime(proto, feed)
    got = session.run(None, feed)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return session


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def if_node(cond: str, output: str = "y") -> onnx.NodeProto:
    """``y = cond ? sigmoid(x) * 2 : x - 1`` (the branches read 'x' from the outer graph)."""
    then = subgraph([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["s", "two"], ["t"])],
                    [], ["t"], {"two": np.array(2, np.float32)})
    other = subgraph([helper.make_node("Sub", ["x", "one"], ["e"])], [], ["e"],
                     {"one": np.array(1, np.float32)})
    return helper.make_node("If", [cond], [output], then_branch=then, else_branch=other)


@pytest.mark.parametrize("value", [True, False])
def test_if_on_a_constant(value):
    check(model([if_node("c")], [info("x", F, [4, 33])], ["y"], {"c": np.array(value)}),
          {"x": randn(4, 33)})


def test_if_on_a_folded_shape_comparison():
    """``if x.shape[1] > 16`` (as a traced model checks a size): folded, then inlined."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "one"], ["d"], axis=0),
             helper.make_node("Greater", ["d", "sixteen"], ["c"]), if_node("c", "t"),
             helper.make_node("Relu", ["t"], ["y"])]
    values = {"one": np.array(1), "sixteen": np.array(16)}
    for width in (8, 24):
        check(model(nodes, [info("x", F, [3, width])], ["y"], values), {"x": randn(3, width)})


def test_if_on_a_model_input_is_compiled_per_value():
    session = check(model([if_node("c")], [info("x", F, [5, 7]), info("c", B, [])], ["y"]),
                    {"x": randn(5, 7), "c": np.array(True)})
    x = randn(5, 7, seed=1)
    np.testing.assert_allclose(session.run(None, {"x": x, "c": np.array(False)})[0], x - 1, rtol=1e-6)


def rnn_loop(steps: int, hidden: int, features: int) -> onnx.ModelProto:
    """``h = tanh(xs[i] @ W + h @ U + b)`` for i < steps: the body reads its step's input by
    the iteration number; outputs the last h and every h (a scan output)."""
    rng = np.random.default_rng(3)
    body = subgraph(
        [helper.make_node("Gather", ["xs", "i"], ["x_i"], axis=0),
         helper.make_node("MatMul", ["x_i", "W"], ["xw"]), helper.make_node("MatMul", ["h_in", "U"], ["hu"]),
         helper.make_node("Add", ["xw", "hu"], ["pre"]), helper.make_node("Add", ["pre", "b"], ["pre_b"]),
         helper.make_node("Tanh", ["pre_b"], ["h_out"]), helper.make_node("Identity", ["h_out"], ["h_scan"])],
        [info("i", I64, []), info("c", B, []), info("h_in", F, [2, hidden])],
        [info("c", B, []), "h_out", "h_scan"],
        {"U": (rng.standard_normal((hidden, hidden)) * 0.3).astype(np.float32),
         "b": rng.standard_normal(hidden).astype(np.float32)})
    loop = helper.make_node("Loop", ["steps", "", "h0"], ["h", "hs"], body=body)
    return model([loop], [info("xs", F, [steps, 2, features]), info("h0", F, [2, hidden])], ["h", "hs"],
                 {"steps": np.array(steps), "W": (rng.standard_normal((features, hidden)) * 0.3)
                  .astype(np.float32)})


def test_loop_rnn_with_state_and_scan_outputs():
    check(rnn_loop(5, 16, 8), {"xs": randn(5, 2, 8), "h0": randn(2, 16, seed=1)})


def test_loop_cumulative_product_while_the_iteration_number_is_small():
    """``M`` is huge and the body's condition is ``i + 1 < 4``: four iterations."""
    body = subgraph(
        [helper.make_node("Mul", ["p_in", "x"], ["p_out"]), helper.make_node("Identity", ["p_out"], ["p_scan"]),
         helper.make_node("Add", ["i", "one"], ["next"]), helper.make_node("Less", ["next", "four"], ["go"])],
        [info("i", I64, []), info("c", B, []), info("p_in", F, [3, 10])],
        [info("go", B, []), "p_out", "p_scan"], {"one": np.array(1), "four": np.array(4)})
    loop = helper.make_node("Loop", ["m", "true", "x"], ["p", "ps"], body=body)
    proto = model([loop], [info("x", F, [3, 10])], ["p", "ps"],
                  {"m": np.array(2**40), "true": np.array(True)})
    check(proto, {"x": randn(3, 10)})


def test_while_loop_on_a_counter():
    """A ``while`` loop as tf2onnx writes one: no trip count, a loop-carried counter from 0
    and ``j < 3`` as the condition; the data state doubles and adds x each time."""
    body = subgraph(
        [helper.make_node("Add", ["j_in", "one"], ["j_out"]), helper.make_node("Less", ["j_out", "three"], ["go"]),
         helper.make_node("Add", ["v_in", "v_in"], ["twice"]), helper.make_node("Add", ["twice", "x"], ["v_out"])],
        [info("i", I64, []), info("c", B, []), info("j_in", I64, []), info("v_in", F, [2, 17])],
        [info("go", B, []), info("j_out", I64, []), "v_out"], {"one": np.array(1), "three": np.array(3)})
    loop = helper.make_node("Loop", ["", "true", "zero", "x"], ["j", "y"], body=body)
    proto = model([loop], [info("x", F, [2, 17])], ["y"], {"true": np.array(True), "zero": np.array(0)})
    check(proto, {"x": randn(2, 17)})


def test_if_nested_in_a_loop():
    """The first iteration adds, the others subtract half of x (``If i == 0`` in the body)."""
    then = subgraph([helper.make_node("Add", ["acc_in", "x"], ["a"])], [], ["a"])
    other = subgraph([helper.make_node("Mul", ["x", "half"], ["hx"]),
                      helper.make_node("Sub", ["acc_in", "hx"], ["s"])], [], ["s"])
    body = subgraph(
        [helper.make_node("Equal", ["i", "zero"], ["first"]),
         helper.make_node("If", ["first"], ["acc_out"], then_branch=then, else_branch=other),
         helper.make_node("Relu", ["acc_out"], ["r"])],
        [info("i", I64, []), info("c", B, []), info("acc_in", F, [4, 9])],
        [info("c", B, []), "acc_out", "r"], {"zero": np.array(0), "half": np.array(0.5, np.float32)})
    loop = helper.make_node("Loop", ["m", "", "init"], ["acc", "rs"], body=body)
    proto = model([loop], [info("x", F, [4, 9]), info("init", F, [4, 9])], ["acc", "rs"], {"m": np.array(3)})
    check(proto, {"x": randn(4, 9), "init": randn(4, 9, seed=2)})


def test_scan_both_directions_and_two_states():
    """A running sum and a running product over the rows of x (forward) and of z
    (backward), stacked on output axis 0 and 1."""
    body = subgraph(
        [helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
         helper.make_node("Mul", ["prod_in", "zrow"], ["prod_out"]),
         helper.make_node("Identity", ["sum_out"], ["sum_scan"]),
         helper.make_node("Identity", ["prod_out"], ["prod_scan"])],
        [info("sum_in", F, [6]), info("prod_in", F, [6]), info("row", F, [6]), info("zrow", F, [6])],
        ["sum_out", "prod_out", "sum_scan", "prod_scan"])
    scan = helper.make_node("Scan", ["s0", "p0", "x", "z"], ["s", "p", "sums", "prods"], body=body,
                            num_scan_inputs=2, scan_input_axes=[0, 1], scan_input_directions=[0, 1],
                            scan_output_axes=[0, -1], scan_output_directions=[1, 0])
    proto = model([scan], [info("s0", F, [6]), info("p0", F, [6]), info("x", F, [5, 6]), info("z", F, [6, 5])],
                  ["s", "p", "sums", "prods"])
    check(proto, {"s0": randn(6), "p0": randn(6, seed=1), "x": randn(5, 6, seed=2), "z": randn(6, 5, seed=3)})


def test_scan_of_opset_8_over_a_batch():
    """Opset 8's Scan: batch axis first on every input and output, no sequence_lens; the
    state is a running maximum, the scan output its step's sum with the state."""
    body = subgraph([helper.make_node("Max", ["m_in", "row"], ["m_out"]),
                     helper.make_node("Add", ["m_out", "row"], ["step"])],
                    [info("m_in", F, [7]), info("row", F, [7])], ["m_out", "step"])
    scan = helper.make_node("Scan", ["", "m0", "x"], ["m", "steps"], body=body, num_scan_inputs=1,
                            directions=[1])
    graph = helper.make_graph([scan], "scan8", [info("m0", F, [3, 7]), info("x", F, [3, 4, 7])],
                              [info("m"), info("steps")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    proto.ir_version = 10
    check(proto, {"m0": randn(3, 7), "x": randn(3, 4, 7, seed=1)})


def test_loop_on_tensor_data_is_a_one_line_error():
    body = subgraph([helper.make_node("ReduceMax", ["v_in"], ["mx"], keepdims=0),
                     helper.make_node("Less", ["mx", "ten"], ["go"]), helper.make_node("Add", ["v_in", "v_in"], ["v"])],
                    [info("i", I64, []), info("c", B, []), info("v_in", F, [4])], [info("go", B, []), "v"],
                    {"ten": np.array(10, np.float32)})
    proto = model([helper.make_node("Loop", ["", "", "x"], ["y"], body=body, name="doubling")],
                  [info("x", F, [4])], ["y"])
    with pytest.raises(FrontendError, match=r"^node 'doubling' \(Loop\): the loop condition \('go'\) depends on "
                       r"the loop-carried value 'v_in', whose initial value 'x' is computed at run time; only loops "
                       "whose trip count and condition are known when the model is compiled are supported$"):
        tmlir.InferenceSession(proto, device="emu")
