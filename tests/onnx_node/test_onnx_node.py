"""ONNX's backend node tests of the supported ops, on emu, held to ``non_passing.txt``.

A selected node test (see ``tmlir/tools/onnx_node_tests.py``) that is not listed must pass;
a listed one must still fail, without crashing; every entry must name a selected test.
``tm-onnx-node-tests --update`` regenerates the list.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from tmlir.tools import onnx_node_tests as tool
from tmlir.tools.onnx_node_tests import NodeTest, Outcome

NON_PASSING = Path(__file__).with_name("non_passing.txt")


@functools.cache
def node_tests() -> tuple[NodeTest, ...]:
    return tuple(tool.load_node_tests())


SELECTED = [t for t in node_tests() if t.selected]
LISTED = tool.read_non_passing(NON_PASSING)


@pytest.mark.parametrize("test", SELECTED, ids=[t.name for t in SELECTED])
def test_node(test: NodeTest) -> None:
    outcome = tool.run_node_test(test)
    assert outcome.status != "crashed", f"crashed (a bug, never listed): {outcome.reason}"
    if test.name in LISTED:
        assert outcome.status != "passed", "now passes: remove it from tests/onnx_node/non_passing.txt"
    else:
        assert outcome.status == "passed", f"{outcome.status}: {outcome.reason}"


def test_list_names_only_selected_tests() -> None:
    stale = sorted(set(LISTED) - {t.name for t in SELECTED})
    assert not stale, f"not selected node tests, remove them from {NON_PASSING.name}: {stale}"


def test_list_is_sorted_and_has_reasons() -> None:
    lines = [line for line in NON_PASSING.read_text().splitlines() if not line.startswith("#")]
    names = [line.partition(":")[0] for line in lines]
    assert names == sorted(names)
    assert all(line.partition(": ")[2].strip() for line in lines), "every entry needs a reason"


def test_tool_uses_the_checked_in_list() -> None:
    assert tool.NON_PASSING == NON_PASSING.resolve()


#: Supported ops for which onnx ships no node test, and where they are checked instead.
WITHOUT_NODE_TESTS = {"GlobalLpPool": "tests/e2e/test_normalization_ops.py (against onnxruntime)"}


def test_every_supported_op_has_node_tests() -> None:
    from tmlir.frontends.onnx import SUPPORTED_OPS

    ops = {t.op for t in node_tests()}
    assert [op for op in SUPPORTED_OPS if op not in ops] == sorted(WITHOUT_NODE_TESTS)


def test_expanded_tests_belong_to_their_op() -> None:
    ops = {t.name: t.op for t in node_tests()}
    assert ops["test_relu_expanded_ver18"] == "Relu"
    assert ops["test_softmax_axis_0_expanded"] == "Softmax"
    assert ops["test_gemm_default_no_bias"] == "Gemm"


# -- the harness itself ---------------------------------------------------------------------


def test_compare_outputs() -> None:
    ref = np.array([[1.0, 2.0], [3.0, np.nan]], np.float32)
    assert tool.compare_outputs([ref.copy()], [ref], ["y"], 1e-3, 1e-7) is None
    bad = ref.copy()
    bad[1, 0] = 3.5
    assert tool.compare_outputs([bad], [ref], ["y"], 1e-3, 1e-7) == (
        "mismatch: output 0 'y': 1 of 4 elements differ, max abs err 0.5 at index [1, 0] "
        "(got 3.5, expected 3)")
    assert "shape [4], expected [2, 2]" in tool.compare_outputs([ref.ravel()], [ref], ["y"], 0, 0)
    assert "dtype float64, expected float32" in tool.compare_outputs(
        [ref.astype(np.float64)], [ref], ["y"], 0, 0)
    assert tool.compare_outputs([], [ref], ["y"], 0, 0) == "expected 1 outputs, got 0"


def _raising_session(exc: BaseException):
    def session(*args: object, **kwargs: object) -> None:
        raise exc
    return session


def test_one_line_errors_fail_and_other_exceptions_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    from tmlir.frontends.onnx import FrontendError
    from tmlir.runtime import session

    test = next(t for t in node_tests() if t.name == "test_relu")
    monkeypatch.setattr(session, "InferenceSession", _raising_session(FrontendError("bad\nnode")))
    assert tool.run_node_test(test) == Outcome("test_relu", "Relu", "failed", "bad node")
    monkeypatch.setattr(session, "InferenceSession", _raising_session(KeyError("x")))
    outcome = tool.run_node_test(test)
    assert outcome.status == "crashed"
    assert outcome.reason.startswith("KeyError: 'x' (at tmlir/tools/onnx_node_tests.py:")


def test_check_against_list() -> None:
    outcomes = [Outcome("a", "Add", "passed"), Outcome("b", "Add", "failed", "why"),
                Outcome("c", "Add", "failed", "why"), Outcome("d", "Add", "crashed", "E: x")]
    problems = tool.check_against_list(outcomes, {"a": "", "b": "why", "d": "", "z": ""},
                                       {"a", "b", "c", "d"})
    assert problems == ["a: now passes: remove it from non_passing.txt",
                        "c: fails but is not listed: why", "d: crashed: E: x",
                        "z: listed but not a selected node test"]
