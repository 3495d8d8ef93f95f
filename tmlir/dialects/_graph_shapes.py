"""Shape helpers of the ``graph`` dialect's verifiers (re-exported by ``graph.py``)."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException


def tensor_shape(attr: Attribute, what: str) -> tuple[int, ...]:
    """The static shape of a tensor type, or a VerifyException naming `what`."""
    if not isinstance(attr, TensorType):
        raise VerifyException(f"{what} must be a tensor, got {attr}")
    shape = tuple(attr.get_shape())
    if any(d < 0 for d in shape):
        raise VerifyException(f"{what} must have a static shape, got {attr}")
    return shape


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """numpy broadcasting of `shapes`; raises VerifyException when they do not broadcast."""
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            pretty = ", ".join("x".join(map(str, s)) or "scalar" for s in shapes)
            raise VerifyException(f"shapes {pretty} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)
