"""tmlir.ir.ranges: the one upper-bound analysis that tm.for_task's verifier,
tm-lower-mappings and arith-simplify share."""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr

from tmlir.dialects import tm, tmgpu
from tmlir.ir.builder import IRBuilder
from tmlir.ir.ranges import constant, upper_bound


def _tm_kernel(grid: int = 4, block: int = 128) -> tuple[tm.KernelOp, IRBuilder]:
    kernel = tm.KernelOp("k", [], grid, block)
    return kernel, IRBuilder.at_end(kernel.body.block)


def test_worker_ids_are_below_the_kernel_sizes():
    _, b = _tm_kernel(grid=4, block=128)
    tid = b.insert(tm.ThreadIdOp()).results[0]
    bid = b.insert(tm.BlockIdOp()).results[0]
    assert upper_bound(tid) == 128 and upper_bound(bid) == 4


def test_division_remainder_and_the_global_id():
    _, b = _tm_kernel(grid=4, block=128)
    tid = b.insert(tm.ThreadIdOp()).results[0]
    bid = b.insert(tm.BlockIdOp()).results[0]
    assert upper_bound(b.div(tid, 32)) == 4
    assert upper_bound(b.div(tid, 48)) == 3  # rounded up
    assert upper_bound(b.rem(tid, 32)) == 32
    assert upper_bound(b.rem(b.div(tid, 64), 32)) == 2
    assert upper_bound(b.add(b.mul(bid, 128), tid)) == 4 * 128  # bid * block + tid


def test_constants_and_loops():
    _, b = _tm_kernel()
    assert upper_bound(b.value(7)) == 8
    negative = b.insert(arith.ConstantOp(IntegerAttr(-1, IndexType()))).results[0]
    assert constant(negative) == -1 and upper_bound(negative) is None
    with b.loop(0, 10) as i:
        assert upper_bound(i) == 10
        assert upper_bound(b.add(i, 5)) == 15


def test_unknown_values_have_no_bound():
    kernel = tm.KernelOp("k", [IndexType()], 1, 32)
    b = IRBuilder.at_end(kernel.body.block)
    arg = kernel.args[0]
    assert upper_bound(arg) is None
    assert upper_bound(b.add(arg, 1)) is None
    assert upper_bound(b.rem(arg, 8)) == 8  # a remainder is bounded whatever its lhs
    outside = tm.ThreadIdOp()  # not in a kernel
    assert upper_bound(outside.result) is None


def test_tmgpu_thread_id_x_is_below_the_block():
    kernel = tmgpu.KernelOp("k", [], 256)
    b = IRBuilder.at_end(kernel.body.block)
    assert upper_bound(b.insert(tmgpu.ThreadIdOp("x")).results[0]) == 256
    assert upper_bound(b.insert(tmgpu.ThreadIdOp("y")).results[0]) == 1
    assert upper_bound(b.insert(tmgpu.BlockIdOp("x")).results[0]) is None
