"""``tm-opt --verify-diagnostics``: check a file's errors against its ``expected-*`` comments.

In goes an opt driver (`tmlir.tools.tm_opt.TmOptMain`) whose input holds annotations as
mlir-opt reads them; out come the modules that compiled (as without the flag) and, on
stderr, one line per mismatch, with exit status 1 when there is any:

    // expected-error@+1 {{shapes 2x3, 4 do not broadcast}}
    %x = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>

An annotation ``// expected-error {{text}}`` (``-warning``, ``-note``, ``-remark``) is about
its own line; ``@+N`` / ``@-N`` about the line N below / above, ``@unknown`` about a
diagnostic that has no line (an op a pass created, a whole-module target error). ``text``
must be a substring of the diagnostic's message. Per chunk of ``--split-input-file``, every
diagnostic -- a parse error, a verifier error, a pass or target error, an `OpWarning` --
must match an annotation of its kind on its line, and every annotation must be matched.
Diagnostics get their lines from the spans the parser recorded (`tmlir.ir.ssa`) and the op
an error or warning carries (`tmlir.ir.diagnostics`). Other Python warnings are shown as
usual and not checked.
"""

from __future__ import annotations

import dataclasses
import io
import re
import sys
import warnings
from typing import IO, Protocol

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.lexer import Span

from tmlir.ir.diagnostics import OpVerifyError, OpWarning, failing_op, message_of
from tmlir.ir.ssa import describe

_ANNOTATION = re.compile(r"//.*?\bexpected-(error|warning|note|remark)(@[^\s{]*)?(.*)$")
_AT = re.compile(r"@(?:([+-]\d+)|(unknown))$")


class OptDriver(Protocol):
    """What the check needs of ``tm-opt``'s driver (`TmOptMain`)."""

    op_spans: dict[Operation, Span] | None

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]: ...
    def get_input_name(self) -> str: ...
    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None: ...
    def apply_passes(self, prog: ModuleOp) -> None: ...
    def output_resulting_program(self, prog: ModuleOp) -> str: ...


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """An error or warning: its `line` and `column` in the input (None: unknown)."""

    severity: str
    message: str
    line: int | None = None
    column: int | None = None


@dataclasses.dataclass
class Expectation:
    """An ``expected-<severity>`` annotation written on `written_at`, about `line` (None:
    ``@unknown``), wanting `text` in the message."""

    severity: str
    text: str
    line: int | None
    written_at: int
    matched: bool = False


def parse_expectations(text: str, line_offset: int = 0) -> tuple[list[Expectation], list[tuple[int, str]]]:
    """The annotations of a chunk whose first line is line ``line_offset + 1`` of the file,
    and the malformed ones as (line, problem)."""
    expectations: list[Expectation] = []
    problems: list[tuple[int, str]] = []
    for index, source_line in enumerate(text.splitlines(), start=line_offset + 1):
        match = _ANNOTATION.search(source_line)
        if match is None:
            continue
        severity, at, rest = match.groups()
        rest = rest.strip()
        if at is None and rest and not rest.startswith("{"):
            continue  # prose naming one ("an expected-error comment")
        line: int | None = index
        if at is not None:
            where = _AT.match(at)
            if where is None:
                problems.append((index, f"bad location '{at}' in expected-{severity} "
                                        "(expected @+N, @-N or @unknown)"))
                continue
            line = None if where.group(2) else index + int(where.group(1))
        if not (rest.startswith("{{") and "}}" in rest):
            problems.append((index, f"expected-{severity} needs its text in {{{{...}}}}"))
            continue
        expectations.append(Expectation(severity, rest[2:rest.rindex("}}")], line, index))
    return expectations, problems


def check(expectations: list[Expectation], diagnostics: list[Diagnostic], file: str) -> list[str]:
    """The mismatches, mlir-opt's way: each diagnostic without an unmatched annotation of
    its severity and line whose text it contains, then each annotation nothing matched."""
    failures = []
    for diagnostic in diagnostics:
        match = next((e for e in expectations if not e.matched and e.severity == diagnostic.severity
                      and e.line == diagnostic.line and e.text in diagnostic.message), None)
        if match is not None:
            match.matched = True
        elif diagnostic.line is None:
            failures.append(f"{file}: error: unexpected {diagnostic.severity} (no location; expect it "
                            f"with expected-{diagnostic.severity}@unknown): {diagnostic.message}")
        else:
            failures.append(f"{file}:{diagnostic.line}:{diagnostic.column}: error: unexpected "
                            f"{diagnostic.severity}: {diagnostic.message}")
    for e in expectations:
        if not e.matched:
            failures.append(f'{file}:{e.written_at}: error: expected {e.severity} "{e.text}" was not produced')
    return failures


def about_op(severity: str, op: Operation | None, message: str,
             spans: dict[Operation, Span] | None) -> Diagnostic:
    """A diagnostic about `op`, on its line when the parser recorded its span."""
    span = (spans or {}).get(op) if op is not None else None
    if span is None:
        return Diagnostic(severity, message)
    location = span.get_location()
    return Diagnostic(severity, message, location.line, location.col)


def render(exc: BaseException, spans: dict[Operation, Span] | None) -> str:
    """An error's text for ``tm-opt: error: ...``: located (``file:line:col``, source line,
    caret; the op printed when it has no span) when it is about an op."""
    op = failing_op(exc)
    if op is None or isinstance(exc, OpVerifyError):
        return str(exc).strip()
    return describe(op, spans, message_of(exc))


def run_verifying(driver: OptDriver, output: IO[str]) -> int:
    """Run every chunk, writing the modules that compile to `output` (separated by
    ``// -----``) and the mismatches to stderr; 1 if there was any, else 0."""
    chunks, extension = driver.prepare_input()
    file = driver.get_input_name()
    failed = False
    for number, (chunk, offset) in enumerate(chunks):
        with chunk:
            data = chunk.read()
        if number > 0:
            output.write("// -----\n")
        expectations, problems = parse_expectations(data.decode("utf-8", "replace"), offset)
        diagnostics, printed = _run_chunk(driver, data, extension, offset)
        if printed is not None:
            output.write(printed)
        failures = [f"{file}:{line}: error: {problem}" for line, problem in problems]
        failures += check(expectations, diagnostics, file)
        for failure in failures:
            print(failure, file=sys.stderr)
        failed = failed or bool(failures)
    return 1 if failed else 0


def _run_chunk(driver: OptDriver, data: bytes, extension: str, offset: int
               ) -> tuple[list[Diagnostic], str | None]:
    """The diagnostics of one chunk, and its output when it compiled."""
    diagnostics: list[Diagnostic] = []
    printed = None
    driver.op_spans = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            module = driver.parse_chunk(io.BytesIO(data), extension, offset)
            if module is not None:
                driver.apply_passes(module)
                printed = driver.output_resulting_program(module)
        except ParseError as exc:
            location = dataclasses.replace(exc.span, line_offset=offset).get_location()
            diagnostics.append(Diagnostic("error", exc.msg, location.line, location.col))
        except (DiagnosticException, ValueError) as exc:  # verifier, pass and target errors
            diagnostics.append(about_op("error", failing_op(exc), message_of(exc), driver.op_spans))
    for warning in caught:
        if isinstance(warning.message, OpWarning):
            diagnostics.append(about_op("warning", warning.message.op, warning.message.message,
                                        driver.op_spans))
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    return diagnostics, printed
