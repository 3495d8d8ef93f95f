"""The ``graph`` dialect's data-movement ops.

They move or copy elements and compute nothing. Shapes are static, so what ONNX passes as
constant int64 inputs (a Reshape's shape, a Slice's starts, a Pad's pads) is either implied
by the result type or a property, normalized by the frontend (non-negative axes, one
entry per dim):

    %r = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %t = graph.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
    %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    %p, %q = graph.split %x {axis = 1 : i64} : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x5xf32>)
    %s = graph.slice %x {starts = array<i64: 0, 9>, steps = array<i64: 1, -2>} : tensor<4x10xf32> -> tensor<4x5xf32>
    %g = graph.gather %x {axis = 0 : i64, indices = array<i64: 2, 0>} : tensor<3x4xf32> -> tensor<2x4xf32>
    %e = graph.expand %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
    %d = graph.pad %x {pads = array<i64: 0, 1, 0, 2>, mode = "reflect"} : tensor<3x4xf32> -> tensor<3x7xf32>
    %l = graph.tile %x : tensor<2x3xf32> -> tensor<4x9xf32>

``graph.reshape`` covers ONNX Reshape, Flatten, Squeeze and Unsqueeze: the result type says
everything. Identity and Dropout (inference) import as no op at all. ``graph.resize`` is in
``resize.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.graph.shapes import broadcast_shapes, tensor_shape
from tmlir.dialects.graph.traits import AnyElementType, Injective, NoOpWhen

__all__ = [
    "UnaryShapeOp",
    "PAD_MODES",
    "DEPTH_TO_SPACE_MODES",
    "ConcatOp",
    "DepthToSpaceOp",
    "SpaceToDepthOp",
    "ExpandOp",
    "GatherOp",
    "PadOp",
    "ReshapeOp",
    "SliceOp",
    "SplitOp",
    "TileOp",
    "TransposeOp",
    "TriluOp",
]

PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _values(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def _same_element_type(*types: Attribute) -> None:
    if len({t.get_element_type() for t in types}) != 1:  # type: ignore[attr-defined]
        raise VerifyException("operands and results must have the same element type")


def _check_result(result: Attribute, expected: Sequence[int]) -> None:
    out = tensor_shape(result, "result")
    if out != tuple(expected):
        raise VerifyException(f"result shape {list(out)} does not match expected {list(expected)}")


DEPTH_TO_SPACE_MODES = ("DCR", "CRD")


class UnaryShapeOp(IRDLOperation):
    """One tensor in, one tensor out: ``$input attr-dict : type -> type``."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Injective())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TensorType,
                 properties: dict[str, Attribute] | None = None) -> None:
        super().__init__(operands=[input], result_types=[result_type],
                         properties=properties or {})

    def shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(input shape, result shape), both checked static, one element type."""
        _same_element_type(self.input.type, self.result.type)
        return tensor_shape(self.input.type, "input"), tensor_shape(self.result.type, "result")


@irdl_op_definition
class ReshapeOp(UnaryShapeOp):
    """The same elements in the same (row-major) order, in another shape."""

    name = "graph.reshape"
    traits = traits_def(NoOpWhen())

    def verify_(self) -> None:
        shape, out = self.shapes()
        if math.prod(shape) != math.prod(out):
            raise VerifyException(f"cannot reshape {math.prod(shape)} elements "
                                  f"({list(shape)}) into {list(out)}")


@irdl_op_definition
class TransposeOp(UnaryShapeOp):
    """``result[i] = input[j]`` with ``j[perm[k]] = i[k]``: dim ``k`` of the result is dim
    ``perm[k]`` of the input."""

    name = "graph.transpose"
    traits = traits_def(AnyElementType())
    perm = prop_def(DenseArrayBase.constr(i64))

    def __init__(self, input: SSAValue, result_type: TensorType, perm: Sequence[int]) -> None:
        super().__init__(input, result_type, {"perm": _i64_array(perm)})

    @property
    def permutation(self) -> tuple[int, ...]:
        return _values(self.perm)

    def verify_(self) -> None:
        shape, _ = self.shapes()
        perm = self.permutation
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(f"perm {list(perm)} is not a permutation of the "
                                  f"{len(shape)} input dims")
        _check_result(self.result.type, [shape[p] for p in perm])


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """The inputs one after another along ``axis``; the other dims agree."""

    name = "graph.concat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), Injective(), AnyElementType(),
                        NoOpWhen(lambda op: len(op.operands) == 1))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $result)"

    def __init__(self, inputs: Sequence[SSAValue], result_type: TensorType, axis: int) -> None:
        super().__init__(operands=[list(inputs)], result_types=[result_type],
                         properties={"axis": IntegerAttr(axis, i64)})

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("expected at least one input")
        _same_element_type(*(v.type for v in self.inputs), self.result.type)
        shapes = [tensor_shape(v.type, f"input #{i}") for i, v in enumerate(self.inputs)]
        _check_segments(shapes, self.axis_value, "input")
        out = list(shapes[0])
        out[self.axis_value] = sum(s[self.axis_value] for s in shapes)
        _check_result(self.result.type, out)


@irdl_op_definition
class SplitOp(IRDLOperation):
    """The input cut along ``axis`` into consecutive pieces, one per result (their
    extents along ``axis`` are the split sizes)."""

    name = "graph.split"
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure(), AnyElementType(), NoOpWhen(lambda op: len(op.results) == 1))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` functional-type($input, $outputs)"

    def __init__(self, input: SSAValue, result_types: Sequence[TensorType], axis: int) -> None:
        super().__init__(operands=[input], result_types=[list(result_types)],
                         properties={"axis": IntegerAttr(axis, i64)})

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        if not self.outputs:
            raise VerifyException("expected at least one result")
        _same_element_type(self.input.type, *(v.type for v in self.outputs))
        shape = tensor_shape(self.input.type, "input")
        shapes = [tensor_shape(v.type, f"result #{i}") for i, v in enumerate(self.outputs)]
        _check_segments([shape, *shapes], self.axis_value, "result")
        total = sum(s[self.axis_value] for s in shapes)
        if total != shape[self.axis_value]:
            raise VerifyException(f"the results' extents along axis {self.axis_value} add up "
                                  f"to {total}, not the input's {shape[self.axis_value]}")


def _check_segments(shapes: Sequence[tuple[int, ...]], axis: int, what: str) -> None:
    """Same rank, `axis` in range, every dim but `axis` equal."""
    rank = len(shapes[0])
    if not 0 <= axis < rank:
        raise VerifyException(f"axis {axis} is out of range for rank {rank}")
    for i, s in enumerate(shapes[1:]):
        if len(s) != rank or any(a != b for d, (a, b) in enumerate(zip(s, shapes[0]))
                                 if d != axis):
            raise VerifyException(f"{what} #{i} has shape {list(s)}, which differs from "
                                  f"{list(shapes[0])} outside axis {axis}")


@irdl_op_definition
class SliceOp(UnaryShapeOp):
    """``result[i] = input[starts + i * steps]`` (per dim): every dim starts somewhere and
    steps by a nonzero, possibly negative, amount; the result type gives the counts."""

    name = "graph.slice"
    starts = prop_def(DenseArrayBase.constr(i64))
    steps = prop_def(DenseArrayBase.constr(i64))
    traits = traits_def(AnyElementType(), NoOpWhen(lambda op: op.is_identity()))

    def __init__(self, input: SSAValue, result_type: TensorType, starts: Sequence[int],
                 steps: Sequence[int]) -> None:
        super().__init__(input, result_type,
                         {"starts": _i64_array(starts), "steps": _i64_array(steps)})

    def is_identity(self) -> bool:
        """Whether every dim of more than one element starts at 0 with step 1."""
        return all(n <= 1 or (start, step) == (0, 1) for n, start, step in
                   zip(self.input.type.get_shape(), _values(self.starts), _values(self.steps)))

    def verify_(self) -> None:
        shape, out = self.shapes()
        starts, steps = _values(self.starts), _values(self.steps)
        if len(starts) != len(shape) or len(steps) != len(shape):
            raise VerifyException(f"expected {len(shape)} starts and steps (one per dim), got "
                                  f"{len(starts)} and {len(steps)}")
        if len(out) != len(shape):
            raise VerifyException(f"result rank {len(out)} differs from input rank {len(shape)}")
        for d, (n, count, start, step) in enumerate(zip(shape, out, starts, steps)):
            if step == 0:
                raise VerifyException(f"step of dim {d} must not be 0")
            last = start + (count - 1) * step
            if count and not (0 <= start < n and 0 <= last < n):
                raise VerifyException(f"dim {d}: {count} elements from {start} by {step} leave "
                                      f"the input extent {n}")


@irdl_op_definition
class GatherOp(UnaryShapeOp):
    """ONNX ``Gather`` with constant indices: ``result[a..., i..., b...] =
    input[a..., indices[i...], b...]`` with ``a`` the dims before ``axis``; the indices'
    shape is the part of the result shape that replaces ``axis`` (rank ``result - input +
    1``), their values (row-major, non-negative) the ``indices`` property."""

    name = "graph.gather"
    traits = traits_def(AnyElementType())
    axis = prop_def(IntegerAttr)
    indices = prop_def(DenseArrayBase.constr(i64))

    def __init__(self, input: SSAValue, result_type: TensorType, axis: int,
                 indices: Sequence[int]) -> None:
        super().__init__(input, result_type, {"axis": IntegerAttr(axis, i64),
                                              "indices": _i64_array(indices)})

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def index_values(self) -> tuple[int, ...]:
        return _values(self.indices)

    def index_shape(self) -> tuple[int, ...]:
        shape, out = self.shapes()
        axis = self.axis_value
        return out[axis:axis + len(out) - len(shape) + 1]

    def verify_(self) -> None:
        shape, out = self.shapes()
        axis = self.axis_value
        if not 0 <= axis < len(shape):
            raise VerifyException(f"axis {axis} is out of range for rank {len(shape)}")
        if len(out) < len(shape) - 1:
            raise VerifyException(f"result rank {len(out)} is below input rank {len(shape)} - 1")
        index_shape = self.index_shape()
        _check_result(self.result.type, [*shape[:axis], *index_shape, *shape[axis + 1:]])
        indices = self.index_values
        if len(indices) != math.prod(index_shape):
            raise VerifyException(f"expected {math.prod(index_shape)} indices for index shape "
                                  f"{list(index_shape)}, got {len(indices)}")
        bad = next((i for i in indices if not 0 <= i < shape[axis]), None)
        if bad is not None:
            raise VerifyException(f"index {bad} is out of range for axis {axis} of extent "
                                  f"{shape[axis]}")


@irdl_op_definition
class ExpandOp(UnaryShapeOp):
    """The input broadcast (numpy rules) to the result shape."""

    name = "graph.expand"
    traits = traits_def(AnyElementType(), NoOpWhen())

    def verify_(self) -> None:
        shape, out = self.shapes()
        try:
            fits = len(shape) <= len(out) and broadcast_shapes(shape, out) == out
        except VerifyException:
            fits = False
        if not fits:
            raise VerifyException(f"input shape {list(shape)} does not broadcast to the result "
                                  f"shape {list(out)}")


@irdl_op_definition
class PadOp(UnaryShapeOp):
    """The input with ``pads`` (the begins of every dim, then the ends) added around it.

    ``mode``: ``constant`` (default; ``value``, default 0, fills the border; negative pads
    crop), ``reflect`` (mirrored without repeating the edge; pads below the extent),
    ``edge`` (the edge element repeated) or ``wrap`` (periodic); those need pads >= 0.
    """

    name = "graph.pad"
    pads = prop_def(DenseArrayBase.constr(i64))
    traits = traits_def(AnyElementType(), NoOpWhen(lambda op: not any(_values(op.pads))))
    mode = opt_prop_def(StringAttr)
    value = opt_prop_def(FloatAttr)

    def __init__(self, input: SSAValue, result_type: TensorType, pads: Sequence[int],
                 mode: str = "constant", value: float = 0.0) -> None:
        properties: dict[str, Attribute] = {"pads": _i64_array(pads)}
        if mode != "constant":
            properties["mode"] = StringAttr(mode)
        if value != 0.0:
            properties["value"] = FloatAttr(value, Float32Type())
        super().__init__(input, result_type, properties)

    @property
    def mode_value(self) -> str:
        return "constant" if self.mode is None else self.mode.data

    @property
    def pad_value(self) -> float:
        return 0.0 if self.value is None else self.value.value.data

    def pad_pairs(self) -> list[tuple[int, int]]:
        """(begin, end) per dim."""
        pads = _values(self.pads)
        rank = len(pads) // 2
        return list(zip(pads[:rank], pads[rank:]))

    def verify_(self) -> None:
        shape, _ = self.shapes()
        pads, mode = _values(self.pads), self.mode_value
        if len(pads) != 2 * len(shape):
            raise VerifyException(f"expected {2 * len(shape)} pads (begins, then ends), "
                                  f"got {len(pads)}")
        if mode not in PAD_MODES:
            raise VerifyException(f"unknown mode \"{mode}\", expected one of "
                                  f"{', '.join(PAD_MODES)}")
        if self.value is not None and mode != "constant":
            raise VerifyException(f"a pad value needs mode \"constant\", not \"{mode}\"")
        if self.value is not None and not isinstance(self.value.type, Float32Type):
            raise VerifyException(f"value must be an f32 float, got {self.value.type}")
        pairs = self.pad_pairs()
        for d, (n, (begin, end)) in enumerate(zip(shape, pairs)):
            if mode != "constant" and min(begin, end) < 0:
                raise VerifyException(f"mode \"{mode}\" needs pads >= 0, got {begin}, {end} "
                                      f"for dim {d}")
            if mode == "reflect" and max(begin, end) > n - 1:
                raise VerifyException(f"mode \"reflect\" needs pads below the extent {n} of "
                                      f"dim {d}, got {begin}, {end}")
            if mode in ("edge", "wrap") and n == 0 and begin + end > 0:
                raise VerifyException(f"mode \"{mode}\" cannot pad the empty dim {d}")
        _check_result(self.result.type,
                      [n + begin + end for n, (begin, end) in zip(shape, pairs)])


@irdl_op_definition
class TileOp(UnaryShapeOp):
    """The input repeated along every dim: ``result[i] = input[i % shape]``; each result
    extent is a multiple of the input's."""

    name = "graph.tile"
    traits = traits_def(AnyElementType(), NoOpWhen())

    def verify_(self) -> None:
        shape, out = self.shapes()
        if len(out) != len(shape) or any(
                (o % n if n else o) != 0 for n, o in zip(shape, out)):
            raise VerifyException(f"result shape {list(out)} is not a tiling of the input "
                                  f"shape {list(shape)}")


class _BlockRearrangeOp(UnaryShapeOp):
    """Moves ``blocksize x blocksize`` spatial blocks of an NCHW tensor to or from its
    channels, in ``mode`` DCR or CRD; `expected` is the result shape of an input shape."""

    blocksize = prop_def(IntegerAttr)
    mode = prop_def(StringAttr)
    traits = traits_def(AnyElementType(), NoOpWhen(lambda op: op.block == 1))

    @property
    def block(self) -> int:
        return self.blocksize.value.data

    def __init__(self, input: SSAValue, result_type: TensorType, blocksize: int,
                 mode: str = "DCR") -> None:
        super().__init__(input, result_type, {"blocksize": IntegerAttr(blocksize, i64),
                                              "mode": StringAttr(mode)})

    def expected(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    def verify_(self) -> None:
        if self.mode.data not in DEPTH_TO_SPACE_MODES:
            raise VerifyException(f"mode must be \"DCR\" or \"CRD\", got \"{self.mode.data}\"")
        shape, _ = self.shapes()
        if len(shape) != 4:
            raise VerifyException(f"input must be 4-D (NCHW), got shape {list(shape)}")
        if self.block < 1:
            raise VerifyException(f"blocksize must be positive, got {self.block}")
        _check_result(self.result.type, self.expected(shape))


@irdl_op_definition
class DepthToSpaceOp(_BlockRearrangeOp):
    """ONNX ``DepthToSpace``: ``result[n, c, h * b + i, w * b + j] = input[n, k, h, w]``
    with blocksize ``b``; ``mode = "DCR"`` (depth, column, row: the default) reads channel
    ``k = (i * b + j) * C + c``, ``"CRD"`` channel ``k = c * b * b + i * b + j``, where ``C``
    is the result's channel count (the input's divided by ``b * b``)."""

    name = "graph.depth_to_space"

    def expected(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        n, c, h, w = shape
        b = self.block
        if c % (b * b):
            raise VerifyException(f"{c} input channels are not a multiple of blocksize^2 = {b * b}")
        return (n, c // (b * b), h * b, w * b)


@irdl_op_definition
class SpaceToDepthOp(_BlockRearrangeOp):
    """ONNX ``SpaceToDepth``, the inverse of ``depth_to_space`` in the same mode:
    ``result[n, k, h, w] = input[n, c, h * b + i, w * b + j]`` with blocksize ``b``, where
    ``k = (i * b + j) * C + c`` in ``DCR`` mode (the default) and ``c * b * b + i * b + j``
    in ``CRD`` (``C`` input channels)."""

    name = "graph.space_to_depth"

    def expected(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        n, c, h, w = shape
        b = self.block
        if h % b or w % b:
            raise VerifyException(f"spatial dims {h}x{w} are not multiples of blocksize {b}")
        return (n, c * b * b, h // b, w // b)



def _keeps_all(op: TriluOp) -> bool:
    """Whether the mask keeps every element: no (row, column) has ``column - row`` on the
    wrong side of ``k``."""
    rows, cols = tensor_shape(op.input.type, "input")[-2:]
    k = op.k_value
    return (k <= 1 - rows) if op.upper_value else (k >= cols - 1)


@irdl_op_definition
class TriluOp(UnaryShapeOp):
    """ONNX ``Trilu`` on the last two dims: ``upper`` keeps the elements with ``column -
    row >= k`` (the upper triangle from diagonal ``k``), otherwise those with ``column -
    row <= k``; the others are zero."""

    name = "graph.trilu"
    traits = traits_def(AnyElementType(), NoOpWhen(lambda op: _keeps_all(op)))
    k = prop_def(IntegerAttr)
    upper = prop_def(BoolAttr)

    def __init__(self, input: SSAValue, k: int, upper: bool) -> None:
        super().__init__(input, input.type,  # type: ignore[arg-type]
                         {"k": IntegerAttr(k, i64), "upper": BoolAttr.from_bool(upper)})

    @property
    def k_value(self) -> int:
        return self.k.value.data

    @property
    def upper_value(self) -> bool:
        return bool(self.upper.value.data)

    def verify_(self) -> None:
        shape, out = self.shapes()
        if len(shape) < 2 or out != shape:
            raise VerifyException(f"input must have rank >= 2 and the result its shape, got "
                                  f"{list(shape)} -> {list(out)}")
