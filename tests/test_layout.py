"""Data layouts: the algebra (offsets against hand computations and its laws), the text
form, the tm.alloc verifier, and the lowering in convert-tm-to-gpu, executed on the emu
backend, storing every element exactly at ``layout.offset(index)``."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from xdsl.dialects import memref
from xdsl.dialects.builtin import Float32Type, MemRefType, ModuleOp
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.dialects import tm, tmgpu
from tmlir.ir.builder import IRBuilder
from tmlir.layout import DataLayout, LayoutAtom, LayoutError, column_major, parse_layout, row_major
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


rank = st.shared(st.integers(1, 3), key="rank")
layout_atoms = st.builds(
    lambda kind, shape, pad: LayoutAtom(kind, shape, pad),
    st.sampled_from(["row_major", "column_major"]),
    rank.flatmap(lambda r: st.tuples(*[st.integers(1, 4)] * r)),
    st.sampled_from([0, 0, 1, 3]),
)
layouts = st.lists(layout_atoms, min_size=1, max_size=3).map(lambda a: DataLayout(tuple(a)))


@settings(max_examples=200, deadline=None)
@given(layout=layouts)
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
@given(layout=layouts)
def test_lowered_arithmetic_equals_offset(layout):
    """convert-tm-to-gpu's index arithmetic, evaluated on constants (IRBuilder folds them)."""
    b = IRBuilder.at_end(Block())
    for index in np.ndindex(*layout.shape):
        assert linear_offset(b, layout, [int(i) for i in index]) == layout.offset(index)


@settings(max_examples=100, deadline=None)
@given(layout=layouts)
def test_text_round_trip(layout):
    assert parse_layout(str(layout)) == layout
    assert str(parse_layout(str(layout))) == str(layout)


def test_text_form():
    layout = parse_layout(" row_major(8,64, pad = 1)*column_major(2, 2, pad=0) ")
    assert layout == row_major(8, 64, pad=1) * column_major(2, 2)
    assert str(layout) == "row_major(8, 64, pad=1) * column_major(2, 2)"


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
    with pytest.raises(VerifyException, match="invalid data layout 'row_major': '\\(' expected"):
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
    np.testing.assert_array_equal(out, data.T)
    for index in np.ndindex(rows, cols):
        assert raw_out[layout.offset(index)] == data[index], index


REGISTER_LAYOUTS = [
    column_major(3, 4, pad=1),
    row_major(1, 2) * column_major(3, 2),
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
