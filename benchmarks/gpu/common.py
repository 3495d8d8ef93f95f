"""What the GPU suite's processes share: the GPU lock, result files, latency timing.

Several processes of one suite run at once (the tests or the matmul benchmark in one, a
model's compile in another); every section that times the GPU, or runs long on it, holds
`gpu_lock` so that no two of them overlap. Result files are written whole or not at all
(`write_json`), so a process killed at its deadline leaves its last complete result.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: The status of a step that needs a GPU, in a dry run.
DRY_RUN_SKIP = "dry-run: skipped (no GPU)"
#: The status of a step that had too little of the suite's time left to start.
BUDGET_SKIP = "skipped: budget"


@contextmanager
def gpu_lock(path: Path | None) -> Iterator[None]:
    """Hold the suite's GPU lock (an flock on `path`; nothing when `path` is None)."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
