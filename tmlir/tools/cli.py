"""What the command-line tools share: a parser whose errors are one line, and typed options."""

from __future__ import annotations

import argparse
from typing import NoReturn


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
