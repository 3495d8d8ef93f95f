"""The Hopper (sm_90) ops that tm and tmgpu share, as base classes each dialect names:
``wgmma`` with its ``wait``, the ``mbarrier`` ops and the bulk copy that completes on one;
and tmgpu's descriptor by its fields (`WgmmaDescFieldsOpBase`; tm's ``tm.wgmma_desc``, which
derives them from a layout, is tmlir.dialects.tm.hopper's).

``wgmma`` is a warpgroup's (128 threads') asynchronous D += A * B: A and B are read from
shared memory through 64-bit matrix descriptors (``i64`` values: ``tm.wgmma_desc``, whose
layouts are tmlir.wgmma_layouts), D is each thread's f32 accumulator fragment (a register
buffer ending in N/2 elements, as ``mma``'s fragments: tmlir.wgmma_layouts.wgmma_accumulator).
``kmajor``/``mnmajor`` say how each operand's tile is stored (tf32: K-major only). The
accumulator belongs to the asynchronous unit from the ``wgmma`` until the
``wgmma_wait`` that covers its group (``wgmma_commit`` closes a group); a ``wgmma_fence``
must come before the first ``wgmma`` and between the thread's own accesses to a fragment and
a ``wgmma`` that uses it. ``accumulate_if %p`` (an i1) adds to D only where %p holds (PTX's
scale-d; without it D is always accumulated)::

    tm.wgmma_fence
    tm.wgmma m64n128k16 f16 %acc, %da kmajor, %db mnmajor : memref<64xf32>
    tm.wgmma m64n128k16 bf16 %acc[%i], %da kmajor, %db kmajor accumulate_if %first : memref<2x64xf32>
    tm.wgmma_commit
    tm.wgmma_wait pending(0) %acc : memref<64xf32>

``wgmma_wait pending(N)`` waits until at most N committed groups are in flight; the
fragments it names are the ones the caller reads next (the CUDA printer keeps the compiler
from moving their reads above the wait).

An mbarrier is one ``i64`` of a shared buffer. ``mbarrier_init count(C)`` expects C
arrivals per phase; a phase completes when all C threads arrived and every byte announced
with ``expect_tx`` has landed; ``mbarrier_wait parity(%p)`` blocks until the phase of
parity %p (0 for the first, then alternating) has completed. ``cp_async_bulk bytes(B)``
copies B bytes (a multiple of 16, both addresses 16-byte aligned) from a global buffer to
a shared one asynchronously and counts them as landed on the barrier: only a thread that
waited for that phase (or is ordered after one that did) may read them::

    tm.mbarrier_init %bar[%c0] count(1) : memref<1xi64>
    tm.mbarrier_arrive %bar[%c0] expect_tx(4096) : memref<1xi64>
    tm.cp_async_bulk bytes(4096) %s[%c0, %c0], %x[%i, %c0], %bar[%c0]
        : memref<32x64xf16>, memref<256x64xf16>, memref<1xi64>     // 32 rows of x
    tm.mbarrier_wait %bar[%c0] parity(%phase) : memref<1xi64>
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import Float32Type, IndexType, IntAttr, IntegerType, MemRefType, StringAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tmlir.ir.tensor_core_ops import TensorCoreOp, print_access
from tmlir.wgmma_layouts import DESCRIPTOR_RANGE, SWIZZLE_BYTES, WGMMA_K, WgmmaLayoutError, parse_wgmma_shape

MAJORS = ("k", "mn")
MBARRIER_LIMIT = (1 << 20) - 1
"""The largest arrival count and transaction byte count of an mbarrier phase."""


def _major(parser: Parser) -> str:
    word = parser.parse_identifier(" (kmajor or mnmajor)")
    if word not in ("kmajor", "mnmajor"):
        parser.raise_error(f"expected kmajor or mnmajor, got '{word}'")
    return word.removesuffix("major")


def _in_parens_int(parser: Parser, keyword: str) -> int:
    parser.parse_keyword(keyword)
    with parser.in_parens():
        return parser.parse_integer(allow_boolean=False)


def _parse_access(parser: Parser) -> tuple:
    buffer = parser.parse_unresolved_operand()
    indices = []
    if parser.parse_optional_punctuation("[") is not None and parser.parse_optional_punctuation("]") is None:
        indices = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_unresolved_operand)
        parser.parse_punctuation("]")
    return buffer, indices


def _resolve_access(parser: Parser, access: tuple, type: Attribute) -> list:
    buffer, indices = access
    return [parser.resolve_operand(buffer, type), [parser.resolve_operand(i, IndexType()) for i in indices]]


class WgmmaOpBase(TensorCoreOp):
    """``<op> m64n128k16 f16 %acc[...], %da kmajor, %db mnmajor [accumulate_if %p] : <type>``:
    ``wgmma.mma_async.sync.aligned.<shape>.f32.<dtype>.<dtype>`` for the warpgroup (see the
    module docstring). Shapes: m64nNk16 with f16 or bf16, m64nNk8 with tf32 (K-major
    operands only), N in tmlir.wgmma_layouts.WGMMA_N."""

    shape = prop_def(StringAttr)
    dtype = prop_def(StringAttr)
    a_major = prop_def(StringAttr)
    b_major = prop_def(StringAttr)
    acc = operand_def(MemRefType)
    acc_indices = var_operand_def(IndexType)
    desc_a = operand_def(IntegerType)
    desc_b = operand_def(IntegerType)
    scale_d = opt_operand_def(IntegerType)

    def __init__(self, shape: str, dtype: str, acc: SSAValue, desc_a: SSAValue, desc_b: SSAValue,
                 a_major: str = "k", b_major: str = "k", acc_indices: Sequence[SSAValue] = (),
                 scale_d: SSAValue | None = None) -> None:
        super().__init__(
            operands=[acc, acc_indices, desc_a, desc_b, [scale_d] if scale_d is not None else []],
            properties={"shape": StringAttr(shape), "dtype": StringAttr(dtype),
                        "a_major": StringAttr(a_major), "b_major": StringAttr(b_major)})

    @classmethod
    def descriptor_info(cls, value: SSAValue) -> tuple[str, tuple[int, int], Attribute] | None:
        """(major, tile, element type) of the tile `value` describes, when the dialect knows
        it from the op that made it (None: unknown, e.g. a computed descriptor)."""
        return None

    def accesses(self) -> list[tuple[SSAValue, Sequence[SSAValue]]]:
        return [(self.acc, self.acc_indices)]

    @property
    def n(self) -> int:
        """N of the shape (the op verifies)."""
        return parse_wgmma_shape(self.shape.data, self.dtype.data)

    def describe(self) -> str:
        return f"'{self.name}' {self.shape.data} {self.dtype.data}"

    def verify_(self) -> None:
        dtype = self.dtype.data
        try:
            n = parse_wgmma_shape(self.shape.data, dtype)
        except WgmmaLayoutError as exc:
            raise VerifyException(f"'{self.name}': {exc}") from None
        self.check_fragment("d", self.acc, self.acc_indices, n // 2, "f32", lambda t: isinstance(t, Float32Type))
        for what, value, major in (("a", self.desc_a, self.a_major.data), ("b", self.desc_b, self.b_major.data)):
            if value.type != i64:
                raise VerifyException(f"{self.describe()}: descriptor {what} must be i64, got {value.type}")
            if major not in MAJORS:
                raise VerifyException(f"{self.describe()}: {what} is kmajor or mnmajor, got '{major}'")
            if dtype == "tf32" and major != "k":
                raise VerifyException(f"{self.describe()}: tf32 operands are K-major only, {what} is mnmajor")
            self.check_descriptor(what, value, major, (64 if what == "a" else n, WGMMA_K[dtype]))
        if self.scale_d is not None and self.scale_d.type != IntegerType(1):
            raise VerifyException(f"{self.describe()}: the accumulate_if condition must be i1, got {self.scale_d.type}")

    def check_descriptor(self, what: str, value: SSAValue, major: str, tile: tuple[int, int]) -> None:
        info = self.descriptor_info(value)
        if info is None:
            return
        made_major, made_tile, element = info
        if made_major != major:
            raise VerifyException(f"{self.describe()}: {what} is used {major}major but its descriptor "
                                  f"describes a {made_major}major tile")
        if made_tile != tile:
            raise VerifyException(f"{self.describe()}: {what} needs a descriptor of a {tile[0]}x{tile[1]} tile, "
                                  f"got one of {made_tile[0]}x{made_tile[1]}")
        expected = {"tf32": "f32"}.get(self.dtype.data, self.dtype.data)
        if str(element) != expected:
            raise VerifyException(f"{self.describe()}: {what}'s tile holds {element}, expected {expected}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.shape.data} {self.dtype.data} ")
        print_access(printer, self.acc, self.acc_indices)
        for value, major in ((self.desc_a, self.a_major), (self.desc_b, self.b_major)):
            printer.print_string(", ")
            printer.print_ssa_value(value)
            printer.print_string(f" {major.data}major")
        if self.scale_d is not None:
            printer.print_string(" accumulate_if ")
            printer.print_ssa_value(self.scale_d)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.acc.type)

    @classmethod
    def parse(cls, parser: Parser):
        shape = parser.parse_identifier(" (wgmma shape, e.g. m64n128k16)")
        dtype = parser.parse_identifier(" (wgmma dtype: f16, bf16 or tf32)")
        acc = _parse_access(parser)
        descriptors, majors = [], []
        for _ in range(2):
            parser.parse_punctuation(",")
            descriptors.append(parser.parse_unresolved_operand())
            majors.append(_major(parser))
        scale = []
        if parser.parse_optional_keyword("accumulate_if") is not None:
            scale.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        acc_type = parser.parse_type()
        operands = [*_resolve_access(parser, acc, acc_type),
                    *(parser.resolve_operand(d, i64) for d in descriptors),
                    [parser.resolve_operand(s, IntegerType(1)) for s in scale]]
        return cls.build(operands=operands, attributes=attrs,
                         properties={"shape": StringAttr(shape), "dtype": StringAttr(dtype),
                                     "a_major": StringAttr(majors[0]), "b_major": StringAttr(majors[1])})


class WgmmaWaitOpBase(IRDLOperation):
    """``<op> pending(N) [%acc, ... : <types>]``: ``wgmma.wait_group N``, wait until at most N
    of the thread's committed wgmma groups are in flight; the listed register buffers are
    the accumulators the thread may then read (f32 register buffers)."""

    pending = prop_def(IntAttr)
    fragments = var_operand_def(MemRefType)

    def __init__(self, pending: int, fragments: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[fragments], properties={"pending": IntAttr(pending)})

    @classmethod
    def buffer_scope(cls, value: SSAValue) -> str | None:
        raise NotImplementedError

    def verify_(self) -> None:
        if self.pending.data < 0:
            raise VerifyException(f"'{self.name}': pending must be >= 0, got {self.pending.data}")
        for value in self.fragments:
            scope = self.buffer_scope(value)
            if scope != "register" or not isinstance(value.type.element_type, Float32Type):
                where = f"a {scope} buffer" if scope else "a buffer of unknown memory"
                raise VerifyException(f"'{self.name}': accumulators are f32 register buffers, got {where} "
                                      f"of {value.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" pending({self.pending.data})")
        if self.fragments:
            printer.print_string(" ")
            printer.print_list(self.fragments, printer.print_ssa_value)
        printer.print_op_attributes(self.attributes)
        if self.fragments:
            printer.print_string(" : ")
            printer.print_list([f.type for f in self.fragments], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser):
        pending = _in_parens_int(parser, "pending")
        names = []
        first = parser.parse_optional_unresolved_operand()
        if first is not None:
            names = [first]
            while parser.parse_optional_punctuation(",") is not None:
                names.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        types = []
        if names:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        return cls.create(operands=parser.resolve_operands(names, types, parser.pos),
                          properties={"pending": IntAttr(pending)}, attributes=attrs)


class MbarrierOpBase(TensorCoreOp):
    """An op on the mbarrier at ``%bar[...]``: one ``i64`` of a shared buffer."""

    bar = operand_def(MemRefType)
    bar_indices = var_operand_def(IndexType)

    def accesses(self) -> list[tuple[SSAValue, Sequence[SSAValue]]]:
        return [(self.bar, self.bar_indices)]

    def check_barrier(self, buffer: SSAValue, indices: Sequence[SSAValue], what: str = "mbarrier") -> None:
        self.check_access(what, buffer, indices, "shared")
        if buffer.type.element_type != i64:
            raise VerifyException(f"{self.describe()}: an {what} is an i64 element, got {buffer.type}")

    def verify_(self) -> None:
        self.check_barrier(self.bar, self.bar_indices)

    @staticmethod
    def check_count(op: Operation, what: str, value: int) -> None:
        if not 1 <= value <= MBARRIER_LIMIT:
            raise VerifyException(f"'{op.name}': {what} must be in [1, {MBARRIER_LIMIT}], got {value}")


class MbarrierInitOpBase(MbarrierOpBase):
    """``<op> %bar[...] count(C) : <type>``: ``mbarrier.init`` (then
    ``fence.mbarrier_init``), C arrivals per phase. One thread initializes; a barrier
    (``__syncthreads``) must order it before the others use the mbarrier."""

    count = prop_def(IntAttr)

    def __init__(self, bar: SSAValue, indices: Sequence[SSAValue], count: int) -> None:
        super().__init__(operands=[bar, indices], properties={"count": IntAttr(count)})

    def verify_(self) -> None:
        super().verify_()
        self.check_count(self, "count", self.count.data)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_access(printer, self.bar, self.bar_indices)
        printer.print_string(f" count({self.count.data})")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.bar.type)

    @classmethod
    def parse(cls, parser: Parser):
        access = _parse_access(parser)
        count = _in_parens_int(parser, "count")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operands = _resolve_access(parser, access, parser.parse_type())
        return cls.build(operands=operands, attributes=attrs, properties={"count": IntAttr(count)})


class MbarrierArriveOpBase(MbarrierOpBase):
    """``<op> %bar[...] [expect_tx(B)] : <type>``: ``mbarrier.arrive`` by this thread; with
    ``expect_tx(B)`` (``mbarrier.arrive.expect_tx``) it first announces B more bytes that
    asynchronous copies will land in this phase."""

    expect_tx = opt_prop_def(IntAttr)

    def __init__(self, bar: SSAValue, indices: Sequence[SSAValue], expect_tx: int | None = None) -> None:
        super().__init__(operands=[bar, indices],
                         properties={} if expect_tx is None else {"expect_tx": IntAttr(expect_tx)})

    def verify_(self) -> None:
        super().verify_()
        if self.expect_tx is not None:
            self.check_count(self, "expect_tx", self.expect_tx.data)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_access(printer, self.bar, self.bar_indices)
        if self.expect_tx is not None:
            printer.print_string(f" expect_tx({self.expect_tx.data})")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.bar.type)

    @classmethod
    def parse(cls, parser: Parser):
        access = _parse_access(parser)
        properties: dict[str, Attribute] = {}
        if parser.parse_optional_keyword("expect_tx") is not None:
            with parser.in_parens():
                properties["expect_tx"] = IntAttr(parser.parse_integer(allow_boolean=False))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operands = _resolve_access(parser, access, parser.parse_type())
        return cls.build(operands=operands, attributes=attrs, properties=properties)


class MbarrierWaitOpBase(MbarrierOpBase):
    """``<op> %bar[...] parity(%p) : <type>``: block until the phase of parity %p (an
    index: 0 or 1) of the mbarrier has completed (``mbarrier.try_wait.parity`` in a loop).
    Its bulk copies are then visible to this thread."""

    parity = operand_def(IndexType)

    def __init__(self, bar: SSAValue, indices: Sequence[SSAValue], parity: SSAValue) -> None:
        super().__init__(operands=[parity, bar, indices])  # IRDL orders a subclass's operands first

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_access(printer, self.bar, self.bar_indices)
        printer.print_string(" parity(")
        printer.print_ssa_value(self.parity)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.bar.type)

    @classmethod
    def parse(cls, parser: Parser):
        access = _parse_access(parser)
        parser.parse_keyword("parity")
        with parser.in_parens():
            parity = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operands = [parser.resolve_operand(parity, IndexType()),
                    *_resolve_access(parser, access, parser.parse_type())]
        return cls.build(operands=operands, attributes=attrs)


class CpAsyncBulkOpBase(MbarrierOpBase):
    """``<op> bytes(B) %smem[...], %g[...], %bar[...] : <3 types>``:
    ``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes``, B contiguous bytes
    (a multiple of 16, both addresses 16-byte aligned) from a global buffer to a shared one,
    asynchronously; they count as landed on the mbarrier's current phase (announce them with
    ``expect_tx``) and are visible to a thread once it waited for that phase."""

    bytes = prop_def(IntAttr)
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)

    def __init__(self, bytes: int, dst: SSAValue, dst_indices: Sequence[SSAValue], src: SSAValue,
                 src_indices: Sequence[SSAValue], bar: SSAValue, bar_indices: Sequence[SSAValue]) -> None:
        super().__init__(operands=[dst, dst_indices, src, src_indices, bar, bar_indices],
                         properties={"bytes": IntAttr(bytes)})

    def accesses(self) -> list[tuple[SSAValue, Sequence[SSAValue]]]:
        return [(self.dst, self.dst_indices), (self.src, self.src_indices), (self.bar, self.bar_indices)]

    def verify_(self) -> None:
        size = self.bytes.data
        if size <= 0 or size % 16 or size > MBARRIER_LIMIT:
            raise VerifyException(f"'{self.name}': copies a positive multiple of 16 bytes below 2^20, got {size}")
        self.check_access("destination", self.dst, self.dst_indices, "shared")
        self.check_access("source", self.src, self.src_indices, "global")
        dst, src = self.dst.type.element_type, self.src.type.element_type
        if dst != src:
            raise VerifyException(f"'{self.name}': source elements ({src}) differ from the destination's ({dst})")
        width = getattr(dst, "bitwidth", None)
        if not isinstance(width, int) or width % 8 or size % (width // 8):
            raise VerifyException(f"'{self.name}': {size} bytes is not a whole number of {dst} elements")
        self.check_barrier(self.bar, self.bar_indices)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" bytes({self.bytes.data})")
        self.print_operands(printer)

    @classmethod
    def parse(cls, parser: Parser):
        size = _in_parens_int(parser, "bytes")
        operands, attrs = cls.parse_operands(parser, 3)  # IRDL orders a subclass's operands first
        return cls.build(operands=operands, attributes=attrs, properties={"bytes": IntAttr(size)})


class WgmmaDescFieldsOpBase(TensorCoreOp):
    """``%d = <op> %smem[...] lbo(L) sbo(S) swizzle(W) : <type>``: the i64 descriptor of the
    wgmma tile whose (unswizzled) first element is at ``%smem[...]``, with leading and stride
    byte offsets L and S (positive multiples of 16 below 2^18) and the swizzle mode by its
    row bytes W (0: none, 32, 64, 128) -- a descriptor spelled out, as ``convert-tm-to-gpu``
    computes it from a ``tm.wgmma_desc``'s layout. A swizzled tile's buffer is aligned to
    1024 bytes, so its pattern starts where the hardware's does."""

    lbo = prop_def(IntAttr)
    sbo = prop_def(IntAttr)
    swizzle = prop_def(IntAttr)
    smem = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def(i64)

    def __init__(self, smem: SSAValue, indices: Sequence[SSAValue], lbo: int, sbo: int, swizzle: int) -> None:
        super().__init__(operands=[smem, indices], result_types=[i64],
                         properties={"lbo": IntAttr(lbo), "sbo": IntAttr(sbo), "swizzle": IntAttr(swizzle)})

    def accesses(self) -> list[tuple[SSAValue, Sequence[SSAValue]]]:
        return [(self.smem, self.indices)]

    def verify_(self) -> None:
        self.check_access("operand", self.smem, self.indices, "shared")
        width = getattr(self.smem.type.element_type, "bitwidth", None)
        if width not in (16, 32):
            raise VerifyException(f"'{self.name}': wgmma operands have 16- or 32-bit elements, got "
                                  f"{self.smem.type.element_type}")
        for what, value in (("lbo", self.lbo.data), ("sbo", self.sbo.data)):
            if value <= 0 or value % 16 or value >= DESCRIPTOR_RANGE:
                raise VerifyException(
                    f"'{self.name}': {what} must be a positive multiple of 16 below 2^18, got {value}")
        if self.swizzle.data not in SWIZZLE_BYTES:
            raise VerifyException(
                f"'{self.name}': swizzle is 0, 32, 64 or 128 (bytes of a row), got {self.swizzle.data}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_access(printer, self.smem, self.indices)
        printer.print_string(f" lbo({self.lbo.data}) sbo({self.sbo.data}) swizzle({self.swizzle.data})")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.smem.type)

    @classmethod
    def parse(cls, parser: Parser):
        access = _parse_access(parser)
        properties = {key: IntAttr(_in_parens_int(parser, key)) for key in ("lbo", "sbo", "swizzle")}
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        return cls.build(operands=_resolve_access(parser, access, parser.parse_type()), result_types=[i64],
                         attributes=attrs, properties=properties)
