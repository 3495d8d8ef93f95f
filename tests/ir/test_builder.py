"""IRBuilder: xDSL's Builder with folded index arithmetic and nested insertion points."""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

from tmlir.ir.builder import IRBuilder


def test_is_an_xdsl_builder_with_its_insertion_point():
    block = Block(arg_types=[IndexType()])
    b = IRBuilder.at_end(block)
    assert isinstance(b, Builder)
    assert b.insertion_point.block is block and b.block is block


def test_insert_names_the_first_result():
    block = Block(arg_types=[IndexType()])
    b = IRBuilder.at_end(block)
    c = b.value(3, "three")
    assert c.name_hint == "three" and isinstance(c.owner, arith.ConstantOp)
    assert b.add(block.args[0], 0) is block.args[0] and b.mul(2, 3) == 6


def test_at_moves_and_restores_the_insertion_point():
    outer = Block(arg_types=[IndexType()])
    b = IRBuilder.at_end(outer)
    first = b.value(1)
    inner = Block()
    with b.at(inner):
        b.value(2)
        assert b.block is inner
    b.value(3)
    assert [op.value.value.data for op in inner.ops] == [2]
    assert [op.value.value.data for op in outer.ops] == [1, 3]
    before = IRBuilder.before(first.owner)
    before.value(0)
    assert outer.first_op.value.value.data == 0


def test_loops_nest_and_yield():
    block = Block(arg_types=[IndexType()])
    b = IRBuilder.at_end(block)
    with b.loop(0, 4, name="i") as i:
        with b.if_(b.lt(i, 2)):
            b.value(5)
        b.value(6)
    b.value(7)
    *bounds, loop, after = list(block.ops)  # lower, upper and step, then the loop
    assert all(isinstance(op, arith.ConstantOp) for op in bounds)
    assert isinstance(loop, scf.ForOp) and loop.body.block.args[0].name_hint == "i"
    assert isinstance(loop.body.block.last_op, scf.YieldOp)
    assert isinstance(after, arith.ConstantOp) and after.value.value.data == 7


def test_insert_at_an_explicit_point_like_builder():
    block = Block()
    b = IRBuilder.at_end(block)
    last = b.value(2).owner
    b.insert(arith.ConstantOp.from_int_and_width(1, IndexType()), InsertPoint.before(last))
    assert [op.value.value.data for op in block.ops] == [1, 2]


def test_bit_operations_fold_what_is_known():
    """shr, and_ and xor (a swizzle's arithmetic): constants fold, units vanish, and the
    rest become index ops of the two operands."""
    block = Block(arg_types=[IndexType()])
    b = IRBuilder.at_end(block)
    x = block.args[0]
    assert (b.shr(200, 3), b.and_(200, 56), b.xor(200, 25)) == (25, 8, 209)
    assert b.shr(x, 0) is x and b.and_(x, 0) == 0 and b.xor(x, 0) is x and b.xor(0, x) is x
    assert not list(block.ops)
    swizzled = b.xor(x, b.and_(b.shr(x, 3), 56))
    ops = list(block.ops)
    assert [type(op) for op in ops] == [arith.ConstantOp, arith.ShRUIOp, arith.ConstantOp, arith.AndIOp,
                                        arith.XOrIOp]
    assert [ops[0].value.value.data, ops[2].value.value.data] == [3, 56]
    assert swizzled is ops[-1].results[0] and ops[-1].operands[0] is x
