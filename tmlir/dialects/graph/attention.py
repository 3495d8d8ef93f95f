"""``graph.attention``: scaled dot-product attention as one op (``graph-fuse-attention``
forms it from the matmul, scale, mask, softmax and matmul that exporters write).

    %o = graph.attention %q, %k, %v, %mask {scale = 1.250000e-01 : f64, causal}
           : (tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>,
              tensor<1x1x128x128xf32>) -> tensor<1x12x128x64xf32>

Operands: ``q`` ``[..., Sq, D]``; ``k`` as stored, ``[..., Sk, D]``, or -- with
``k_transposed`` -- ``kᵀ`` ``[..., D, Sk]``; ``v`` ``[..., Sk, Dv]``; an optional additive
``bias`` (the mask) that broadcasts to the scores ``[..., Sq, Sk]``. The batch dims of
``q``, ``k`` and ``v`` broadcast numpy-style to the result's ``[..., Sq, Dv]``. ``q``, ``k``,
``v`` share one float type (f32, f16 or bf16), and so does the result -- or it is f32
where they are f16 or bf16 (``graph-mixed-precision``'s attention: half-precision operands,
f32 math and result); the bias may have another.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.graph.shapes import broadcast_shapes, tensor_shape

__all__ = [
    "AttentionOp",
    "attention_result_type",
    "attention_shape",
]

_FLOATS = (Float32Type, Float16Type, BFloat16Type)
_HALVES = (Float16Type, BFloat16Type)


def attention_shape(q: Sequence[int], k: Sequence[int], v: Sequence[int],
                    k_transposed: bool = False) -> tuple[tuple[int, ...], int, int, int, int]:
    """(batch shape, Sq, Sk, D, Dv) of an attention of operands of these shapes (``k`` as
    ``kᵀ`` with `k_transposed`); VerifyException, one line, where they do not fit."""
    q, k, v = tuple(q), tuple(k), tuple(v)
    for what, shape in (("q", q), ("k", k), ("v", v)):
        if len(shape) < 2:
            raise VerifyException(f"{what} must have rank >= 2, got rank {len(shape)}")
    sq, d = q[-2:]
    d_k, sk = (k[-2], k[-1]) if k_transposed else (k[-1], k[-2])
    sk_v, dv = v[-2:]
    if d_k != d:
        raise VerifyException(f"q has head size D = {d} but k{'ᵀ' if k_transposed else ''} "
                              f"has {d_k}")
    if sk_v != sk:
        raise VerifyException(f"k has Sk = {sk} keys but v has {sk_v}")
    try:
        batch = broadcast_shapes(q[:-2], k[:-2], v[:-2])
    except VerifyException:
        raise VerifyException(f"batch dimensions {list(q[:-2])}, {list(k[:-2])} and {list(v[:-2])} "
                              "of q, k and v do not broadcast") from None
    return batch, sq, sk, d, dv


@irdl_op_definition
class AttentionOp(IRDLOperation):
    """``softmax(scale * q @ kᵀ + bias) @ v`` over the last axis, in one op.

    ONNX reference (opset 18 operators; ``K`` is ``kᵀ`` itself with ``k_transposed``, else
    ``Transpose(k)`` of the last two dims)::

        S = Add(Mul(MatMul(q, K), scale), bias)          # [..., Sq, Sk]; no Add without bias
        S = Where(Trilu(ones(Sq, Sk), upper=0), S, -inf)  # only with `causal`
        P = Softmax(S, axis=-1)
        P = Where(IsNaN(P), 0, P)                         # only with `zero_masked_rows`
        result = MatMul(P, v)                             # [..., Sq, Dv]

    ``causal`` masks the keys after each query, aligned at the top left (query ``i`` sees
    keys ``j <= i``, as ONNX ``Attention``'s ``is_causal`` and torch's
    ``scaled_dot_product_attention``). A softmax row is NaN where every score of the row is
    ``-inf`` (a fully masked row) or one is NaN or ``+inf``; such a row gives NaN, as
    softmax does, or 0 with ``zero_masked_rows`` (the NaN guard torch's exporter writes
    after the softmax). ``scale`` is an f64 (the product of the exporter's scalar scales).
    """

    name = "graph.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    scale = prop_def(FloatAttr)
    causal = opt_prop_def(UnitAttr)
    k_transposed = opt_prop_def(UnitAttr)
    zero_masked_rows = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$q `,` $k `,` $v (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    def __init__(self, q: SSAValue, k: SSAValue, v: SSAValue, bias: SSAValue | None = None, *,
                 scale: float, causal: bool = False, k_transposed: bool = False,
                 zero_masked_rows: bool = False, result_type: TensorType | None = None) -> None:
        """The attention of `q`, `k`, `v` (and `bias`); its result type is inferred from
        the operands' shapes (`attention_shape`) unless given."""
        if result_type is None:
            result_type = attention_result_type(q.type, k.type, v.type, k_transposed)
        props: dict[str, Attribute] = {"scale": FloatAttr(scale, Float64Type())}
        for flag, on in (("causal", causal), ("k_transposed", k_transposed),
                         ("zero_masked_rows", zero_masked_rows)):
            if on:
                props[flag] = UnitAttr()
        super().__init__(operands=[q, k, v, [bias] if bias is not None else []],
                         result_types=[result_type], properties=props)

    @property
    def scale_value(self) -> float:
        return self.scale.value.data

    def problem(self) -> tuple[tuple[int, ...], int, int, int, int]:
        """(batch shape, Sq, Sk, D, Dv)."""
        return attention_shape(tensor_shape(self.q.type, "q"), tensor_shape(self.k.type, "k"),
                               tensor_shape(self.v.type, "v"), self.k_transposed is not None)

    def verify_(self) -> None:
        batch, sq, sk, _, dv = self.problem()
        out = tensor_shape(self.result.type, "result")
        if out != (*batch, sq, dv):
            raise VerifyException(f"result shape {list(out)} does not match expected {[*batch, sq, dv]}")
        if not isinstance(self.scale.type, Float64Type):
            raise VerifyException(f"scale must be an f64, got {self.scale.type}")
        if not math.isfinite(self.scale_value):
            raise VerifyException(f"scale must be finite, got {self.scale_value}")
        element = self.q.type.get_element_type()  # type: ignore[attr-defined]
        if not isinstance(element, _FLOATS):
            raise VerifyException(f"q must have element type f32, f16 or bf16, got {element}")
        for what, value in (("k", self.k), ("v", self.v)):
            if value.type.get_element_type() != element:  # type: ignore[attr-defined]
                raise VerifyException(f"q, k, v and result must have the same element type, got "
                                      f"{element} and {value.type.get_element_type()} ({what})")  # type: ignore[attr-defined]
        result = self.result.type.get_element_type()  # type: ignore[attr-defined]
        if result != element and not (isinstance(result, Float32Type) and isinstance(element, _HALVES)):
            raise VerifyException(f"q, k, v and result must have the same element type (or an f32 result of "
                                  f"f16/bf16 q, k, v), got {element} and {result} (result)")
        if self.bias is not None:
            bias = tensor_shape(self.bias.type, "bias")
            scores = (*batch, sq, sk)
            try:
                fits = len(bias) <= len(scores) and broadcast_shapes(bias, scores) == scores
            except VerifyException:
                fits = False
            if not fits:
                raise VerifyException(f"bias shape {list(bias)} does not broadcast to the scores' "
                                      f"shape {list(scores)}")
            if not isinstance(self.bias.type.get_element_type(), _FLOATS):  # type: ignore[attr-defined]
                raise VerifyException("bias must have element type f32, f16 or bf16, got "
                                      f"{self.bias.type.get_element_type()}")  # type: ignore[attr-defined]


def attention_result_type(q: Attribute, k: Attribute, v: Attribute, k_transposed: bool = False) -> TensorType:
    """The result type of an attention of operands of these types: ``[..., Sq, Dv]`` of
    ``q``'s element type."""
    batch, sq, _, _, dv = attention_shape(tensor_shape(q, "q"), tensor_shape(k, "k"),
                                          tensor_shape(v, "v"), k_transposed)
    assert isinstance(q, TensorType)
    return TensorType(q.get_element_type(), [*batch, sq, dv])
