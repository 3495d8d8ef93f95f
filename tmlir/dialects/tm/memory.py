"""Buffers and their accesses: ``tm.alloc`` by scope, the guarded ``tm.load`` and ``tm.store``,
``tm.load_vector`` (several consecutive elements of a global buffer in one access), and
what blocks of one launch use to hand each other results through global memory:
``tm.atomic_add``, ``tm.fence`` and ``tm.load_cg`` (semantics: tmlir.ir.global_ops)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    MemRefType,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tmlir.dialects.tm.attributes import (
    DataLayoutAttr,
)
from tmlir.dialects.tm.kernel import KernelOp
from tmlir.ir.global_ops import AtomicAddOpBase, LoadCgOpBase
from tmlir.ir.kernel_ops import (
    InsideKernel,
    enclosing,
    memref_shape,
)
from tmlir.ir.syntax import (
    dims_array,
    parse_access,
    print_access,
)
from tmlir.ir.vector_ops import LoadVectorOpBase
from tmlir.layout import DataLayout, parse_layout_expr

__all__ = [
    "SCOPES", "AllocOp", "AtomicAddOp", "FenceOp", "GuardedAccess", "LoadCgOp", "LoadOp", "LoadVectorOp", "StoreOp",
]


SCOPES = ("global", "shared", "register")


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A buffer of a scope: ``global`` (host side), ``shared`` or ``register`` (in kernels).

    Shared and register buffers may have a data ``layout`` (logical index to storage
    offset, see tmlir.layout); without one they are row-major and dense. A ``global
    zeroed`` buffer is a kernel's counters (see tmlir.ir.kernel_ops): zero before the first
    launch that uses it, left zero by each, never shared with another buffer.
    """

    name = "tm.alloc"
    scope = prop_def(StringAttr)
    layout = opt_prop_def(DataLayoutAttr)
    zeroed = opt_prop_def(UnitAttr)
    result = result_def(MemRefType)

    def __init__(self, scope: str, type: MemRefType, layout: DataLayout | None = None,
                 zeroed: bool = False) -> None:
        properties: dict[str, Attribute] = {"scope": StringAttr(scope)}
        if layout is not None:
            properties["layout"] = DataLayoutAttr(layout)
        if zeroed:
            properties["zeroed"] = UnitAttr()
        super().__init__(properties=properties, result_types=[type])

    @property
    def data_layout(self) -> DataLayout | None:
        return self.layout.layout if self.layout is not None else None

    def verify_(self) -> None:
        scope = self.scope.data
        if scope not in SCOPES:
            raise VerifyException(f"unknown scope '{scope}', expected one of {', '.join(SCOPES)}")
        shape = memref_shape(self.result.type, f"{scope} buffer")
        in_kernel = enclosing(self, KernelOp) is not None
        if in_kernel == (scope == "global"):
            where = "outside" if scope != "global" else "inside"
            raise VerifyException(f"a {scope} buffer cannot be allocated {where} a tm.kernel")
        if self.zeroed is not None and scope != "global":
            raise VerifyException(f"only a global buffer can be zeroed, not a {scope} one")
        layout = self.data_layout
        if layout is not None and scope == "global":
            raise VerifyException("a global buffer cannot have a data layout (only shared and register)")
        if layout is not None and layout.shape != shape:
            raise VerifyException(
                f"layout '{layout}' has shape {'x'.join(map(str, layout.shape))} but the buffer "
                f"is {self.result.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.scope.data}")
        if self.zeroed is not None:
            printer.print_string(" zeroed")
        if self.layout is not None:
            printer.print_string(f" layout({self.layout.layout})")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> AllocOp:
        properties: dict[str, Attribute] = {
            "scope": StringAttr(parser.parse_keyword_in(SCOPES, " (buffer scope)"))
        }
        if parser.parse_optional_keyword("zeroed"):
            properties["zeroed"] = UnitAttr()
        if parser.parse_optional_keyword("layout"):
            with parser.in_parens():
                properties["layout"] = DataLayoutAttr(parse_layout_expr(parser))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        return cls.create(
            properties=properties, result_types=[parser.parse_type()], attributes=attrs
        )



class GuardedAccess(IRDLOperation):
    """Shared verification and syntax of tm.load / tm.store."""

    guard = prop_def(DenseArrayBase)

    @property
    def guarded_dims(self) -> tuple[int, ...]:
        return self.guard.get_values()

    def verify_access(self, memref: SSAValue, indices: Sequence[SSAValue]) -> None:
        shape = memref_shape(memref.type, "accessed buffer")
        if len(indices) != len(shape):
            raise VerifyException(
                f"expected {len(shape)} indices for {memref.type}, got {len(indices)}"
            )
        dims = self.guarded_dims
        if len(set(dims)) != len(dims) or any(not 0 <= d < len(shape) for d in dims):
            raise VerifyException(
                f"guard dimensions {list(dims)} must be distinct and in [0, {len(shape)})"
            )

    def print_guard(self, printer: Printer) -> None:
        if self.guarded_dims:
            printer.print_string(f" guard [{', '.join(map(str, self.guarded_dims))}]")

    @staticmethod
    def parse_guard(parser: Parser) -> DenseArrayBase:
        dims: list[int] = []
        if parser.parse_optional_keyword("guard"):
            dims = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
            )
        return dims_array(dims)


@irdl_op_definition
class LoadOp(GuardedAccess):
    """``%v = tm.load %A[%i, %j] guard [0] : memref<...>``: 0 where a guarded index is out of range."""

    name = "tm.load"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def(AnyAttr())

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue], guard: Sequence[int] = ()) -> None:
        assert isinstance(memref.type, MemRefType)
        super().__init__(
            operands=[memref, indices],
            result_types=[memref.type.element_type],
            properties={"guard": dims_array(guard)},
        )

    def verify_(self) -> None:
        self.verify_access(self.memref, self.indices)
        if self.result.type != self.memref.type.element_type:
            raise VerifyException("result type must be the buffer's element type")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_access(printer, self.memref, self.indices)
        self.print_guard(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        memref, indices = parse_access(parser)
        guard = cls.parse_guard(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        if not isinstance(type, MemRefType):
            parser.raise_error(f"expected a memref type, got {type}")
        return cls.create(
            operands=[parser.resolve_operand(memref, type),
                      *(parser.resolve_operand(i, IndexType()) for i in indices)],
            result_types=[type.element_type],
            properties={"guard": guard},
            attributes=attrs,
        )


@irdl_op_definition
class StoreOp(GuardedAccess):
    """``tm.store %v, %A[%i, %j] guard [0] : memref<...>``: skipped where a guarded index is out of range."""

    name = "tm.store"
    value = operand_def(AnyAttr())
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)

    def __init__(
        self, value: SSAValue, memref: SSAValue, indices: Sequence[SSAValue], guard: Sequence[int] = ()
    ) -> None:
        super().__init__(operands=[value, memref, indices], properties={"guard": dims_array(guard)})

    def verify_(self) -> None:
        self.verify_access(self.memref, self.indices)
        if self.value.type != self.memref.type.element_type:
            raise VerifyException("stored value must have the buffer's element type")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(", ")
        print_access(printer, self.memref, self.indices)
        self.print_guard(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        memref, indices = parse_access(parser)
        guard = cls.parse_guard(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        if not isinstance(type, MemRefType):
            parser.raise_error(f"expected a memref type, got {type}")
        return cls.create(
            operands=[parser.resolve_operand(value, type.element_type),
                      parser.resolve_operand(memref, type),
                      *(parser.resolve_operand(i, IndexType()) for i in indices)],
            properties={"guard": guard},
            attributes=attrs,
        )


@irdl_op_definition
class AtomicAddOp(AtomicAddOpBase):
    """``%old = tm.atomic_add %counters[%t], %one : memref<6xi32>``: add to an i32 element of a
    global buffer atomically, giving its value before (see tmlir.ir.global_ops)."""

    name = "tm.atomic_add"
    traits = traits_def(InsideKernel(KernelOp))

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp


@irdl_op_definition
class LoadCgOp(LoadCgOpBase):
    """``%v = tm.load_cg %ws[%i, %j] : memref<2x64xf32>``: a global load cached in L2 only,
    which sees what other blocks stored and fenced (see tmlir.ir.global_ops)."""

    name = "tm.load_cg"
    traits = traits_def(InsideKernel(KernelOp))

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp


@irdl_op_definition
class FenceOp(IRDLOperation):
    """``tm.fence``: this thread's global writes before it are seen by the whole GPU before
    its global accesses after it (``__threadfence()``, see tmlir.ir.global_ops)."""

    name = "tm.fence"
    traits = traits_def(InsideKernel(KernelOp))
    assembly_format = "attr-dict"


@irdl_op_definition
class LoadVectorOp(LoadVectorOpBase):
    """``%v0, %v1, %v2, %v3 = tm.load_vector x4 %A[%i, %k] guard [0] : memref<...>``: four
    consecutive elements of a global buffer in one access, all 0 where a guarded index (not
    the last) is out of range (see tmlir.ir.vector_ops)."""

    name = "tm.load_vector"
    traits = traits_def(InsideKernel(KernelOp))

    @classmethod
    def kernel_type(cls) -> type[KernelOp]:
        return KernelOp
