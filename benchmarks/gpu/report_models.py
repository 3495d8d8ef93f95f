"""The model sections of results.md: latency tables (fp32, tf32) and per-kernel tables.

Latency: one row per model, tmlir beside torch eager and the three torch.compile modes,
and tmlir's time over the best of torch's compiled modes. Per kernel: for each model and
precision with a profile (or, in a dry run, a cost report), the launches grouped by kernel,
grid and block, the costliest first: measured µs per launch, the latency model's estimate,
its error, the roofline and the kernel's parameters; and the sums beside the graph replay.
"""

from __future__ import annotations

from typing import Any

from formatting import micros, num, stage_value, table

#: torch's stages in the latency tables, by column title.
TORCH_COLUMNS = {"torch eager": "torch_eager", "compile default": "torch_compile",
                 "reduce-overhead": "torch_reduce_overhead", "max-autotune": "torch_max_autotune"}
COMPILED = ("torch_compile", "torch_reduce_overhead", "torch_max_autotune")
#: Kernel groups shown per model (the rest are summed in one row).
TOP_KERNELS = 12
PRECISION_TITLES = {
    "fp32": "fp32: TF32 off on both sides (torch `highest`, allow_tf32 False; tmlir `precision=\"fp32\"`)",
    "tf32": "tf32: TF32 on on both sides (torch `high`, allow_tf32 True; tmlir `precision=\"tf32\"`)",
    "fp16": "fp16: f16 matmuls and convolutions, f32 accumulation, on both sides (torch autocast float16; "
            "tmlir `precision=\"fp16\"`)",
}


def _median(detail: dict[str, Any], stage: str) -> float | None:
    value = (detail.get(stage) or {}).get("median_ms")
    return value if isinstance(value, int | float) else None


def best_torch(detail: dict[str, Any]) -> tuple[str, float] | None:
    """The fastest of torch.compile's modes that ran: (stage, median ms)."""
    times = [(stage, _median(detail, stage)) for stage in COMPILED]
    times = [(stage, ms) for stage, ms in times if ms is not None]
    return min(times, key=lambda t: t[1]) if times else None


def _error(detail: dict[str, Any]) -> str:
    tmlir = detail.get("tmlir") or {}
    if "max_rel" in tmlir:
        return num(tmlir["max_rel"])
    check = detail.get("emu_vs_onnxruntime") or {}
    return f"emu vs onnxruntime {num(check['max_rel'])}" if "max_rel" in check else "—"


def latency_table(steps: list[dict[str, Any]]) -> list[str]:
    """One row per model: tmlir and torch's medians, tmlir over the best compiled mode."""
    rows = []
    for step in steps:
        d, name = step["detail"], step["name"].split()[1]
        if not d:
            rows.append([name, step["status"], *[""] * 8])
            continue
        best = best_torch(d)
        tmlir = _median(d, "tmlir")
        ratio = f"{num(tmlir / best[1], 2)}x ({best[0].removeprefix('torch_').replace('_', '-')})" \
            if best and tmlir else "—"
        rows.append([name, step["status"], stage_value(d, "tmlir", "median_ms"),
                     *[stage_value(d, stage, "median_ms") for stage in TORCH_COLUMNS.values()],
                     ratio, _error(d), _compile_times(d)])
    return table(["model", "step", "tmlir ms", *TORCH_COLUMNS, "tmlir / best compiled",
                  "tmlir vs fp32 torch (max rel)", "compile s: tmlir / default / r-o / m-a"], rows)


def _compile_times(detail: dict[str, Any]) -> str:
    stages = ("tmlir", "torch_compile", "torch_reduce_overhead", "torch_max_autotune")
    values = [(detail.get(s) or {}).get("compile_seconds") for s in stages]
    if all(v is None for v in values) and "compile" in detail:
        return f"{stage_value(detail, 'compile', 'compile_seconds', 1)} (emu)"
    return " / ".join(num(v, 1) if v is not None else "—" for v in values)


def _params(params: dict[str, Any]) -> str:
    """A kernel's parameters in a few words: its tile and serial k-steps first."""
    if not params:
        return ""
    parts = []
    if {"block_m", "block_n", "block_k"} <= set(params):
        parts.append(f"{params['block_m']}x{params['block_n']}x{params['block_k']}")
    for key, short in (("stages", "stages"), ("split_k", "split_k"), ("threads", "threads")):
        if key in params:
            parts.append(f"{short} {params[key]}")
    if not parts:
        parts = [f"{k} {v}" for k, v in list(params.items())[:3]]
    return ", ".join(parts)


def kernel_groups(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The launches of a profile record grouped by (kernel, grid, block), costliest first
    (by measured time, else estimate, else roofline)."""
    groups: dict[tuple, dict[str, Any]] = {}
    for row in record["launches"]:
        key = (row["kernel"], row["grid"], row["block"])
        group = groups.setdefault(key, {**row, "count": 0, "measured": [], "params": record.get(
            "kernel_params", {}).get(row["kernel"], {})})
        group["count"] += 1
        if row.get("measured_us") is not None:
            group["measured"].append(row["measured_us"])
    for group in groups.values():
        measured = group["measured"]
        group["measured_us"] = sum(measured) / len(measured) if measured else None

    def total(group: dict[str, Any]) -> float:
        for key in ("measured_us", "estimate_us", "roofline_us"):
            if group.get(key) is not None:
                return group[key] * group["count"]
        return 0.0

    return sorted(groups.values(), key=total, reverse=True)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.0f}%"


def _on_gpu(record: dict[str, Any]) -> bool:
    """Whether the record's times are a GPU's (emu's host times are not compared)."""
    return not str(record.get("device", "")).startswith("emu")


def kernel_table(record: dict[str, Any]) -> list[str]:
    """The top kernel groups of one profile record, then the rest summed in one row."""
    groups = kernel_groups(record)
    rows = []
    for g in groups[:TOP_KERNELS]:
        measured, estimate = g.get("measured_us"), g.get("estimate_us")
        error = estimate / measured - 1 if measured and estimate is not None and _on_gpu(record) else None
        rows.append([g["kernel"], g["template"], f"{g['grid']} x {g['block']}", str(g["count"]),
                     micros(measured), micros(estimate) if estimate is not None else "n/a", _pct(error),
                     micros(g["roofline_us"]), _params(g["params"])])
    rest = groups[TOP_KERNELS:]
    if rest:
        def summed(key: str) -> str:
            values = [g.get(key) for g in rest]
            if any(v is None for v in values):
                return "n/a" if key == "estimate_us" else "—"
            return micros(sum(v * g["count"] for v, g in zip(values, rest)))

        rows.append([f"{len(rest)} more kernels", "", "", str(sum(g["count"] for g in rest)),
                     f"{summed('measured_us')} in all", f"{summed('estimate_us')} in all", "",
                     f"{summed('roofline_us')} in all", ""])
    return table(["kernel", "template", "grid x block", "launches", "measured µs / launch",
                  "estimate µs", "error", "roofline µs", "params"], rows)


def summary_line(record: dict[str, Any]) -> str:
    """The sums of one profile record in a sentence."""
    s = record["summary"]
    parts = [f"{s['launches']} launches"]
    if s.get("measured_us") is not None:
        parts.append(f"kernel times sum to {micros(s['measured_us'])} µs")
    if s.get("graph_us") is not None:
        parts.append(f"the graph replay takes {micros(s['graph_us'])} µs")
    if s.get("estimate_us") is not None:
        error = f" (error {_pct(s.get('kernel_sum_error'))})" if s.get("measured_us") and _on_gpu(record) else ""
        parts.append(f"estimates sum to {micros(s['estimate_us'])} µs{error}")
    if s.get("program_estimate_us") is not None:
        error = f" (error against the graph replay {_pct(s['program_error'])})" if "program_error" in s else ""
        parts.append(f"the program is estimated at {micros(s['program_estimate_us'])} µs on {record['gpu']}"
                     f"{error}")
    parts.append(f"roofline {micros(s['roofline_us'])} µs")
    return "; ".join(parts) + "."


def kernel_sections(steps: list[dict[str, Any]]) -> list[str]:
    """A per-kernel section for each model and precision with a profile or a cost report."""
    lines: list[str] = []
    for step in steps:
        d = step["detail"]
        _, name, precision = (step["name"].split() + ["", ""])[:3]
        for stage, what in (("tmlir_profile", "measured on the GPU (CUDA events, no graph)"),
                            ("emu_profile", "emu host times: they say nothing of a GPU"),
                            ("cost", "no measurement (dry run): the cost report only")):
            record = d.get(stage)
            if isinstance(record, dict) and record.get("status") == "ok":
                lines += [f"### {name} {precision}: {what}; estimates for {record['gpu']}", "",
                          summary_line(record), ""] + kernel_table(record)
                break
    return lines
