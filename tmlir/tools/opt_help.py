"""``tm-opt``'s help: what the driver has registered, described.

In: the driver's tables of passes and targets (name -> lazy loader) and its argparse parser.
Out: ``tm-opt --help`` (usage, the useful flags, then our passes, pipelines, a few generic
xDSL passes and the targets, one line each), ``--help-pass NAME`` / ``--help-target NAME``
(a pass's or target's docstrings and its options as a table: name, type, default,
description), ``--help-all`` (xDSL's own help: every flag, pass and target it knows), and
``-t`` checked as it is parsed (`tmlir.ir.pass_options`). An unknown NAME is one line,
with a did-you-mean.

"Ours" is whatever the driver registered that is not one of xDSL's own passes or targets,
so a plugin's passes (``--load-plugin``) are listed with the project's. A pass's one-line
summary is the first sentence of its class docstring (else of its module docstring); an
option's description is the docstring under its field (``x: int = 1`` then a string), else
an ``Attributes:`` line of the class docstring, else the class docstring's first sentence
that names the option in double backquotes.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import re
import sys
import textwrap
import typing
from collections.abc import Callable
from typing import Any

from tmlir.ir.pass_options import (
    Loaders,
    PassOptionError,
    check_target,
    is_function_target,
    option_fields,
    type_name,
    unknown_name,
    value_text,
)

GENERIC_PASSES: dict[str, str] = {
    "canonicalize": "Apply every op's canonicalization patterns and folders, erase dead ops.",
    "cse": "Merge identical side-effect-free ops (common subexpression elimination).",
    "dce": "Erase ops whose results are unused and that have no side effects.",
    "licm": "Move side-effect-free ops that do not depend on a loop out of it.",
    "scf-for-loop-unroll": "Fully unroll scf.for loops whose bounds and step are constants.",
}
"""The xDSL passes that make sense on tmlir's IR, with their descriptions (some have none)."""

HIDDEN_FLAGS = {"--shrink", "--syntax-highlight", "--print-no-properties", "--print-debuginfo",
                "--no-implicit-module", "--allow-unregistered-dialect", "--parsing-diagnostics"}
"""xDSL flags that ``--help`` leaves to ``--help-all``."""

FLAG_HELP = {
    "input_file": "MLIR text or an ONNX model (.onnx); '-' or nothing: MLIR from stdin",
    "passes": "the pass pipeline: NAME{option=value ...},NAME,... (passes below)",
    "target": "what to print: a target below, NAME{option=value ...} (default: mlir)",
    "output_file": "write the output to FILE, whole or not at all",
    "frontend": "read the input as mlir or onnx (default: by its extension)",
    "disable_verify": "do not verify the IR after parsing and after each pass",
    "verify_diagnostics": "check the errors against the input's expected-error comments",
    "split_input_file": "process each '// -----'-separated chunk of the input on its own",
    "print_between_passes": "print the IR after each pass (to stderr)",
    "time_passes": "print the time each pass takes (to stderr)",
    "print_op_generic": "print ops in MLIR's generic form",
    "help": "show this help and exit",
    "version": "show the version and exit",
}
"""One-liners for xDSL's flags whose own help lists every pass or is missing."""

METAVARS = {"output_file": "FILE", "passes": "PIPELINE", "target": "TARGET", "frontend": "FORMAT"}


@dataclasses.dataclass(frozen=True)
class OptionDoc:
    """One option of a pass or target, as typed on the command line."""

    name: str
    type: str
    default: str
    description: str


# -- what a class says about itself ----------------------------------------------------------


_SENTENCE_END = r"(?<!e\.g)(?<!i\.e)[.!?]"
"""A sentence's last character (not that of "e.g." or "i.e.")."""


def _markup(text: str) -> str:
    """reStructuredText's ````x```` as Markdown's ```x```; whitespace collapsed."""
    return " ".join(text.replace("``", "`").split())


def first_sentence(doc: str | None) -> str:
    """The first sentence of `doc`'s first paragraph, without a leading ````name``:`` or
    ````-t name``:`` and with a capital first letter."""
    paragraph = _markup(inspect.cleandoc(doc or "").split("\n\n")[0])
    paragraph = re.sub(r"^`(-t )?[\w.-]+`:\s*", "", paragraph)
    match = re.match(rf"(.+?{_SENTENCE_END})(\s|$)", paragraph)
    sentence = match.group(1) if match else paragraph
    return sentence[:1].upper() + sentence[1:]


def summary(cls: type) -> str:
    """The one-line description of a pass or target class."""
    own = cls.__dict__.get("__doc__")
    if own and not own.startswith(f"{cls.__name__}("):  # dataclasses write a signature
        return first_sentence(own)
    module = sys.modules.get(cls.__module__)
    return first_sentence(module.__doc__ if module else None)


def _field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of `cls` and its bases (``x: int = 1`` then a string)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, after in zip(body, body[1:]):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[stmt.target.id] = _markup(after.value.value)
    return docs


def _section_docs(doc: str | None) -> dict[str, str]:
    """``name: description`` lines of an ``Attributes:`` or ``Options:`` docstring section."""
    docs: dict[str, str] = {}
    section = False
    for line in inspect.cleandoc(doc or "").splitlines():
        if line.strip() in ("Attributes:", "Options:", "Args:"):
            section = True
        elif section and (m := re.match(r"\s+`*([\w-]+)`*(?: \(.*?\))?:\s*(.*)", line)):
            docs[m.group(1).replace("-", "_")] = _markup(m.group(2))
        elif section and line and not line[0].isspace():
            section = False
    return docs


def _sentences(doc: str | None) -> list[str]:
    """The sentences of `doc` after its first paragraph (the summary), markup simplified."""
    rest = _markup(" ".join(inspect.cleandoc(doc or "").split("\n\n")[1:]))
    return re.split(rf"(?<={_SENTENCE_END})\s+(?=[A-Z`(])", rest) if rest else []


def _mentioning(sentences: list[str], option: str) -> str:
    """The first of `sentences` that names `option` in backquotes (prose option docs)."""
    return next((s for s in sentences if f"`{option}`" in s), "")


def option_docs(cls: type) -> list[OptionDoc]:
    """The options of a pass or target class (its dataclass fields), as on the command line."""
    hints = typing.get_type_hints(cls)
    docs = {**_section_docs(cls.__doc__), **_field_docs(cls)}
    prose = _sentences(cls.__doc__)
    options = []
    for f in option_fields(cls):
        default = (f.default if f.default is not dataclasses.MISSING
                   else f.default_factory() if f.default_factory is not dataclasses.MISSING else "(required)")
        options.append(OptionDoc(f.name.replace("_", "-"), type_name(hints.get(f.name, f.type)),
                                 default if default == "(required)" else value_text(default),
                                 docs.get(f.name) or _mentioning(prose, f.name.replace("_", "-"))))
    return options


# -- typed, validated options ----------------------------------------------------------------

# -- listing what the driver has -------------------------------------------------------------


def _load(loaders: Loaders, name: str) -> type | None:
    try:
        return loaders[name]()
    except Exception:  # a plugin that fails to load is listed, not fatal to --help
        return None


def pass_groups(passes: Loaders) -> dict[str, list[str]]:
    """Our passes (the driver's minus xDSL's own), pipelines among them, and the generic
    xDSL passes worth knowing here: ``{"Passes": [...], "Pipelines": [...], "Generic": [...]}``."""
    from xdsl.transforms import get_all_passes

    from tmlir.ir.pipeline import PipelinePass

    xdsl_own = get_all_passes()
    ours = sorted(n for n in passes if n not in xdsl_own)
    pipelines = [n for n in ours if isinstance(cls := _load(passes, n), type) and issubclass(cls, PipelinePass)]
    return {"Passes": [n for n in ours if n not in pipelines], "Pipelines": pipelines,
            "Generic": [n for n in GENERIC_PASSES if n in passes]}


def our_targets(targets: Loaders) -> list[str]:
    """``mlir`` (the default) and the targets that are not xDSL's own."""
    from xdsl.targets import get_all_targets

    xdsl_own = get_all_targets()
    return ["mlir", *(n for n in targets if n not in xdsl_own)]


def describe(loaders: Loaders, name: str) -> str:
    """The one-line description of pass or target `name` (ours for the generic passes)."""
    if name in GENERIC_PASSES:
        return GENERIC_PASSES[name]
    if name == "mlir":
        return "Print the IR as MLIR text (the default target)."
    cls = _load(loaders, name)
    return summary(cls) if isinstance(cls, type) else "(cannot be loaded)"


def _row(left: str, width: int, text: str) -> str:
    """``  left  text``, `text` wrapped at 100 columns under itself."""
    indent = " " * (width + 4)
    first = f"  {left:<{width}}  " if len(left) <= width else f"  {left}\n{indent}"
    return textwrap.fill(text, 100, initial_indent=first, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False)


def _flag_lines(parser: argparse.ArgumentParser) -> list[str]:
    lines = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or set(action.option_strings) & HIDDEN_FLAGS:
            continue
        names = ", ".join(action.option_strings) or action.dest
        if action.option_strings and action.nargs != 0:
            names += f" {METAVARS.get(action.dest) or action.metavar or action.dest.upper()}"
        text = FLAG_HELP.get(action.dest) or first_sentence(action.help or "").rstrip(".")
        if text[1:2].islower():  # argparse's style: "show this help", not "Show this help"
            text = text[0].lower() + text[1:]
        lines.append(_row(names, 26, text))
    return lines


def _listing(title: str, names: list[str], loaders: Loaders) -> list[str]:
    if not names:
        return []
    width = max(len(n) for n in names)
    return ["", f"{title}:", *(_row(n, width, describe(loaders, n)) for n in names)]


def help_text(parser: argparse.ArgumentParser, passes: Loaders, targets: Loaders) -> str:
    """What ``tm-opt --help`` prints."""
    groups = pass_groups(passes)
    lines = [
        f"usage: {parser.prog} [options] [input_file]",
        "",
        "tmlir's optimizer driver: reads MLIR text or an ONNX model, runs a pass pipeline,",
        "prints the IR or a target's output.",
        "",
        f"  {parser.prog} model.onnx -p lower-to-cuda -t cuda > model.cu",
        f"  {parser.prog} kernels.mlir -p 'lower-to-cuda{{fusion=false target-arch=sm_80}}'",
        "",
        "Options:",
        *_flag_lines(parser),
        *_listing("Passes", groups["Passes"], passes),
        *_listing("Pipelines", groups["Pipelines"], passes),
        *_listing("Generic passes (xDSL)", groups["Generic"], passes),
        *_listing("Targets", our_targets(targets), targets),
        "",
        f"'{parser.prog} --help-pass NAME' and '--help-target NAME' describe one with its options;",
        f"'{parser.prog} --help-all' lists every flag and all of xDSL's passes and targets.",
    ]
    return "\n".join(lines) + "\n"


def options_table(options: list[OptionDoc]) -> list[str]:
    """A Markdown table of `options` (for docs/passes.md)."""
    if not options:
        return ["No options."]
    rows = [(f"`{o.name}`", o.type.replace("|", "\\|"), f"`{o.default}`", o.description.replace("|", "\\|"))
            for o in options]
    return ["| Option | Type | Default | Description |", "|---|---|---|---|",
            *(f"| {' | '.join(r)} |" for r in rows)]


def options_text(options: list[OptionDoc]) -> list[str]:
    """`options` as an aligned table for a terminal, descriptions wrapped under their column."""
    if not options:
        return ["  (none)"]
    rows = [("OPTION", "TYPE", "DEFAULT", "DESCRIPTION"),
            *((o.name, o.type, o.default, o.description) for o in options)]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    indent = " " * (sum(widths) + 8)
    return [textwrap.fill(r[3] or "-", max(100, len(indent) + 40), break_long_words=False, break_on_hyphens=False,
                          initial_indent="  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  ",
                          subsequent_indent=indent) for r in rows]


def entry_help(kind: str, name: str, loaders: Loaders) -> str:
    """What ``--help-pass NAME`` (`kind` "pass") or ``--help-target NAME`` prints: the
    summary, the pass's module docstring (when the module is its own), the rest of its
    class docstring, and its options."""
    if is_function_target(loaders[name]):
        return f"{name} (target): an xDSL function target, without options\n"
    try:
        cls = loaders[name]()
    except Exception as exc:  # e.g. an xDSL target whose package is not installed
        return f"{name} ({kind}): cannot be loaded: {exc}\n"
    parts = [f"{name} ({kind}): {describe(loaders, name)}"]
    module = sys.modules.get(cls.__module__)
    module_doc = inspect.cleandoc(module.__doc__ or "") if module else ""
    if module_doc.startswith((f"``{name}``", f"The ``{name}`` target")):  # a module of its own
        parts += ["", module_doc]
    own = cls.__dict__.get("__doc__") or ""
    if own and not own.startswith(f"{cls.__name__}("):
        rest = inspect.cleandoc(own).split("\n\n", 1)[1:]
        parts += ["", *rest]
    flag = "-p" if kind == "pass" else "-t"
    parts += ["", f"Options ({flag} '{name}{{option=value ...}}'):", *options_text(option_docs(cls))]
    return "\n".join(parts).replace("``", "`") + "\n"


def add_help_arguments(driver: Any, parser: argparse.ArgumentParser) -> None:
    """Give `driver`'s parser our ``--help``, ``--help-pass``, ``--help-target`` and
    ``--help-all``, and check ``-t`` (name, typed options) as it is parsed."""
    xdsl_help = parser.format_help

    def full_help() -> str:  # xDSL's help, then every pass and target, one name a line
        return "\n".join([xdsl_help(), "All passes:", *(f"  {n}" for n in sorted(driver.available_passes)),
                          "", "All targets:", *(f"  {n}" for n in sorted(driver.available_targets))]) + "\n"

    def show(text: Callable[[], str]) -> type[argparse.Action]:
        class Show(argparse.Action):
            def __call__(self, parser, namespace, values, option_string=None) -> None:
                sys.stdout.write(text(values) if self.nargs == 1 or self.nargs is None else text())
                parser.exit()
        return Show

    def one(kind: str, loaders: Callable[[], Loaders]) -> Callable[[str], str]:
        def text(name: str) -> str:
            other = driver.available_targets if kind == "pass" else driver.available_passes
            if name in loaders():
                return entry_help(kind, name, loaders())
            if name in other:
                other_kind = "target" if kind == "pass" else "pass"
                parser.error(f"unknown {kind} '{name}'; '{name}' is a {other_kind}: see --help-{other_kind} {name}")
            parser.error(str(unknown_name(kind, name, loaders())))
        return text

    parser.format_help = lambda: help_text(parser, driver.available_passes, driver.available_targets)
    parser.add_argument("--help-pass", metavar="NAME", action=show(one("pass", lambda: driver.available_passes)),
                        help="describe pass NAME and its options, then exit")
    parser.add_argument("--help-target", metavar="NAME",
                        action=show(one("target", lambda: driver.available_targets)),
                        help="describe target NAME and its options, then exit")
    parser.add_argument("--help-all", nargs=0, action=show(full_help),
                        help="every flag, pass and target xDSL knows (xDSL's own help), then exit")

    def target_type(text: str) -> str:
        try:
            return check_target(driver.available_targets, text)
        except PassOptionError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    for action in parser._actions:
        if "--target" in action.option_strings:
            action.type = target_type
