"""The IR examples in docs/*.md, checked so that they cannot drift from the compiler.

Two kinds of fenced block are checked:

- ```mlir: a complete module, or a sequence of top-level ops (what ``tm-opt`` accepts).
  It must parse with the project's context and verify.
- ```mlir-excerpt: a few lines out of a longer output. The line just before the fence
  names where they come from, as an HTML comment:

      <!-- excerpt: tm-opt tests/filecheck/passes/x.mlir -p some-pass -->
      <!-- excerpt: tests/filecheck/passes/x.mlir -->

  The first form runs ``tm-opt`` with those arguments (in-process, from the repository
  root), the second reads the file as it is. Every excerpt line must then occur in that
  text, as a whole line and in the excerpt's order, with runs of whitespace collapsed and
  SSA names as printed. Elisions: a line that starts with ``...`` stands for any number
  of lines (text after the dots is a reader's note), a ``...`` inside a line for any text
  within the line, and a trailing ``// note`` is ignored.

Failures name the doc file and line.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from xdsl.parser import Parser

from tmlir.registry import make_context

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))

EXCERPT_SOURCE = re.compile(r"^<!--\s*excerpt:\s*(.+?)\s*-->$")


@dataclass(frozen=True)
class Block:
    doc: str  # path relative to the repository root
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    source: str | None  # the excerpt comment's command, if the line before the fence has one

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    def line_of(self, index: int) -> int:
        """The doc line of the block's ``index``-th (0-based) line."""
        return self.line + 1 + index


def extract_blocks(text: str, doc: str) -> list[Block]:
    """Every fenced code block of a Markdown text, with its language and place."""
    blocks = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(`{3,}|~{3,})(.*)$", lines[i])
        if not fence:
            i += 1
            continue
        marker, lang = fence.group(2), fence.group(3).strip()
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].strip().startswith(marker):
            body.append(lines[i])
            i += 1
        previous = lines[start - 1].strip() if start > 0 else ""
        match = EXCERPT_SOURCE.match(previous)
        blocks.append(Block(doc, start + 1, lang, "\n".join(body) + "\n", match.group(1) if match else None))
        i += 1
    return blocks


def doc_blocks(lang: str) -> list[Block]:
    found = []
    for path in DOCS:
        rel = path.relative_to(ROOT).as_posix()
        found += [b for b in extract_blocks(path.read_text(), rel) if b.lang == lang]
    return found


# --- complete blocks ----------------------------------------------------------------------


def check_complete(block: Block) -> str | None:
    """None if the block parses and verifies, else a message naming doc and line."""
    try:
        module = Parser(make_context(), block.text).parse_module()
        module.verify()
    except Exception as exc:  # parse errors, verify errors
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        return f"{block.where}: ```mlir block does not parse and verify:\n" + "\n".join(lines[:12])
    return None


# --- excerpts -------------------------------------------------------------------------------


@cache
def source_text(source: str) -> str:
    """The text an excerpt's source names: tm-opt's output, or a file of the repository."""
    args = shlex.split(source)
    if args and args[0] == "tm-opt":
        from tmlir.tools.tm_opt import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.chdir(ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(args[1:])
        if status != 0:
            raise RuntimeError(f"`{source}` failed (status {status}): {err.getvalue().strip()}")
        return out.getvalue()
    if len(args) != 1:
        raise RuntimeError(f"excerpt source must be `tm-opt ARGS...` or one repository path, got `{source}`")
    path = (ROOT / args[0]).resolve()
    if ROOT not in path.parents or not path.is_file():
        raise RuntimeError(f"excerpt source `{source}` is not a file of the repository")
    return path.read_text()


def _collapse(line: str) -> str:
    return " ".join(line.split())


def _strip_note(line: str) -> str:
    return re.sub(r"\s+//.*$", "", line) if not line.lstrip().startswith("//") else line


def check_excerpt(block: Block, text_of=source_text) -> str | None:
    """None if every excerpt line occurs, in order, in the source's text, else a message."""
    if block.source is None:
        return (
            f"{block.where}: ```mlir-excerpt block needs its source in the line before the fence, "
            "e.g. <!-- excerpt: tm-opt tests/filecheck/x.mlir -p some-pass -->"
        )
    try:
        output = [_collapse(line) for line in text_of(block.source).splitlines()]
    except RuntimeError as exc:
        return f"{block.where}: {exc}"
    pos = 0
    checked = 0
    for index, raw in enumerate(block.text.splitlines()):
        line = _collapse(_strip_note(raw))
        if not line or line.startswith("..."):
            continue
        pattern = re.compile(r".*?".join(re.escape(part.strip()) for part in line.split("...")))
        for k in range(pos, len(output)):
            if pattern.fullmatch(output[k]):
                pos = k + 1
                checked += 1
                break
        else:
            elsewhere = any(pattern.fullmatch(out) for out in output[:pos])
            hint = " (it occurs earlier: the excerpt is out of order)" if elsewhere else ""
            return (
                f"{block.doc}:{block.line_of(index)}: excerpt line not in the output of "
                f"`{block.source}`{hint}:\n    {raw.strip()}"
            )
    if not checked:
        return f"{block.where}: the excerpt has no line to check"
    return None


# --- the tests -------------------------------------------------------------------------------

COMPLETE = doc_blocks("mlir")
EXCERPTS = doc_blocks("mlir-excerpt")



@pytest.mark.parametrize("block", COMPLETE, ids=lambda b: b.where)
def test_mlir_block_parses_and_verifies(block: Block):
    error = check_complete(block)
    assert error is None, error


@pytest.mark.parametrize("block", EXCERPTS, ids=lambda b: b.where)
def test_mlir_excerpt_occurs_in_its_source(block: Block):
    error = check_excerpt(block)
    assert error is None, error


def test_docs_have_ir_examples():
    assert len(COMPLETE) >= 20 and EXCERPTS, "the doc scan found too few IR blocks: is the fence syntax still ```mlir?"


INPUTS = sorted((ROOT / "tests" / "docs" / "inputs").glob("*.mlir"))


def _code_lines(text: str) -> list[str]:
    return [_collapse(line) for line in text.splitlines() if line.strip() and not line.lstrip().startswith("//")]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_doc_input_is_used_and_shown(path: Path):
    """Each input under tests/docs/inputs/ feeds an excerpt; one without a header comment is
    shown verbatim as a ```mlir block of a doc (so the doc shows what the excerpt came from)."""
    rel = path.relative_to(ROOT).as_posix()
    assert any(b.source and rel in shlex.split(b.source) for b in EXCERPTS), f"{rel}: no excerpt uses it"
    if path.read_text().lstrip().startswith("//"):
        return
    shown = [b for b in COMPLETE if _code_lines(b.text) == _code_lines(path.read_text())]
    assert shown, f"{rel}: not shown as a ```mlir block of docs/ (or give it a header comment)"


def test_docs_stay_inside_the_repository():
    for path in DOCS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            assert "../shared" not in line, f"{path.relative_to(ROOT)}:{number}: points outside the repository"


# --- the checker itself ----------------------------------------------------------------------

BROKEN_DOC = """\
Intro.

```mlir
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<8xf32>
  func.return %y : tensor<4xf32>
}
```

```mlir
  %y = graph.relu %x : tensor<4xf32>
```

<!-- excerpt: tm-opt fake.mlir -p some-pass -->
```mlir-excerpt
%a = first
...
%c = third      // a note
```

<!-- excerpt: tm-opt fake.mlir -p some-pass -->
```mlir-excerpt
%c = third
%a = first
```

<!-- excerpt: tm-opt fake.mlir -p some-pass -->
```mlir-excerpt
tm.kernel @k(...) {
%d = missing
```

```mlir-excerpt
%a = first
```
"""

FAKE_OUTPUT = "  %a =   first\n  %b = second\n  %c = third\n  tm.kernel @k(%x: memref<4xf32>) {\n"


def test_checker_rejects_broken_examples():
    blocks = extract_blocks(BROKEN_DOC, "docs/broken.md")
    assert [(b.line, b.lang) for b in blocks] == [
        (3, "mlir"),
        (10, "mlir"),
        (15, "mlir-excerpt"),
        (22, "mlir-excerpt"),
        (28, "mlir-excerpt"),
        (33, "mlir-excerpt"),
    ]
    wrong_type, fragment, good, out_of_order, missing, no_source = blocks
    assert check_complete(wrong_type).startswith("docs/broken.md:3: ")
    assert check_complete(fragment).startswith("docs/broken.md:10: ")

    def fake(source: str) -> str:
        return FAKE_OUTPUT

    assert check_excerpt(good, fake) is None
    error = check_excerpt(out_of_order, fake)
    assert error.startswith("docs/broken.md:24: ") and "out of order" in error
    error = check_excerpt(missing, fake)
    assert error.startswith("docs/broken.md:30: ") and "%d = missing" in error
    assert "needs its source" in check_excerpt(no_source, fake)


def test_checker_accepts_a_complete_module():
    (block,) = extract_blocks(
        "```mlir\nfunc.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = graph.relu %x : tensor<4xf32>\n  func.return %y : tensor<4xf32>\n}\n```\n",
        "docs/ok.md",
    )
    assert check_complete(block) is None


def test_checker_runs_tm_opt_and_reports_failures():
    block = Block("docs/x.md", 7, "mlir-excerpt", "%y = graph.relu\n", "tm-opt no/such/file.mlir")
    error = check_excerpt(block)
    assert error.startswith("docs/x.md:7: ") and "failed" in error
    block = Block("docs/x.md", 7, "mlir-excerpt", "x\n", "../outside.mlir")
    assert "not a file of the repository" in check_excerpt(block)
