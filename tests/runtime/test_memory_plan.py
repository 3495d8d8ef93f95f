"""The memory plan: temps live at the same launch never share bytes, dead ones are reused
best-fit, and inputs, outputs and weights stay out of the arena (`tmlir.runtime.memory_plan`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmlir.backends.cuda_c import BufferSpec, CudaProgram, LaunchSpec
from tmlir.runtime.memory_plan import ALIGNMENT, Lifetime, _best_fit, check_plan, plan_memory


def program(buffers: list[tuple[str, int]], launches: list[tuple[int, ...]]) -> CudaProgram:
    """A launch plan over float32 buffers given as (kind, elements)."""
    specs = tuple(BufferSpec(f"b{i}", (n,), kind, "") for i, (kind, n) in enumerate(buffers))
    return CudaProgram("", (), specs, tuple(LaunchSpec("k", 1, 1, args) for args in launches))


def test_a_chain_ping_pongs_between_two_slots():
    # x -> t1 -> t2 -> t3 -> t4 -> y: each temp dies when the next one is written.
    n = 1024  # 4 KiB each, a multiple of the alignment
    prog = program([("input", n), *[("temp", n)] * 4, ("output", n)],
                   [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)])
    plan = plan_memory(prog)
    check_plan(plan)
    assert plan.no_reuse_bytes == 4 * 4 * n
    assert plan.arena_bytes == plan.live_peak_bytes == 2 * 4 * n
    assert set(plan.offsets) == {1, 2, 3, 4}  # only temps have a place in the arena
    assert plan.offsets[1] == plan.offsets[3] and plan.offsets[2] == plan.offsets[4]


def test_no_reuse_gives_every_temp_its_own_bytes():
    prog = program([("temp", 100), ("temp", 300), ("temp", 100)], [(0,), (1,), (2,)])
    plan = plan_memory(prog, reuse=False)
    check_plan(plan)
    assert plan.arena_bytes == plan.no_reuse_bytes == (2 + 5 + 2) * ALIGNMENT  # 400, 1200, 400 B
    assert len(set(plan.offsets.values())) == 3


def test_best_fit_takes_the_smallest_gap_that_holds_the_buffer():
    u = ALIGNMENT
    live = [(0, Lifetime(0, 2 * u, 0, 5)), (3 * u, Lifetime(1, u, 0, 5)),
            (10 * u, Lifetime(2, u, 0, 5)), (4 * u, Lifetime(3, 6 * u, 7, 9))]  # 3: not live
    # Gaps among the buffers live at launches 2..3: [2u, 3u) and [4u, 10u).
    assert _best_fit(Lifetime(9, u, 2, 3), live) == 2 * u
    assert _best_fit(Lifetime(9, 2 * u, 2, 3), live) == 4 * u
    assert _best_fit(Lifetime(9, 7 * u, 2, 3), live) == 11 * u  # no gap: above them all


def test_a_temp_no_launch_uses_gets_no_memory():
    prog = program([("input", 8), ("temp", 8), ("temp", 8), ("output", 8)], [(0, 1), (1, 3)])
    plan = plan_memory(prog)
    assert set(plan.offsets) == {1}
    assert plan.report()["temps"] == 1


def test_report_counts_inputs_outputs_and_weights_apart():
    prog = program([("input", 10), ("weight", 20), ("temp", 30), ("output", 40)],
                   [(0, 1, 2), (2, 3)])
    report = plan_memory(prog).report()
    assert report["input_bytes"] == 40 and report["weight_bytes"] == 80
    assert report["output_bytes"] == 160 and report["peak_bytes"] == ALIGNMENT
    assert report["peak_fraction"] == 1.0


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_programs_never_overlap_live_buffers(data):
    sizes = data.draw(st.lists(st.integers(1, 5000), min_size=1, max_size=25))
    launches = data.draw(st.lists(
        st.lists(st.integers(0, len(sizes) - 1), min_size=1, max_size=4).map(tuple),
        min_size=1, max_size=30))
    prog = program([("temp", n) for n in sizes], launches)
    plan = plan_memory(prog)
    check_plan(plan)
    assert plan.live_peak_bytes <= plan.arena_bytes <= plan.no_reuse_bytes
    assert all(offset % ALIGNMENT == 0 for offset in plan.offsets.values())


def test_check_plan_catches_an_overlap():
    prog = program([("temp", 64), ("temp", 64)], [(0, 1)])
    plan = plan_memory(prog)
    broken = type(plan)({0: 0, 1: 0}, plan.lifetimes, plan.arena_bytes, plan.no_reuse_bytes)
    with pytest.raises(AssertionError, match="live together"):
        check_plan(broken)
    np.testing.assert_equal(sorted(plan.offsets.values()), [0, ALIGNMENT])
