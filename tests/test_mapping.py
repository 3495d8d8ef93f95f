"""The task-mapping algebra and its lowering: the lowered code, executed on the emu
backend, enumerates exactly the tasks of the semantics function, per worker, in order."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, ModuleOp
from xdsl.utils.exceptions import VerifyException

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.dialects import tm
from tmlir.ir.builder import IRBuilder
from tmlir.mapping import (
    MappingAtom,
    MappingError,
    TaskMapping,
    auto_map,
    parse_mapping,
    repeat,
    spatial,
)
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.tm_lower_mappings import TmLowerMappings
from tmlir.registry import make_context


def test_semantics_of_the_paper_example():
    m = spatial(4, 8) * repeat(2, 2)
    assert (m.num_workers, m.task_shape) == (32, (8, 16))
    assert m.worker_tasks(9) == [(2, 2), (2, 3), (3, 2), (3, 3)]  # block at (9/8*2, 9%8*2)
    assert (repeat(2, 1) * spatial(2, 3)).worker_tasks(4) == [(1, 1), (3, 1)]
    assert spatial(3).worker_tasks(3) == []


def test_ranks_number_workers_and_order_loops():
    # Column-major spatial: worker w gets (w % 4, w // 4).
    assert [spatial(4, 8, ranks=[1, 0]).worker_tasks(w) for w in range(32)] == [
        [(w % 4, w // 4)] for w in range(32)]
    # Column-major repeat: dimension 1 is the outer loop.
    assert repeat(2, 3, ranks=[1, 0]).worker_tasks(0) == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    # ranks=[2, 0, 1]: dim 1 is the high digit, then dim 2, then dim 0.
    m = spatial(2, 3, 4, ranks=[2, 0, 1])
    assert [m.worker_tasks(w)[0] for w in (1, 2, 8)] == [(1, 0, 0), (0, 0, 1), (0, 1, 0)]
    assert repeat(2, 2, 2, ranks=[2, 0, 1]).worker_tasks(0)[:3] == [(0, 0, 0), (1, 0, 0), (0, 0, 1)]
    # Composition is unchanged: outer * inner_extent + inner.
    assert (spatial(2, 2, ranks=[1, 0]) * repeat(1, 2)).worker_tasks(1) == [(1, 0), (1, 1)]
    assert (repeat(2, 1) * spatial(2, 2, ranks=[1, 0])).worker_tasks(2) == [(0, 1), (2, 1)]


def test_unroll_flags_do_not_change_the_tasks():
    plain, flagged = repeat(2, 32), repeat(2, 32, unroll=[False, True])
    assert plain.worker_tasks(0) == flagged.worker_tasks(0)
    assert plain.atoms[0].unroll_flags == (True, False)  # default: extents <= 16
    assert flagged.atoms[0].unroll_flags == (False, True)
    assert plain != flagged


def test_equality_and_printing():
    assert spatial(4, 8, ranks=[0, 1]) == spatial(4, 8)
    assert spatial(4, 8, ranks=[1, 0]) != spatial(4, 8)
    assert spatial(2) * repeat(3) == TaskMapping((MappingAtom("spatial", (2,)), MappingAtom("repeat", (3,))))
    assert str(spatial(4, 8, ranks=(0, 1))) == "spatial(4, 8)"
    assert str(repeat(2, 64, ranks=[1, 0], unroll=[True, False])) == (
        "repeat(2, 64, ranks=[1, 0], unroll=[true, false])")


@pytest.mark.parametrize("text", [
    "spatial(4, 8) * repeat(2, 2)",
    "spatial(4, 8, ranks=[1, 0]) * repeat(2, 64, ranks=[1, 0], unroll=[true, false])",
    "repeat(3, unroll=[false])",
    "repeat(2, 1, 1) * spatial(2, 3, 4, ranks=[2, 0, 1]) * repeat(1, 2, 2, unroll=[true, true, false])",
])
def test_parse_print_round_trip(text):
    mapping = parse_mapping(text)
    assert str(mapping) == text
    assert parse_mapping(str(mapping)) == mapping


def test_parse_normalizes_spacing_and_defaults():
    assert str(parse_mapping("spatial(4,8)*repeat(2, 2)")) == "spatial(4, 8) * repeat(2, 2)"
    assert str(parse_mapping(" spatial( 4 , 8 , ranks = [ 0 , 1 ] ) ")) == "spatial(4, 8)"
    assert parse_mapping("repeat(2, 3, ranks=[1,0], unroll=[true,false])") == repeat(
        2, 3, ranks=[1, 0], unroll=[True, False])


@pytest.mark.parametrize("text, message", [
    ("spatial(4) * repeat(2, 2)", "cannot compose mappings of different ranks"),
    ("spatial(0)", "spatial(0): every extent must be >= 1"),
    ("tile(2)", "Expected one of 'repeat', 'spatial' in a task mapping"),
    ("spatial(a)", "expected an integer extent, got 'a' in spatial(...)"),
    ("spatial()", "spatial() needs at least one dimension"),
    ("spatial(4, 8, ranks=[0, 0])", "ranks must be a permutation of [0, 1]"),
    ("spatial(4, 8, ranks=[1])", "ranks must be a permutation of [0, 1]"),
    ("repeat(4, ranks=[1])", "ranks must be a permutation of [0]"),
    ("repeat(2, 64, unroll=[true])", "unroll has 1 flags for 2 dimensions"),
    ("spatial(4, unroll=[true])", "spatial(4, unroll=[true]): unroll applies to repeat only"),
    ("repeat(4, order=[0])", "unknown keyword 'order' in repeat(...), expected ranks or unroll"),
    ("repeat(4, unroll=[yes])", "Expected boolean literal (unroll flag)"),
    ("repeat(4, ranks=[0], ranks=[0])", "'ranks' given twice"),
    ("repeat(4, ranks=0)", "'[' expected"),
    ("repeat(4, ranks=[0], 2)", "extents must come before keywords"),
    ("spatial(4) x", "unexpected text after the expression"),
])
def test_parse_errors(text, message):
    with pytest.raises(MappingError) as info:
        parse_mapping(text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_constructor_errors():
    with pytest.raises(MappingError, match="unroll applies to repeat only"):
        MappingAtom("spatial", (4,), unroll=(True,))
    with pytest.raises(MappingError, match=r"ranks must be a permutation of \[0, 1, 2\]"):
        spatial(2, 2, 2, ranks=[0, 1, 3])


def test_mapping_attribute():
    attr = tm.TaskMappingAttr(spatial(4, 8, ranks=[1, 0]) * repeat(2, 2, unroll=[False, True]))
    assert attr.expr.data == "spatial(4, 8, ranks=[1, 0]) * repeat(2, 2, unroll=[false, true])"
    assert attr.mapping == spatial(4, 8, ranks=[1, 0]) * repeat(2, 2, unroll=[False, True])
    assert attr.mapping is attr.mapping  # held, not re-parsed on each access
    assert attr == tm.TaskMappingAttr(str(attr.mapping)) and hash(attr) == hash(tm.TaskMappingAttr(attr.mapping))
    with pytest.raises(VerifyException, match=r"invalid task mapping 'spatial\(4, unroll=\[true\]\)': "
                       r"spatial\(4, unroll=\[true\]\): unroll applies to repeat only"):
        tm.TaskMappingAttr("spatial(4, unroll=[true])")


@pytest.mark.parametrize("shape, workers, ranks, expected", [
    ((16, 8), 16, None, "repeat(8, 1) * spatial(2, 8)"),
    ((4, 6), 6, None, "repeat(4, 1) * spatial(1, 6)"),
    ((4, 6), 4, None, "repeat(2, 3) * spatial(2, 2)"),
    ((4, 6), 4, [1, 0], "repeat(1, 6, ranks=[1, 0]) * spatial(4, 1, ranks=[1, 0])"),
    ((4, 6), 6, [1, 0], "repeat(2, 2, ranks=[1, 0]) * spatial(2, 3, ranks=[1, 0])"),
    ((8, 8), 64, None, "spatial(8, 8)"),
    ((2, 3, 4), 12, None, "repeat(2, 1, 1) * spatial(1, 3, 4)"),
    ((2, 3, 4), 12, [2, 0, 1], "repeat(1, 1, 2, ranks=[2, 0, 1]) * spatial(2, 3, 2, ranks=[2, 0, 1])"),
    ((96,), 32, None, "repeat(3) * spatial(32)"),
    ((4, 4), 1, None, "repeat(4, 4)"),
    ((1, 1), 1, None, "spatial(1, 1)"),
])
def test_auto_map(shape, workers, ranks, expected):
    mapping = auto_map(shape, workers, ranks)
    assert str(mapping) == expected
    assert (mapping.task_shape, mapping.num_workers) == (shape, workers)
    covered = sorted(t for w in range(workers) for t in mapping.worker_tasks(w))
    assert covered == sorted(np.ndindex(*shape))


def test_auto_map_puts_consecutive_workers_on_the_fastest_dimension():
    row_major, col_major = auto_map((8, 8), 16), auto_map((8, 8), 16, ranks=[1, 0])
    assert [row_major.worker_tasks(w)[0] for w in range(3)] == [(0, 0), (0, 1), (0, 2)]
    assert [col_major.worker_tasks(w)[0] for w in range(3)] == [(0, 0), (1, 0), (2, 0)]


@pytest.mark.parametrize("shape, workers, ranks, message", [
    ((4, 6), 5, None, "cannot spread a 4x6 task grid over 5 workers"),
    ((4, 6), 48, None, "cannot spread a 4x6 task grid over 48 workers"),
    ((3,), 0, None, "cannot spread a 3 task grid over 0 workers"),
    ((100,), 32, None, "cannot spread a 100 task grid over 32 workers"),
    ((4, 6), 4, [0, 0], "ranks must be a permutation of [0, 1]"),
    ((4, 0), 4, None, "every extent must be >= 1"),
])
def test_auto_map_errors(shape, workers, ranks, message):
    with pytest.raises(MappingError) as info:
        auto_map(shape, workers, ranks)
    assert message in str(info.value)


@st.composite
def mappings(draw) -> TaskMapping:
    """1 to 4 atoms of one rank (1 to 3) with random ranks and unroll flags; at most 256
    workers and 64 tasks per worker."""
    rank = draw(st.integers(1, 3))
    atoms: list[MappingAtom] = []
    workers = tasks = 1
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["spatial", "repeat"]))
        budget = 256 // workers if kind == "spatial" else 64 // tasks
        shape = []
        for _ in range(rank):
            shape.append(draw(st.integers(1, max(1, min(4, budget)))))
            budget //= shape[-1]
        ranks = tuple(draw(st.permutations(range(rank))))
        unroll = None
        if kind == "repeat":
            unroll = draw(st.none() | st.tuples(*[st.booleans()] * rank))
        atom = MappingAtom(kind, tuple(shape), ranks, unroll)
        workers *= atom.num_workers
        tasks *= math.prod(shape) // atom.num_workers
        atoms.append(atom)
    return TaskMapping(tuple(atoms))


def trace_kernel(mapping: TaskMapping, block: int) -> ModuleOp:
    """A kernel where each thread records the tasks it runs, in order, into out[tid]."""
    tasks = math.prod(mapping.task_shape) // mapping.num_workers
    out_type = MemRefType(IntegerType(32), [block, tasks, mapping.rank])
    kernel = tm.KernelOp("trace", [out_type], 1, block)
    (out,) = kernel.body.block.args
    b = IRBuilder.at_end(kernel.body.block)
    tid = b.insert(tm.ThreadIdOp()).results[0]
    count = b.insert(tm.AllocOp("register", MemRefType(IndexType(), [1]))).results[0]
    b.insert(tm.StoreOp(b.value(0), count, [b.value(0)]))
    with b.for_task(mapping, tid) as task:
        seq = b.insert(tm.LoadOp(count, [b.value(0)])).results[0]
        for d, index in enumerate(task):
            as_int = b.insert(arith.IndexCastOp(index, IntegerType(32))).results[0]
            b.insert(tm.StoreOp(as_int, out, [tid, seq, b.value(d)]))
        b.insert(tm.StoreOp(b.value(b.add(seq, 1)), count, [b.value(0)]))
    module = ModuleOp([kernel])
    module.verify()
    return module


def run_trace(mapping: TaskMapping, block: int) -> np.ndarray:
    module = trace_kernel(mapping, block)
    ctx = make_context()
    TmLowerMappings().apply(ctx, module)
    assert not any(isinstance(op, tm.ForTaskOp) for op in module.walk())
    # One loop per repeat dimension of extent > 1, nested in rank order, marked per its flag.
    expected_unroll = [a.unroll_flags[d] for a in mapping.atoms if a.kind == "repeat"
                       for d in a.order if a.shape[d] > 1]
    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    assert ["tm.unroll" in op.attributes for op in loops] == expected_unroll
    ConvertTmToGpu().apply(ctx, module)
    module.verify()
    program = emit_cuda(module)
    emu = compile_emu(program.source, [k.signature for k in program.kernels])
    tasks = math.prod(mapping.task_shape) // mapping.num_workers
    out = np.full((block, tasks, mapping.rank), -1, np.int32)
    emu.launch("trace", 1, block, [out])
    return out


def expected_trace(mapping: TaskMapping, block: int) -> np.ndarray:
    tasks = math.prod(mapping.task_shape) // mapping.num_workers
    out = np.full((block, tasks, mapping.rank), -1, np.int32)
    for w in range(block):
        for seq, task in enumerate(mapping.worker_tasks(w)):
            out[w, seq] = task
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mapping=mappings(), extra=st.sampled_from([0, 0, 3]))
def test_lowered_mapping_enumerates_the_semantics(mapping, extra):
    block = mapping.num_workers + extra  # extra threads must get no task (worker guard)
    got = run_trace(mapping, block)
    np.testing.assert_array_equal(got, expected_trace(mapping, block))
    # The union over workers covers the task grid exactly once.
    covered = [tuple(t) for w in range(block) for t in got[w] if t[0] >= 0]
    assert sorted(covered) == sorted(np.ndindex(*mapping.task_shape))


@pytest.mark.parametrize("mapping", [
    repeat(2, 1) * spatial(2, 4) * repeat(1, 3),
    spatial(4, 8, ranks=[1, 0]) * repeat(2, 3, ranks=[1, 0], unroll=[True, False]),
    repeat(2, 2, 2, ranks=[2, 0, 1]) * spatial(2, 3, 2, ranks=[1, 2, 0]) * repeat(1, 2, 1),
], ids=str)
def test_lowered_examples(mapping):
    block = mapping.num_workers
    np.testing.assert_array_equal(run_trace(mapping, block), expected_trace(mapping, block))
