"""Shape helpers of the ``graph`` dialect's verifiers."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

__all__ = [
    "broadcast_shapes",
    "tensor_shape",
    "verify_broadcast",
]


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


def verify_broadcast(operands: Sequence[tuple[str, Attribute]], result: Attribute) -> None:
    """The result is the numpy broadcast of the (name, type) operands, all one element type."""
    shapes = [tensor_shape(type, what) for what, type in operands]
    out = tensor_shape(result, "result")
    expected = broadcast_shapes(*shapes)
    if out != expected:
        raise VerifyException(
            f"result shape {list(out)} does not match broadcast shape {list(expected)}"
        )
    types = {t.get_element_type() for t in (*(type for _, type in operands), result)}
    if len(types) != 1:
        raise VerifyException("operands and result must have the same element type")
