"""The schedule registry: which function builds the kernel of each graph op type.

A family module of ``tmlir/schedules`` declares the op types its kernel builder schedules
with a decorator; a base class covers every op derived from it:

    @schedules(graph.ReduceOp, graph.SoftmaxBaseOp, graph.LayerNormOp, graph.PoolOp)
    def reduction_kernel(name: str, op: Operation) -> tm.KernelOp: ...

`kernel_builder(op_type)` finds the builder of the op type or of its closest registered
base class. A builder registered with ``target=True`` is also told the `BuildTarget` (the
GPU architecture, the operands a fused prologue computes): the attention builder picks its
tensor-core template from it (``builder(name, op, target)``; `wants_target`). The
registry fills as the family modules are imported: ``templates.py`` imports all of them,
and ``templates.kernel_for`` is the one place that calls a builder.
A plugin adds builders for its own op types (``tmlir/plugins.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from xdsl.ir import Operation

from tmlir import plugins
from tmlir.dialects import tm

__all__ = ["BuildTarget", "KernelBuilder", "NoTemplate", "kernel_builder", "schedules", "wants_target"]

#: Builds the kernel named `name` of one op (arguments: its operands, then its results);
#: None when it writes no element. NoTemplate for an op it has no template for, ValueError
#: for what its template cannot do.
KernelBuilder = Callable[[str, Operation], "tm.KernelOp | None"]
Builder = TypeVar("Builder", bound=Callable[..., "tm.KernelOp | None"])

_BUILDERS: dict[type[Operation], KernelBuilder] = {}
_TARGETED: set[Callable[..., object]] = set()


@dataclass(frozen=True)
class BuildTarget:
    """What a builder registered with ``target=True`` is told besides the op: the GPU
    architecture (``sm_XY``) and the operands a fused prologue computes (read them with
    ``tm.load``, not ``cp.async``)."""

    arch: str
    prologue: frozenset[int] = frozenset()


class NoTemplate(ValueError):
    """The op has no schedule template (or not for these element types)."""


def schedules(*op_types: type[Operation], target: bool = False) -> Callable[[Builder], Builder]:
    """Register the decorated kernel builder for `op_types` (and the op types derived from
    them); with `target`, it takes a third argument, the `BuildTarget`. An op type has one
    builder: registering a second one is a bug."""
    def register(builder: Builder) -> Builder:
        for op_type in op_types:
            assert op_type not in _BUILDERS, f"{op_type.__name__} already has a kernel builder"
            _BUILDERS[op_type] = builder
        if target:
            _TARGETED.add(builder)
        return builder
    return register


def wants_target(builder: Callable[..., object]) -> bool:
    """Whether `builder` was registered with ``target=True`` (takes a `BuildTarget`)."""
    return builder in _TARGETED


def kernel_builder(op_type: type[Operation]) -> KernelBuilder | None:
    """The builder registered for `op_type` or its closest base class, a plugin's
    (``tmlir/plugins.py``, ``add_template``) included; None if none is."""
    added = plugins.contributions().templates
    for cls in op_type.__mro__:
        if cls in added and cls in _BUILDERS:
            origin = plugins.contributions().origin[("template", cls)]
            raise plugins.PluginError(f"plugin '{origin}': template for '{cls.__name__}' clashes "
                                      "with a built-in kernel builder")
        if (builder := _BUILDERS.get(cls, added.get(cls))) is not None:
            return builder
    return None
