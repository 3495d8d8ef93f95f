"""On/off environment variables, read one way everywhere."""

from __future__ import annotations

import os

_ON = ("1", "true", "on", "yes")
_OFF = ("0", "false", "off", "no")


def env_flag(name: str) -> bool | None:
    """``$name`` as a switch: True for 1/true/on/yes, False for 0/false/off/no (any case,
    spaces ignored), None when it is unset or anything else."""
    value = os.environ.get(name, "").strip().lower()
    return True if value in _ON else False if value in _OFF else None
