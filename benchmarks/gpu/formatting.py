"""Cells of results.md: numbers, a stage's value or why it has none, markdown tables."""

from __future__ import annotations

from typing import Any


def num(value: Any, digits: int = 3) -> str:
    """A number in a few digits (fixed point between 1e-3 and 1e4, else exponent)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 1e-3 or abs(value) >= 1e4 else f"{value:.{digits}f}"
    return str(value)


def stage_value(detail: dict[str, Any], name: str, key: str, digits: int = 3) -> str:
    """`key` of stage `name` in a step's detail, else the stage's status (why it has none)."""
    stage = detail.get(name)
    if not isinstance(stage, dict):
        return "—"
    if key in stage:
        return num(stage[key], digits)
    return str(stage.get("status", "—"))


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table (then an empty line); ``|`` in cells escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines + [""]


def micros(value: float | None) -> str:
    """A time in µs with as many decimals as its size needs (None: "—")."""
    if value is None:
        return "—"
    size = abs(value)
    return f"{value:.0f}" if size >= 100 else f"{value:.1f}" if size >= 10 else \
        f"{value:.2f}" if size >= 0.1 else f"{value:.2g}"
