"""Pipeline passes: a module pass that stands for a sequence of passes.

``lower-to-cuda`` is one: ``-p 'lower-to-cuda{fusion=false}'`` names the whole default
pipeline. A `PipelinePass` lists its inner passes (built from its own options) in
`passes`; `apply` runs them from Python, and ``tm-opt`` replaces the pass by them with
`expand_pipeline` before handing the pipeline to xDSL, so ``--print-between-passes`` and
``--time-passes`` see each inner pass.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tmlir.progress import progress


@dataclass(frozen=True)
class PipelinePass(ModulePass):
    """A module pass that runs the sequence of passes `passes` gives (its options shape
    that sequence); the module is verified at the end."""

    @abstractmethod
    def passes(self) -> tuple[ModulePass, ...]:
        """The inner passes, in order, with the options this pass forwards to them."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        passes = expand_pipeline(self.passes())
        for inner in progress(passes, self.name, len(passes), "pass"):
            inner.apply(ctx, op)
        op.verify()


def expand_pipeline(passes: Iterable[ModulePass]) -> tuple[ModulePass, ...]:
    """`passes` with every `PipelinePass` replaced by its inner passes, recursively."""
    flat: list[ModulePass] = []
    for p in passes:
        flat.extend(expand_pipeline(p.passes()) if isinstance(p, PipelinePass) else (p,))
    return tuple(flat)
