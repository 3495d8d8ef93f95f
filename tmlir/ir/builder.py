"""A small IR builder for schedule templates and lowerings.

Index arithmetic takes ``Index = SSAValue | int`` and folds what is known: Python ints stay
ints until an op needs an SSA value, and ``x * 1``, ``x + 0``, ``x / 1``, ``x % 1``,
``x >> 0``, ``x ^ 0`` never become ops. So the IR that templates and ``tm-lower-mappings``
emit is the arithmetic a person would write, not a pile of multiplications by one.

Elements of narrow float buffers (``f16``, ``bf16``, float8: ``dtypes.is_narrow_float``)
are computed in ``f32``: `load` widens what it reads (``arith.extf``) and `store` rounds an
``f32`` value to the buffer's type (``arith.truncf``, round to nearest even), so a template
that computes in f32 takes those tensors unchanged (see ``tmlir/dtypes.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from tmlir import dtypes
from tmlir.dialects import tm
from tmlir.mapping import TaskMapping

Index = SSAValue | int


@dataclass(eq=False)
class IRBuilder(Builder):
    """xDSL's `Builder` with folded index arithmetic and structured-op helpers.

    Ops go to ``insertion_point`` (Builder's); ``with b.at(block)`` moves it to the end of
    `block` for the `with` body and restores it after, so nested regions read like the IR.
    """

    @classmethod
    def at_end(cls, block: Block) -> IRBuilder:
        return cls(InsertPoint.at_end(block))

    @classmethod
    def before(cls, op: Operation) -> IRBuilder:
        return cls(InsertPoint.before(op))

    def insert(self, op: Operation, name: str | InsertPoint | None = None) -> Operation:  # type: ignore[override]
        """Insert `op` at the insertion point; `name` becomes its first result's name hint.

        (An `InsertPoint` in place of `name` inserts there, as `Builder.insert` does.)
        """
        if isinstance(name, InsertPoint):
            return super().insert(op, name)
        super().insert(op)
        if name is not None and op.results:
            op.results[0].name_hint = name
        return op

    @classmethod
    def from_rewriter(cls, rewriter: PatternRewriter) -> IRBuilder:
        """A builder at `rewriter`'s insertion point (before the matched op) that reports
        each op it inserts to the rewriter's listeners, so a `PatternRewriteWalker` sees
        the new ops as if the rewriter had inserted them."""
        b = cls(rewriter.insertion_point)
        b.extend_from_listener(rewriter)
        return b

    @property
    def block(self) -> Block:
        """The block ops are inserted into."""
        return self.insertion_point.block

    @contextmanager
    def at(self, block: Block) -> Iterator[None]:
        """Insert at the end of `block` inside the `with`; the previous point after it."""
        saved = self.insertion_point
        self.insertion_point = InsertPoint.at_end(block)
        try:
            yield
        finally:
            self.insertion_point = saved

    # ---- index arithmetic -------------------------------------------------------------
    def value(self, x: Index, name: str | None = None) -> SSAValue:
        if isinstance(x, SSAValue):
            return x
        return self.insert(arith.ConstantOp(IntegerAttr(x, IndexType())), name).results[0]

    def add(self, a: Index, b: Index, name: str | None = None) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if b == 0:
            return a
        if a == 0:
            return b
        return self._binary(arith.AddiOp, a, b, name)

    def sub(self, a: Index, b: Index, name: str | None = None) -> Index:
        """``a - b``, for a caller that knows ``a >= b`` (indices are non-negative)."""
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        return a if b == 0 else self._binary(arith.SubiOp, a, b, name)

    def mul(self, a: Index, b: Index, name: str | None = None) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if 0 in (a, b):
            return 0
        if b == 1:
            return a
        if a == 1:
            return b
        return self._binary(arith.MuliOp, a, b, name)

    def div(self, a: Index, b: int, name: str | None = None) -> Index:
        """Floor division of a non-negative index by a positive constant."""
        if isinstance(a, int):
            return a // b
        return a if b == 1 else self._binary(arith.DivUIOp, a, b, name)

    def rem(self, a: Index, b: int, name: str | None = None) -> Index:
        """Remainder of a non-negative index by a positive constant."""
        if isinstance(a, int):
            return a % b
        return 0 if b == 1 else self._binary(arith.RemUIOp, a, b, name)

    def shr(self, a: Index, bits: int, name: str | None = None) -> Index:
        """``a >> bits`` (logical shift) of a non-negative index by a constant."""
        if isinstance(a, int):
            return a >> bits
        return a if bits == 0 else self._binary(arith.ShRUIOp, a, bits, name)

    def and_(self, a: Index, mask: int, name: str | None = None) -> Index:
        """``a & mask``: the bits of a non-negative index that a constant `mask` keeps."""
        if isinstance(a, int):
            return a & mask
        return 0 if mask == 0 else self._binary(arith.AndIOp, a, mask, name)

    def xor(self, a: Index, b: Index, name: str | None = None) -> Index:
        """``a ^ b`` of non-negative indices."""
        if isinstance(a, int) and isinstance(b, int):
            return a ^ b
        if b == 0:
            return a
        if a == 0:
            return b
        return self._binary(arith.XOrIOp, a, b, name)

    def unravel(self, linear: Index, shape: Sequence[int], *, in_range: bool = False) -> list[Index]:
        """Row-major coordinates of `linear` in `shape`.

        With `in_range` (the caller knows ``linear < prod(shape)``), every extent-1 dim is 0.
        Otherwise the first coordinate is not reduced modulo its extent, so an index past the
        end shows up as an out-of-range first coordinate that a guard can catch.
        """
        coords: list[Index] = []
        for d, extent in enumerate(shape):
            if extent == 1 and (d > 0 or in_range):
                coords.append(0)
                continue
            c = self.div(linear, math.prod(shape[d + 1:]))
            coords.append(c if d == 0 else self.rem(c, extent))
        return coords

    def lt(self, a: Index, b: Index, name: str | None = None) -> SSAValue:
        return self.insert(arith.CmpiOp(self.value(a), self.value(b), "ult"), name).results[0]

    def eq(self, a: Index, b: Index, name: str | None = None) -> SSAValue:
        return self.insert(arith.CmpiOp(self.value(a), self.value(b), "eq"), name).results[0]

    def ge(self, a: Index, b: Index, name: str | None = None) -> SSAValue:
        return self.insert(arith.CmpiOp(self.value(a), self.value(b), "uge"), name).results[0]

    def all_of(self, conditions: Sequence[SSAValue]) -> SSAValue | None:
        """The conjunction of i1 `conditions` (None when there are none)."""
        result: SSAValue | None = None
        for c in conditions:
            result = c if result is None else self.fop(arith.AndIOp, result, c)
        return result

    def _binary(self, op_type, a: Index, b: Index, name: str | None) -> SSAValue:
        return self.insert(op_type(self.value(a), self.value(b)), name).results[0]

    # ---- buffers ---------------------------------------------------------------------
    def load(self, buffer: SSAValue, indices: Sequence[Index], guard: Sequence[int] = (),
             name: str | None = None) -> SSAValue:
        """``tm.load`` (indices materialized; `guard`: dims checked against the shape); an
        narrow float element (``f16``, ``bf16``, float8) is widened to ``f32``."""
        op = tm.LoadOp(buffer, [self.value(i) for i in indices], guard)
        if dtypes.is_narrow_float(op.result.type):  # the name goes to the widened value
            return self.widen(self.insert(op).results[0], name)
        return self.insert(op, name).results[0]

    def widen(self, value: SSAValue, name: str | None = None) -> SSAValue:
        """A narrow float `value` as ``f32`` (``arith.extf``); any other value itself."""
        if not dtypes.is_narrow_float(value.type):
            return value
        return self.insert(arith.ExtFOp(value, Float32Type()), name).results[0]

    @staticmethod
    def computed_type(element: Attribute) -> Attribute:
        """The type a template computes an element of type `element` in: ``f32`` for
        a narrow float (what `load` returns), else `element` itself."""
        return Float32Type() if dtypes.is_narrow_float(element) else element

    def narrow(self, value: SSAValue, element: Attribute) -> SSAValue:
        """An ``f32`` `value` rounded to nearest even as a narrow float `element`
        (``arith.truncf``); any other value itself."""
        if dtypes.is_narrow_float(element) and isinstance(value.type, Float32Type):
            return self.insert(arith.TruncFOp(value, element)).results[0]
        return value

    def load_if(self, condition: SSAValue | None, buffer: SSAValue, indices: Sequence[Index],
                name: str | None = None) -> SSAValue:
        """``buffer[indices]`` where `condition` holds, else 0: a ``tm.load`` inside an
        ``scf.if`` (for predicates that are not bounds of the buffer's dims, such as
        padding; a plain load when `condition` is None). The indices may be computed
        outside; the load is done only under the condition."""
        if condition is None:
            return self.load(buffer, indices, name=name)
        assert isinstance(buffer.type, MemRefType)
        stored = self.value_if(  # the element as stored (a narrow float too), widened after the scf.if
            condition, lambda: self.insert(tm.LoadOp(buffer, [self.value(i) for i in indices])).results[0],
            0, buffer.type.element_type, name)
        return self.widen(stored)

    def value_if(self, condition: SSAValue | None, value: Callable[[], SSAValue],
                 fill: float | bool, type: Attribute, name: str | None = None) -> SSAValue:
        """``value()`` where `condition` holds, else the constant `fill` of `type`: an
        ``scf.if`` whose then-branch `value` fills (so what it loads is loaded only there);
        just ``value()`` when `condition` is None."""
        if condition is None:
            return value()
        then, other = Block(), Block()
        with self.at(then):
            self.insert(scf.YieldOp(value()))
        with self.at(other):
            self.insert(scf.YieldOp(self.constant(fill, type)))
        return self.insert(scf.IfOp(condition, [type], [then], [other]), name).results[0]

    def store(self, value: SSAValue, buffer: SSAValue, indices: Sequence[Index],
              guard: Sequence[int] = ()) -> None:
        """``tm.store`` (indices materialized; `guard`: dims checked against the shape); an
        ``f32`` value stored to a narrow float buffer is rounded to it first."""
        assert isinstance(buffer.type, MemRefType)
        value = self.narrow(value, buffer.type.element_type)
        self.insert(tm.StoreOp(value, buffer, [self.value(i) for i in indices], guard))

    # ---- element values ---------------------------------------------------------------
    def f32(self, x: float) -> SSAValue:
        return self.insert(arith.ConstantOp(FloatAttr(x, Float32Type()))).results[0]

    def constant(self, x: float | bool, type: Attribute) -> SSAValue:
        """A constant element of `type`: a float or an integer type (``i1`` for bools).

        arith.constant takes signless integers only: a constant of an unsigned type is an
        ``index`` constant converted by ``arith.index_cast`` (which wraps, so -1 is the
        largest value)."""
        if dtypes.is_float(type):
            return self.insert(arith.ConstantOp(FloatAttr(float(x), type))).results[0]
        assert isinstance(type, IntegerType), type
        if type.signedness.data == Signedness.UNSIGNED:
            value = int(x)
            if value >= 2**63:
                value -= 2**64
            index = self.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).results[0]
            return self.insert(arith.IndexCastOp(index, type)).results[0]
        value = int(x)
        if type.width.data > 1 and value >= 2 ** (type.width.data - 1):
            value -= 2 ** type.width.data
        return self.insert(arith.ConstantOp(IntegerAttr(value, type))).results[0]

    def fop(self, op_type, *operands: SSAValue, name: str | None = None) -> SSAValue:
        return self.insert(op_type(*operands), name).results[0]

    # ---- structure ----------------------------------------------------------------------
    @contextmanager
    def loop(self, lower: Index, upper: Index, step: int = 1, *, unroll: bool = False,
             rolled: bool = False, name: str | None = None) -> Iterator[SSAValue]:
        """``scf.for`` whose body the `with` block fills; yields the induction variable.
        `unroll`: unrolled completely (``tm.unroll``, ``#pragma unroll``); `rolled`: never
        unrolled (``tm.no_unroll``, ``#pragma unroll 1``: one iteration's loads in flight,
        where unrolling would hoist all of them into registers); else nvcc's choice."""
        assert not (unroll and rolled), "a loop is unrolled or rolled, not both"
        body = Block(arg_types=[IndexType()])
        op = scf.ForOp(self.value(lower), self.value(upper), self.value(step), [], body)
        if unroll:
            op.attributes["tm.unroll"] = UnitAttr()
        if rolled:
            op.attributes["tm.no_unroll"] = UnitAttr()
        self.insert(op)
        if name:
            body.args[0].name_hint = name
        with self.at(body):
            yield body.args[0]
            self.insert(scf.YieldOp())

    @contextmanager
    def if_(self, condition: SSAValue) -> Iterator[None]:
        """``scf.if`` without results whose then-branch the `with` block fills."""
        then = Block()
        self.insert(scf.IfOp(condition, [], [then]))
        with self.at(then):
            yield
            self.insert(scf.YieldOp())

    @contextmanager
    def for_task(self, mapping: TaskMapping, worker: SSAValue | None = None,
                 names: Sequence[str] = ()) -> Iterator[tuple[SSAValue, ...]]:
        """``tm.for_task``; yields the task indices."""
        op = tm.ForTaskOp(mapping, worker)
        self.insert(op)
        args = op.body.block.args
        for arg, name in zip(args, names):
            arg.name_hint = name
        with self.at(op.body.block):
            yield tuple(args)
