"""What the command-line tools share: a parser whose errors are one line, typed options, and
`one_line_failures` for whatever else escapes a tool."""

from __future__ import annotations

import argparse
import functools
import os
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

from tmlir.env import env_flag


class ToolParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose usage errors are one line, ``<prog>: error: ...``, and exit
    with `status` (argparse prints the whole usage and exits 2)."""

    def __init__(self, *args, status: int = 2, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.status = status

    def error(self, message: str) -> NoReturn:
        self.exit(self.status, f"{self.prog}: error: {message}\n")


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


DEBUG_ENV = "TMLIR_DEBUG"
INTERNAL_ERROR = 70  # sysexits' EX_SOFTWARE: a bug of ours, not of the input
INTERRUPTED = 130


def one_line_failures(prog: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorate a tool's ``main``: whatever escapes it is one line on stderr, never a
    traceback -- Ctrl-C is ``<prog>: interrupted`` (status 130), any other exception is
    ``<prog>: internal error: ...`` (status 70, a bug to report). ``$TMLIR_DEBUG=1`` lets
    the exception through, traceback and all."""

    def decorate(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def guarded(*args, **kwargs) -> int:
            try:
                return main(*args, **kwargs)
            except KeyboardInterrupt:
                if _debug():
                    raise
                print(f"{prog}: interrupted", file=sys.stderr)
                return INTERRUPTED
            except Exception as exc:
                if _debug():
                    raise
                text = " ".join(str(exc).split()) or "(no message)"
                where = _innermost_frame(exc)
                print(f"{prog}: internal error: {type(exc).__name__}: {text}{where} "
                      f"(a bug in tmlir; set {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
                return INTERNAL_ERROR

        return guarded

    return decorate


def _debug() -> bool:
    return env_flag(DEBUG_ENV) is True


def _innermost_frame(exc: BaseException) -> str:
    """`` at file.py:line`` of the innermost frame inside tmlir, if any."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = [f for f in traceback.extract_tb(exc.__traceback__)[1:]  # [0]: the guard itself
              if f.filename.startswith(package)]
    if not frames:
        return ""
    frame = frames[-1]
    return f" at {os.path.basename(frame.filename)}:{frame.lineno}"
