"""The ONNX frontend's recurrent layers: ``LSTM``, ``GRU`` and ``RNN``.

Each layer becomes the input projection of every step and direction, one
``graph.matmul`` of ``X`` (``[S*B, I]``) by ``W`` (``[D*G*H, I]``, transposed), reshaped to
``[S, B, D, G*H]`` (``layout = 1``: ``[B, S, D, G*H]``), and a ``graph.recurrence`` that
runs the cell over time on it with ``R`` transposed to ``[D, H, G*H]`` (a new weight when
``R`` is a constant, else a ``graph.transpose``) and ``B``, ``sequence_lens``,
``initial_h``, ``initial_c`` and ``P`` as they are (see
``tmlir/dialects/graph/recurrent.py``). Its results ``Y``, ``Y_h`` (and ``Y_c``) are the
node's outputs; ``Y_h`` and ``Y_c`` may be absent (an absent ``Y``, ``""``, is still
refused by the importer's check of first outputs in ``onnx.py``).

Supported: every ``direction``, ``layout`` 0 and 1, ``activations`` among ``Sigmoid``,
``Tanh`` and ``Relu`` (the defaults when absent), ``clip``, LSTM ``input_forget`` and GRU
``linear_before_reset``. Rejected with one line: other activations and
``activation_alpha`` / ``activation_beta`` (which only they use), a ``hidden_size`` that
disagrees with ``R``, and zero-size sequences or batches.
"""

from __future__ import annotations

import numpy as np
from onnx import AttributeProto, NodeProto
from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import SSAValue

from tmlir.context import fresh_weight_name
from tmlir.dialects import graph
from tmlir.frontends.onnx_common import FrontendError
from tmlir.frontends.onnx_context import ImportContext
from tmlir.frontends.onnx_ops import F32, FLOAT, FLOATS, INT, INTEGERS, STRING, Attr, onnx_op

STRINGS = AttributeProto.STRINGS
_FLAG = (0, 1)
_ATTRIBUTES = {"activation_alpha": FLOATS, "activation_beta": FLOATS, "activations": STRINGS,
               "clip": FLOAT, "direction": Attr(STRING, graph.DIRECTIONS), "hidden_size": INT,
               "layout": Attr(INT, _FLAG)}
#: Input dtypes by position: X, W, R, B, sequence_lens, then the float states and P.
_INPUTS = (F32, F32, F32, F32, INTEGERS, F32)
_ONNX_ACTIVATIONS = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Relu": "relu"}
_CELLS = {"LSTM": "lstm", "GRU": "gru", "RNN": "rnn"}


def _shape(value: SSAValue) -> list[int]:
    assert isinstance(value.type, TensorType)
    return list(value.type.get_shape())


@onnx_op("LSTM", attributes={**_ATTRIBUTES, "input_forget": Attr(INT, _FLAG)}, inputs=_INPUTS,
         outputs=3, optional_outputs=True)
@onnx_op("GRU", attributes={**_ATTRIBUTES, "linear_before_reset": Attr(INT, _FLAG)},
         inputs=_INPUTS, outputs=2, optional_outputs=True)
@onnx_op("RNN", attributes=_ATTRIBUTES, inputs=_INPUTS, outputs=2, optional_outputs=True)
def recurrent(ctx: ImportContext, node: NodeProto) -> None:
    attrs = ctx.attributes(node)
    cell = _CELLS[node.op_type]
    optional = 5 if cell == "lstm" else 3
    names = ctx.input_names(node, 3, optional=optional)
    r_name = names[2]
    r_array = ctx.constant_value(r_name)
    x, w, r, bias, lens, h0, *more = [
        None if not n or (n == r_name and r_array is not None) else ctx.value(n) for n in names]
    c0, peepholes = more if cell == "lstm" else (None, None)
    direction = str(attrs.get("direction", "forward"))
    directions = 2 if direction == "bidirectional" else 1
    batch_major = attrs.get("layout", 0) == 1
    gates = len(graph.CELL_GATES[cell])
    xs, ws = _shape(x), _shape(w)
    rs = list(r_array.shape) if r_array is not None else _shape(r)
    if len(xs) != 3 or len(ws) != 3 or len(rs) != 3:
        raise FrontendError(f"{ctx.label}: X, W and R must be 3-D, got shapes {xs}, {ws} "
                            f"and {rs}")
    hidden = rs[2]
    if rs != [directions, gates * hidden, hidden] or ws[:2] != rs[:2] or ws[2] != xs[2]:
        raise FrontendError(f"{ctx.label}: W {ws} and R {rs} must be [{directions}, "
                            f"{gates}*hidden_size, input_size {xs[2]}] and [{directions}, "
                            f"{gates}*hidden_size, hidden_size] for direction '{direction}'")
    if attrs.get("hidden_size", hidden) != hidden:
        raise FrontendError(f"{ctx.label}: hidden_size {attrs['hidden_size']} differs from "
                            f"R's {hidden}")
    steps, batch = (xs[1], xs[0]) if batch_major else (xs[0], xs[1])
    if 0 in (steps, batch, hidden):
        raise FrontendError(f"{ctx.label}: zero-size sequences are not supported (X {xs}, "
                            f"hidden_size {hidden})")
    for what in ("activation_alpha", "activation_beta"):
        if what in attrs:
            raise FrontendError(f"{ctx.label}: attribute '{what}' is not supported (only the "
                                f"activations {', '.join(_ONNX_ACTIVATIONS)} are, which take none)")
    clip = attrs.get("clip")
    if clip is not None and not float(clip) > 0:  # type: ignore[arg-type]
        raise FrontendError(f"{ctx.label}: clip must be positive, got {clip}")
    op = graph.RecurrenceOp(
        cell, direction, _projection(ctx, node, x, w, batch_major),
        _transposed_recurrence(ctx, r_name, r, r_array), bias=bias,
        sequence_lens=lens, initial_h=h0, initial_c=c0, peepholes=peepholes,
        activations=_activations(ctx, attrs, cell, directions), batch_major=batch_major,
        clip=None if clip is None else float(clip),  # type: ignore[arg-type]
        input_forget=attrs.get("input_forget", 0) == 1,
        linear_before_reset=attrs.get("linear_before_reset", 0) == 1)
    ctx.append(op, node.output[0] or node.name or node.op_type)
    for name, result in zip(node.output, op.results):
        if name:
            ctx.name_result(name, result)


def _projection(ctx: ImportContext, node: NodeProto, x: SSAValue, w: SSAValue,
                batch_major: bool) -> SSAValue:
    """``X · Wᵀ`` for every step and direction, ``[S, B, D, G*H]`` (``[B, S, D, G*H]``)."""
    xs, ws = _shape(x), _shape(w)
    hint = node.name or node.output[0] or node.op_type
    f32 = Float32Type()
    x2 = ctx.append(graph.ReshapeOp(x, TensorType(f32, [xs[0] * xs[1], xs[2]])), f"{hint}_x")
    w2 = ctx.append(graph.ReshapeOp(w, TensorType(f32, [ws[0] * ws[1], ws[2]])), f"{hint}_w")
    rows, cols = xs[0] * xs[1], ws[0] * ws[1]
    xw = ctx.append(graph.MatmulOp(x2, w2, TensorType(f32, [rows, cols]), transpose_rhs=True),
                    f"{hint}_xw")
    shape = [xs[0], xs[1], ws[0], ws[1]]  # (steps, rows) or (rows, steps), then D, G*H
    return ctx.append(graph.ReshapeOp(xw, TensorType(f32, shape)), f"{hint}_projection")


def _transposed_recurrence(ctx: ImportContext, name: str, r: SSAValue | None,
                           array: np.ndarray | None) -> SSAValue:
    """``R`` as ``[D, H, G*H]`` (each direction's ``Rᵀ``), so that the threads of the
    recurrence, one per unit, read consecutive addresses: a new weight when ``R`` is a
    constant, else a ``graph.transpose``."""
    if array is not None:
        taken = {*ctx.values, *ctx.initializers, *ctx.infos, *ctx.producers}
        transposed = fresh_weight_name(ctx.weights, f"{name}_transposed", taken)
        ctx.add_weight(transposed, np.ascontiguousarray(array.transpose(0, 2, 1)))
        return ctx.values[transposed]
    assert r is not None
    d, rows, h = _shape(r)
    return ctx.append(graph.TransposeOp(r, TensorType(Float32Type(), [d, h, rows]), [0, 2, 1]),
                      f"{name}_transposed")


def _activations(ctx: ImportContext, attrs: dict[str, object], cell: str,
                 directions: int) -> list[str]:
    """The gate functions, per direction, as ``graph.recurrence`` names them."""
    default = graph.default_activations(cell, directions)
    given = attrs.get("activations")
    if given is None:
        return default
    names = [a.decode(errors="replace") if isinstance(a, bytes) else str(a)
             for a in given]  # type: ignore[attr-defined]
    if len(names) != len(default):
        raise FrontendError(f"{ctx.label}: expected {len(default)} activations "
                            f"({len(default) // directions} per direction), got {len(names)}")
    unsupported = [n for n in names if n not in _ONNX_ACTIVATIONS]
    if unsupported:
        raise FrontendError(f"{ctx.label}: unsupported activation '{unsupported[0]}' (expected "
                            f"{', '.join(_ONNX_ACTIVATIONS)})")
    return [_ONNX_ACTIVATIONS[n] for n in names]
