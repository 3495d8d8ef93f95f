"""Errors and warnings about one op, so a driver can say where the op came from.

A pass that cannot handle an op raises `OpError(op, message)`: a
``PassFailedException`` that keeps the op. ``tm-opt`` looks the op up in the spans its
parser recorded and prints ``file:line:col: message`` with the op's source line; code
that does not know about spans still sees a plain ``PassFailedException`` whose text
is the message. A verifier error found by `tmlir.ir.ssa.verify_module` is an
`OpVerifyError` (its text already located), and a pass that wants to warn about an op
calls `warn_about(op, message)`, which issues an `OpWarning`.

    raise OpError(op, "convert-graph-to-tm: 'graph.foo' has no template")
    warn_about(op, "graph-partition: 'graph.foo' stays on its own")
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException, VerifyException


class _AboutOp:
    """An exception or warning about `op` whose ``str()`` is `message` alone (a driver adds
    where the op is)."""

    def __init__(self, op: Operation, message: str) -> None:
        super().__init__(message)
        self.op = op
        self.message = message

    def __str__(self) -> str:
        return self.message


class OpError(_AboutOp, PassFailedException):
    """A pass failed on `op`; ``str(error)`` is the message alone."""


class OpVerifyError(VerifyException):
    """`op` does not verify: `message` is the reason alone (``'graph.add' op does not
    verify: ...``), ``str(error)`` the located `text` (``file:line:col: message``, the
    source line and a caret)."""

    def __init__(self, op: Operation, message: str, text: str) -> None:
        super().__init__(text)
        self.op = op
        self.message = message
        self.text = text

    def __str__(self) -> str:
        return self.text


class OpWarning(_AboutOp, UserWarning):
    """A warning about `op`; ``str(warning)`` is the message alone."""


def warn_about(op: Operation, message: str) -> None:
    """Issue an `OpWarning` about `op` (``tm-opt`` shows it with the op's location)."""
    warnings.warn(OpWarning(op, message), stacklevel=2)


def failing_op(exc: BaseException) -> Operation | None:
    """The op an exception is about: `OpError.op`, or an ``op`` attribute any other
    exception was given, or that of the exception it was raised from (``raise ... from
    exc``); None when none names one."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        op = getattr(at, "op", None)
        if isinstance(op, Operation):
            return op
        at = at.__cause__
    return None


def attach_op(exc: BaseException, op: Operation) -> BaseException:
    """`exc`, naming `op` as the op it is about unless it names one already."""
    if failing_op(exc) is None:
        try:
            exc.op = op  # type: ignore[attr-defined]
        except AttributeError:  # an exception type with __slots__
            pass
    return exc


P = ParamSpec("P")
R = TypeVar("R")


def errors_about_op(function: Callable[P, R]) -> Callable[P, R]:
    """Decorate a function with an ``op`` parameter: a ValueError it raises (NoTemplate, a
    template's limit) names that op (`attach_op`) unless it names one already."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except ValueError as exc:
            op = signature.bind(*args, **kwargs).arguments.get("op")
            if isinstance(op, Operation):
                attach_op(exc, op)
            raise

    return wrapper


def message_of(exc: BaseException) -> str:
    """The message of an error or warning without its location: ``message`` where it
    keeps one, else its text."""
    message = getattr(exc, "message", None)
    if isinstance(message, str):
        return message
    msg = getattr(exc, "msg", None)  # xDSL's ParseError
    return msg if isinstance(msg, str) else str(exc).strip()
