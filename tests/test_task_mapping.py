"""The task-mapping algebra and its lowering: the lowered code, executed on the emu
backend, enumerates exactly the tasks of the semantics function, per worker, in order."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, ModuleOp

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.dialects import tm
from tmlir.mapping import MappingAtom, MappingError, TaskMapping, parse_mapping, repeat, spatial
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.tm_lower_mappings import TmLowerMappings
from tmlir.registry import make_context
from tmlir.schedules.builder import IRBuilder


def test_semantics_of_the_paper_example():
    m = spatial(4, 8) * repeat(2, 2)
    assert (m.num_workers, m.task_shape) == (32, (8, 16))
    assert m.worker_tasks(9) == [(2, 2), (2, 3), (3, 2), (3, 3)]  # block at (9/8*2, 9%8*2)
    assert (repeat(2, 1) * spatial(2, 3)).worker_tasks(4) == [(1, 1), (3, 1)]
    assert spatial(3).worker_tasks(3) == []


def test_parse_and_errors():
    assert str(parse_mapping("spatial(4,8)*repeat(2, 2)")) == "spatial(4, 8) * repeat(2, 2)"
    for bad in ["spatial(4) * repeat(2, 2)", "spatial(0)", "tile(2)", "spatial(a)", "spatial()"]:
        with pytest.raises(MappingError):
            parse_mapping(bad)


atoms = st.builds(
    lambda kind, shape: MappingAtom(kind, shape),
    st.sampled_from(["spatial", "repeat"]),
    st.shared(st.integers(1, 3), key="rank").flatmap(
        lambda r: st.tuples(*[st.integers(1, 4)] * r)),
)
mappings = st.lists(atoms, min_size=1, max_size=3).map(lambda a: TaskMapping(tuple(a))).filter(
    lambda m: m.num_workers <= 512 and math.prod(m.task_shape) // m.num_workers <= 64)


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
@given(mapping=mappings, extra=st.sampled_from([0, 0, 3]))
def test_lowered_mapping_enumerates_the_semantics(mapping, extra):
    block = mapping.num_workers + extra  # extra threads must get no task (worker guard)
    got = run_trace(mapping, block)
    np.testing.assert_array_equal(got, expected_trace(mapping, block))
    # The union over workers covers the task grid exactly once.
    covered = [tuple(t) for w in range(block) for t in got[w] if t[0] >= 0]
    assert sorted(covered) == sorted(np.ndindex(*mapping.task_shape))


def test_composition_of_three_levels():
    mapping = repeat(2, 1) * spatial(2, 4) * repeat(1, 3)
    np.testing.assert_array_equal(run_trace(mapping, 8), expected_trace(mapping, 8))
