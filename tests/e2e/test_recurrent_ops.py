"""LSTM, GRU and RNN through the whole pipeline on emu, against onnxruntime (rtol 1e-4,
atol 1e-5): every direction and layout, with and without bias, sequence_lens and initial
states, hidden sizes that are and are not multiples of a warp (and larger than a block, so
that a thread owns several units), clip, input_forget, linear_before_reset, other
activations, subsets of the outputs; two small sequence models end to end (embedding
Gather -> LSTM / GRU -> last step -> Gemm); a Tanh fused as the recurrence's prologue;
the recurrence kernel compiles to PTX without spills (ptxas via NVRTC or nvcc); and the
forms we do not support are rejected with one line."""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from models import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

import tmlir
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names, ptxas_stats
from tmlir.frontends.onnx_common import FrontendError
from tmlir.schedules.recurrent import RecurrenceParams, RecurrenceProblem, recurrence_kernel
from tmlir.tuning.compile import kernel_stats

RTOL, ATOL = 1e-4, 1e-5
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def recurrent_model(op_type: str, steps: int, batch: int, inputs: int, hidden: int, *,
                    direction: str = "forward", layout: int = 0, bias: bool = True,
                    lens: list[int] | None = None, initial: bool = False,
                    peepholes: bool = False, outputs: tuple[str, ...] = ("Y", "Y_h", "Y_c"),
                    weights_as_inputs: bool = False, seed: int = 0, **attributes):
    """A one-node model and its feed: X (and, with `weights_as_inputs`, W, R, B) are graph
    inputs, the rest initializers; `outputs` names the graph outputs (the node's first
    output Y is always named, as our importer needs; Y_h and Y_c only when used)."""
    rng = np.random.default_rng(seed)
    d, g = 2 if direction == "bidirectional" else 1, GATES[op_type]
    x_shape = (batch, steps, inputs) if layout else (steps, batch, inputs)
    state = (batch, d, hidden) if layout else (d, batch, hidden)
    scale = 1 / np.sqrt(hidden)
    arrays = {"X": rng.standard_normal(x_shape),
              "W": rng.uniform(-scale, scale, (d, g * hidden, inputs)) * 2,
              "R": rng.uniform(-scale, scale, (d, g * hidden, hidden)) * 2}
    if bias:
        arrays["B"] = rng.uniform(-scale, scale, (d, 2 * g * hidden))
    if initial:
        arrays["initial_h"] = rng.standard_normal(state) * 0.5
        if op_type == "LSTM":
            arrays["initial_c"] = rng.standard_normal(state) * 0.5
    if peepholes:
        arrays["P"] = rng.uniform(-0.5, 0.5, (d, 3 * hidden))
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    names = [n if n in arrays or (n == "sequence_lens" and lens is not None) else ""
             for n in order[:8 if op_type == "LSTM" else 6]]
    while not names[-1]:
        names.pop()
    count = 3 if op_type == "LSTM" else 2
    out_names = ["Y", *(n if n in outputs else "" for n in ("Y_h", "Y_c")[:count - 1])]
    while not out_names[-1]:
        out_names.pop()
    node = helper.make_node(op_type, names, out_names, hidden_size=hidden, direction=direction,
                            layout=layout, name="rnn", **attributes)
    fed = ["X", *(["W", "R", "B"] if weights_as_inputs else [])]
    graph_inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(arrays[n].shape))
                    for n in fed if n in arrays]
    inits = [numpy_helper.from_array(v, n) for n, v in arrays.items() if n not in fed]
    if lens is not None:
        inits.append(numpy_helper.from_array(np.array(lens, np.int32), "sequence_lens"))
    graph = helper.make_graph(
        [node], "recurrent", graph_inputs,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in out_names
         if n in outputs],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 10
    return model, {n: arrays[n] for n in fed if n in arrays}


def reference(model, feed) -> list[np.ndarray]:
    """onnxruntime's outputs. It has no ``layout = 1``: such a model runs as its
    ``layout = 0`` twin, with X and the initial states transposed in and the outputs
    transposed back."""
    node = model.graph.node[0]
    layout = next((a for a in node.attribute if a.name == "layout"), None)
    if layout is None or layout.i == 0:
        return run_onnxruntime(model, feed)
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    next(a for a in twin.graph.node[0].attribute if a.name == "layout").i = 0
    for init in twin.graph.initializer:
        if init.name in ("initial_h", "initial_c"):
            init.CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(init).transpose(1, 0, 2).copy(), init.name))
    feed = {**feed, "X": feed["X"].transpose(1, 0, 2).copy()}
    (x,) = [v for v in twin.graph.input if v.name == "X"]
    x.type.tensor_type.shape.dim[0].dim_value, x.type.tensor_type.shape.dim[1].dim_value = \
        feed["X"].shape[:2]
    outputs = run_onnxruntime(twin, feed)
    return [o.transpose(2, 0, 1, 3) if o.ndim == 4 else o.transpose(1, 0, 2) for o in outputs]


def check(model, feed, fusion: bool = True, ptx: bool = False) -> tmlir.InferenceSession:
    """Outputs on emu equal onnxruntime's (and, with `ptx`, the kernels compile for sm_90)."""
    want = reference(model, feed)
    session = tmlir.InferenceSession(model, device="emu", fusion=fusion)
    got = session.run(None, feed)
    for name, g, w in zip([o.name for o in model.graph.output], got, want, strict=True):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=name)
    if ptx:
        compiled = compile_ptx(session.program.source, "sm_90")
        assert sorted(ptx_kernel_names(compiled)) == sorted(
            k.signature.name for k in session.program.kernels)
    return session


@pytest.mark.parametrize("op_type", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_directions(op_type, direction):
    check(*recurrent_model(op_type, 5, 3, 4, 7, direction=direction))


@pytest.mark.parametrize("op_type", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_sequence_lens_and_initial_states(op_type, direction):
    """Rows shorter than the sequence: zeros in Y past their length, frozen states."""
    check(*recurrent_model(op_type, 6, 4, 3, 9, direction=direction, lens=[6, 2, 4, 1],
                           initial=True))


@pytest.mark.parametrize("op_type", ["LSTM", "GRU", "RNN"])
def test_empty_row(op_type):
    """A row of length 0: all of its Y and its final states are zeros (as onnxruntime)."""
    check(*recurrent_model(op_type, 4, 2, 3, 5, direction="bidirectional", initial=True,
                           lens=[0, 3]))


@pytest.mark.parametrize("op_type", ["LSTM", "GRU"])
@pytest.mark.parametrize("hidden", [32, 40, 300])
def test_hidden_sizes(op_type, hidden):
    """A warp multiple, a partial warp, and more units than threads (two per thread)."""
    check(*recurrent_model(op_type, 3, 2, 16, hidden, direction="bidirectional",
                           lens=[3, 2], initial=True), ptx=hidden == 300)


@pytest.mark.parametrize("op_type", ["LSTM", "GRU", "RNN"])
def test_batch_major_layout(op_type):
    check(*recurrent_model(op_type, 4, 3, 5, 6, direction="bidirectional", layout=1,
                           lens=[4, 1, 3], initial=True))


def test_lstm_peepholes_input_forget_clip():
    check(*recurrent_model("LSTM", 5, 2, 3, 6, direction="bidirectional", peepholes=True,
                           initial=True, lens=[5, 3], clip=0.3))
    check(*recurrent_model("LSTM", 4, 2, 3, 5, peepholes=True, input_forget=1))


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_linear_before_reset(linear_before_reset):
    check(*recurrent_model("GRU", 5, 3, 4, 33, direction="bidirectional", initial=True,
                           lens=[5, 3, 2], linear_before_reset=linear_before_reset, clip=0.3))


@pytest.mark.parametrize("op_type, activations", [
    ("LSTM", ["Sigmoid", "Relu", "Tanh", "Tanh", "Sigmoid", "Relu"]),
    ("GRU", ["Relu", "Tanh", "Sigmoid", "Relu"]),
    ("RNN", ["Relu", "Sigmoid"]),
])
def test_activations(op_type, activations):
    """Different gate functions, and different ones in each direction."""
    check(*recurrent_model(op_type, 4, 2, 3, 5, direction="bidirectional",
                           activations=activations))


@pytest.mark.parametrize("outputs", [("Y",), ("Y_h",), ("Y_c",), ("Y_h", "Y_c")])
def test_output_subsets(outputs):
    check(*recurrent_model("LSTM", 3, 2, 3, 4, direction="reverse", outputs=outputs))


def test_without_bias_and_weights_as_inputs():
    check(*recurrent_model("GRU", 4, 2, 3, 5, bias=False), fusion=False)
    check(*recurrent_model("LSTM", 4, 2, 3, 5, weights_as_inputs=True, initial=True))


def test_recurrence_kernel_is_one_launch_with_a_time_loop():
    """The projection is one matmul and the recurrence one kernel, whatever the length;
    its CUDA C loops over time with the state in shared memory, and compiles to PTX."""
    session = check(*recurrent_model("LSTM", 9, 2, 3, 40, direction="bidirectional"),
                    ptx=True)
    names = [k.signature.name for k in session.program.kernels]
    assert len(names) == 2 and any(n.startswith("matmul") for n in names), names
    source = session.program.source
    assert "__shared__ float h[2][40];" in source and "for (int step = 0; step < 9; ++step)" in source


def sequence_model(op_type: str, vocab: int = 20, embed: int = 8, hidden: int = 12,
                   classes: int = 5, steps: int = 6, batch: int = 3, seed: int = 0):
    """Token ids [batch, steps] -> embedding Gather -> Transpose to steps first ->
    LSTM/GRU -> Y's last step -> Gemm: a small sequence classifier, as PyTorch exports
    one."""
    rng = np.random.default_rng(seed)
    g = GATES[op_type]
    inits = {"embedding": rng.standard_normal((vocab, embed)),
             "W": rng.uniform(-0.3, 0.3, (1, g * hidden, embed)),
             "R": rng.uniform(-0.3, 0.3, (1, g * hidden, hidden)),
             "B": rng.uniform(-0.3, 0.3, (1, 2 * g * hidden)),
             "fc.weight": rng.standard_normal((classes, hidden)) * 0.3,
             "fc.bias": rng.standard_normal(classes) * 0.1}
    tensors = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in inits.items()]
    tensors += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (
        ("starts", [steps - 1]), ("ends", [steps]), ("axes", [0]), ("shape", [batch, hidden]))]
    outputs = ["Y", "Y_h", "Y_c"] if op_type == "LSTM" else ["Y", "Y_h"]
    nodes = [
        helper.make_node("Gather", ["embedding", "tokens"], ["emb"], axis=0),
        helper.make_node("Transpose", ["emb"], ["steps_first"], perm=[1, 0, 2]),
        helper.make_node(op_type, ["steps_first", "W", "R", "B"], outputs, hidden_size=hidden),
        helper.make_node("Slice", ["Y", "starts", "ends", "axes"], ["last"]),  # [1, 1, B, H]
        helper.make_node("Reshape", ["last", "shape"], ["features"]),
        helper.make_node("Gemm", ["features", "fc.weight", "fc.bias"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "classifier",
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, [batch, steps])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes])], tensors)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model, {"tokens": rng.integers(0, vocab, (batch, steps)).astype(np.int64)}


@pytest.mark.parametrize("op_type", ["LSTM", "GRU"])
def test_sequence_model(op_type):
    check(*sequence_model(op_type))


@pytest.mark.parametrize("attributes, message", [
    ({"activations": ["Sigmoid", "HardSigmoid", "Tanh"]}, "unsupported activation 'HardSigmoid'"),
    ({"activations": ["Sigmoid", "Tanh"]}, "expected 3 activations"),
    ({"activation_alpha": [0.5]}, "attribute 'activation_alpha' is not supported"),
    ({"clip": -1.0}, "clip must be positive"),
    ({"direction": "sideways"}, "unsupported value 'sideways' of attribute 'direction'"),
    ({"layout": 2}, "unsupported value 2 of attribute 'layout'"),
])
def test_rejected_forms(attributes, message):
    model, _ = recurrent_model("LSTM", 3, 2, 3, 4, **attributes)
    with pytest.raises(FrontendError, match=message) as info:
        tmlir.InferenceSession(model, device="emu")
    assert "\n" not in str(info.value) and "'rnn' (LSTM)" in str(info.value)


def test_prologue_fuses_into_the_recurrence():
    """initial_h computed by a Tanh: with fusion the Tanh is computed inside the recurrence
    kernel. Y and Y_h through a Sigmoid and a Relu stay kernels of their own
    (``graph-partition`` grows epilogues on single-result anchors only)."""
    rng = np.random.default_rng(4)
    steps, batch, inputs, hidden = 5, 3, 4, 6
    inits = {"W": rng.uniform(-0.5, 0.5, (2, 3 * hidden, inputs)),
             "R": rng.uniform(-0.5, 0.5, (2, 3 * hidden, hidden)),
             "B": rng.uniform(-0.5, 0.5, (2, 6 * hidden))}
    nodes = [helper.make_node("Tanh", ["h_in"], ["h0"]),
             helper.make_node("GRU", ["X", "W", "R", "B", "", "h0"], ["Y", "Y_h"],
                              hidden_size=hidden, direction="bidirectional"),
             helper.make_node("Sigmoid", ["Y"], ["y"]),
             helper.make_node("Relu", ["Y_h"], ["y_h"])]
    graph = helper.make_graph(
        nodes, "fused",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [steps, batch, inputs]),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [2, batch, hidden])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "y_h")],
        [numpy_helper.from_array(v.astype(np.float32), n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 10
    feed = {"X": rng.standard_normal((steps, batch, inputs)).astype(np.float32),
            "h_in": rng.standard_normal((2, batch, hidden)).astype(np.float32)}
    fused = check(model, feed, ptx=True)
    unfused = check(model, feed, fusion=False)
    names = [k.signature.name for k in fused.program.kernels]
    assert len(names) == len(unfused.program.kernels) - 1 == 4
    assert not any(n.startswith("tanh") for n in names)


@pytest.mark.parametrize("op_type, hidden, options", [
    ("LSTM", 300, {"direction": "bidirectional", "lens": [2, 1], "initial": True,
                   "peepholes": True}),
    ("LSTM", 1024, {}),
    ("GRU", 300, {"direction": "bidirectional", "lens": [3, 2], "initial": True}),
    ("GRU", 128, {"linear_before_reset": 1}),
    ("RNN", 40, {"direction": "reverse"}),
    ("RNN", 500, {"direction": "bidirectional", "lens": [2, 1], "initial": True}),
])
def test_recurrence_kernel_does_not_spill(op_type, hidden, options):
    """ptxas (sm_90, through NVRTC and through nvcc where it is installed) keeps the
    register arrays of c and z in registers: no spills, no stack frame, also with four
    units per thread (H = 1024)."""
    model, _ = recurrent_model(op_type, 3, 2, 8, hidden, **options)
    source = tmlir.InferenceSession(model, device="emu").program.source
    reports = [kernel_stats(source, "sm_90")]
    if shutil.which("nvcc"):
        reports.append(ptxas_stats(source, "sm_90"))
    for stats in reports:
        (name,) = [n for n in stats if n.startswith("recurrence")]
        assert stats[name].spill_bytes == 0 and stats[name].local_bytes == 0, stats[name]


def test_hidden_size_past_shared_memory_is_rejected():
    problem = RecurrenceProblem("gru", steps=2, batch=1, directions=1, hidden=7000)
    with pytest.raises(ValueError, match="hidden size 7000 is too large for the recurrence "
                                         "template"):
        recurrence_kernel("recurrence_0", problem)
    assert RecurrenceParams.default_for(RecurrenceProblem("lstm", 2, 1, 1, 5000)).threads == 1024
