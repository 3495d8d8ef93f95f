"""``tm-onnx-node-tests``: ONNX's backend node tests for the supported ops, run on emu.

    tm-onnx-node-tests                 # per-op table, non-passing tests, exit 1 on news
    tm-onnx-node-tests -k gemm --jobs 2
    tm-onnx-node-tests --json          # one JSON object: tests, ops, totals
    tm-onnx-node-tests --update        # rewrite tests/onnx_node/non_passing.txt

The node tests come from the installed onnx package (``load_model_tests(kind="node")``
builds them in memory; nothing is downloaded or written). Every node test is one ONNX
node, except ``*_expanded*`` tests, which inline an op's function body and belong to the
op of the test they expand. A test is *selected* when its op is in the frontend's
``SUPPORTED_OPS`` and so is every node of its model; the other tests of a supported op are
*skipped*. A selected test is compiled with ``InferenceSession(model, device="emu")``, fed
its inputs by position (graph inputs that are not initializers) and its outputs compared
like ONNX's backend runner does (shape, dtype, then ``assert_allclose`` with the test's
rtol/atol). It *passed*, *failed* with a one-line reason (a one-line error of the
compiler's, or a mismatch), or *crashed*: an exception of any other type, which is a bug.

``tests/onnx_node/non_passing.txt`` lists the selected tests that fail, with their reason;
``tests/onnx_node/test_onnx_node.py`` holds the suite to it. Without ``--update`` the tool
exits with status 1 when a test crashed, failed without being listed, or is listed but
passes, or when the list names a test that is not selected.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import traceback
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from tmlir.tools.cli import one_line_failures

NON_PASSING = Path(__file__).resolve().parents[2] / "tests" / "onnx_node" / "non_passing.txt"
STATUSES = ("passed", "failed", "crashed", "skipped")
_DEFAULT_DOMAINS = ("", "ai.onnx")
_HEADER = """\
# ONNX backend node tests (onnx=={version}) of the supported ops that do not pass on emu.
# One line per test, sorted: `test_name: reason`. The list only shrinks: a test that
# starts passing must be removed, a test that stops passing is a regression. A crash
# (an unexpected exception type) is a bug and never belongs here.
# Regenerate with `tm-onnx-node-tests --update`; see docs/onnx_conformance.md.
"""


@dataclass(frozen=True)
class NodeTest:
    """One ONNX backend node test: its op under test and whether this compiler runs it."""

    name: str
    op: str
    """The op type under test (``domain.OpType`` outside the default domain)."""
    selected: bool
    unsupported: tuple[str, ...]
    """The op types of the model's nodes that are not supported (sorted)."""
    case: Any = field(repr=False, compare=False)
    """The ``onnx.backend.test.case.test_case.TestCase``: model, data_sets, rtol, atol."""


@dataclass(frozen=True)
class Outcome:
    """The result of one node test: status is one of ``STATUSES``, reason one line."""

    name: str
    op: str
    status: str
    reason: str = ""


def _op_label(node: Any) -> str:
    return node.op_type if node.domain in _DEFAULT_DOMAINS else f"{node.domain}.{node.op_type}"


def _expanded_of(name: str) -> str:
    """``test_x_expanded`` and ``test_x_expanded_ver18`` expand ``test_x``."""
    return name.split("_expanded")[0]


def load_node_tests(supported: Iterable[str] | None = None) -> list[NodeTest]:
    """Every ONNX backend node test, with its op under test and selection.

    `supported` defaults to the frontend's ``SUPPORTED_OPS`` as it is now.
    """
    from onnx.backend.test.loader import load_model_tests

    if supported is None:
        from tmlir.frontends.onnx import SUPPORTED_OPS as supported
    supported = set(supported)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    single = {c.name: _op_label(c.model.graph.node[0]) for c in cases
              if "_expanded" not in c.name and len(c.model.graph.node) == 1}
    tests = []
    for case in cases:
        ops = {_op_label(node) for node in case.model.graph.node}
        op = single.get(_expanded_of(case.name)) or (min(ops) if len(ops) == 1 else "?")
        unsupported = tuple(sorted(ops - supported))
        tests.append(NodeTest(case.name, op, op in supported and not unsupported, unsupported, case))
    return tests


def _one_line(text: str, limit: int = 240) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def one_line_errors() -> tuple[type[BaseException], ...]:
    """The exception types by which the compiler reports what it cannot do, in one line.

    Any other exception escaping ``InferenceSession`` is a crash. ``VerifyException`` is not
    here: invalid IR coming out of the pipeline is a compiler bug.
    """
    from xdsl.utils.exceptions import PassFailedException

    from tmlir.backends.cuda_c import CudaEmitError
    from tmlir.backends.emu import EmuError
    from tmlir.backends.ptx import CudaCompileError
    from tmlir.frontends.onnx import FrontendError
    from tmlir.layout import LayoutError
    from tmlir.mapping import MappingError
    from tmlir.runtime.session import SessionError

    return (FrontendError, SessionError, PassFailedException, CudaEmitError, EmuError,
            CudaCompileError, MappingError, LayoutError)


def _crash_reason(exc: BaseException) -> str:
    """``Type: message (at tmlir/file.py:line)``, naming the innermost frame in tmlir."""
    package = Path(__file__).resolve().parents[1]
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if Path(f.filename).resolve().is_relative_to(package)] or frames
    where = ""
    if ours:
        path = Path(ours[-1].filename).resolve()
        shown = path.relative_to(package.parent) if path.is_relative_to(package) else path
        where = f" (at {shown.as_posix()}:{ours[-1].lineno})"
    return _one_line(f"{type(exc).__name__}: {exc}{where}")


def compare_outputs(outputs: Sequence[np.ndarray], expected: Sequence[np.ndarray],
                    names: Sequence[str], rtol: float, atol: float) -> str | None:
    """None when `outputs` match `expected` as ONNX's backend runner checks, else why not."""
    if len(outputs) != len(expected):
        return f"expected {len(expected)} outputs, got {len(outputs)}"
    for i, (out, ref) in enumerate(zip(outputs, expected)):
        what = f"output {i} '{names[i]}'" if i < len(names) else f"output {i}"
        out, ref = np.asarray(out), np.asarray(ref)
        if out.shape != ref.shape:
            return f"{what}: shape {list(out.shape)}, expected {list(ref.shape)}"
        if out.dtype != ref.dtype:
            return f"{what}: dtype {out.dtype}, expected {ref.dtype}"
        close = np.isclose(out, ref, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            with np.errstate(all="ignore"):
                err = np.where(close, 0.0, np.abs(out.astype(np.float64) - ref.astype(np.float64)))
            flat = int(np.nanargmax(err)) if not np.isnan(err).all() else int(np.argmin(close))
            index = tuple(int(k) for k in np.unravel_index(flat, ref.shape))
            return (f"mismatch: {what}: {int((~close).sum())} of {close.size} elements differ, "
                    f"max abs err {err.flat[flat]:.3g} at index {list(index)} "
                    f"(got {out.flat[flat]:.6g}, expected {ref.flat[flat]:.6g})")
    return None


def _array(value: Any) -> Any:
    """A data set's value as numpy: the tests of types numpy lacks a dtype for (float16 of
    Cast, bfloat16, float8) store them as TensorProto."""
    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def run_node_test(test: NodeTest) -> Outcome:
    """Compile `test`'s model for emu, run every data set and compare; never raises."""
    from tmlir.runtime.session import InferenceSession

    case = test.case
    graph = case.model.graph
    initializers = {t.name for t in graph.initializer}
    input_names = [i.name for i in graph.input if i.name not in initializers]
    output_names = [o.name for o in graph.output]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            session = InferenceSession(case.model, device="emu")
            for inputs, expected in case.data_sets:
                inputs, expected = [_array(v) for v in inputs], [_array(v) for v in expected]
                outputs = session.run(None, dict(zip(input_names, inputs)))
                reason = compare_outputs(outputs, expected, output_names, case.rtol, case.atol)
                if reason is not None:
                    return Outcome(test.name, test.op, "failed", reason)
    except one_line_errors() as exc:
        return Outcome(test.name, test.op, "failed", _one_line(str(exc)) or type(exc).__name__)
    except Exception as exc:  # noqa: BLE001 -- any other exception is reported as a crash
        return Outcome(test.name, test.op, "crashed", _crash_reason(exc))
    return Outcome(test.name, test.op, "passed")


def run_node_tests(tests: Sequence[NodeTest], jobs: int = 1) -> list[Outcome]:
    """Outcomes of the selected `tests` (in order) and a "skipped" one for each other test.

    ``jobs > 1`` runs them in a pool of spawned processes (fork is not safe once emu
    shared objects are loaded).
    """
    selected = [t for t in tests if t.selected]
    if jobs > 1 and len(selected) > 1:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            ran = list(pool.map(run_node_test, selected, chunksize=1))
    else:
        ran = [run_node_test(t) for t in selected]
    by_name = {o.name: o for o in ran}
    return [by_name.get(t.name)
            or Outcome(t.name, t.op, "skipped", f"unsupported ops: {', '.join(t.unsupported)}")
            for t in tests]


def op_table(outcomes: Iterable[Outcome], ops: Iterable[str] = ()) -> dict[str, Counter[str]]:
    """Op type -> count per status; `ops` are rows to show even when they have no test."""
    table: dict[str, Counter[str]] = {op: Counter() for op in ops}
    for outcome in outcomes:
        table.setdefault(outcome.op, Counter())[outcome.status] += 1
    return dict(sorted(table.items()))


def format_table(table: dict[str, Counter[str]]) -> str:
    """A markdown table: one row per op type, then the totals."""
    lines = ["| op | " + " | ".join(STATUSES) + " |", "|---|" + "---:|" * len(STATUSES)]
    totals: Counter[str] = Counter()
    for op, counts in table.items():
        totals.update(counts)
        lines.append(f"| {op} | " + " | ".join(str(counts[s]) for s in STATUSES) + " |")
    lines.append("| **total** | " + " | ".join(f"**{totals[s]}**" for s in STATUSES) + " |")
    return "\n".join(lines)


def read_non_passing(path: Path = NON_PASSING) -> dict[str, str]:
    """The checked-in list: test name -> reason (empty if there is no file)."""
    if not path.exists():
        return {}
    entries = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.partition(":")
            entries[name.strip()] = reason.strip()
    return entries


def write_non_passing(entries: dict[str, str], path: Path = NON_PASSING) -> None:
    import onnx

    body = "".join(f"{name}: {entries[name]}\n" for name in sorted(entries))
    path.write_text(_HEADER.format(version=onnx.__version__) + body)


def check_against_list(outcomes: Iterable[Outcome], listed: dict[str, str],
                       selected: Iterable[str] | None) -> list[str]:
    """Problems, one line each: crashes, unlisted failures, listed passes, and entries
    that name no `selected` test (not checked when `selected` is None)."""
    problems = []
    for o in outcomes:
        if o.status == "crashed":
            problems.append(f"{o.name}: crashed: {o.reason}")
        elif o.status == "failed" and o.name not in listed:
            problems.append(f"{o.name}: fails but is not listed: {o.reason}")
        elif o.status == "passed" and o.name in listed:
            problems.append(f"{o.name}: now passes: remove it from {NON_PASSING.name}")
    if selected is not None:
        selected = set(selected)
        problems += [f"{name}: listed but not a selected node test" for name in sorted(listed)
                     if name not in selected]
    return problems


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tm-onnx-node-tests", description=__doc__.split("\n")[0])
    parser.add_argument("-k", dest="substring", default="", help="only tests whose name contains this")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="processes to run tests in (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--update", action="store_true",
                        help=f"rewrite the list of non-passing tests ({NON_PASSING.name})")
    parser.add_argument("--list", type=Path, default=NON_PASSING, help="the list to check or update")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.update and not args.list.parent.is_dir():
        parser.error(f"--update: no directory {args.list.parent} (not a source checkout? pass --list)")
    return args


@one_line_failures("tm-onnx-node-tests")
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tm-onnx-node-tests`` console script."""
    from tmlir.frontends.onnx import SUPPORTED_OPS

    args = _parse_args(argv)
    everything = load_node_tests(SUPPORTED_OPS)
    tests = [t for t in everything if args.substring in t.name]
    outcomes = run_node_tests(tests, args.jobs)
    ran = [o for o in outcomes if o.status != "skipped"]
    table = op_table((o for o in outcomes if o.op in SUPPORTED_OPS),
                     () if args.substring else SUPPORTED_OPS)
    listed = read_non_passing(args.list)
    selected = {t.name for t in everything if t.selected}
    if args.update:
        ran_names = {o.name for o in ran}
        kept = {n: r for n, r in listed.items() if n in selected and n not in ran_names}
        write_non_passing(kept | {o.name: o.reason for o in ran if o.status == "failed"}, args.list)
        listed = read_non_passing(args.list)
    problems = check_against_list(ran, listed, None if args.substring else selected)
    if args.json:
        totals = Counter(o.status for o in outcomes if o.op in SUPPORTED_OPS)
        print(json.dumps({
            "tests": [asdict(o) for o in outcomes if o.op in SUPPORTED_OPS],
            "ops": {op: {s: counts[s] for s in STATUSES} for op, counts in table.items()},
            "totals": {s: totals[s] for s in STATUSES},
            "problems": problems,
        }, indent=1))
    else:
        print(format_table(table))
        for o in ran:
            if o.status != "passed":
                print(f"{o.status.upper()} {o.name}: {o.reason}")
        for problem in problems:
            print(f"tm-onnx-node-tests: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
