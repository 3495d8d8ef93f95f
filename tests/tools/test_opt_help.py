"""tm-opt's help (opt_help), typed pass options (pass_options) and the pass catalogue."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from xdsl.passes import ModulePass
from xdsl.transforms import get_all_passes

from tmlir.ir.pass_options import PassOptionError, check_target, parse_passes
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import project_passes
from tmlir.tools.opt_help import first_sentence, help_text, option_docs
from tmlir.tools.pass_catalogue import catalogue
from tmlir.tools.tm_opt import TmOptMain, main

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ToyPass(ModulePass):
    """``toy-pass``: a pass of a plugin. It does nothing.

    ``sizes`` are tile sizes.
    """

    name = "toy-pass"

    sizes: tuple[int, ...] = (16, 8)
    limit: int | None = None
    mode: Literal["fast", "exact"] = "fast"
    scale: float = 1.0
    label: str = "x"
    """The label the pass prints."""

    def apply(self, ctx, op) -> None:
        pass


TOY = {"toy-pass": lambda: ToyPass, "cse": get_all_passes()["cse"]}


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    """`main(argv)`'s exit status (help exits through SystemExit), stdout and stderr."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code or 0
    out, err = capsys.readouterr()
    return status, out, err


def test_help_lists_every_project_pass_once_and_no_foreign_one(capsys):
    status, out, err = _run(["--help"], capsys)
    assert status == 0 and err == ""
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and not line.startswith("   ")]
    for name in project_passes():
        assert listed.count(name) == 1, name
    assert "stencil-unroll" not in out and "arm-asm" not in out
    assert out.index("Pipelines:") < out.index("  lower-to-cuda ") < out.index("Targets:")


def test_help_lists_a_pass_the_driver_registered_beyond_xdsl():
    driver = TmOptMain(args=[])
    passes = {**driver.available_passes, "toy-pass": lambda: ToyPass}
    text = help_text(argparse.ArgumentParser(prog="tm-opt"), passes, driver.available_targets)
    passes_section = text.split("Passes:")[1].split("Pipelines:")[0]
    assert "  toy-pass  " in passes_section and "A pass of a plugin." in passes_section


def test_help_pass_shows_typed_options_and_unknown_names_are_one_line(capsys):
    status, out, _ = _run(["--help-pass", "lower-to-cuda"], capsys)
    assert status == 0
    rows = {line.split()[0]: line.split()[1:3] for line in out.split("Options (")[1].splitlines()[2:]
            if line.startswith("  ") and not line.startswith("    ")}
    assert rows["fusion"] == ["bool", "true"] and rows["target-arch"] == ["str", "sm_90"]
    status, out, err = _run(["--help-pass", "lower-to-cuad"], capsys)
    assert (status, out) == (1, "")
    assert err == "tm-opt: error: unknown pass 'lower-to-cuad'; did you mean 'lower-to-cuda'?\n"
    status, _, err = _run(["--help-target", "cots"], capsys)
    assert status == 1 and err == "tm-opt: error: unknown target 'cots'; did you mean 'cost'?\n"


def test_option_docs_read_types_defaults_and_field_docstrings():
    docs = {d.name: d for d in option_docs(ToyPass)}
    assert (docs["sizes"].type, docs["sizes"].default) == ("list of int", "16,8")
    assert (docs["limit"].type, docs["limit"].default) == ("int | none", "(none)")
    assert docs["mode"].type == "fast | exact"
    assert docs["label"].description == "The label the pass prints."
    assert docs["sizes"].description == "`sizes` are tile sizes."  # prose of the class docstring


def test_first_sentence():
    assert first_sentence("``x-y``: fold things, e.g. ``a + 0``. More.") == "Fold things, e.g. `a + 0`."
    assert first_sentence("``-t cuda``: print\n    CUDA C.\n\n    Details.") == "Print CUDA C."


@pytest.mark.parametrize("text, message", [
    ("lower-to-cuad", "unknown pass 'lower-to-cuad'; did you mean 'lower-to-cuda'?"),
    ("nothing-like-it", "unknown pass 'nothing-like-it' (tm-opt --help lists the passes)"),
    ("lower-to-cuda{fusion=maybe}",
     "option 'fusion' of pass 'lower-to-cuda' expects a bool (true/false), got 'maybe'"),
    ("lower-to-cuda{fusion=1}", "option 'fusion' of pass 'lower-to-cuda' expects a bool (true/false), got '1'"),
    ("lower-to-cuda{fuson=false}", "pass 'lower-to-cuda' has no option 'fuson'; did you mean 'fusion'? "
                                   "(options: fusion, target-device, target-arch, tuning-records, matmul, conv, "
                                   "precision, schedule-defaults)"),
    ("lower-to-cuda{target-arch=sm_12}", "option 'target-arch' of pass 'lower-to-cuda' must be one of sm_75, "
                                         "sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_120, got 'sm_12'"),
    ("convert-tm-to-gpu{max-grid=abc}", "option 'max-grid' of pass 'convert-tm-to-gpu' expects an integer, got 'abc'"),
    ("convert-tm-to-gpu{max-grid=0}", "convert-tm-to-gpu: max-grid must be in [1, 2147483647], got 0"),
    ("cse{x=1}", "pass 'cse' takes no options, got 'x'"),
])
def test_bad_pipelines_are_one_line(text, message):
    driver_passes = {"cse": get_all_passes()["cse"], **project_passes()}
    with pytest.raises(PassOptionError) as info:
        parse_passes(driver_passes, text)
    assert str(info.value) == message


def test_option_values_are_converted_to_the_field_types():
    (toy,) = parse_passes(TOY, "toy-pass{sizes=4,2 limit=3 mode=exact scale=2 label=7}")
    assert toy == ToyPass((4, 2), 3, "exact", 2.0, "7")
    (lower,) = parse_passes(project_passes(), "lower-to-cuda{fusion target-arch=sm_80}")
    assert lower == LowerToCuda(fusion=True, target_arch="sm_80")
    with pytest.raises(PassOptionError, match="option 'mode' of pass 'toy-pass' expects one of fast, exact, got 'x'"):
        parse_passes(TOY, "toy-pass{mode=x}")
    with pytest.raises(PassOptionError, match="option 'sizes' of pass 'toy-pass' expects an integer, got 'a'"):
        parse_passes(TOY, "toy-pass{sizes=1,a}")


def test_passes_check_their_own_options():
    with pytest.raises(ValueError, match="must be one of"):
        LowerToCuda(target_arch="sm_70")
    with pytest.raises(ValueError, match="max-grid must be in"):
        ConvertTmToGpu(max_grid=0)


def test_targets_are_checked_and_normalized():
    from tmlir.registry import project_targets

    targets = project_targets()
    assert check_target(targets, "dot{weights}") == "dot{weights=true}"
    assert check_target(targets, "cuda") == "cuda"
    with pytest.raises(PassOptionError, match=r"unknown target 'cots'; did you mean 'cost'\?"):
        check_target(targets, "cots")
    with pytest.raises(PassOptionError, match="option 'weights' of target 'dot' expects a bool"):
        check_target(targets, "dot{weights=3}")


def test_the_committed_catalogue_is_the_generated_one():
    committed = (ROOT / "docs" / "passes.md").read_text()
    assert committed == catalogue(), "docs/passes.md is stale: python -m tmlir.tools.pass_catalogue > docs/passes.md"
    for name in project_passes():
        assert f"| [`{name}`](#{name}) |" in committed
