"""What passes and schedules know about a graph op, declared on the op as xDSL traits.

An op class lists its traits next to ``Pure()`` (a subclass adds to its base's traits):

    @irdl_op_definition
    class AddOp(BinaryElementwiseOp):      # the base has Pure(), Injective()
        name = "graph.add"
        traits = traits_def(AnyElementType())

and a pass asks the op, not a list of op classes: ``op.has_trait(Injective)``,
``op.get_trait(NoOpWhen)``. Which template builds an op's kernel is not a trait: the
schedule registry (``tmlir/schedules/registry.py``) maps op types to kernel builders.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.traits import OpTrait

__all__ = ["AnyElementType", "Injective", "NoOpWhen"]


@dataclass(frozen=True)
class AnyElementType(OpTrait):
    """The op's schedule template takes the other element types too (integers, bools,
    f64; ``tmlir/dtypes.py``). Without this trait a template computes in f32 and takes f32
    tensors, and f16 ones read widened to f32 and written rounded
    (``schedules/common.py``'s `half_arguments`)."""


@dataclass(frozen=True)
class Injective(OpTrait):
    """Each element of the op's result is a function of a few operand elements at
    coordinates computed from the result's coordinates (elementwise ops with broadcasting,
    comparisons, ``cast``, ``batch_norm``, ``reshape``, data movement): fusion may compute
    the op inside another op's kernel (``tmlir/schedules/injective.py`` builds that element)."""


def _always(op: Operation) -> bool:
    return True


@dataclass(frozen=True)
class NoOpWhen(OpTrait):
    """The op returns its first operand unchanged when ``predicate(op)`` holds and its
    (single) result has the operand's type, e.g. a ``graph.concat`` of one input;
    ``graph-canonicalize`` then replaces the op by its operand. With `reshape`, a result of
    another type (the same elements in another shape, such as a reduction over extent-1
    dims without ``keepdims``) becomes a ``graph.reshape`` of the operand."""

    predicate: Callable[[Operation], bool] = _always
    reshape: bool = False
