"""Errors about one op, so a driver can say where the op came from.

A pass that cannot handle an op raises `OpError(op, message)`: a
``PassFailedException`` that keeps the op. ``tm-opt`` looks the op up in the spans its
parser recorded and prints ``file:line:col: message`` with the op's source line; code
that does not know about spans still sees a plain ``PassFailedException`` whose text
is the message.

    raise OpError(op, "convert-graph-to-tm: 'graph.foo' has no template")
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException


class OpError(PassFailedException):
    """A pass failed on `op`; ``str(error)`` is the message alone."""

    def __init__(self, op: Operation, message: str) -> None:
        super().__init__(message)
        self.op = op
        self.message = message

    def __str__(self) -> str:
        return self.message


def failing_op(exc: BaseException) -> Operation | None:
    """The op an exception is about: `OpError.op`, or an ``op`` attribute any other
    exception was given; None when it names none."""
    op = getattr(exc, "op", None)
    return op if isinstance(op, Operation) else None
