"""Data layouts: the algebra (offsets against hand computations and its laws), swizzles
and the bank-conflict freedom of `chunk_swizzle` (checked exhaustively), the text form,
the tm.alloc verifier, and the lowering in convert-tm-to-gpu, executed on the emu backend,
storing every element exactly at ``layout.offset(index)``."""

from __future__ import annotations

import math
import operator
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import Float32Type, IndexType, MemRefType, ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import compile_ptx
from tmlir.dialects import tm, tmgpu
from tmlir.ir.builder import IRBuilder
from tmlir.layout import (
    BANK_GROUPS,
    CHUNK_BYTES,
    DataLayout,
    LayoutAtom,
    LayoutError,
    Swizzle,
    chunk_swizzle,
    column_major,
    parse_layout,
    row_major,
    swizzled_row_major,
)
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu, linear_offset
from tmlir.registry import make_context

F32 = Float32Type()


# ---- the algebra ----------------------------------------------------------------------

def test_atom_offsets_by_hand():
    assert row_major(3, 4).offset((1, 2)) == 1 * 4 + 2
    assert column_major(3, 4).offset((1, 2)) == 1 + 2 * 3
    assert row_major(3, 4, pad=1).offset((1, 2)) == 1 * 5 + 2
    assert column_major(3, 4, pad=2).offset((1, 2)) == 1 + 2 * 5
    assert row_major(2, 3, 4).offset((1, 2, 3)) == 1 * 12 + 2 * 4 + 3
    assert column_major(2, 3, 4).offset((1, 2, 3)) == 1 + 2 * 2 + 3 * 6
    assert row_major(2, 3, 4, pad=1).offset((1, 2, 3)) == 1 * 15 + 2 * 5 + 3
    assert [a.strides for a in (row_major(2, 3, 4).atoms[0], column_major(2, 3, 4, pad=1).atoms[0])] \
        == [(12, 4, 1), (1, 3, 9)]


def test_sizes_include_padding():
    assert (row_major(8, 64).size, row_major(8, 64, pad=1).size) == (512, 8 * 65)
    assert column_major(64, 8, pad=1).size == 65 * 8
    assert (row_major(2, 2) * column_major(4, 8, pad=1)).size == 4 * 5 * 8


def test_composition_by_hand():
    layout = row_major(2, 2) * column_major(4, 8)
    assert (layout.shape, layout.size) == ((8, 16), 128)
    # (5, 9) is in tile (1, 1) (offset 3 of row_major(2, 2)) at (1, 1) (offset 1 + 4).
    assert layout.offset((5, 9)) == 3 * 32 + 5
    three = column_major(2, 1) * row_major(1, 3) * row_major(2, 2, pad=1)
    assert three.shape == (4, 6)
    # (3, 5): atoms see (1, 0), (0, 2), (1, 1); storage per tile: 3 * 6 = 18, then 6.
    assert three.offset((3, 5)) == 1 * 18 + 2 * 6 + (1 * 3 + 1)


def test_composition_is_hidets_formula():
    outer, inner = column_major(3, 2), row_major(2, 4, pad=1)
    layout = outer * inner
    for i, j in np.ndindex(*layout.shape):
        expected = outer.offset((i // 2, j // 4)) * inner.size + inner.offset((i % 2, j % 4))
        assert layout.offset((i, j)) == expected


def test_atoms_match_numpy():
    shape = (3, 5, 2)
    for index in np.ndindex(*shape):
        assert row_major(*shape).offset(index) == np.ravel_multi_index(index, shape)
        assert column_major(*shape).offset(index) == np.ravel_multi_index(index, shape, order="F")


# ---- swizzles -------------------------------------------------------------------------

def test_swizzle_by_hand():
    swizzle = Swizzle(3, 3, 3)  # chunk column (bits 3..5) ^= row (bits 6..8) of 8x64 halves
    assert (swizzle.mask, swizzle.period) == (0b111000, 64)
    layout = row_major(8, 64) ^ swizzle
    assert (layout.shape, layout.size) == ((8, 64), 512)
    assert layout.offset((0, 10)) == 10  # row 0: unchanged
    assert layout.offset((1, 0)) == 64 + 8  # row 1: chunks 0 and 1 trade places
    assert layout.offset((1, 9)) == 64 + 1
    assert layout.offset((5, 3 * 8 + 2)) == 5 * 64 + (3 ^ 5) * 8 + 2
    assert (row_major(2, 2) * column_major(4, 8) ^ Swizzle(1, 0, 2)).offset((5, 9)) == 101 ^ 1


def test_swizzle_is_cutes():
    """CuTe's Swizzle<B, M, S> on offset o: o ^ ((o & (((1 << B) - 1) << (M + S))) >> S);
    an involution that changes only bits [M, M + B), so each aligned block of 2 ** (M + B)
    offsets maps onto itself."""
    for bits, base, shift in [(1, 0, 1), (2, 3, 3), (3, 3, 3), (3, 3, 4), (3, 2, 5), (2, 0, 7)]:
        swizzle = Swizzle(bits, base, shift)
        source = ((1 << bits) - 1) << (base + shift)
        for o in range(1 << 12):
            assert swizzle.apply(o) == o ^ ((o & source) >> shift)
            assert swizzle.apply(swizzle.apply(o)) == o
            assert swizzle.apply(o) ^ o == (swizzle.apply(o) ^ o) & swizzle.mask
            assert swizzle.apply(o) // swizzle.period == o // swizzle.period


def test_swizzle_errors():
    with pytest.raises(LayoutError, match=re.escape("swizzle(0, 3, 3): bits must be >= 1")):
        Swizzle(0, 3, 3)
    with pytest.raises(LayoutError, match=re.escape("swizzle(1, -1, 3): base must be >= 0")):
        Swizzle(1, -1, 3)
    with pytest.raises(LayoutError, match=re.escape(
            "swizzle(3, 3, 2): shift must be >= bits, so that the bits read [5, 8) do not "
            "overlap the bits changed [3, 6)")):
        Swizzle(3, 3, 2)
    with pytest.raises(LayoutError, match=re.escape(
            "row_major(8, 6) ^ swizzle(3, 3, 3): the size 48 must be a multiple of "
            "2 ** (base + bits) = 64")):
        row_major(8, 6) ^ Swizzle(3, 3, 3)
    swizzled = row_major(8, 8) ^ Swizzle(1, 0, 3)
    with pytest.raises(LayoutError, match=re.escape(
            "cannot compose the swizzled layout 'row_major(8, 8) ^ swizzle(1, 0, 3)': a swizzle "
            "applies to a whole layout, so swizzle the composition instead")):
        row_major(2, 2) * swizzled
    with pytest.raises(LayoutError, match="cannot compose the swizzled layout"):
        swizzled * row_major(2, 2)
    with pytest.raises(LayoutError, match=re.escape(
            "the layout 'row_major(8, 8) ^ swizzle(1, 0, 3)' is already swizzled")):
        swizzled ^ Swizzle(1, 1, 3)


def test_chunk_swizzle_by_hand():
    assert [chunk_swizzle(n, 2) for n in (8, 16, 32, 64, 128, 256)] == [
        None, Swizzle(1, 3, 3), Swizzle(2, 3, 3), Swizzle(3, 3, 3), Swizzle(3, 3, 4), Swizzle(3, 3, 5)]
    assert [chunk_swizzle(n, 4) for n in (4, 8, 16, 32, 64)] == [
        None, Swizzle(1, 2, 3), Swizzle(2, 2, 3), Swizzle(3, 2, 3), Swizzle(3, 2, 4)]
    assert chunk_swizzle(128, 1) == Swizzle(3, 4, 3)
    assert chunk_swizzle(48, 2) is None  # 6 chunks a row: no XOR swizzle helps
    assert chunk_swizzle(12, 2) is None  # rows not whole chunks
    assert swizzled_row_major(2, 32, 64, element_bytes=2) == row_major(2, 32, 64) ^ Swizzle(3, 3, 3)
    assert swizzled_row_major(32, 8, element_bytes=2) == row_major(32, 8)
    with pytest.raises(LayoutError, match="chunk_swizzle: element_bytes must divide 16, got 3"):
        chunk_swizzle(64, 3)
    with pytest.raises(LayoutError, match="chunk_swizzle: row_elements must be >= 1, got 0"):
        chunk_swizzle(0, 2)


def _bank_group(layout: DataLayout, index: tuple[int, ...], element_bytes: int) -> int:
    """The 16-byte group of banks (of 8, 128 bytes in all) an element's byte address is in."""
    return layout.offset(index) * element_bytes // CHUNK_BYTES % BANK_GROUPS


def _conflicts(layout: DataLayout, element_bytes: int) -> list[str]:
    """Chunk accesses of a row-major tile that share a bank group: 8 consecutive rows at one
    chunk column (ldmatrix; from every first row), and each 8 consecutive chunks of the
    row-major order (a cp.async fill by consecutive threads)."""
    rows, cols = layout.shape
    n = CHUNK_BYTES // element_bytes
    chunks = cols // n
    found = []
    for first in range(rows - BANK_GROUPS + 1):
        for c in range(chunks):
            groups = {_bank_group(layout, (first + d, c * n), element_bytes) for d in range(BANK_GROUPS)}
            if len(groups) < BANK_GROUPS:
                found.append(f"rows {first}.. at chunk {c}")
    for first in range(0, rows * chunks, BANK_GROUPS):
        linear = range(first, min(first + BANK_GROUPS, rows * chunks))
        groups = {_bank_group(layout, (q // chunks, q % chunks * n), element_bytes) for q in linear}
        if len(groups) < len(linear):
            found.append(f"chunks {first}..")
    return found


ROW_CHUNKS = [1 << k for k in range(9)]
"""Every row length `chunk_swizzle` supports up to 4 KiB: 1 to 256 chunks of 16 bytes
(beyond, the same formula with a larger shift)."""


@pytest.mark.parametrize("element_bytes", [1, 2, 4, 8, 16])
def test_chunk_swizzle_is_conflict_free_and_keeps_chunks(element_bytes):
    """For every supported row length: 16 rows (so the 8 consecutive rows from every first
    row cover each residue modulo 8, all the swizzle reads of a row) are read and filled
    without bank conflicts; every 16-byte chunk stays contiguous, aligned and in its row;
    the layout is a permutation of the storage. Without the swizzle, every row of two
    chunks or more has conflicts (so the check can fail)."""
    n = CHUNK_BYTES // element_bytes
    for chunks in ROW_CHUNKS:
        rows, cols = 16, chunks * n
        layout = swizzled_row_major(rows, cols, element_bytes=element_bytes)
        assert (layout.swizzle is None) == (chunks == 1)
        assert _conflicts(layout, element_bytes) == [], layout
        if chunks > 1:
            assert _conflicts(row_major(rows, cols), element_bytes) != [], chunks
        offsets = np.array([[layout.offset((r, j)) for j in range(cols)] for r in range(rows)])
        assert sorted(offsets.ravel()) == list(range(layout.size))
        by_chunk = offsets.reshape(rows, chunks, n)
        assert (by_chunk[..., 0] % n == 0).all()
        assert (by_chunk - by_chunk[..., :1] == np.arange(n)).all()
        assert (by_chunk // cols == np.arange(rows)[:, None, None]).all()


def test_swizzled_stages_stay_conflict_free():
    """A multi-stage tile (stage, row, column): the swizzle reads the low bits of the
    linear row, so each stage's rows are as conflict-free as a single tile's."""
    layout = swizzled_row_major(3, 16, 64, element_bytes=2)
    for stage in range(3):
        for first in range(16 - BANK_GROUPS + 1):
            for c in range(8):
                groups = {_bank_group(layout, (stage, first + d, c * 8), 2) for d in range(BANK_GROUPS)}
                assert len(groups) == BANK_GROUPS


rank = st.shared(st.integers(1, 3), key="rank")
layout_atoms = st.builds(
    lambda kind, shape, pad: LayoutAtom(kind, shape, pad),
    st.sampled_from(["row_major", "column_major"]),
    rank.flatmap(lambda r: st.tuples(*[st.integers(1, 4)] * r)),
    st.sampled_from([0, 0, 1, 3]),
)
layouts = st.lists(layout_atoms, min_size=1, max_size=3).map(lambda a: DataLayout(tuple(a)))


def _swizzled(layout: DataLayout) -> st.SearchStrategy[DataLayout]:
    """`layout` with any swizzle whose period divides its size (those it may take)."""
    twos = (layout.size & -layout.size).bit_length() - 1
    if twos == 0:
        return st.just(layout)
    return st.integers(1, twos).flatmap(lambda bits: st.builds(
        lambda base, extra: layout ^ Swizzle(bits, base, bits + extra),
        st.integers(0, twos - bits), st.integers(0, 3)))


swizzled_layouts = layouts.flatmap(lambda layout: st.one_of(st.just(layout), _swizzled(layout)))
"""Layouts, swizzled or not."""


@settings(max_examples=200, deadline=None)
@given(layout=swizzled_layouts)
def test_offsets_are_injective_and_in_bounds(layout):
    offsets = [layout.offset(i) for i in np.ndindex(*layout.shape)]
    assert len(set(offsets)) == len(offsets) == math.prod(layout.shape)
    assert all(0 <= o < layout.size for o in offsets)
    if all(a.pad == 0 for a in layout.atoms):  # dense: a permutation of the storage
        assert sorted(offsets) == list(range(layout.size))


@settings(max_examples=100, deadline=None)
@given(layout=layouts, split=st.integers(1, 2))
def test_hidets_formula_holds_at_every_split(layout, split):
    """So composition is associative: (a * b) * c and a * (b * c) are one layout."""
    assume(split < len(layout.atoms))
    outer, inner = DataLayout(layout.atoms[:split]), DataLayout(layout.atoms[split:])
    assert outer * inner == layout
    for index in np.ndindex(*layout.shape):
        o = tuple(i // s for i, s in zip(index, inner.shape))
        n = tuple(i % s for i, s in zip(index, inner.shape))
        assert layout.offset(index) == outer.offset(o) * inner.size + inner.offset(n)


@settings(max_examples=100, deadline=None)
@given(layout=swizzled_layouts)
def test_lowered_arithmetic_equals_offset(layout):
    """convert-tm-to-gpu's index arithmetic, evaluated on constants (IRBuilder folds them)."""
    b = IRBuilder.at_end(Block())
    for index in np.ndindex(*layout.shape):
        assert linear_offset(b, layout, [int(i) for i in index]) == layout.offset(index)


_INDEX_OPS = {
    arith.AddiOp: operator.add, arith.MuliOp: operator.mul, arith.DivUIOp: operator.floordiv,
    arith.RemUIOp: operator.mod, arith.ShRUIOp: operator.rshift, arith.AndIOp: operator.and_,
    arith.XOrIOp: operator.xor,
}


def _evaluate(value: SSAValue | int, env: dict[SSAValue, int]) -> int:
    """The value of index arithmetic on block arguments bound by `env`."""
    if isinstance(value, int):
        return value
    if value in env:
        return env[value]
    op = value.owner
    if isinstance(op, arith.ConstantOp):
        return op.value.value.data
    return _INDEX_OPS[type(op)](_evaluate(op.operands[0], env), _evaluate(op.operands[1], env))


@settings(max_examples=100, deadline=None)
@given(layout=swizzled_layouts)
def test_lowered_ops_compute_offset(layout):
    """The ops convert-tm-to-gpu emits for SSA indices (shifts, masks and XORs of a
    swizzle included), evaluated at every index of the shape."""
    block = Block(arg_types=[IndexType()] * layout.rank)
    offset = linear_offset(IRBuilder.at_end(block), layout, list(block.args))
    assert all(type(op) in (arith.ConstantOp, *_INDEX_OPS) for op in block.ops)
    for index in np.ndindex(*layout.shape):
        env = dict(zip(block.args, map(int, index)))
        assert _evaluate(offset, env) == layout.offset(index), index


@settings(max_examples=100, deadline=None)
@given(layout=swizzled_layouts)
def test_text_round_trip(layout):
    assert parse_layout(str(layout)) == layout
    assert str(parse_layout(str(layout))) == str(layout)


def test_text_form():
    layout = parse_layout(" row_major(8,64, pad = 1)*column_major(2, 2, pad=0) ")
    assert layout == row_major(8, 64, pad=1) * column_major(2, 2)
    assert str(layout) == "row_major(8, 64, pad=1) * column_major(2, 2)"
    swizzled = parse_layout("row_major(2,2)*column_major(4, 8)^swizzle(2,1,3)")
    assert swizzled == row_major(2, 2) * column_major(4, 8) ^ Swizzle(2, 1, 3)
    assert str(swizzled) == "row_major(2, 2) * column_major(4, 8) ^ swizzle(2, 1, 3)"
    assert parse_layout("row_major(8, 64) ^ swizzle(3, 3, 3)") == swizzled_row_major(8, 64, element_bytes=2)


@pytest.mark.parametrize(("text", "message"), [
    ("swizzle(8, 8)", "Expected one of 'column_major', 'row_major' in a data layout"),
    ("row_major(4) * column_major(2, 2)", "cannot compose layouts of different ranks"),
    ("row_major(8, 0)", "row_major(8, 0): every extent must be >= 1"),
    ("row_major()", "row_major() needs at least one dimension"),
    ("row_major(a, 2)", "Expected integer literal"),
    ("row_major(4, pad=-1)", "pad must be >= 0"),
    ("row_major(4, pad=1, 2)", "'pad=' may appear once, after the extents"),
    ("row_major(4, pad=1, pad=2)", "'pad=' may appear once"),
    ("column_major(pad=1)", "column_major() needs at least one dimension"),
    ("", "Expected one of 'column_major', 'row_major' in a data layout"),
    ("row_major(8, 64) ^ swizzle(3, 3, 2)", "swizzle(3, 3, 2): shift must be >= bits"),
    ("row_major(8, 64) ^ swizzle(0, 3, 3)", "swizzle(0, 3, 3): bits must be >= 1"),
    ("row_major(4, 4) ^ swizzle(1, 4, 1)", "the size 16 must be a multiple of 2 ** (base + bits) = 32"),
    ("row_major(8, 64) ^ swizzle(3, 3)", "swizzle(...) takes 3 integers (bits, base, shift), got (3, 3)"),
    ("row_major(8, 64) ^ swizzle(3, 3, pad=3)", "swizzle(...) takes 3 integers (bits, base, shift), got (3, 3, pad=3)"),
    ("row_major(8, 64) ^ shuffle(3, 3, 3)", "Expected 'swizzle' after '^' in a data layout"),
    ("row_major(8, 64) ^", "Expected 'swizzle' after '^' in a data layout"),
    ("row_major(1, 8) ^ swizzle(2, 0, 2) * row_major(8, 8)",
     "a swizzle applies to the whole layout: write '^ swizzle(...)' after the last atom"),
    ("row_major(8, 64) ^ swizzle(3, 3, 3) ^ swizzle(1, 0, 1)", "a data layout takes one swizzle"),
])
def test_parse_errors(text, message):
    with pytest.raises(LayoutError) as info:
        parse_layout(text)
    assert message in str(info.value)


def test_offset_errors():
    with pytest.raises(LayoutError, match=r"index \(8, 0\) is out of range for layout "
                                          r"row_major\(8, 64\) of shape \(8, 64\)"):
        row_major(8, 64).offset((8, 0))
    with pytest.raises(LayoutError, match=r"index \(1,\) is out of range"):
        row_major(8, 64).offset((1,))
    with pytest.raises(LayoutError, match="cannot compose layouts of different ranks"):
        row_major(4) * column_major(2, 2)


# ---- the dialect --------------------------------------------------------------------

def test_alloc_verifier():
    def verify(scope: str, shape: list[int], layout: DataLayout) -> None:
        op = tm.AllocOp(scope, MemRefType(F32, shape), layout)
        if scope == "global":
            ModuleOp([op]).verify()
            return
        kernel = tm.KernelOp("k", [], 1, 32)
        kernel.body.block.add_op(op)
        ModuleOp([kernel]).verify()

    verify("shared", [64, 8], column_major(64, 8))
    verify("register", [4, 8], row_major(2, 2) * column_major(2, 4))
    with pytest.raises(VerifyException, match=re.escape(
            "layout 'column_major(64, 4)' has shape 64x4 but the buffer is memref<64x8xf32>")):
        verify("shared", [64, 8], column_major(64, 4))
    with pytest.raises(VerifyException, match="a global buffer cannot have a data layout"):
        verify("global", [4, 4], row_major(4, 4))
    with pytest.raises(VerifyException, match=re.escape(
            "invalid data layout 'row_major': Expected '(' after 'row_major' in a data layout")):
        tm.DataLayoutAttr("row_major")


# ---- the lowering, executed ---------------------------------------------------------

def _run(module: ModuleOp, kernel: tmgpu.KernelOp, threads: int, args: list[np.ndarray]) -> str:
    """Run the kernel on the emu backend; returns the CUDA source."""
    module.verify()
    program = emit_cuda(module)
    emu = compile_emu(program.source, [k.signature for k in program.kernels])
    emu.launch(kernel.sym_name.data, 1, threads, args)
    return program.source


def _lower(module: ModuleOp) -> tmgpu.KernelOp:
    module.verify()
    ConvertTmToGpu().apply(make_context(), module)
    return next(op for op in module.walk() if isinstance(op, tmgpu.KernelOp))


def _copy_storage(b: IRBuilder, storage, raw, prefix: list, lower, step: int) -> None:
    """raw[prefix..., k] = storage[k] for k in [lower, size) by `step` (tmgpu level)."""
    with b.loop(lower, storage.type.get_shape()[0], step) as k:
        v = b.insert(memref.LoadOp.get(storage, [k])).results[0]
        b.insert(memref.StoreOp.get(v, raw, [*map(b.value, prefix), k]))


SHARED_LAYOUTS = [
    column_major(8, 16),
    row_major(8, 16, pad=1),
    row_major(2, 2) * column_major(4, 8, pad=3),
    column_major(2, 1) * row_major(2, 4) * column_major(2, 4, pad=1),
    swizzled_row_major(16, 32, element_bytes=4),
    row_major(2, 2) * column_major(4, 8) ^ Swizzle(2, 1, 3),
    row_major(8, 16, pad=16) ^ Swizzle(2, 2, 3),
]


@pytest.mark.parametrize("layout", SHARED_LAYOUTS, ids=str)
def test_shared_layout_on_emu(layout):
    """Each thread stores one element through the layout; after a barrier each thread
    reads another thread's element (a transpose). The raw storage is copied out too: every
    element must sit exactly at layout.offset(i, j)."""
    rows, cols = layout.shape
    threads = rows * cols
    kernel = tm.KernelOp("transpose", [MemRefType(F32, [rows, cols]), MemRefType(F32, [cols, rows]),
                                       MemRefType(F32, [layout.size])], 1, threads)
    x, y, raw = kernel.body.block.args
    b = IRBuilder.at_end(kernel.body.block)
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    smem = b.insert(tm.AllocOp("shared", MemRefType(F32, [rows, cols]), layout), "smem").results[0]
    i, j = b.div(tid, cols), b.rem(tid, cols)
    b.store(b.load(x, [i, j]), smem, [i, j])
    b.insert(tm.BarrierOp())
    jt, it = b.div(tid, rows), b.rem(tid, rows)
    b.store(b.load(smem, [it, jt]), y, [jt, it])
    module = ModuleOp([kernel])
    gpu_kernel = _lower(module)

    storage = next(op.result for op in gpu_kernel.walk() if isinstance(op, tmgpu.SharedAllocOp))
    assert storage.type.get_shape() == (layout.size,)
    b = IRBuilder.at_end(gpu_kernel.body.block)
    b.insert(tmgpu.BarrierOp())
    tid = next(op.result for op in gpu_kernel.walk() if isinstance(op, tmgpu.ThreadIdOp))
    _copy_storage(b, storage, gpu_kernel.body.block.args[2], [], tid, threads)

    data = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) + 1
    out = np.zeros((cols, rows), np.float32)
    raw_out = np.zeros(layout.size, np.float32)
    source = _run(module, gpu_kernel, threads, [data, out, raw_out])
    assert f"__shared__ float smem[{layout.size}];" in source
    if layout.swizzle is not None:
        assert f"& {layout.swizzle.mask})" in source and " ^ " in source
    np.testing.assert_array_equal(out, data.T)
    for index in np.ndindex(rows, cols):
        assert raw_out[layout.offset(index)] == data[index], index


REGISTER_LAYOUTS = [
    column_major(3, 4, pad=1),
    row_major(1, 2) * column_major(3, 2),
    row_major(4, 4) ^ Swizzle(1, 1, 2),
]


@pytest.mark.parametrize("layout", REGISTER_LAYOUTS, ids=str)
def test_register_layout_on_emu(layout):
    """Each thread fills its register buffer in loops (indices are SSA values), reads it
    back transposed, and copies the raw per-thread storage out."""
    rows, cols = layout.shape
    threads = 4
    kernel = tm.KernelOp("regs", [MemRefType(F32, [threads, rows, cols]),
                                  MemRefType(F32, [threads, cols, rows]),
                                  MemRefType(F32, [threads, layout.size])], 1, threads)
    x, y, raw = kernel.body.block.args
    b = IRBuilder.at_end(kernel.body.block)
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    regs = b.insert(tm.AllocOp("register", MemRefType(F32, [rows, cols]), layout), "regs").results[0]
    with b.loop(0, rows) as i, b.loop(0, cols) as j:
        b.store(b.load(x, [tid, i, j]), regs, [i, j])
    with b.loop(0, cols) as j, b.loop(0, rows) as i:
        b.store(b.load(regs, [i, j]), y, [tid, j, i])
    module = ModuleOp([kernel])
    gpu_kernel = _lower(module)

    storage = next(op.result for op in gpu_kernel.walk() if isinstance(op, tmgpu.LocalAllocOp))
    assert storage.type.get_shape() == (layout.size,)
    b = IRBuilder.at_end(gpu_kernel.body.block)
    tid = next(op.result for op in gpu_kernel.walk() if isinstance(op, tmgpu.ThreadIdOp))
    _copy_storage(b, storage, gpu_kernel.body.block.args[2], [tid], 0, 1)

    data = np.arange(threads * rows * cols, dtype=np.float32).reshape(threads, rows, cols) + 1
    out = np.zeros((threads, cols, rows), np.float32)
    raw_out = np.zeros((threads, layout.size), np.float32)
    _run(module, gpu_kernel, threads, [data, out, raw_out])
    np.testing.assert_array_equal(out, data.transpose(0, 2, 1))
    for t in range(threads):
        for index in np.ndindex(rows, cols):
            assert raw_out[t, layout.offset(index)] == data[(t, *index)], (t, index)


SWIZZLED_MMA = Path(__file__).parent / "filecheck" / "backends" / "cuda_swizzle.mlir"


def test_swizzled_tensor_core_tiles_on_emu():
    """cp.async fills and ldmatrix reads of swizzled f16 tiles (the one-warp mma kernel of
    tests/filecheck/backends/cuda_swizzle.mlir, which also compiles it with nvcc) give
    A @ B exactly as numpy's f64 product, rounded to f32."""
    ctx = make_context()
    module = Parser(ctx, SWIZZLED_MMA.read_text()).parse_module()
    module.verify()
    ConvertTmToGpu().apply(ctx, module)
    program = emit_cuda(module)
    kernel = program.kernel("swizzled_mma_tile")
    rng = np.random.default_rng(5)
    a = rng.integers(-8, 8, (16, 16)).astype(np.float16)  # small integers: exact products and sums
    b_t = rng.integers(-8, 8, (8, 16)).astype(np.float16)
    c = np.full((16, 8), np.nan, np.float32)
    with compile_emu(program.source, [kernel.signature]) as emu:
        emu.launch("swizzled_mma_tile", 1, 32, [a, b_t, c])
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b_t.astype(np.float64).T)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_swizzled_transpose_compiles_with_nvcc():
    """The swizzled shared transpose of test_shared_layout_on_emu as PTX: the swizzle is
    integer XOR, shift and mask on the offset."""
    layout = swizzled_row_major(16, 32, element_bytes=4)
    kernel = tm.KernelOp("transpose", [MemRefType(F32, [16, 32]), MemRefType(F32, [32, 16])], 1, 512)
    x, y = kernel.body.block.args
    b = IRBuilder.at_end(kernel.body.block)
    tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
    smem = b.insert(tm.AllocOp("shared", MemRefType(F32, [16, 32]), layout), "smem").results[0]
    b.store(b.load(x, [b.div(tid, 32), b.rem(tid, 32)]), smem, [b.div(tid, 32), b.rem(tid, 32)])
    b.insert(tm.BarrierOp())
    b.store(b.load(smem, [b.rem(tid, 16), b.div(tid, 16)]), y, [b.div(tid, 16), b.rem(tid, 16)])
    module = ModuleOp([kernel])
    _lower(module)
    ptx = compile_ptx(emit_cuda(module).source, "sm_90", compiler="nvcc")
    assert ".entry transpose(" in ptx
    mask = layout.swizzle.mask  # 28: bits 2..4, the 4-float chunk column
    assert len(re.findall(rf"and\.b32\s+%r\d+, %r\d+, {mask};", ptx)) == 2  # store and load
    assert len(re.findall(r"xor\.b32\s", ptx)) == 2
