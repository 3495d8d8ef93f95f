"""The ``graph`` dialect's windowed normalizations: Lp pooling and local response normalization.

    %p = graph.lp_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
             pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, p = 2 : i64}
             : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
    %y = graph.lrn %x {size = 5 : i64, alpha = 9.999999e-05 : f32, beta = 7.500000e-01 : f32,
             bias = 1.000000e+00 : f32} : tensor<1x16x7x7xf32>

``graph.lp_pool`` is a pooling (``PoolOp``, ``reductions.py``: the same window attributes
and output shape) of ``(sum |x|^p)^(1/p)`` over each window; padding counts as 0, so it
takes no part. ``graph.lrn`` normalizes each element of an ``(N, C, D1, ..., Dk)`` tensor by
the squares of its neighbours across channels, as ONNX's ``LRN``::

    square_sum[n, c, d] = sum(x[n, j, d] ** 2 for j in [c - floor((size - 1) / 2),
                                                        c + ceil((size - 1) / 2)] inside [0, C))
    y = x / (bias + alpha / size * square_sum) ** beta

The other normalizations (instance, group, mean-variance, Lp) are compositions of
``graph.layer_norm``, reductions and elementwise ops, made by the frontend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import Float16Type, Float32Type, FloatAttr, IntegerAttr, TensorType, i64
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.graph.reductions import PoolOp
from tmlir.dialects.graph.shapes import tensor_shape

__all__ = ["LRNOp", "LpPoolOp", "lrn_window"]


@irdl_op_definition
class LpPoolOp(PoolOp):
    """``(sum |x|^p)^(1/p)`` over each window, ``p >= 1``; padding takes no part."""

    name = "graph.lp_pool"
    p = prop_def(IntegerAttr)

    def __init__(self, input: SSAValue, result_type: TensorType, kernel_shape: Sequence[int],
                 strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                 p: int, ceil_mode: bool = False) -> None:
        super().__init__(input, result_type, kernel_shape, strides, pads, dilations, ceil_mode)
        self.properties["p"] = IntegerAttr(p, i64)

    @property
    def p_value(self) -> int:
        return self.p.value.data

    def verify_(self) -> None:
        super().verify_()
        if self.p_value < 1:
            raise VerifyException(f"p must be >= 1, got {self.p_value}")
        if not isinstance(self.input.type.get_element_type(), Float32Type | Float16Type):
            raise VerifyException(f"expected f32 or f16 tensors, got {self.input.type}")


def lrn_window(size: int) -> tuple[int, int]:
    """The channels below and above the centre that an LRN window of `size` spans (ONNX:
    ``floor((size - 1) / 2)`` below, ``ceil((size - 1) / 2)`` above)."""
    return (size - 1) // 2, size // 2


@irdl_op_definition
class LRNOp(IRDLOperation):
    """``x / (bias + alpha / size * square_sum) ** beta``, the squares summed over a window
    of ``size`` channels around each element (see the module docstring)."""

    name = "graph.lrn"
    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)
    size = prop_def(IntegerAttr)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    bias = prop_def(FloatAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: SSAValue, size: int, alpha: float, beta: float,
                 bias: float) -> None:
        f32 = Float32Type()
        super().__init__(operands=[input], result_types=[input.type], properties={
            "size": IntegerAttr(size, i64), "alpha": FloatAttr(alpha, f32),
            "beta": FloatAttr(beta, f32), "bias": FloatAttr(bias, f32)})

    def parameters(self) -> tuple[int, float, float, float]:
        """(size, alpha, beta, bias) as Python values (the floats f32-rounded)."""
        return (self.size.value.data, self.alpha.value.data, self.beta.value.data,
                self.bias.value.data)

    def verify_(self) -> None:
        shape = tensor_shape(self.input.type, "input")
        if len(shape) < 2:
            raise VerifyException(f"input must be (N, C, ...), got rank {len(shape)}")
        if not isinstance(self.input.type.get_element_type(), Float32Type | Float16Type):
            raise VerifyException(f"expected f32 or f16 tensors, got {self.input.type}")
        if self.size.value.data < 1:
            raise VerifyException(f"size must be >= 1, got {self.size.value.data}")
        for name in ("alpha", "beta", "bias"):
            attr = getattr(self, name)
            if not isinstance(attr.type, Float32Type):
                raise VerifyException(f"{name} must be an f32 float, got {attr.type}")
