"""The global-memory ops that tm and tmgpu share for blocks that talk to each other:
``atomic_add``, ``fence`` and ``load_cg``, as base classes each dialect names (like
ShuffleOpBase).

In: global buffers (kernel arguments). Out: an integer read and incremented atomically,
an ordering point, an element read past the L1 cache. They are what a kernel needs when
the blocks of one launch hand results to each other (split-K: every block stores a
partial sum, the last one to arrive adds them up)::

    tm.store %p, %ws[%s, %t, %r, %tid] : memref<2x6x32x128xf32>
    tm.fence                                           // __threadfence()
    tm.barrier
    %old = tm.atomic_add %counters[%t], %one : memref<6xi32>   // atomicAdd(&counters[t], 1)
    ...
    %q = tm.load_cg %ws[%s, %t, %r, %tid] : memref<2x6x32x128xf32>   // __ldcg(&ws[...])

* ``atomic_add`` adds ``%v`` to one ``i32`` element of a global buffer as one indivisible
  step (no other thread of the grid sees the element between the read and the write) and
  returns the value it had before. It orders nothing else: a ``fence`` does.
* ``fence`` (``__threadfence()``, PTX ``fence.sc.gpu``): this thread's global writes before
  it are seen by every thread of the GPU before its global accesses after it. A writer
  stores, fences and then increments a counter; a reader that sees the count fences, then
  reads what the writers stored.
* ``load_cg`` (``__ldcg``, PTX ``ld.global.cg``): a load that is cached in L2 only, never in
  this SM's L1, so it cannot return a stale line that another block overwrote since; use it
  for data other blocks of the same launch wrote. Elements: f32, f64, i32 or i64.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import Float32Type, Float64Type, IndexType, MemRefType, i32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import AnyAttr, IRDLOperation, operand_def, result_def, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tmlir.ir.kernel_ops import memref_shape
from tmlir.ir.syntax import parse_access, print_access
from tmlir.ir.tensor_core_ops import kernel_argument

#: The element types ``load_cg`` reads (those ``__ldcg`` has overloads for, of the IR's types).
LOAD_CG_ELEMENTS = (Float32Type(), Float64Type(), i32, i64)


class GlobalAccessOp(IRDLOperation):
    """What atomic_add and load_cg share: an access ``%buf[%i, ...]`` to a global buffer,
    a kernel argument of the dialect's kernel op (`kernel_type`). Each op declares its
    ``memref`` and ``indices`` operands first (IRDL orders a subclass's fields first)."""

    @classmethod
    def kernel_type(cls) -> type[Operation]:
        """The kernel op of this op's dialect: the buffer must be one of its arguments."""
        raise NotImplementedError

    def verify_global_access(self) -> tuple[int, ...]:
        shape = memref_shape(self.memref.type, f"'{self.name}': the buffer")
        if not kernel_argument(self.memref, self.kernel_type()):
            raise VerifyException(f"'{self.name}': the buffer must be a global buffer (an argument of "
                                  f"the {self.kernel_type().name})")
        if len(self.indices) != len(shape):
            raise VerifyException(f"'{self.name}': expected {len(shape)} indices for {self.memref.type}, "
                                  f"got {len(self.indices)}")
        return shape


def _resolve(parser: Parser, memref, indices, type: Attribute) -> tuple[SSAValue, list[SSAValue]]:
    if not isinstance(type, MemRefType):
        parser.raise_error(f"expected a memref type, got {type}")
    return (parser.resolve_operand(memref, type),
            [parser.resolve_operand(i, IndexType()) for i in indices])


class AtomicAddOpBase(GlobalAccessOp):
    """``%old = <op> %buf[%i, ...], %v : memref<...xi32>``: ``atomicAdd(&buf[i], v)``, the
    element's value before the add (see the module docstring)."""

    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    value = operand_def(AnyAttr())
    result = result_def(AnyAttr())

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue], value: SSAValue) -> None:
        assert isinstance(memref.type, MemRefType)
        super().__init__(operands=[memref, indices, value], result_types=[memref.type.element_type])

    def verify_(self) -> None:
        self.verify_global_access()
        element = self.memref.type.element_type
        if element != i32:
            raise VerifyException(f"'{self.name}': adds to i32 elements, got {self.memref.type}")
        if self.value.type != element or self.result.type != element:
            raise VerifyException(f"'{self.name}': the added value and the result must be {element}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_access(printer, self.memref, self.indices)
        printer.print_string(", ")
        printer.print_ssa_value(self.value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)

    @classmethod
    def parse(cls, parser: Parser):
        memref, indices = parse_access(parser)
        parser.parse_punctuation(",")
        value = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        buffer, idx = _resolve(parser, memref, indices, type)
        element = type.element_type  # type: ignore[attr-defined]
        return cls.create(operands=[buffer, *idx, parser.resolve_operand(value, element)],
                          result_types=[element], attributes=attrs)


class LoadCgOpBase(GlobalAccessOp):
    """``%v = <op> %buf[%i, ...] : memref<...>``: ``__ldcg(&buf[i])``, a load cached in L2
    only (see the module docstring)."""

    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def(AnyAttr())

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue]) -> None:
        assert isinstance(memref.type, MemRefType)
        super().__init__(operands=[memref, indices], result_types=[memref.type.element_type])

    def verify_(self) -> None:
        self.verify_global_access()
        element = self.memref.type.element_type
        if element not in LOAD_CG_ELEMENTS:
            raise VerifyException(f"'{self.name}': loads f32, f64, i32 or i64 elements, got {self.memref.type}")
        if self.result.type != element:
            raise VerifyException(f"'{self.name}': the result must be the buffer's element type")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_access(printer, self.memref, self.indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)

    @classmethod
    def parse(cls, parser: Parser):
        memref, indices = parse_access(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        buffer, idx = _resolve(parser, memref, indices, type)
        return cls.create(operands=[buffer, *idx], result_types=[type.element_type],  # type: ignore[attr-defined]
                          attributes=attrs)
