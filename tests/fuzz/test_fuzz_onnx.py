"""Random valid ONNX graphs (``fuzz_onnx_graphs.py``) on emu against onnxruntime.

The normal suite runs 30 graphs of 1-6 nodes, the same ones every run (``derandomize``);
``-m slow`` runs 2000 new ones, and 300 with zero-size dims. A failing graph is shrunk by
hypothesis and printed (its ops, feed and graph); keep it as an explicit case in
``test_regressions.py`` once understood (``docs/testing.md``).
"""

from __future__ import annotations

from collections import Counter

import onnx
import pytest
from fuzz_harness import run_case
from fuzz_onnx_graphs import FUZZ_DTYPES, onnx_cases
from fuzz_onnx_ops import GENERATORS
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def check(case) -> None:
    outcome = run_case(case.model, case.feed)
    assume(outcome.kind != "ort")  # onnxruntime cannot run it: no test of tmlir
    assert outcome.kind == "pass", str(outcome)


@settings(derandomize=True, database=None, deadline=None, max_examples=30, suppress_health_check=QUIET)
@given(onnx_cases(max_nodes=6))
def test_random_graphs_match_onnxruntime(case):
    check(case)


@pytest.mark.slow
@settings(database=None, deadline=None, max_examples=2000, suppress_health_check=QUIET)
@given(onnx_cases(max_nodes=8))
def test_many_random_graphs_match_onnxruntime(case):
    check(case)


@pytest.mark.slow
@settings(database=None, deadline=None, max_examples=300, suppress_health_check=QUIET)
@given(onnx_cases(max_nodes=4, zero_size=True))
def test_random_graphs_with_zero_size_dims(case):
    check(case)


def _tensors(model: onnx.ModelProto):
    for value in (*model.graph.input, *model.graph.output):
        yield value.type.tensor_type


def test_strategy_draws_valid_varied_graphs():
    """No compile: 150 drawn graphs are valid ONNX (the strategy checks each) and together
    use every dtype, odd dims, diamonds (a value read twice) and several-output graphs;
    none has a zero-size dim unless asked."""
    seen: Counter[str] = Counter()

    @settings(derandomize=True, database=None, deadline=None, max_examples=150, suppress_health_check=QUIET)
    @given(onnx_cases(max_nodes=6), st.just(None))
    def draw(case, _):
        seen.update(f"gen:{op}" for op in case.ops)
        reads = Counter(name for node in case.model.graph.node for name in node.input)
        seen["diamond"] += any(count > 1 for count in reads.values())
        seen["outputs>1"] += len(case.model.graph.output) > 1
        for tensor in _tensors(case.model):
            seen[f"dtype:{tensor.elem_type}"] += 1
            dims = [d.dim_value for d in tensor.shape.dim]
            seen["odd"] += any(d in (3, 7, 17) for d in dims)
            seen["zero"] += 0 in dims

    draw()
    assert {f"dtype:{d}" for d in FUZZ_DTYPES} <= set(seen)
    assert seen["diamond"] and seen["outputs>1"] and seen["odd"]
    assert seen["zero"] == 0


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_every_generator_draws_valid_graphs(family: str):
    """Each op generator alone makes valid graphs that use it (the mixed draw above covers
    most generators, but which ones depends on the order the tests ran in)."""
    used = []

    @settings(derandomize=True, database=None, deadline=None, max_examples=8, suppress_health_check=QUIET)
    @given(onnx_cases(max_nodes=2, families=[family]))
    def draw(case):
        used.extend(case.ops)

    draw()
    assert family in used


def test_strategy_draws_zero_size_dims_when_asked():
    zeros = []

    @settings(derandomize=True, database=None, deadline=None, max_examples=40, suppress_health_check=QUIET)
    @given(onnx_cases(max_nodes=3, zero_size=True))
    def draw(case):
        zeros.append(any(0 in [d.dim_value for d in t.shape.dim] for t in _tensors(case.model)))

    draw()
    assert any(zeros)
