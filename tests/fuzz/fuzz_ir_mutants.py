"""Mutants of the lit inputs of the graph, tm and tmgpu dialects, run through ``tm-opt``.

`lit_cases()` reads the ``.mlir`` files under ``tests/filecheck/dialects/{graph,tm,tmgpu}``
and ``tests/filecheck/passes``, splits them at ``// -----`` and drops comment lines; each
case keeps the pass pipeline of its file's first ``RUN:`` line (``-p ...``), if any.
`mutate()` applies one seeded mutation (`MUTATIONS`): delete, duplicate or truncate a line,
swap two tokens, change a number, a type or an attribute name, or make an SSA use refer to
an undefined value (``ssa_undefined``) or to one defined later (``ssa_later``, the
dominance class: use-before-def and ``%y = op %y``).

`run_tm_opt()` runs ``tm.tools.tm_opt.main`` in-process and returns its exit status and
output; `check_result()` says what is wrong with a result: an exception escaping ``main``
(a traceback), an exit status other than 0 or 1, or error output that is not one short
diagnostic.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import shlex
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

FILECHECK = Path(__file__).resolve().parents[1] / "filecheck"
DIALECT_DIRS = ("dialects/graph", "dialects/tm", "dialects/tmgpu", "passes")
#: The mutation classes whose failures are expected until tm-opt checks SSA dominance.
DOMINANCE = frozenset({"ssa_later"})
#: The most lines one diagnostic may take (message, source line, caret, a note).
MAX_ERROR_LINES = 8

_SSA = re.compile(r"%[A-Za-z0-9_$.-]+")
#: Whole numbers only: not the digits of a name or a type width (``i64``; an absurd width,
#: ``i4294967296``, makes xDSL allocate a number of that many bits: reported, not fuzzed).
_NUMBER = re.compile(r"(?<![A-Za-z0-9_%#@.])-?\d+(\.\d+)?")
_TYPES = ("f32", "f16", "f64", "i1", "i32", "i64", "index", "bf16", "ui8")
_TYPE = re.compile(r"\b(f32|f16|f64|i1|i8|i32|i64|index|bf16|ui8)\b")
_ATTR_NAME = re.compile(r"\b([a-z_]+)\s*=\s*(?=[^=])")
_NUMBERS = ("0", "-1", "1", "3", "17", "4294967296", "-9223372036854775808", "99999999999999999999", "2.5")


@dataclass(frozen=True)
class LitCase:
    """One ``// -----`` chunk of a lit input, without its comments."""

    file: str
    index: int
    text: str
    passes: str | None

    @property
    def label(self) -> str:
        return f"{self.file}#{self.index}"


@dataclass(frozen=True)
class Mutant:
    case: LitCase
    mutation: str
    text: str


def _pipeline(source: str) -> str | None:
    for line in source.splitlines():
        if line.startswith("// RUN:"):
            words = shlex.split(line[len("// RUN:"):].split("|")[0])
            for flag in ("-p", "--passes"):
                if flag in words and words.index(flag) + 1 < len(words):
                    return words[words.index(flag) + 1]
            return None
    return None


def lit_cases() -> list[LitCase]:
    """Every chunk of the dialect and pass lit inputs, sorted by file."""
    cases = []
    for folder in DIALECT_DIRS:
        for path in sorted((FILECHECK / folder).glob("*.mlir")):
            source = path.read_text()
            passes = _pipeline(source)
            for i, chunk in enumerate(source.split("// -----")):
                lines = [ln for ln in chunk.splitlines() if not ln.lstrip().startswith("//") and ln.strip()]
                if lines:
                    cases.append(LitCase(f"{folder}/{path.name}", i, "\n".join(lines) + "\n", passes))
    return cases


def _replace_match(rng: random.Random, text: str, pattern: re.Pattern, choices) -> str | None:
    found = list(pattern.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    options = [c for c in choices if c != m.group(0)] if not callable(choices) else [choices(m)]
    return text[:m.start()] + rng.choice(options) + text[m.end():]


_HEADER = re.compile(r"^\s*(\^|func\.func|tm\.kernel|tmgpu\.kernel|tm\.for_task)")
_RESULTS = re.compile(r"^\s*%[^=]*=")


def _ssa_defs(lines: list[str]) -> list[tuple[int, str]]:
    """(line, name) of every SSA value a line defines (results and block arguments)."""
    defs = []
    for i, line in enumerate(lines):
        if _HEADER.match(line):
            defs += [(i, name) for name in _SSA.findall(line.split("{")[0])]
        elif _RESULTS.match(line):
            defs += [(i, name) for name in _SSA.findall(line.split("=")[0])]
    return defs


def _uses(lines: list[str]) -> list[tuple[int, re.Match]]:
    """(line, match) of every SSA operand: not a result, not a block argument."""
    found = []
    for i, line in enumerate(lines):
        if _HEADER.match(line):
            start = line.find(" on ")  # tm.for_task (%i) in ... on %tid: %tid is a use
            found += [(i, m) for m in _SSA.finditer(line) if start >= 0 and m.start() > start]
            continue
        start = line.index("=") + 1 if _RESULTS.match(line) else 0
        found += [(i, m) for m in _SSA.finditer(line) if m.start() >= start]
    return found


def mutate(case: LitCase, mutation: str, seed: int) -> Mutant | None:
    """`case` changed by one `mutation` (drawn with `seed`); None when it does not apply."""
    rng = random.Random(seed)
    text = case.text
    lines = text.splitlines()
    out: str | None = None
    if mutation == "delete_line" and len(lines) > 1:
        i = rng.randrange(len(lines))
        out = "\n".join(lines[:i] + lines[i + 1:])
    elif mutation == "duplicate_line":
        i = rng.randrange(len(lines))
        out = "\n".join(lines[:i + 1] + lines[i:])
    elif mutation == "truncate":
        out = text[:rng.randrange(1, len(text))]
    elif mutation == "swap_tokens":
        tokens = re.split(r"(\s+|[(),:<>\[\]{}])", text)
        spots = [i for i, t in enumerate(tokens) if t.strip() and i + 2 < len(tokens)]
        if spots:
            i = rng.choice(spots)
            j = next((k for k in range(i + 1, len(tokens)) if tokens[k].strip()), None)
            if j is not None and tokens[i] != tokens[j]:
                tokens[i], tokens[j] = tokens[j], tokens[i]
                out = "".join(tokens)
    elif mutation == "change_number":
        out = _replace_match(rng, text, _NUMBER, _NUMBERS)
    elif mutation == "change_type":
        out = _replace_match(rng, text, _TYPE, _TYPES)
    elif mutation == "rename_attribute":
        out = _replace_match(rng, text, _ATTR_NAME, lambda m: m.group(0)[:-2] + "x = " if len(m.group(1)) > 1
                             else "zz = ")
    elif mutation == "ssa_undefined":
        uses = _uses(lines)
        if uses:
            i, m = rng.choice(uses)
            lines[i] = lines[i][:m.start()] + "%undefined_value" + lines[i][m.end():]
            out = "\n".join(lines)
    elif mutation == "ssa_later":
        uses, defs = _uses(lines), _ssa_defs(lines)
        later = [(i, m, name) for i, m in uses for j, name in defs if j >= i and name != m.group(0)]
        if later:
            i, m, name = rng.choice(later)
            lines[i] = lines[i][:m.start()] + name + lines[i][m.end():]
            out = "\n".join(lines)
    if out is None or out == text:
        return None
    return Mutant(case, mutation, out if out.endswith("\n") else out + "\n")


MUTATIONS = ("delete_line", "duplicate_line", "truncate", "swap_tokens", "change_number",
             "change_type", "rename_attribute", "ssa_undefined", "ssa_later")


@dataclass(frozen=True)
class TmOptResult:
    status: int | None
    stdout: str
    stderr: str
    exception: str | None = None


def run_tm_opt(text: str, passes: str | None = None) -> TmOptResult:
    """``tm-opt`` (in-process) on `text`, with ``-p passes`` when given."""
    from tmlir.tools.tm_opt import main

    with tempfile.TemporaryDirectory(prefix="tm-fuzz-") as folder:
        path = Path(folder) / "mutant.mlir"
        path.write_text(text)
        argv = [str(path)] + (["-p", passes] if passes else [])
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(argv)
        except SystemExit as exc:
            return TmOptResult(exc.code if isinstance(exc.code, int) else 2, out.getvalue(), err.getvalue())
        except BaseException as exc:  # noqa: BLE001 -- what a user would see as a traceback
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{Path(tb.filename).name}:{tb.lineno}"
            return TmOptResult(None, out.getvalue(), err.getvalue(),
                               f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} ({where})")
    return TmOptResult(status, out.getvalue(), err.getvalue())


def check_result(result: TmOptResult) -> str | None:
    """None when `result` is acceptable, else what is wrong with it."""
    if result.exception is not None:
        return f"traceback: {result.exception}"
    if result.status not in (0, 1):
        return f"exit status {result.status}"
    if "Traceback" in result.stderr:
        return "traceback in stderr: " + result.stderr.strip().splitlines()[-1]
    if result.status == 1:
        errors = result.stderr.count("error:")
        lines = result.stderr.strip().splitlines()
        if errors != 1 or len(lines) > MAX_ERROR_LINES:
            return f"{errors} errors in {len(lines)} lines: {result.stderr.strip()[:300]!r}"
    return None
