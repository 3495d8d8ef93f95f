"""Per-kernel times beside the latency model: a session's launch times and its cost report.

The cost report (`tmlir.backends.cost.cost_report(module, on=GPU, registers=...)`) lists the
launches of a gpu-level module in order, each with its roofline time and the latency
model's estimate (``estimate_seconds``, `tmlir.latency`), here with the registers ptxas
gives each kernel for the GPU's architecture. `InferenceSession.gpu_module()` is the module
of the program the session launches, so its report's launches are the session's, in the
same order: `launch_rows` sets each measured launch (`InferenceSession.profile`) beside its
estimate, checking that the two lists name the same kernel, grid and block launch by
launch.
"""

from __future__ import annotations

from typing import Any

#: The latency model's GPU when the device is none it knows (and the dry run's).
DEFAULT_GPU = "H200"


def cost_gpu(device: str | None) -> str:
    """The latency model's name for `device` (a CUDA device name, `tmlir.gpus`), else
    `DEFAULT_GPU`."""
    from tmlir.gpus import gpu

    try:
        return gpu(device).name if device else DEFAULT_GPU
    except ValueError:
        return DEFAULT_GPU


def model_cost(module: Any, gpu: str) -> tuple[Any, str]:
    """The cost report of `module` on `gpu`, with ptxas' registers of its kernels (for the
    GPU's architecture; the templates' estimates where ptxas cannot run), and which."""
    from tmlir.backends.cost import cost_report, ptxas_registers
    from tmlir.backends.ptx import CudaCompileError
    from tmlir.gpus import gpu as named

    try:
        registers, source = ptxas_registers(module, named(gpu).arch), "ptxas"
    except (CudaCompileError, OSError) as exc:
        registers, source = None, f"the templates' estimates (ptxas failed: {str(exc).splitlines()[0]})"
    return cost_report(module, gpu, registers), source


def estimate_us(cost: Any) -> float:
    """The latency model's estimate of a launch or a whole program in µs."""
    return float(cost.estimate_seconds) * 1e6


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
            "estimate_us": estimate_us(launch), "limit": launch.limit, "registers": launch.registers,
            "resident": launch.resident, "flops": launch.flops, "bytes": launch.bytes,
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
        out["program_error"] = program / out["graph_us"] - 1
    if out["measured_us"]:
        out["kernel_sum_error"] = out["estimate_us"] / out["measured_us"] - 1
    return out


def profile_record(session: Any, gpu: str, times: list[Any] | None, graph_ms: float | None = None
                   ) -> dict[str, Any]:
    """What the suite keeps of a session's per-kernel profile: the rows (`launch_rows`),
    the kernels' parameters, the sums (`summary`), the GPU the estimates are for and where
    their registers came from."""
    cost, registers = model_cost(session.gpu_module(), gpu)
    rows = launch_rows(cost, times)
    return {"gpu": gpu, "registers": registers, "summary": summary(rows, cost, graph_ms), "launches": rows,
            "kernel_params": kernel_params(session.program)}
