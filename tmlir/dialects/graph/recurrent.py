"""``graph.recurrence``: the time loop of an LSTM, GRU or simple RNN layer.

An ONNX ``LSTM`` / ``GRU`` / ``RNN`` is imported as two ops, split as cuDNN splits it: the
input projection of every time step and direction, ``X · Wᵀ``, is one ``graph.matmul``
(the tuned GEMM), and ``graph.recurrence`` runs the sequential part on it::

    %xw = graph.matmul %x2, %w2 {transpose_rhs} : (...) -> tensor<21x160xf32>
    %p = graph.reshape %xw : (tensor<21x160xf32>) -> tensor<7x3x1x160xf32>
    %y, %y_h, %y_c = graph.recurrence %p, %rt bias(%b : tensor<1x320xf32>) {cell = "lstm",
        direction = "forward", activations = ["sigmoid", "tanh", "tanh"]}
        : tensor<7x3x1x160xf32>, tensor<1x40x160xf32> -> tensor<7x1x3x40xf32>, ...

Operands (``S`` steps, ``B`` batch rows, ``D`` directions, ``H`` hidden units, ``G`` gates:
4 for ``lstm`` in ONNX's order i, o, f, c; 3 for ``gru``: z, r, h; 1 for ``rnn``):
``projection`` ``[S, B, D, G*H]`` (``batch_major``: ``[B, S, D, G*H]``), the recurrence
weights transposed, ``[D, H, G*H]`` (``weights[d, k, g*H + j]`` is ONNX's
``R[d, g*H + j, k]``), and optionally ONNX's ``B`` ``[D, 2*G*H]`` (``Wb`` then ``Rb``),
``sequence_lens`` ``[B]`` (integers), ``initial_h`` / ``initial_c`` ``[D, B, H]``
(``batch_major``: ``[B, D, H]``) and the LSTM peepholes ``[D, 3*H]`` (i, o, f). Results:
``y`` ``[S, D, B, H]`` (``batch_major``: ``[B, S, D, H]``), ``y_h`` and, for ``lstm``,
``y_c``, shaped as ``initial_h``. ``activations`` names the gate functions, ONNX's list
per direction (``sigmoid``, ``tanh``, ``relu``); ``clip`` bounds the input of every
activation but the LSTM's ``h(c)`` (as onnxruntime does); ``input_forget`` couples the
LSTM's forget gate to ``1 - i``; ``linear_before_reset`` is the GRU variant that applies
the reset gate after ``R_h · h``. Steps past a row's ``sequence_lens`` leave its state
unchanged and give zeros in ``y`` (a row of length 0 has zero final states), as
onnxruntime does.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    ArrayAttr,
    Float32Type,
    FloatAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.graph.shapes import tensor_shape
from tmlir.dialects.graph.traits import AnyElementType

__all__ = [
    "CELL_GATES",
    "DIRECTIONS",
    "RECURRENT_ACTIVATIONS",
    "RecurrenceOp",
    "default_activations",
]

#: Gates of each cell, in ONNX's order of the rows of W, R and B.
CELL_GATES: dict[str, tuple[str, ...]] = {"lstm": ("i", "o", "f", "c"), "gru": ("z", "r", "h"),
                                          "rnn": ("i",)}
#: How many activation functions each cell takes per direction.
CELL_ACTIVATIONS = {"lstm": 3, "gru": 2, "rnn": 1}
DIRECTIONS = ("forward", "reverse", "bidirectional")
RECURRENT_ACTIVATIONS = ("sigmoid", "tanh", "relu")


@irdl_op_definition
class RecurrenceOp(IRDLOperation):
    """An LSTM, GRU or RNN layer's recurrence over its precomputed input projection (the
    module docstring gives the operands and results)."""

    name = "graph.recurrence"
    projection = operand_def(TensorType)
    weights = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    sequence_lens = opt_operand_def(TensorType)
    initial_h = opt_operand_def(TensorType)
    initial_c = opt_operand_def(TensorType)
    peepholes = opt_operand_def(TensorType)
    y = result_def(TensorType)
    y_h = result_def(TensorType)
    y_c = opt_result_def(TensorType)
    cell = prop_def(StringAttr)
    direction = prop_def(StringAttr)
    activations = prop_def(ArrayAttr[StringAttr])
    batch_major = opt_prop_def(UnitAttr)
    clip = opt_prop_def(FloatAttr)
    input_forget = opt_prop_def(UnitAttr)
    linear_before_reset = opt_prop_def(UnitAttr)
    traits = traits_def(Pure(), AnyElementType())  # f32 but for sequence_lens (integers)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$projection `,` $weights (`bias` `(` $bias^ `:` type($bias) `)`)? "
        "(`lens` `(` $sequence_lens^ `:` type($sequence_lens) `)`)? "
        "(`h0` `(` $initial_h^ `:` type($initial_h) `)`)? "
        "(`c0` `(` $initial_c^ `:` type($initial_c) `)`)? "
        "(`peepholes` `(` $peepholes^ `:` type($peepholes) `)`)? "
        "attr-dict `:` type($projection) `,` type($weights) `->` type(results)"
    )

    def __init__(self, cell: str, direction: str, projection: SSAValue, weights: SSAValue,
                 *, bias: SSAValue | None = None, sequence_lens: SSAValue | None = None,
                 initial_h: SSAValue | None = None, initial_c: SSAValue | None = None,
                 peepholes: SSAValue | None = None, activations: list[str] | None = None,
                 batch_major: bool = False, clip: float | None = None,
                 input_forget: bool = False, linear_before_reset: bool = False) -> None:
        assert isinstance(projection.type, TensorType) and isinstance(weights.type, TensorType)
        p, (d, h, _) = projection.type.get_shape(), weights.type.get_shape()
        s, b = (p[1], p[0]) if batch_major else (p[0], p[1])
        element = projection.type.get_element_type()
        y = TensorType(element, [b, s, d, h] if batch_major else [s, d, b, h])
        state = TensorType(element, [b, d, h] if batch_major else [d, b, h])
        if activations is None:
            activations = default_activations(cell, d)
        props: dict[str, Attribute] = {
            "cell": StringAttr(cell), "direction": StringAttr(direction),
            "activations": ArrayAttr([StringAttr(a) for a in activations])}
        for flag, on in (("batch_major", batch_major), ("input_forget", input_forget),
                         ("linear_before_reset", linear_before_reset)):
            if on:
                props[flag] = UnitAttr()
        if clip is not None:
            props["clip"] = FloatAttr(clip, Float32Type())
        super().__init__(
            operands=[projection, weights, *([v] if v is not None else [] for v in (
                bias, sequence_lens, initial_h, initial_c, peepholes))],
            result_types=[y, state, [state] if cell == "lstm" else []],
            properties=props,
        )

    @property
    def cell_name(self) -> str:
        return self.cell.data

    @property
    def directions(self) -> int:
        return 2 if self.direction.data == "bidirectional" else 1

    @property
    def activation_names(self) -> tuple[str, ...]:
        return tuple(a.data for a in self.activations.data)

    @property
    def clip_value(self) -> float | None:
        return None if self.clip is None else self.clip.value.data

    def sizes(self) -> tuple[int, int, int, int]:
        """(steps S, batch B, directions D, hidden H), checked against the projection and
        the weights."""
        p = tensor_shape(self.projection.type, "projection")
        w = tensor_shape(self.weights.type, "weights")
        gates = len(CELL_GATES[self.cell_name])
        if len(p) != 4 or len(w) != 3:
            raise VerifyException(f"projection must be 4-D and weights 3-D, got shapes "
                                  f"{list(p)} and {list(w)}")
        d, h = w[0], w[1]
        if d != self.directions or w[2] != gates * h:
            raise VerifyException(f"weights shape {list(w)} must be [{self.directions}, H, "
                                  f"{gates}*H] for a {self.direction.data} {self.cell_name}")
        s, b = (p[1], p[0]) if self.batch_major else (p[0], p[1])
        if p[2:] != (d, gates * h):
            raise VerifyException(f"projection shape {list(p)} must end in [{d}, {gates * h}]")
        return s, b, d, h

    def verify_(self) -> None:
        cell = self.cell_name
        if cell not in CELL_GATES:
            raise VerifyException(f"cell must be one of {', '.join(CELL_GATES)}, got '{cell}'")
        if self.direction.data not in DIRECTIONS:
            raise VerifyException(f"direction must be one of {', '.join(DIRECTIONS)}, got "
                                  f"'{self.direction.data}'")
        s, b, d, h = self.sizes()
        gates = len(CELL_GATES[cell])
        acts = self.activation_names
        if len(acts) != CELL_ACTIVATIONS[cell] * d or any(
                a not in RECURRENT_ACTIVATIONS for a in acts):
            raise VerifyException(f"activations must be {CELL_ACTIVATIONS[cell] * d} of "
                                  f"{', '.join(RECURRENT_ACTIVATIONS)}, got {list(acts)}")
        state = (b, d, h) if self.batch_major else (d, b, h)
        expected = {"bias": (d, 2 * gates * h), "sequence_lens": (b,), "initial_h": state,
                    "initial_c": state, "peepholes": (d, 3 * h)}
        for what, shape in expected.items():
            value = getattr(self, what)
            if value is not None and tensor_shape(value.type, what) != shape:
                raise VerifyException(f"{what} shape {list(value.type.get_shape())} must be "
                                      f"{list(shape)}")
        if cell != "lstm" and (self.initial_c or self.peepholes or self.y_c or self.input_forget):
            raise VerifyException("initial_c, peepholes, y_c and input_forget are LSTM only")
        if cell == "lstm" and self.y_c is None:
            raise VerifyException("an lstm has a y_c result")
        if cell != "gru" and self.linear_before_reset:
            raise VerifyException("linear_before_reset is GRU only")
        if self.clip is not None and not (isinstance(self.clip.type, Float32Type)
                                          and self.clip_value > 0):
            raise VerifyException("clip must be a positive f32")
        if self.sequence_lens is not None and not isinstance(
                self.sequence_lens.type.get_element_type(), IntegerType):
            raise VerifyException("sequence_lens must be integers")
        y = (b, s, d, h) if self.batch_major else (s, d, b, h)
        for what, value, shape in (("y", self.y, y), ("y_h", self.y_h, state),
                                   ("y_c", self.y_c, state)):
            if value is not None and tensor_shape(value.type, what) != shape:
                raise VerifyException(f"{what} shape {list(value.type.get_shape())} must be "
                                      f"{list(shape)}")
        floats = [v for v in (*self.operands, *self.results) if v is not self.sequence_lens]
        if any(not isinstance(v.type.get_element_type(), Float32Type) for v in floats):
            raise VerifyException("operands and results must be f32 (sequence_lens: integers)")


def default_activations(cell: str, directions: int) -> list[str]:
    """ONNX's default gate functions of `cell`, for each direction."""
    per_direction = {"lstm": ["sigmoid", "tanh", "tanh"], "gru": ["sigmoid", "tanh"],
                     "rnn": ["tanh"]}[cell]
    return per_direction * directions
