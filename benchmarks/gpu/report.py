"""results.md: the suite's results.json as markdown tables, every number good or bad.

A value that a step did not produce shows the step's status instead ("dry-run: skipped
(no GPU)", "skipped: budget", "error: ..."), so the table says why a cell is empty. The
model sections (latency at each precision, per-kernel times) are `report_models.py`'s.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from formatting import num, stage_value, table
from report_models import PRECISION_TITLES, kernel_sections, latency_table

#: What the device call carries besides the torch caches: the wheels of `make gpu-wheels`.
WHEELS_MIB = 34
CARRY_MIB = 64


def junit_summary(path: Path) -> dict[str, Any]:
    """Counts of a pytest junit XML, and the failing and erroring tests with their message."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    counts = {key: sum(int(s.get(key, 0)) for s in suites)
              for key in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    problems, skips = [], {}
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        for tag in ("failure", "error"):
            for node in case.findall(tag):
                problems.append({"test": name, "kind": tag,
                                 "message": (node.get("message") or "").splitlines()[0][:300]
                                 if node.get("message") else ""})
        for node in case.findall("skipped"):
            reason = (node.get("message") or "").removeprefix("Skipped: ")
            skips[reason] = skips.get(reason, 0) + 1
    return {**counts, "problems": problems, "skip_reasons": skips}


def _environment(result: dict[str, Any]) -> list[str]:
    env = result["environment"]
    versions = env.get("versions", {})
    about = ", ".join(str(env[k]) for k in ("capability", "device_memory") if k in env)
    rows = [
        ["device", env.get("device", "?") + (f" ({about})" if about else "")],
        ["driver", f"{env.get('driver', '?')} (CUDA {env.get('driver_cuda', '?')})"],
        ["CUDA", (f"nvcc: {env.get('nvcc', '?')}; NVRTC {env.get('nvrtc', '?')}; "
                  f"torch built for {env.get('torch_cuda', '?')}")],
        ["versions", ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))],
        ["host", f"Python {env.get('python')}, {env.get('cpus')} CPUs, {env.get('platform')}"],
        ["tmlir", str(env.get("tmlir_commit"))],
        ["date", result["date"]],
        ["wall", f"{result['wall_seconds']} s of a {result['budget_seconds']:.0f} s budget"],
    ]
    return table(["", ""], rows)


def _pytest(step: dict[str, Any]) -> list[str]:
    d = step["detail"]
    if "tests" not in d:
        return [f"pytest: {step['status']} (no junit report)", ""]
    lines = [(f"{d['tests']} tests: {d['passed']} passed, {d['failures']} failed, "
              f"{d['errors']} errors, {d['skipped']} skipped ({step['status']}, {step['seconds']} s)"), ""]
    lines += [f"- {p['kind']}: `{p['test']}`: {p['message']}" for p in d["problems"]]
    lines += [f"- skipped ({n}): {reason}" for reason, n in sorted(d["skip_reasons"].items())]
    return lines + [""]


def _matmul(steps: list[dict[str, Any]]) -> list[str]:
    rows = []
    for step in steps:
        d, shape = step["detail"], step["name"].split()[1]
        if "torch_ms" in d:
            rows.append([shape, f"{num(d.get('timed', d['candidates']))} of {num(d['candidates'])}",
                         num(d["default"]["ms"]), num(d["tuned"]["ms"]), num(d["torch_ms"]),
                         num(d["tflops"]["default"], 2), num(d["tflops"]["tuned"], 2),
                         num(d["tflops"]["torch"], 2), num(d["ratio_default_over_torch"], 2),
                         num(d["ratio_tuned_over_torch"], 2), _model_on_candidates(d)])
        else:
            what = d.get("gpu", step["status"])
            if "ptx_seconds" in d:
                what += f"; {d.get('compiled', 1)} candidates compiled to PTX in {d['ptx_seconds']} s"
            rows.append([shape, num(d.get("candidates", "—")), what, "", "", "", "", "", "", "",
                         _model_on_candidates(d)])
    return table(["M x N x K", "candidates timed", "default ms", "tuned ms", "torch ms", "default TFLOP/s",
                  "tuned TFLOP/s", "torch TFLOP/s", "default / torch", "tuned / torch",
                  "latency model on the candidates"], rows)


def _model_on_candidates(detail: dict[str, Any]) -> str:
    """The latency model against the timed candidates: its error on the default and the
    fastest, the median of its absolute errors, and how fast its own pick ran; in a dry
    run, its estimate of the default."""
    timings = detail.get("timings") or detail.get("estimates")
    if not timings:
        return "—"
    rows = [dict(zip(timings["columns"], row)) for row in timings["rows"]]
    estimated = [r for r in rows if r.get("estimate_ms") is not None]
    if not estimated:
        return "n/a (no latency model)"
    timed = [r for r in estimated if r.get("ms")]
    if not timed:
        pick = min(estimated, key=lambda r: r["estimate_ms"])
        default = detail.get("default", {})
        return (f"default estimated {num(default.get('estimate_ms'))} ms; its pick: candidate {pick['index']} "
                f"at {num(pick['estimate_ms'])} ms")
    errors = sorted(abs(r["estimate_ms"] / r["ms"] - 1) for r in timed)
    by_index = {r["index"]: r for r in timed}

    def error(which: str) -> str:
        row = by_index.get(detail.get(which, {}).get("index"))
        return f"{(row['estimate_ms'] / row['ms'] - 1) * 100:+.0f}%" if row else "—"

    pick = min(timed, key=lambda r: r["estimate_ms"])
    return (f"error on default {error('default')}, on tuned {error('tuned')}, median |error| "
            f"{errors[len(errors) // 2] * 100:.0f}% over {len(timed)}; its pick ran {num(pick['ms'])} ms")


def _torch_cache(result: dict[str, Any]) -> list[str]:
    cache = result.get("torch_cache")
    if not isinstance(cache, dict):
        return []
    lines = ["## torch.compile's caches", ""]
    parts = [f"{name} {v['bytes'] / 2**20:.1f} MiB in {v['files']} files"
             for name, v in cache.items() if isinstance(v, dict)]
    lines.append(f"In all {cache['bytes'] / 2**20:.1f} MiB in {cache['files']} files ({', '.join(parts) or 'none'}).")
    packed = cache.get("archive_bytes")
    if packed is not None:
        room = CARRY_MIB - WHEELS_MIB
        fits = "fits" if packed / 2**20 <= room else "does not fit"
        lines.append(f"Compressed {packed / 2**20:.1f} MiB: it {fits} in the {room} MiB a device call can carry "
                     f"besides the wheels ({CARRY_MIB} MiB in all). Archive: {cache['archive']}.")
    else:
        lines.append(f"Archive: {cache.get('archive')}.")
    unpacked = result.get("torch_cache_unpacked")
    if unpacked:
        lines.append(f"This run started from {unpacked.get('archive')}: {unpacked.get('status')}.")
    return lines + [""]


def _programs(steps: list[dict[str, Any]]) -> list[str]:
    """tmlir's program per model and precision: launches, intermediates, agreement."""
    rows = []
    for step in steps:
        d = step["detail"]
        if not d:
            continue
        session = d.get("tmlir") if "launches" in (d.get("tmlir") or {}) else d.get("compile") or {}
        agree = (d.get("tmlir") or d.get("emu_vs_onnxruntime") or {}).get("agree", "—")
        rows.append([" ".join(step["name"].split()[1:]), num(session.get("launches", "—")), _peak(d), str(agree),
                     stage_value(d, "tmlir_tuned", "median_ms")])
    return table(["model", "launches", "intermediates MiB", "agrees", "tuned ms (tm-tune records)"],
                 rows) if rows else []

def _peak(detail: dict[str, Any]) -> str:
    """The memory plan's peak and its size without reuse, in MiB."""
    for stage in ("tmlir", "compile"):
        memory = (detail.get(stage) or {}).get("memory")
        if isinstance(memory, dict) and "peak_bytes" in memory:
            return (f"{memory['peak_bytes'] / 2**20:.3g} "
                    f"(no reuse {memory.get('no_reuse_bytes', 0) / 2**20:.3g})")
    return "—"


def _attention(steps: list[dict[str, Any]]) -> list[str]:
    """One row per sequence length: launches and bytes fused and unfused, the estimate, and
    (on a GPU) tmlir's and torch SDPA's medians."""
    lines = ["| step | seq | launches fused / unfused | bytes unfused / fused | estimate µs | tmlir ms "
             "| torch SDPA ms | ratio |", "|---|---|---|---|---|---|---|---|"]
    for step in steps:
        detail = step.get("detail") or {}
        if not detail.get("seqs"):
            lines.append(f"| {step['name']} | {step['status']} | | | | | | |")
            continue
        for seq, entry in detail["seqs"].items():
            costs, gpu = entry.get("costs", {}), entry.get("gpu") or {}
            fused, unfused = costs.get("fused", {}), costs.get("unfused", {})
            tmlir_ms = (gpu.get("tmlir") or {}).get("median_ms")
            torch_ms = (gpu.get("torch_sdpa") or {}).get("median_ms")
            lines.append(f"| {step['name']} | {seq} | {fused.get('launches')} / {unfused.get('launches')} "
                         f"| {costs.get('bytes_ratio')}x | {fused.get('estimate_us')} "
                         f"| {'' if tmlir_ms is None else f'{tmlir_ms:.4f}'} "
                         f"| {'' if torch_ms is None else f'{torch_ms:.4f}'} | {gpu.get('ratio', '')} |")
    return lines + [""]


def write_markdown(path: Path, result: dict[str, Any]) -> None:
    steps = result["steps"]
    title = "tmlir GPU suite" + (" (dry run: no GPU)" if result["dry_run"] else "")
    lines = [f"# {title}", ""] + _environment(result)
    lines += ["## Steps", ""] + table(
        ["step", "status", "seconds", "log"],
        [[s["name"], s["status"], num(s["seconds"], 1), s["log"] or ""] for s in steps])
    pytest = [s for s in steps if s["name"] == "pytest"]
    if pytest:
        lines += ["## GPU tests (`pytest -m gpu`)", ""] + _pytest(pytest[0])
    models = [s for s in steps if s["name"].startswith("latency ")]
    for precision, title in PRECISION_TITLES.items():
        chosen = [s for s in models if s["name"].endswith(f" {precision}")]
        if chosen:
            lines += [f"## Models, {title}", "",
                      ("Batch 1, the same inputs on both sides; median wall time between synchronizes "
                       "after warm-up. tmlir replays a CUDA graph, as `reduce-overhead` and "
                       "`max-autotune` do; eager and the default mode do not."), ""]
            lines += latency_table(chosen)
    if models:
        lines += ["### tmlir's programs", ""] + _programs(models)
        lines += [("Per-stage details (runs, min, p90, host load, compile times, memory reports, errors) "
                   "are in results.json and steps/."), ""]
        kernels = kernel_sections(models)
        if kernels:
            lines += ["## Per-kernel times beside the latency model", "",
                      ("Launches grouped by kernel, grid and block, the costliest first. Measured: the "
                       "median over the profile's runs of each launch (CUDA events around it, no graph), "
                       "averaged over the group's launches. Error: estimate / measured - 1 (negative: "
                       "the model is optimistic)."), ""] + kernels
    attention = [s for s in steps if s["name"].startswith("attention ")]
    if attention:
        lines += ["## Attention (one layer, batch 1, 12 heads of 64; CUDA graphs on both sides)", ""]
        lines += _attention(attention)
    matmul = [s for s in steps if s["name"].startswith("matmul ")]
    if matmul:
        lines += ["## Matmul (fp32 TF32 off; f16 on tensor cores; median of 5 batches)", ""] + _matmul(matmul)
    lines += _torch_cache(result)
    path.write_text("\n".join(lines))
