"""The ONNX frontend's LSTM, GRU and RNN: the input projection as one ``graph.matmul`` and
the time loop as ``graph.recurrence`` (the IR they import to), one-line errors for what is
not supported, the op's verifier, and their meaning: the imported IR evaluated with the
numpy interpreter of the graph dialect (graph_reference.py) against onnxruntime (rtol
1e-5, atol 1e-6)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from graph_reference import evaluate
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from tmlir.dialects import graph
from tmlir.frontends.onnx import FrontendError, import_onnx

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def model_of(op_type: str, steps: int = 4, batch: int = 3, inputs: int = 2, hidden: int = 5,
             direction: str = "forward", lens: list[int] | None = None, initial: bool = False,
             layout: int = 0, outputs: int | None = None, seed: int = 0, **attributes
             ) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One recurrent node with B and P (LSTM); X, initial_h and initial_c fed."""
    rng = np.random.default_rng(seed)
    d, g = 2 if direction == "bidirectional" else 1, GATES[op_type]
    state = [batch, d, hidden] if layout else [d, batch, hidden]
    feeds = {"X": rng.standard_normal([batch, steps, inputs] if layout else [steps, batch, inputs])}
    inits = {"W": rng.uniform(-0.6, 0.6, (d, g * hidden, inputs)),
             "R": rng.uniform(-0.6, 0.6, (d, g * hidden, hidden)),
             "B": rng.uniform(-0.3, 0.3, (d, 2 * g * hidden))}
    names = ["X", "W", "R", "B", "lens" if lens is not None else ""]
    if initial:
        feeds["initial_h"] = rng.standard_normal(state)
        names.append("initial_h")
    if op_type == "LSTM":
        if initial:
            feeds["initial_c"] = rng.standard_normal(state)
        inits["P"] = rng.uniform(-0.5, 0.5, (d, 3 * hidden))
        names += ["initial_h" if initial else "", "initial_c" if initial else "", "P"][
            1 if initial else 0:]
    count = outputs or (3 if op_type == "LSTM" else 2)
    out_names = ["Y", "Y_h", "Y_c"][:count]
    node = helper.make_node(op_type, names, out_names, name="layer", hidden_size=hidden,
                            direction=direction, **({"layout": layout} if layout else {}),
                            **attributes)
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    tensors = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()]
    if lens is not None:
        tensors.append(numpy_helper.from_array(np.array(lens, np.int32), "lens"))
    graph_proto = helper.make_graph(
        [node], "test",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in out_names], tensors)
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 10
    return model, feeds


def body_ops(model: onnx.ModelProto) -> list:
    (function,) = import_onnx(model).module.ops
    return [op for op in function.body.block.ops if not isinstance(op, func.ReturnOp)]


def test_lstm_imports_to_one_projection_and_one_recurrence():
    model, _ = model_of("LSTM", direction="bidirectional", lens=[4, 2, 3], initial=True,
                        clip=2.0, input_forget=1)
    ops = [op for op in body_ops(model) if not isinstance(op, graph.WeightOp)]
    assert [op.name for op in ops] == ["graph.reshape", "graph.reshape", "graph.matmul",
                                       "graph.reshape", "graph.recurrence"]
    matmul, recurrence = ops[2], ops[4]
    weight = recurrence.weights.owner  # R transposed at import: a weight of its own
    assert isinstance(weight, graph.WeightOp) and weight.weight_name.data == "R_transposed"
    assert list(recurrence.weights.type.get_shape()) == [2, 5, 20]
    assert matmul.transpose_rhs is not None
    assert list(matmul.result.type.get_shape()) == [4 * 3, 2 * 4 * 5]
    assert list(recurrence.projection.type.get_shape()) == [4, 3, 2, 20]
    assert recurrence.cell_name == "lstm" and recurrence.direction.data == "bidirectional"
    assert recurrence.activation_names == ("sigmoid", "tanh", "tanh") * 2
    assert recurrence.clip_value == 2.0 and recurrence.input_forget is not None
    assert all(v is not None for v in (recurrence.bias, recurrence.sequence_lens,
                                       recurrence.initial_h, recurrence.initial_c,
                                       recurrence.peepholes))
    assert [r.name_hint for r in recurrence.results] == ["Y", "Y_h", "Y_c"]


def test_recurrence_weights_computed_at_run_time_are_transposed_by_an_op():
    model, feeds = model_of("GRU", direction="bidirectional")
    (r,) = [t for t in model.graph.initializer if t.name == "R"]
    model.graph.initializer.remove(r)
    model.graph.input.append(helper.make_tensor_value_info("R", TensorProto.FLOAT, list(r.dims)))
    feeds["R"] = numpy_helper.to_array(r)
    transpose = body_ops(model)[-1].weights.owner
    assert isinstance(transpose, graph.TransposeOp) and transpose.permutation == (0, 2, 1)
    check_against_onnxruntime(model, feeds)


@pytest.mark.parametrize("op_type", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_meaning_against_onnxruntime(op_type, direction):
    model, feeds = model_of(op_type, direction=direction, lens=[4, 0, 3], initial=True)
    check_against_onnxruntime(model, feeds)


@pytest.mark.parametrize("op_type, attributes", [
    ("LSTM", {"clip": 0.4}),
    ("LSTM", {"input_forget": 1}),
    ("GRU", {"linear_before_reset": 1, "clip": 0.5}),
    ("GRU", {"activations": ["Relu", "Sigmoid"]}),
    ("RNN", {"activations": ["Relu"]}),
])
def test_attributes_against_onnxruntime(op_type, attributes):
    check_against_onnxruntime(*model_of(op_type, initial=True, **attributes))


def test_lstm_with_fewer_outputs():
    model, feeds = model_of("LSTM", outputs=2)
    ops = body_ops(model)
    assert [r.name_hint for r in ops[-1].results][:2] == ["Y", "Y_h"]
    check_against_onnxruntime(model, feeds)


@pytest.mark.parametrize("op_type", ["LSTM", "GRU", "RNN"])
def test_batch_major_layout_is_the_transposed_time_major_one(op_type):
    """onnxruntime has no layout = 1: compare with the layout-0 model on transposed data."""
    kwargs = {"direction": "bidirectional", "lens": [4, 2, 1], "initial": True}
    model, feeds = model_of(op_type, layout=1, **kwargs)
    time_major, _ = model_of(op_type, **kwargs)
    got = evaluate(import_onnx(model), feeds)
    want = evaluate(import_onnx(time_major), {k: v.swapaxes(0, 1) for k, v in feeds.items()})
    assert (got[0] == want[0].transpose(2, 0, 1, 3)).all()
    for g, w in zip(got[1:], want[1:], strict=True):
        assert (g == w.swapaxes(0, 1)).all()


def check_against_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    actual = evaluate(import_onnx(model), feeds)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op_type, attributes, message", [
    ("LSTM", {"activations": ["Sigmoid", "Elu", "Tanh"]}, "unsupported activation 'Elu'"),
    ("GRU", {"activations": ["Sigmoid"]}, "expected 2 activations \\(2 per direction\\)"),
    ("RNN", {"activation_beta": [1.0]}, "attribute 'activation_beta' is not supported"),
    ("LSTM", {"hidden_size": None}, "hidden_size 6 differs from R's 5"),
    ("GRU", {"clip": 0.0}, "clip must be positive"),
    ("RNN", {"direction": "both"}, "unsupported value 'both' of attribute 'direction'"),
    ("GRU", {"input_forget": 1}, "unsupported attribute 'input_forget'"),
    ("LSTM", {"linear_before_reset": 1}, "unsupported attribute 'linear_before_reset'"),
])
def test_rejected(op_type, attributes, message):
    model, _ = model_of(op_type, **{k: v for k, v in attributes.items() if v is not None})
    if "hidden_size" in attributes:  # not the value model_of sets
        next(a for a in model.graph.node[0].attribute if a.name == "hidden_size").i = 6
    with pytest.raises(FrontendError, match=message) as info:
        import_onnx(model)
    assert "\n" not in str(info.value) and "'layer'" in str(info.value)


def test_weights_of_the_wrong_direction_count_are_rejected():
    model, _ = model_of("LSTM")
    next(a for a in model.graph.node[0].attribute if a.name == "direction").s = b"bidirectional"
    with pytest.raises(FrontendError, match="for direction 'bidirectional'"):
        import_onnx(model)


def _value(*shape: int, element=None):
    return create_ssa_value(TensorType(element or Float32Type(), list(shape)))


@pytest.mark.parametrize("change, message", [
    ({"projection": (4, 3, 1, 12)}, "projection shape \\[4, 3, 1, 12\\] must end in \\[1, 20\\]"),
    ({"weights": (2, 5, 20)}, "must be \\[1, H, 4\\*H\\] for a forward lstm"),
    ({"initial_h": (1, 2, 5)}, "initial_h shape \\[1, 2, 5\\] must be \\[1, 3, 5\\]"),
    ({"bias": (1, 20)}, "bias shape \\[1, 20\\] must be \\[1, 40\\]"),
    ({"peepholes": (1, 20)}, "peepholes shape \\[1, 20\\] must be \\[1, 15\\]"),
    ({"activations": ["sigmoid", "softsign", "tanh"]}, "activations must be 3 of"),
    ({"cell": "gru"}, "must be \\[1, H, 3\\*H\\] for a forward gru"),
    ({"cell": "rnn", "projection": (4, 3, 1, 5), "weights": (1, 5, 5), "initial_c": (1, 3, 5)},
     "LSTM only"),
])
def test_verifier(change, message):
    """A forward LSTM with 4 steps, 3 rows and 5 units, but for `change`."""
    shapes = {"projection": (4, 3, 1, 20), "weights": (1, 5, 20)} | change
    operands = {k: _value(*v) for k, v in shapes.items()
                if k in ("initial_h", "initial_c", "bias", "peepholes")}
    cell = change.get("cell", "lstm")
    activations = change.get("activations") or graph.default_activations(cell, 1)
    op = graph.RecurrenceOp(cell, "forward", _value(*shapes["projection"]),
                            _value(*shapes["weights"]), activations=activations, **operands)
    with pytest.raises(VerifyException, match=message):
        op.verify()
