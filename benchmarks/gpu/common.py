"""What the GPU suite's processes share: result files, paths in them, latency timing.

Result files are written whole or not at all (`write_json`), so a process killed at its
deadline leaves its last complete result. Paths in results name files relative to the
repository (`repo_path`), never as this machine spells them.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The status of a step that needs a GPU, in a dry run.
DRY_RUN_SKIP = "dry-run: skipped (no GPU)"
#: The status of a step that had too little of the suite's time left to start.
BUDGET_SKIP = "skipped: budget"


ROOT = Path(__file__).resolve().parents[2]


def repo_path(path: str | Path, out: Path | None = None) -> str:
    """`path` as results record it: relative to the repository when inside it, as
    ``$OUT/...`` when inside the results folder `out`, else its file name alone."""
    path = Path(path)
    if not path.is_absolute():
        return str(path)
    for base, prefix in ((out, "$OUT"), (ROOT, None)):
        for spelled in (Path(os.path.abspath(path)), path.resolve()):  # as given, then without links
            if base is not None and spelled.is_relative_to(base.resolve()):
                relative = spelled.relative_to(base.resolve())
                return f"{prefix}/{relative}" if prefix else str(relative)
    return path.name


def write_json(path: Path, data: Any) -> None:
    """Write `data` to `path` atomically (a temporary file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    """The JSON in `path`, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def latency(run: Callable[[], Any], sync: Callable[[], None], runs: int = 30, warmup: int = 5,
            deadline: float | None = None) -> dict[str, float | int]:
    """Wall time of `run` in milliseconds, each run between two `sync` calls, after `warmup`
    runs: median, min and 90th percentile of `runs` runs (fewer, but at least 5, when
    `deadline`, a `time.time()`, comes first)."""
    for _ in range(warmup):
        run()
    sync()
    times: list[float] = []
    while len(times) < runs:
        if deadline is not None and len(times) >= 5 and time.time() > deadline:
            break
        sync()
        start = time.perf_counter()
        run()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    ordered = sorted(times)
    return {"median_ms": statistics.median(times), "min_ms": ordered[0],
            "p90_ms": ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)],
            "runs": len(times), "warmup": warmup}


def relative_error(got: Any, want: Any) -> dict[str, float]:
    """max |got - want| and that over max |want| (numpy arrays or torch tensors)."""
    import numpy as np

    got, want = (np.asarray(x.detach().cpu() if hasattr(x, "detach") else x, dtype=np.float64)
                 for x in (got, want))
    if got.shape != want.shape:
        raise ValueError(f"shapes differ: {list(got.shape)} vs {list(want.shape)}")
    diff = float(np.abs(got - want).max()) if got.size else 0.0
    scale = float(np.abs(want).max()) if want.size else 0.0
    return {"max_abs": diff, "max_rel": diff / scale if scale else diff}
