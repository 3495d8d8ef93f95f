"""Plugins: how a package outside ``tmlir`` adds dialects, passes, targets, schedule
templates and ONNX converters.

A plugin is a module (or a callable) that another installed package names in the entry-point
group ``tmlir.plugins`` of its ``pyproject.toml``::

    [project.entry-points."tmlir.plugins"]
    example = "tmlir_example_plugin"          # calls tmlir_example_plugin.register(api)

or that ``tm-opt --load-plugin MODULE_OR_FILE.py`` names. Loading it calls
``register(api)`` with a `PluginAPI`, whose ``add_*`` methods record what it contributes.
The records go in, the registries that own each kind read them out: ``tmlir.registry``
(dialects, passes, targets: so ``tm-opt``, ``make_context()`` and ``InferenceSession`` see
them), ``tmlir.schedules.registry`` (kernel builders by op type) and
``tmlir.frontends.onnx_ops`` (converters by ONNX domain and op type). Entry-point plugins
are loaded once per process, on first use; ``TMLIR_PLUGINS=0`` turns them off. A plugin
that fails to import or to register is skipped with one warning naming it and the reason
(`load_plugin`, used for ``--load-plugin``, raises `PluginError` instead).

This module imports nothing of ``tmlir`` but ``tmlir.env``: the registries above it ask it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from tmlir.env import env_flag

__all__ = ["GROUP", "PLUGINS_ENV", "Contributions", "OnnxConverter", "PluginAPI", "PluginError",
           "contributions", "load_plugin"]

GROUP = "tmlir.plugins"
"""The entry-point group a plugin package declares."""
PLUGINS_ENV = "TMLIR_PLUGINS"
"""``TMLIR_PLUGINS=0`` disables entry-point plugins (``--load-plugin`` still works)."""


class PluginError(ValueError):
    """A plugin that cannot be loaded, or that contributes a name already taken."""


@dataclass(frozen=True)
class OnnxConverter:
    """An ONNX op a plugin imports: its converter and the record fields of ``onnx_op``
    (``attributes``, ``inputs``, ``outputs``, ...), checked before the converter runs."""

    plugin: str
    domain: str
    op_type: str
    convert: Callable[..., None]
    record: dict[str, Any] = field(default_factory=dict)


@dataclass
class Contributions:
    """Everything the loaded plugins added, each entry keyed by its name, with the plugin
    that added it (for messages) in ``origin``."""

    dialects: dict[str, Callable[[], Any]] = field(default_factory=dict)
    passes: dict[str, Callable[[], type]] = field(default_factory=dict)
    targets: dict[str, Callable[[], type]] = field(default_factory=dict)
    templates: dict[type, Callable[..., Any]] = field(default_factory=dict)
    onnx_converters: dict[tuple[str, str], OnnxConverter] = field(default_factory=dict)
    origin: dict[tuple[str, object], str] = field(default_factory=dict)
    loaded: list[str] = field(default_factory=list)
    """The plugins loaded, in order."""

    def add(self, plugin: str, kind: str, table: dict, key: object, value: object) -> None:
        if key in table:
            shown = key.__name__ if isinstance(key, type) else key
            raise PluginError(f"plugin '{plugin}': {kind} '{shown}' is already added by plugin "
                              f"'{self.origin[(kind, key)]}'")
        table[key] = value
        self.origin[(kind, key)] = plugin


_CONTRIBUTIONS = Contributions()
_ENTRY_POINTS_LOADED = False


def _default_domain(domain: str) -> str:
    return "" if domain == "ai.onnx" else domain


class PluginAPI:
    """What a plugin's ``register(api)`` may call; every name it adds must be new (a clash
    with a built-in pass, dialect, target, template or ONNX op is a `PluginError`)."""

    def __init__(self, plugin: str, into: Contributions) -> None:
        self.plugin = plugin
        self._into = into

    def add_dialect(self, name: str, loader: Callable[[], Any]) -> None:
        """The ``xdsl.ir.Dialect`` named `name`, built by `loader()` when first used."""
        self._into.add(self.plugin, "dialect", self._into.dialects, name, loader)

    def add_pass(self, pass_class: type) -> None:
        """A ``ModulePass`` subclass; its ``name`` is the pass's name in pipelines."""
        name = getattr(pass_class, "name", None)
        if not isinstance(name, str) or not name:
            raise PluginError(f"plugin '{self.plugin}': add_pass needs a ModulePass class with "
                              f"a name, got {pass_class!r}")
        self._into.add(self.plugin, "pass", self._into.passes, name, lambda: pass_class)

    def add_target(self, name: str, loader: Callable[[], type]) -> None:
        """An ``xdsl.utils.target.Target`` class for ``tm-opt -t name``, built by `loader()`."""
        self._into.add(self.plugin, "target", self._into.targets, name, loader)

    def add_template(self, op_type: type, builder: Callable[..., Any]) -> None:
        """The kernel builder of `op_type` (and of op types derived from it), called as
        ``builder(kernel_name, op)`` by ``convert-graph-to-tm`` and returning a ``tm.KernelOp``
        (see ``tmlir/schedules/registry.py`` for the interface every builder keeps)."""
        self._into.add(self.plugin, "template", self._into.templates, op_type, builder)

    def add_onnx_converter(self, op_type: str, convert: Callable[..., None], *, domain: str = "",
                           **record: Any) -> None:
        """The converter of ONNX op `op_type` of `domain` (``""``: the default domain), a
        function ``convert(ctx, node)`` of the importer's ``ImportContext``; `record` takes
        the fields of ``tmlir.frontends.onnx_ops.onnx_op`` (``attributes``, ``inputs``,
        ``outputs``, ...). A custom-domain op's output types are those of the graph ops its
        converter defines (ONNX's shape inference does not know it)."""
        domain = _default_domain(domain)
        converter = OnnxConverter(self.plugin, domain, op_type, convert, dict(record))
        self._into.add(self.plugin, "ONNX op", self._into.onnx_converters, (domain, op_type), converter)


def _register(plugin: str, target: object) -> None:
    """Call the plugin's ``register(api)`` (`target` is a module or the callable itself);
    its contributions are kept only if it completes."""
    register = getattr(target, "register", None) if isinstance(target, types.ModuleType) else target
    if not callable(register):
        raise PluginError(f"plugin '{plugin}': no register(api) function")
    staged = Contributions(**{k: dict(v) if isinstance(v, dict) else list(v)
                              for k, v in vars(_CONTRIBUTIONS).items()})
    try:
        register(PluginAPI(plugin, staged))
    except PluginError:
        raise
    except Exception as exc:
        raise PluginError(f"plugin '{plugin}': register failed: {_one_line(exc)}") from exc
    staged.loaded.append(plugin)
    vars(_CONTRIBUTIONS).update(vars(staged))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _import(spec: str) -> tuple[str, object]:
    """The plugin's name and module: `spec` is a module name or a ``.py`` file's path."""
    if spec.endswith(".py") or os.sep in spec:
        path = os.path.abspath(spec)
        if not os.path.isfile(path):
            raise PluginError(f"plugin '{spec}': no such file")
        name = os.path.splitext(os.path.basename(path))[0]
        module_spec = importlib.util.spec_from_file_location(name, path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and pickling look the module up
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise PluginError(f"plugin '{spec}': cannot import it: {_one_line(exc)}") from exc
        return spec, module
    try:
        return spec, importlib.import_module(spec)
    except Exception as exc:
        raise PluginError(f"plugin '{spec}': cannot import it: {_one_line(exc)}") from exc


def load_plugin(spec: str) -> None:
    """Load the plugin `spec` (a module name, or the path of a ``.py`` file) now, after the
    entry-point plugins; loading one twice is a no-op. A `PluginError` if it fails."""
    _load_entry_points()
    if spec in _CONTRIBUTIONS.loaded:
        return
    name, module = _import(spec)
    _register(name, module)


def _load_entry_points() -> None:
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    if env_flag(PLUGINS_ENV) is False:
        return
    for entry in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            try:
                target = entry.load()
            except Exception as exc:
                raise PluginError(f"plugin '{entry.name}' ({entry.value}): cannot import it: "
                                  f"{_one_line(exc)}") from exc
            _register(entry.name, target)
        except PluginError as exc:
            warnings.warn(f"{exc}; plugin skipped", stacklevel=2)


def contributions() -> Contributions:
    """What the plugins added (entry-point plugins are loaded on the first call)."""
    _load_entry_points()
    return _CONTRIBUTIONS
