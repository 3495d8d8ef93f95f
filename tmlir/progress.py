"""Progress bars for long compiles and runs, on a terminal only.

`progress` wraps an iterable in a tqdm bar on stderr when stderr is a terminal, and the
bar only appears once the work has taken `DELAY` seconds: short compiles and runs print
nothing, pipes and log files never get bar noise. ``TMLIR_PROGRESS=1`` shows bars even
when stderr is not a terminal, ``TMLIR_PROGRESS=0`` never.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TypeVar

from tmlir.env import env_flag

PROGRESS_ENV = "TMLIR_PROGRESS"
DELAY = 2.0
"""Seconds of work before a bar appears."""

T = TypeVar("T")


def enabled() -> bool:
    """Whether bars may be shown: ``$TMLIR_PROGRESS``, else whether stderr is a terminal."""
    setting = env_flag(PROGRESS_ENV)
    if setting is not None:
        return setting
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def progress(items: Iterable[T], what: str, total: int | None = None, unit: str = "it") -> Iterable[T]:
    """`items`, with a bar describing `what` is being done when `enabled` (see above)."""
    if not enabled():
        return items
    from tqdm import tqdm

    return tqdm(items, desc=what, total=total, unit=unit, delay=DELAY, leave=False,
                file=sys.stderr, dynamic_ncols=True)
