"""The package's layering, kept by a test: every ``tmlir`` import in ``tmlir/`` points down.

Layers, lowest first. A module may import any module of a lower layer and, within its own
layer, only modules of its own package (``tmlir.<package>``): peers in one layer
(``schedules`` and ``frontends``, say) never import each other. No module imports another package's private
(``_``-prefixed) module. Lazy imports inside functions count as well: they are still
dependencies, only deferred.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tmlir

ROOT = Path(tmlir.__file__).resolve().parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("tmlir.dtypes", "tmlir.mapping", "tmlir.gpu_limits", "tmlir.env", "tmlir.__version__"),
    ("tmlir.gpus",),  # the GPUs' datasheet figures and per-SM limits
    ("tmlir.latency",),  # the latency model: a launch's estimated time on a GPU
    ("tmlir.plugins",),  # what plugins added; the registries above read it
    ("tmlir.progress",),
    ("tmlir.layout",),  # its grammar builds on the task mappings'
    ("tmlir.wgmma_layouts",),  # Hopper's shared-memory operand layouts, on the data layouts
    ("tmlir.ir",),  # syntax helpers and shared op bases of the dialects
    ("tmlir.dialects",),
    ("tmlir.ir.builder", "tmlir.context"),
    ("tmlir.schedules", "tmlir.frontends"),
    ("tmlir.backends",),
    # what compiles read of tuning: the space of a kernel and the records
    ("tmlir.tuning.space", "tmlir.tuning.records", "tmlir.tuning.occupancy"),
    ("tmlir.passes",),
    ("tmlir.registry",),
    ("tmlir.tuning",),
    ("tmlir.runtime",),
    ("tmlir.tools", "tmlir"),
)


def _group(module: str) -> tuple[int, str]:
    """The layer and the group (a name of `LAYERS`) of a module: its longest prefix there."""
    best: tuple[int, str] | None = None
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (
                    best is None or len(name) > len(best[1])):
                best = (index, name)
    assert best is not None, module
    return best


def _package(module: str) -> str:
    """``tmlir.<package>``, or the module itself at the top."""
    return ".".join(module.split(".")[:2])


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (ROOT / relative).with_suffix(".py").is_file() or (ROOT / relative / "__init__.py").is_file()


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every ``tmlir`` module `path` imports, at any depth of the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "tmlir"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "tmlir":
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                leaf = _is_module(name) or name == "tmlir.__version__"
                found.append((node.lineno, name if leaf else node.module))
    return found


def _private(module: str) -> str | None:
    """The package whose private module `module` is, if it is one."""
    parts = module.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:index])
    return None


def violations() -> list[str]:
    """One line per import that breaks the layering, naming the file and line."""
    problems = []
    for path in sorted(ROOT.rglob("*.py")):
        importer = _module_name(path)
        layer, group = _group(importer)
        for line, imported in _imports(path):
            where = f"{path.relative_to(ROOT.parent)}:{line}: {importer} imports {imported}"
            owner = _private(imported)
            if owner is not None and not importer.startswith(owner + ".") and importer != owner:
                problems.append(f"{where}, a private module of {owner}")
                continue
            their_layer, their_group = _group(imported)
            if their_layer > layer:
                problems.append(f"{where}, a higher layer ({their_group} above {group})")
            elif their_layer == layer and _package(their_group) != _package(group):
                problems.append(f"{where}, a peer in its layer ({their_group} beside {group})")
    return problems


def test_every_import_points_down() -> None:
    assert violations() == []


def test_every_module_has_a_layer() -> None:
    for path in ROOT.rglob("*.py"):
        _group(_module_name(path))  # asserts


@pytest.mark.parametrize("importer, imported, expected", [
    ("tmlir.frontends.onnx", "tmlir.schedules.conv2d", "peer"),
    ("tmlir.dialects.graph", "tmlir.passes.graph_partition", "higher layer"),
    ("tmlir.passes.cse", "tmlir.frontends.onnx_common", None),
    ("tmlir.schedules.pool", "tmlir.ir.builder", None),
    ("tmlir.dialects.tm", "tmlir.ir.builder", "higher layer"),
    ("tmlir.tuning.records", "tmlir.tuning.space", None),
    ("tmlir.tuning.space", "tmlir.tuning.programs", "higher layer"),
])
def test_the_rule_itself(importer: str, imported: str, expected: str | None) -> None:
    """The rule catches what it should (so the test above can fail)."""
    layer, group = _group(importer)
    their_layer, their_group = _group(imported)
    if their_layer > layer:
        verdict = "higher layer"
    elif their_layer == layer and _package(their_group) != _package(group):
        verdict = "peer"
    else:
        verdict = None
    assert verdict == expected


def test_private_modules_are_found() -> None:
    assert _private("tmlir.backends.emu._abi") == "tmlir.backends.emu"
    assert _private("tmlir.frontends.onnx") is None
    assert _private("tmlir.backends.__init__") is None
