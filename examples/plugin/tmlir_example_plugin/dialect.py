"""The ``example`` dialect: one graph-level op, ``example.swish``.

    %y = example.swish %x : tensor<2x3xf32>

computes ``x * sigmoid(x)`` elementwise on an f32 tensor; the result has the operand's type.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class SwishOp(IRDLOperation):
    """``example.swish %x : tensor<...xf32>``: ``x * sigmoid(x)`` per element."""

    name = "example.swish"
    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: SSAValue) -> None:
        super().__init__(operands=[input], result_types=[input.type])

    def verify_(self) -> None:
        kind = self.input.type
        if not isinstance(kind, TensorType) or not isinstance(kind.get_element_type(), Float32Type):
            raise VerifyException(f"example.swish takes a tensor of f32, got {kind}")


Example = Dialect("example", [SwishOp], [])
