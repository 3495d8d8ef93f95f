"""Where tm-opt and the Python API find the project's dialects, passes and targets.

Adding a pass or a dialect is adding one file or package: every module
``tmlir/passes/<snake>.py`` defines the pass named ``<snake with dashes>``, and every module
``tmlir/dialects/<name>.py`` or package ``tmlir/dialects/<name>/`` defines (in its
``__init__``) a ``Dialect`` named ``<name>``; a dialect package keeps its op families and
helpers in modules of its own, which the registry never sees. Nothing is imported until it
is used. Packages outside ``tmlir`` add theirs as plugins (``tmlir/plugins.py``): they
join these tables, and a name that clashes with a built-in one is a ``PluginError``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.utils.target import Target

import tmlir.dialects
import tmlir.passes
from tmlir import plugins


def _modules(package) -> list[str]:
    """The modules and packages directly under `package`."""
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("__"))


def _load_dialect(module_name: str) -> Dialect:
    module = importlib.import_module(f"tmlir.dialects.{module_name}")
    dialects = [v for v in vars(module).values() if isinstance(v, Dialect)]
    named = [d for d in dialects if d.name == module_name]
    if len(named) != 1:
        raise LookupError(f"tmlir/dialects/{module_name} defines no dialect named '{module_name}'")
    return named[0]


def _load_pass(module_name: str) -> type[ModulePass]:
    module = importlib.import_module(f"tmlir.passes.{module_name}")
    name = module_name.replace("_", "-")
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, ModulePass) and getattr(value, "name", None) == name:
            return value
    raise LookupError(f"tmlir/passes/{module_name}.py defines no pass named '{name}'")


def _with_plugins(kind: str, built_in: dict, added: dict, taken: Iterable[str] = ()) -> dict:
    """`built_in` and the plugins' `added` entries; a PluginError for a name in both (or in
    `taken`, xDSL's own)."""
    origin = plugins.contributions().origin
    for name in added:
        if name in built_in or name in taken:
            raise plugins.PluginError(f"plugin '{origin[(kind, name)]}': {kind} '{name}' clashes "
                                      f"with a built-in {kind}")
    return {**built_in, **added}


def project_dialects() -> dict[str, Callable[[], Dialect]]:
    """Dialect name -> lazy loader, one per module or package of tmlir/dialects/, then the
    plugins' (``tmlir/plugins.py``)."""
    from xdsl.dialects import get_all_dialects

    built_in = {name: (lambda n=name: _load_dialect(n)) for name in _modules(tmlir.dialects)}
    return _with_plugins("dialect", built_in, plugins.contributions().dialects, get_all_dialects())


def project_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> lazy loader, one per file of tmlir/passes/, then the plugins'."""
    from xdsl.transforms import get_all_passes

    built_in = {
        name.replace("_", "-"): (lambda n=name: _load_pass(n))
        for name in _modules(tmlir.passes)
    }
    return _with_plugins("pass", built_in, plugins.contributions().passes, get_all_passes())


def project_targets() -> dict[str, Callable[[], type[Target]]]:
    """Target name -> lazy loader."""

    def cuda() -> type[Target]:
        from tmlir.backends.cuda_c import CudaTarget

        return CudaTarget

    def dot() -> type[Target]:
        from tmlir.backends.dot import DotTarget

        return DotTarget

    def cost() -> type[Target]:
        from tmlir.backends.cost import CostTarget

        return CostTarget

    def gpu_target(name: str) -> Callable[[], type[Target]]:
        def load() -> type[Target]:
            from tmlir.backends import ptx_targets

            return {"ptx": ptx_targets.PtxTarget, "cubin": ptx_targets.CubinTarget,
                    "report": ptx_targets.ReportTarget}[name]

        return load

    built_in = {"cuda": cuda, "dot": dot, "cost": cost,
                **{name: gpu_target(name) for name in ("ptx", "cubin", "report")}}
    return _with_plugins("target", built_in, plugins.contributions().targets)


def make_context(weights=None):
    """A context with xDSL's dialects (those of ``xdsl.universe`` plugins too, as xDSL's own
    driver has them) and the project's (plugins' too), for parsing and passes, carrying
    `weights` (the model's weight table, see ``tmlir.context``) if given."""
    from xdsl.universe import Universe

    from tmlir.context import TmContext
    from tmlir.ir.arith_ext import load_extra_arith_ops

    ctx = TmContext(weights=weights)
    for name, loader in {**Universe.get_multiverse().all_dialects, **project_dialects()}.items():
        ctx.register_dialect(name, loader)
    load_extra_arith_ops(ctx)
    return ctx
