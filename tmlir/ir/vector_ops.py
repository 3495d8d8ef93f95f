"""The vector load that tm and tmgpu share: ``width`` consecutive elements of a global
buffer in one 8- or 16-byte access, as a base class each dialect names (like ShuffleOpBase).

    %w0, %w1, %w2, %w3 = tm.load_vector x4 %W[%n, %k] : memref<64x64xf32>

reads ``W[n, k]``, ..., ``W[n, k + 3]``, one result each, in the buffer's element type.
The CUDA printer reads them with one ``*reinterpret_cast<const float4*>(&W[idx])`` (a
128-bit ``LDG.E.128``; ``float2`` for two f32, ``uint4``/``uint2`` for eight/four 16-bit
floats), which needs the address aligned to the vector's bytes. What the verifier checks:

* the element type and width: f32 in 2 or 4, f16 and bf16 in 4 or 8 (8 or 16 bytes);
* the buffer is global (a kernel argument: the runtimes give every buffer at least 16-byte
  alignment, ``runtime/memory_plan.py``, ``runtime/runners.py``);
* the rows are whole vectors: the last dimension's extent is a multiple of the width,
  unless it is the only dimension past extent 1 (a row of 1001 elements, say, has vectors
  only in its first), so every row starts aligned;
* a constant last index is a multiple of the width, its vector within the row.

A last index computed at run time must be a multiple of the width too: the template that
emits the load promises it, and the emu sanitizer (``TMLIR_EMU_CHECK=1``) checks the
alignment and bounds of every vector it loads. At the tm level, dimensions before the last
may be guarded (``guard [0]``: the whole vector reads as zeros when that index is out of
range); the last may not (load a tail with scalar ``tm.load``s). tmgpu's form has no guard
(``convert-tm-to-gpu`` puts it in an ``scf.if``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    MemRefType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    operand_def,
    opt_prop_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tmlir.ir.kernel_ops import memref_shape
from tmlir.ir.syntax import dims_array, parse_access, print_access
from tmlir.ir.tensor_core_ops import kernel_argument

#: The vector widths of each element type (8- and 16-byte vectors), by type class.
VECTOR_WIDTHS: dict[type[Attribute], tuple[int, ...]] = {
    Float32Type: (2, 4), Float16Type: (4, 8), BFloat16Type: (4, 8),
}


def vector_widths(element: Attribute) -> tuple[int, ...]:
    """The widths a vector load of `element` may have (none: no vector load)."""
    return VECTOR_WIDTHS.get(type(element), ())


def constant_index(value: SSAValue) -> int | None:
    """The value of an index defined by an ``arith.constant``, else None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


class LoadVectorOpBase(IRDLOperation):
    """``%v0, ..., %vN = <op> xN %buf[%i, ..., %k] [guard [...]] : memref<...>``: the N
    elements ``buf[i, ..., k + j]`` of a global buffer in one access (see the module
    docstring). Each dialect names its kernel op (`kernel_type`) and whether it has guards."""

    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    guard = opt_prop_def(DenseArrayBase)
    res = var_result_def(AnyAttr())

    #: Whether dimensions before the last may be guarded (tm: yes; tmgpu: no).
    GUARDED: ClassVar[bool] = True

    @classmethod
    def kernel_type(cls) -> type[Operation]:
        """The kernel op of this op's dialect (its arguments are the global buffers)."""
        raise NotImplementedError

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue], width: int,
                 guard: Sequence[int] = ()) -> None:
        assert isinstance(memref.type, MemRefType)
        properties = {"guard": dims_array(guard)} if guard else {}
        super().__init__(operands=[memref, indices], result_types=[[memref.type.element_type] * width],
                         properties=properties)

    @property
    def width(self) -> int:
        return len(self.res)

    @property
    def guarded_dims(self) -> tuple[int, ...]:
        return self.guard.get_values() if self.guard is not None else ()

    def verify_(self) -> None:
        shape = memref_shape(self.memref.type, f"'{self.name}': the buffer")
        element = self.memref.type.element_type
        width = self.width
        widths = vector_widths(element)
        if not widths:
            raise VerifyException(f"'{self.name}': vector loads read f32, f16 or bf16 elements, got {element}")
        if width not in widths:
            raise VerifyException(f"'{self.name}': a vector of {element} has {' or '.join(map(str, widths))} "
                                  f"elements, got {width}")
        if any(r.type != element for r in self.res):
            raise VerifyException(f"'{self.name}': every result must have the buffer's element type {element}")
        if not kernel_argument(self.memref, self.kernel_type()):
            raise VerifyException(f"'{self.name}': the buffer must be global (an argument of the "
                                  f"{self.kernel_type().name})")
        if len(self.indices) != len(shape) or not shape:
            raise VerifyException(f"'{self.name}': expected {len(shape)} indices for {self.memref.type}, "
                                  f"got {len(self.indices)}")
        dims = self.guarded_dims
        if dims and not self.GUARDED:
            raise VerifyException(f"'{self.name}' has no guard (convert-tm-to-gpu puts guards in scf.if)")
        if len(set(dims)) != len(dims) or any(not 0 <= d < len(shape) - 1 for d in dims):
            raise VerifyException(f"'{self.name}': guard dimensions {list(dims)} must be distinct and in "
                                  f"[0, {len(shape) - 1}) (the last dimension cannot be guarded: load a "
                                  "tail with scalar loads)")
        row = shape[-1]
        if row % width and math.prod(shape[:-1]) > 1:
            raise VerifyException(f"'{self.name}': rows of {row} elements are not whole vectors of {width}: "
                                  "rows after the first would not be aligned")
        last = constant_index(self.indices[-1])
        if last is not None and (last % width or last + width > row):
            raise VerifyException(f"'{self.name}': the last index {last} must be a multiple of the width "
                                  f"{width} with its vector inside the row of {row}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" x{self.width} ")
        print_access(printer, self.memref, self.indices)
        if self.guarded_dims:
            printer.print_string(f" guard [{', '.join(map(str, self.guarded_dims))}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)

    @classmethod
    def parse(cls, parser: Parser):
        pos = parser.pos
        word = parser.parse_identifier(" (the vector width, e.g. x4)")
        if not (word.startswith("x") and word[1:].isdigit() and int(word[1:]) > 0):
            parser.raise_error(f"expected the vector width as x2, x4 or x8, got '{word}'", pos, parser.pos)
        width = int(word[1:])
        memref, indices = parse_access(parser)
        properties = {}
        if parser.parse_optional_keyword("guard"):
            dims = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False))
            properties["guard"] = dims_array(dims)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        if not isinstance(type, MemRefType):
            parser.raise_error(f"expected a memref type, got {type}")
        return cls.create(
            operands=[parser.resolve_operand(memref, type),
                      *(parser.resolve_operand(i, IndexType()) for i in indices)],
            result_types=[type.element_type] * width,
            properties=properties,
            attributes=attrs,
        )
