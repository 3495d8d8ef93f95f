"""The tensor-core ops that tm and tmgpu share: ``mma``, ``ldmatrix`` and the ``cp_async``
group (copy, commit, wait), as base classes each dialect names (like ShuffleOpBase).

In: register fragments, shared and global buffers. Out: nothing (statements that write
their destination buffer). A fragment is an access ``%frag[%i, ...]`` to a register buffer
whose LAST dimension is the fragment (4 or 2 words): the indices pick one fragment of an
array of them (``%acc[%mi, %ni]`` of a ``memref<2x4x4xf32>``), none for a 1-D buffer.
Words holding two 16-bit values are ``i32`` or ``ui32`` (tf32 operands may also be
``f32``); an f16/bf16 mma's A or B may also be twice as many halves of its type
(`MMA_HALVES`: ``memref<8xf16>`` for A), two to a word, the lower index in the low half.
The lane -> element maps of the fragments are tmlir.schedules.mma_layouts; the C
functions the CUDA printer calls are the prelude's ``tmlir_mma_*``, ``tmlir_ldmatrix_*``,
``tmlir_cp_async*``. Each dialect says which memory a buffer is in (`buffer_scope`:
``global``, ``shared`` or ``register``), and verification checks it::

    tm.mma m16n8k16 f16 %acc, %a, %b, %acc : memref<4xf32>, memref<4xi32>, memref<2xi32>, memref<4xf32>
    tm.ldmatrix x4 trans %a, %smem[%r, %c] : memref<4xi32>, memref<64x32xf16>
    tm.cp_async bytes(16) %smem[%r, %c], %x[%i, %j] : memref<64x32xf16>, memref<256x256xf16>
    tm.cp_async bytes(16) %smem[%r, %c], %x[%i0, %j0] zfill_unless %inside : memref<64x32xf16>, memref<256x256xf16>
    tm.cp_async_commit
    tm.cp_async_wait pending(1)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    IndexType,
    IntAttr,
    IntegerType,
    MemRefType,
    Signedness,
    StringAttr,
    UnitAttr,
    i32,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tmlir.ir.kernel_ops import memref_shape

MMA_KINDS = {("m16n8k16", "f16"), ("m16n8k16", "bf16"), ("m16n8k8", "tf32")}
"""The (shape, dtype) pairs of ``mma``; all accumulate in f32."""
MMA_FRAGMENT_WORDS = {"d": 4, "a": 4, "b": 2, "c": 4}
MMA_HALVES: dict[str, Attribute] = {"f16": Float16Type(), "bf16": BFloat16Type()}
"""The 16-bit element of each half-precision mma: an A or B fragment may also be a register
buffer of twice its words in this type, two to a word in index order (the low half first,
as PTX's .f16x2), which the CUDA printer passes as ``unsigned*`` (how ``attention_tc`` turns
f32 accumulators into an A fragment without a bit cast)."""
LDMATRIX_NUMS = (1, 2, 4)
CP_ASYNC_BYTES = (4, 8, 16)


def is_word(type: Attribute, floats: bool = False) -> bool:
    """A 32-bit fragment word: i32 or ui32 (or f32 when `floats`, for tf32)."""
    return type in (i32, IntegerType(32, Signedness.UNSIGNED)) or (floats and isinstance(type, Float32Type))


def kernel_argument(value: SSAValue, kernel_type: type[Operation]) -> bool:
    """Whether `value` is an argument of a kernel of `kernel_type` (a global buffer)."""
    return isinstance(value, BlockArgument) and isinstance(value.owner.parent_op(), kernel_type)


def print_access(printer: Printer, memref: SSAValue, indices: Sequence[SSAValue]) -> None:
    """``%m[%i, %j]``, or ``%m`` alone without indices."""
    printer.print_ssa_value(memref)
    if indices:
        printer.print_string("[")
        printer.print_list(indices, printer.print_ssa_value)
        printer.print_string("]")


class TensorCoreOp(IRDLOperation):
    """What the tensor-core ops share: buffer scopes and the syntax of their accesses."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def buffer_scope(cls, value: SSAValue) -> str | None:
        """``global``, ``shared`` or ``register``: where `value`'s buffer lives in this
        dialect (None: unknown)."""
        raise NotImplementedError

    def accesses(self) -> list[tuple[SSAValue, Sequence[SSAValue]]]:
        """The (buffer, indices) pairs, in the order of the syntax."""
        raise NotImplementedError

    def describe(self) -> str:
        """The op as error messages name it."""
        return f"'{self.name}'"

    def check_access(self, what: str, buffer: SSAValue, indices: Sequence[SSAValue],
                     scope: str, leading: bool = False) -> tuple[int, ...]:
        """`buffer` is a static memref of `scope`, with one index per dimension (all but the
        last when `leading`: a fragment); returns its shape."""
        shape = memref_shape(buffer.type, f"{self.describe()}: {what}")
        found = self.buffer_scope(buffer)
        if found != scope:
            where = f"a {found} buffer" if found else "a buffer of unknown memory"
            raise VerifyException(f"{self.describe()}: {what} must be a {scope} buffer, got {where}")
        expected = len(shape) - 1 if leading else len(shape)
        if len(indices) != expected:
            raise VerifyException(
                f"{self.describe()}: {what} takes {expected} indices for {buffer.type}, got {len(indices)}")
        return shape

    def check_fragment(self, what: str, buffer: SSAValue, indices: Sequence[SSAValue], words: int,
                       element: str, ok) -> None:
        """A register fragment of `words` elements accepted by `ok` (named `element`)."""
        shape = self.check_access(f"fragment {what}", buffer, indices, "register", leading=True)
        elem = buffer.type.element_type
        if not shape or shape[-1] != words or not ok(elem):
            raise VerifyException(
                f"{self.describe()}: fragment {what} must end in a dimension of {words} {element},"
                f" got {buffer.type}")

    def print_operands(self, printer: Printer, after_accesses: Callable[[], None] | None = None) -> None:
        accesses = self.accesses()
        for k, (buffer, indices) in enumerate(accesses):
            printer.print_string(", " if k else " ")
            print_access(printer, buffer, indices)
        if after_accesses is not None:
            after_accesses()
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list([b.type for b, _ in accesses], printer.print_attribute)

    @classmethod
    def parse_operands(cls, parser: Parser, count: int,
                       after_accesses: Callable[[], None] | None = None) -> tuple[list, dict[str, Attribute]]:
        """`count` accesses, the attribute dictionary and the types: the operands as
        [buffer, indices, buffer, indices, ...] and the attributes (`after_accesses` parses
        what an op writes between its accesses and its attributes)."""
        raw = []
        for k in range(count):
            if k:
                parser.parse_punctuation(",")
            buffer = parser.parse_unresolved_operand()
            indices = []
            if parser.parse_optional_punctuation("[") is not None:
                if parser.parse_optional_punctuation("]") is None:
                    indices = parser.parse_comma_separated_list(
                        Parser.Delimiter.NONE, parser.parse_unresolved_operand)
                    parser.parse_punctuation("]")
            raw.append((buffer, indices))
        if after_accesses is not None:
            after_accesses()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        if len(types) != count:
            parser.raise_error(f"expected {count} buffer types, got {len(types)}")
        operands: list = []
        for (buffer, indices), type in zip(raw, types):
            operands += [parser.resolve_operand(buffer, type),
                         [parser.resolve_operand(i, IndexType()) for i in indices]]
        return operands, attrs


class MmaOpBase(TensorCoreOp):
    """``<op> m16n8k16 f16 %d, %a, %b, %c : <4 memref types>``: one warp computes
    D = A * B + C on a 16x8 f32 tile (``mma.sync.aligned.<shape>.row.col.f32.<dtype>``);
    every lane of the warp must execute it with its own fragments (4 f32 of D and C, 4 and
    2 words of A and B: tmlir.schedules.mma_layouts). D may be C. Shapes and dtypes:
    m16n8k16 with f16 or bf16, m16n8k8 with tf32."""

    shape = prop_def(StringAttr)
    dtype = prop_def(StringAttr)
    d = operand_def(MemRefType)
    d_indices = var_operand_def(IndexType)
    a = operand_def(MemRefType)
    a_indices = var_operand_def(IndexType)
    b = operand_def(MemRefType)
    b_indices = var_operand_def(IndexType)
    c = operand_def(MemRefType)
    c_indices = var_operand_def(IndexType)

    def __init__(self, shape: str, dtype: str, d: SSAValue, a: SSAValue, b: SSAValue, c: SSAValue,
                 d_indices: Sequence[SSAValue] = (), a_indices: Sequence[SSAValue] = (),
                 b_indices: Sequence[SSAValue] = (), c_indices: Sequence[SSAValue] = ()) -> None:
        super().__init__(
            operands=[d, d_indices, a, a_indices, b, b_indices, c, c_indices],
            properties={"shape": StringAttr(shape), "dtype": StringAttr(dtype)})

    def accesses(self) -> list[tuple[SSAValue, Sequence[SSAValue]]]:
        return [(self.d, self.d_indices), (self.a, self.a_indices),
                (self.b, self.b_indices), (self.c, self.c_indices)]

    def describe(self) -> str:
        return f"'{self.name}' {self.shape.data} {self.dtype.data}"

    def verify_(self) -> None:
        kind = (self.shape.data, self.dtype.data)
        if kind not in MMA_KINDS:
            raise VerifyException(
                f"'{self.name}': unsupported shape and dtype {' '.join(kind)}, expected one of "
                + ", ".join(" ".join(k) for k in sorted(MMA_KINDS)))
        tf32 = kind[1] == "tf32"
        for what, (buffer, indices) in zip("dabc", self.accesses()):
            words = MMA_FRAGMENT_WORDS[what]
            if what in "dc":
                self.check_fragment(what, buffer, indices, words, "f32",
                                    lambda t: isinstance(t, Float32Type))
            elif not tf32 and buffer.type.element_type == (half := MMA_HALVES[kind[1]]):  # type: ignore[attr-defined]
                self.check_fragment(what, buffer, indices, 2 * words, f"{kind[1]} halves", lambda t: t == half)
            else:
                self.check_fragment(what, buffer, indices, words,
                                    "32-bit words (i32, ui32 or f32)" if tf32 else "32-bit words (i32 or ui32)",
                                    lambda t: is_word(t, floats=tf32))

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.shape.data} {self.dtype.data}")
        self.print_operands(printer)

    @classmethod
    def parse(cls, parser: Parser):
        shape = parser.parse_identifier(" (mma shape, e.g. m16n8k16)")
        dtype = parser.parse_identifier(" (mma dtype: f16, bf16 or tf32)")
        operands, attrs = cls.parse_operands(parser, 4)
        return cls.build(operands=operands, attributes=attrs,
                         properties={"shape": StringAttr(shape), "dtype": StringAttr(dtype)})


class LdmatrixOpBase(TensorCoreOp):
    """``<op> x4 [trans] %frag, %smem[%r, %c] : <types>``: ``ldmatrix.sync.aligned.m8n8
    .x<num>[.trans].shared.b16``, a warp loads `num` 8x8 matrices of 16-bit elements from
    shared memory into `num` words per lane; lanes 8j..8j+7 give the row addresses of
    matrix j (each row 16 contiguous, 16-byte aligned bytes). Every lane must execute it.
    Without ``trans`` the source may hold 32-bit elements (f32, i32), read as b16: a row is
    4 of them and lane l gets element l % 4 of row l / 4 (the tf32 mma fragments)."""

    num = prop_def(IntAttr)
    trans = opt_prop_def(UnitAttr)
    frag = operand_def(MemRefType)
    frag_indices = var_operand_def(IndexType)
    smem = operand_def(MemRefType)
    smem_indices = var_operand_def(IndexType)

    def __init__(self, num: int, trans: bool, frag: SSAValue, smem: SSAValue,
                 smem_indices: Sequence[SSAValue], frag_indices: Sequence[SSAValue] = ()) -> None:
        properties: dict[str, Attribute] = {"num": IntAttr(num)}
        if trans:
            properties["trans"] = UnitAttr()
        super().__init__(operands=[frag, frag_indices, smem, smem_indices], properties=properties)

    def accesses(self) -> list[tuple[SSAValue, Sequence[SSAValue]]]:
        return [(self.frag, self.frag_indices), (self.smem, self.smem_indices)]

    def verify_(self) -> None:
        num = self.num.data
        if num not in LDMATRIX_NUMS:
            raise VerifyException(f"'{self.name}': loads 1, 2 or 4 matrices (x1, x2, x4), got x{num}")
        self.check_fragment("destination", self.frag, self.frag_indices, num, "32-bit words (i32 or ui32)", is_word)
        self.check_access("source", self.smem, self.smem_indices, "shared")
        elem = self.smem.type.element_type
        if self.trans is None and is_word(elem, floats=True):
            return  # the b16 view of 32-bit elements: a matrix row is 4 of them (tf32 fragments)
        if not (isinstance(elem, Float16Type | BFloat16Type)
                or (isinstance(elem, IntegerType) and elem.width.data == 16)):
            also = "" if self.trans is not None else "; without trans also 32-bit (f32, i32)"
            raise VerifyException(f"'{self.name}': source elements must be 16-bit (f16, bf16, i16), got {elem}{also}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" x{self.num.data}" + (" trans" if self.trans is not None else ""))
        self.print_operands(printer)

    @classmethod
    def parse(cls, parser: Parser):
        count = parser.parse_identifier(" (matrix count: x1, x2 or x4)")
        if not re.fullmatch(r"x\d+", count):
            parser.raise_error(f"expected the matrix count x1, x2 or x4, got '{count}'")
        properties: dict[str, Attribute] = {"num": IntAttr(int(count[1:]))}
        if parser.parse_optional_keyword("trans") is not None:
            properties["trans"] = UnitAttr()
        operands, attrs = cls.parse_operands(parser, 2)
        return cls.build(operands=operands, attributes=attrs, properties=properties)


class CpAsyncOpBase(TensorCoreOp):
    """``<op> bytes(16) %smem[...], %g[...] [zfill_unless %inside] : <types>``: ``cp.async``
    of `bytes` (4, 8 or 16) from a global buffer to a shared one, by this thread,
    asynchronously: the copy joins this thread's open group (closed by
    ``cp_async_commit``); its data is only guaranteed in shared memory after the
    ``cp_async_wait`` that covers its group (and, for other threads, a barrier after that).
    Both addresses must be aligned to `bytes`.

    With ``zfill_unless %inside`` (an i1): where %inside is false the copy reads nothing
    and writes `bytes` zeros instead (PTX's src-size operand, 0), asynchronously like the
    data -- they too land at the covering wait. The source indices are still turned into an
    address, so they must stay inside the buffer (a template clamps them, e.g. to the
    operand's origin); only the read is skipped."""

    bytes = prop_def(IntAttr)
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    inside = opt_operand_def(IntegerType)

    def __init__(self, bytes: int, dst: SSAValue, dst_indices: Sequence[SSAValue], src: SSAValue,
                 src_indices: Sequence[SSAValue], inside: SSAValue | None = None) -> None:
        super().__init__(operands=[dst, dst_indices, src, src_indices, [inside] if inside is not None else []],
                         properties={"bytes": IntAttr(bytes)})

    def accesses(self) -> list[tuple[SSAValue, Sequence[SSAValue]]]:
        return [(self.dst, self.dst_indices), (self.src, self.src_indices)]

    def verify_(self) -> None:
        size = self.bytes.data
        if size not in CP_ASYNC_BYTES:
            raise VerifyException(f"'{self.name}': copies 4, 8 or 16 bytes, got {size}")
        self.check_access("destination", self.dst, self.dst_indices, "shared")
        self.check_access("source", self.src, self.src_indices, "global")
        dst, src = self.dst.type.element_type, self.src.type.element_type
        if dst != src:
            raise VerifyException(f"'{self.name}': source elements ({src}) differ from the destination's ({dst})")
        width = getattr(dst, "bitwidth", None)
        if not isinstance(width, int) or width % 8 or size % (width // 8):
            raise VerifyException(f"'{self.name}': {size} bytes is not a whole number of {dst} elements")
        if self.inside is not None and self.inside.type != IntegerType(1):
            raise VerifyException(f"'{self.name}': the zfill_unless condition must be i1, got {self.inside.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" bytes({self.bytes.data})")

        def condition() -> None:
            if self.inside is not None:
                printer.print_string(" zfill_unless ")
                printer.print_ssa_value(self.inside)

        self.print_operands(printer, condition)

    @classmethod
    def parse(cls, parser: Parser):
        parser.parse_keyword("bytes")
        with parser.in_parens():
            size = parser.parse_integer(allow_boolean=False)
        condition: list = []

        def parse_condition() -> None:
            if parser.parse_optional_keyword("zfill_unless") is not None:
                condition.append(parser.parse_unresolved_operand())

        operands, attrs = cls.parse_operands(parser, 2, parse_condition)
        operands.append([parser.resolve_operand(c, IntegerType(1)) for c in condition])
        return cls.build(operands=operands, attributes=attrs, properties={"bytes": IntAttr(size)})


class CpAsyncWaitOpBase(IRDLOperation):
    """``<op> pending(N)``: ``cp.async.wait_group N``, wait until at most N of this
    thread's committed groups are still in flight (0: all of them are done)."""

    pending = prop_def(IntAttr)

    def __init__(self, pending: int) -> None:
        super().__init__(properties={"pending": IntAttr(pending)})

    def verify_(self) -> None:
        if self.pending.data < 0:
            raise VerifyException(f"'{self.name}': pending must be >= 0, got {self.pending.data}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" pending({self.pending.data})")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        parser.parse_keyword("pending")
        with parser.in_parens():
            pending = parser.parse_integer(allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        return cls.create(properties={"pending": IntAttr(pending)}, attributes=attrs)
