"""results.md: the suite's results.json as markdown tables, every number good or bad.

A value that a step did not produce shows the step's status instead ("dry-run: skipped
(no GPU)", "skipped: budget", "error: ..."), so the table says why a cell is empty.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


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


def _num(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 1e-3 or abs(value) >= 1e4 else f"{value:.{digits}f}"
    return str(value)


def _stage(detail: dict[str, Any], name: str, key: str, digits: int = 3) -> str:
    stage = detail.get(name)
    if not isinstance(stage, dict):
        return "—"
    if key in stage:
        return _num(stage[key], digits)
    return str(stage.get("status", "—"))


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines + [""]


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
    return _table(["", ""], rows)


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
            rows.append([shape, _num(d["candidates"]), _num(d["default"]["ms"]), _num(d["tuned"]["ms"]),
                         _num(d["torch_ms"]), _num(d["tflops"]["default"], 2),
                         _num(d["tflops"]["tuned"], 2), _num(d["tflops"]["torch"], 2),
                         _num(d["ratio_default_over_torch"], 2), _num(d["ratio_tuned_over_torch"], 2)])
        else:
            what = d.get("gpu", step["status"])
            ptx = f"; default candidate PTX for sm_90 in {d['ptx_seconds']} s" if "ptx_seconds" in d else ""
            rows.append([shape, _num(d.get("candidates", "—")), what + ptx, "", "", "", "", "", "", ""])
    return _table(["M x N x K", "candidates", "default ms", "tuned ms", "torch ms", "default TFLOP/s",
                   "tuned TFLOP/s", "torch TFLOP/s", "default / torch", "tuned / torch"], rows)


def _peak(detail: dict[str, Any]) -> str:
    """The memory plan's peak and its size without reuse, in MiB."""
    for stage in ("tmlir_default", "compile"):
        memory = (detail.get(stage) or {}).get("memory")
        if isinstance(memory, dict) and "peak_bytes" in memory:
            return (f"{memory['peak_bytes'] / 2**20:.3g} "
                    f"(no reuse {memory.get('no_reuse_bytes', 0) / 2**20:.3g})")
    return "—"


def _models(steps: list[dict[str, Any]]) -> list[str]:
    rows = []
    for step in steps:
        d, name = step["detail"], step["name"].split()[1]
        if not d:
            rows.append([name, step["status"]] + [""] * 9)
            continue
        error = (f"{_stage(d, 'tmlir_default', 'max_abs')} / {_stage(d, 'tmlir_default', 'max_rel')}"
                 if "max_rel" in d.get("tmlir_default", {}) else
                 f"emu vs onnxruntime {_stage(d, 'emu_vs_onnxruntime', 'max_rel')}"
                 if "emu_vs_onnxruntime" in d else "—")
        compile_s = _stage(d, "tmlir_default", "compile_seconds", 1) if "compile_seconds" in d.get(
            "tmlir_default", {}) else _stage(d, "compile", "compile_seconds", 1)
        launches = d.get("tmlir_default", {}).get("launches", d.get("compile", {}).get("launches", "—"))
        compiled_vs_eager = d.get("torch_compile", {}).get("vs_eager", {}).get("max_rel")
        rows.append([name, step["status"], _num(launches), compile_s,
                     _stage(d, "tmlir_default", "median_ms"), _stage(d, "tmlir_tuned", "median_ms"),
                     _stage(d, "torch_eager", "median_ms"), _stage(d, "torch_compile", "median_ms"),
                     error, _num(compiled_vs_eager) if compiled_vs_eager is not None else "—", _peak(d)])
    return _table(["model", "step", "launches", "tmlir compile s", "tmlir ms", "tmlir tuned ms",
                   "torch eager ms", "torch.compile ms", "tmlir vs eager: max abs / rel",
                   "torch.compile vs eager rel", "tmlir intermediates MiB"], rows)


def write_markdown(path: Path, result: dict[str, Any]) -> None:
    steps = result["steps"]
    title = "tmlir GPU suite" + (" (dry run: no GPU)" if result["dry_run"] else "")
    lines = [f"# {title}", ""] + _environment(result)
    lines += ["## Steps", ""] + _table(
        ["step", "status", "seconds", "log"],
        [[s["name"], s["status"], _num(s["seconds"], 1), s["log"] or ""] for s in steps])
    pytest = [s for s in steps if s["name"] == "pytest"]
    if pytest:
        lines += ["## GPU tests (`pytest -m gpu`)", ""] + _pytest(pytest[0])
    matmul = [s for s in steps if s["name"].startswith("matmul ")]
    if matmul:
        lines += ["## Matmul (fp32, TF32 off; median of 5 batches)", ""] + _matmul(matmul)
    models = [s for s in steps if s["name"].startswith("latency ")]
    if models:
        lines += ["## Models (batch 1; median wall time between synchronizes, after warm-up)", ""]
        lines += _models(models)
        lines += [("Per-stage details (runs, min, p90, compile times, memory reports, errors) are "
                   "in results.json and steps/."), ""]
    path.write_text("\n".join(lines))
