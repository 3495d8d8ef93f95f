"""Per-kernel times beside the latency model: a session's launch times and its cost report.

The cost report (`tmlir.backends.cost.cost_report(module, gpu=...)`) lists the launches of
a gpu-level module in order, each with its roofline time and, from the latency model, its
estimated time (``estimate_seconds``). `InferenceSession.gpu_module()` is the module of the
program the session launches, so its report's launches are the session's, in the same
order: `launch_rows` sets each measured launch (`InferenceSession.profile`) beside its
estimate, checking that the two lists name the same kernel, grid and block launch by
launch. A cost report without estimates (a tmlir older than the latency model) gives rows
with ``estimate_us`` None, which the report shows as "n/a".
"""

from __future__ import annotations

from typing import Any

#: GPUs the latency model knows, by the name ``cost_report(gpu=...)`` takes, as they
#: appear in a device name (``NVIDIA H200``, ``NVIDIA H100 80GB HBM3``, ``NVIDIA A100-SXM4-80GB``).
KNOWN_GPUS = ("H200", "H100", "A100")
#: The latency model's GPU when the device is none of these (the dry run's).
DEFAULT_GPU = "H200"


def cost_gpu(device: str | None) -> str:
    """The latency model's name for `device` (a CUDA device name), else `DEFAULT_GPU`."""
    return next((gpu for gpu in KNOWN_GPUS if device and gpu in device), DEFAULT_GPU)


def model_cost(module: Any, gpu: str) -> tuple[Any, str | None]:
    """The cost report of `module` for `gpu`, and None; or, when this tmlir's cost report
    takes no GPU (no latency model yet), the report without one and why."""
    from tmlir.backends.cost import cost_report

    try:
        return cost_report(module, gpu=gpu), None
    except TypeError as exc:
        if "gpu" not in str(exc):
            raise
        return cost_report(module), "n/a: the cost report has no latency model (no gpu option)"


def estimate_us(cost: Any) -> float | None:
    """The latency model's estimate of a launch or a whole program in µs, None without one."""
    seconds = getattr(cost, "estimate_seconds", None)
    return None if seconds is None else float(seconds) * 1e6


def launch_rows(cost: Any, times: list[Any] | None = None) -> list[dict[str, Any]]:
    """One row per launch of `cost` (a `ModelCost`): kernel, template, grid, block, roofline
    and estimate in µs, and, with `times` (`LaunchTime`s of the same program), the measured
    median and minimum. ValueError when `times` is not the same launch sequence."""
    launches = list(cost.launches)
    if times is not None and len(times) != len(launches):
        raise ValueError(f"the profile has {len(times)} launches, the cost report {len(launches)}")
    rows = []
    for i, launch in enumerate(launches):
        row: dict[str, Any] = {
            "index": i, "kernel": launch.kernel, "template": launch.template, "grid": launch.grid,
            "block": launch.block, "roofline_us": launch.seconds * 1e6, "bound": launch.bound,
            "estimate_us": estimate_us(launch), "flops": launch.flops, "bytes": launch.bytes,
        }
        if times is not None:
            t = times[i]
            if (t.kernel, t.grid, t.block) != (launch.kernel, launch.grid, launch.block):
                raise ValueError(f"launch {i}: the profile ran {t.kernel} {t.grid}x{t.block}, the cost "
                                 f"report has {launch.kernel} {launch.grid}x{launch.block}")
            row.update(measured_us=t.median_us, min_us=t.min_us)
        rows.append(row)
    return rows


def kernel_params(program: Any) -> dict[str, dict[str, Any]]:
    """``tm.params`` of every kernel of a `CudaProgram`, by kernel name (once per kernel,
    however often it is launched)."""
    return {k.signature.name: dict(k.params) for k in program.kernels}


def summary(rows: list[dict[str, Any]], cost: Any, graph_ms: float | None = None) -> dict[str, Any]:
    """Sums over the launches: measured, estimated and roofline µs, the program's estimate
    (the model's, launches in a graph included) and, with the graph replay's latency
    `graph_ms`, the model's error against it."""
    def total(key: str) -> float | None:
        values = [r.get(key) for r in rows]
        return None if not values or any(v is None for v in values) else float(sum(values))

    program = estimate_us(cost)
    out: dict[str, Any] = {"launches": len(rows), "measured_us": total("measured_us"),
                           "estimate_us": total("estimate_us"), "roofline_us": total("roofline_us"),
                           "program_estimate_us": program}
    if graph_ms is not None:
        out["graph_us"] = graph_ms * 1e3
        if program is not None:
            out["program_error"] = program / out["graph_us"] - 1
    if out["measured_us"] and out["estimate_us"] is not None:
        out["kernel_sum_error"] = out["estimate_us"] / out["measured_us"] - 1
    return out


def profile_record(session: Any, gpu: str, times: list[Any] | None, graph_ms: float | None = None
                   ) -> dict[str, Any]:
    """What the suite keeps of a session's per-kernel profile: the rows (`launch_rows`),
    the kernels' parameters, the sums (`summary`), the GPU the estimates are for, and why
    there are no estimates when there are none."""
    cost, missing = model_cost(session.gpu_module(), gpu)
    rows = launch_rows(cost, times)
    record: dict[str, Any] = {"gpu": gpu, "summary": summary(rows, cost, graph_ms), "launches": rows,
                              "kernel_params": kernel_params(session.program)}
    if missing or record["summary"]["estimate_us"] is None:
        record["estimates"] = missing or "n/a: the cost report gives no estimate_seconds"
    return record
