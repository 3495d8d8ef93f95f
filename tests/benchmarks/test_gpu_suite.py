"""The GPU suite (`benchmarks/gpu/run.sh`) runs here in its dry run, so it cannot rot.

The dry run does every step that needs no GPU: the GPU model tests' emu side, each matmul
shape's default candidate as sm_90 PTX, a model compiled, run on emu against onnxruntime
and compiled to PTX; each GPU-only stage is recorded as "dry-run: skipped (no GPU)". The
fast test restricts it to the demo MLP's tests, one matmul shape and the small BERT; the
slow one is the whole dry run with the full-size models (exported with .venv-models, or
$TMLIR_EXPORT_PYTHON, when build/models/ lacks them). The report's GPU tables are checked
on a result shaped like a GPU run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "gpu"
DRY_RUN_SKIP = "dry-run: skipped (no GPU)"
GPU_STAGES = ("tmlir_default", "torch_eager", "torch_compile", "tmlir_tuned")


def run_suite(out: Path, *args: str, timeout: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run([str(SUITE / "run.sh"), "--out", str(out), "--dry-run", *args], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert (out / "results.json").exists(), done.stdout + done.stderr
    result = json.loads((out / "results.json").read_text())
    problems = [f"{s['name']}: {s['status']}" for s in result["steps"] if not s["status"].startswith("ok")]
    assert done.returncode == 0 and not problems, f"{problems}\n{done.stdout}\n{done.stderr}"
    assert result["dry_run"] is True
    return {s["name"]: s for s in result["steps"]} | {"_result": result}


def check_latency(step: dict[str, Any]) -> None:
    detail = step["detail"]
    assert detail["compile"]["status"] == "ok" and detail["compile"]["kernels"] > 0
    assert detail["emu_vs_onnxruntime"]["agree"], detail["emu_vs_onnxruntime"]
    assert detail["ptx_sm_90"]["kernels"] == detail["compile"]["kernels"]
    for stage in GPU_STAGES:
        assert detail[stage]["status"] == DRY_RUN_SKIP


def test_dry_run_small_models(tmp_path: Path) -> None:
    steps = run_suite(tmp_path, "--tests", "mlp", "--matmul-shapes", "1000x999x1001", "512x512x512:f16",
                      "--models", "bert", "--budget", "300", timeout=300)
    tests = steps["pytest"]["detail"]
    assert (tests["tests"], tests["skipped"], tests["failures"], tests["errors"]) == (2, 2, 0, 0)
    assert all(reason.startswith("dry-run: no GPU") for reason in tests["skip_reasons"])
    matmul = steps["matmul 1000x999x1001"]["detail"]
    assert matmul["gpu"] == DRY_RUN_SKIP and matmul["candidates"] > 0 and matmul["ptx_bytes"] > 0
    tensor_cores = steps["matmul 512x512x512:f16"]["detail"]
    assert tensor_cores["template"] == "matmul_tc" and tensor_cores["ptx_bytes"] > 0
    check_latency(steps["latency bert"])
    markdown = (tmp_path / "results.md").read_text()
    for text in ("pytest", "matmul 1000x999x1001", "latency bert", DRY_RUN_SKIP):
        assert text in markdown
    assert (tmp_path / "pytest.xml").exists() and (tmp_path / "logs" / "latency_bert.log").exists()


@pytest.mark.slow
def test_full_dry_run(tmp_path: Path) -> None:
    models = ROOT / "build" / "models"
    names = ("resnet50", "bert_base", "gpt2_124m")
    exporter = os.environ.get("TMLIR_EXPORT_PYTHON", str(ROOT / ".venv-models" / "bin" / "python"))
    if not all((models / f"{n}.onnx").exists() for n in names) and not Path(exporter).exists():
        pytest.skip("no full-size models in build/models/ and no exporter (make full-models)")
    steps = run_suite(tmp_path, "--model-dir", str(models), "--export-python", exporter,
                      "--budget", "3000", timeout=3300)
    assert steps["pytest"]["detail"]["failures"] == 0 and steps["pytest"]["detail"]["skipped"] > 0
    for name in names:
        check_latency(steps[f"latency {name}"])


def test_report_renders_gpu_results(tmp_path: Path) -> None:
    """The tables of a GPU run (which only a GPU produces) render every number."""
    sys.path.insert(0, str(SUITE))
    try:
        from report import write_markdown
    finally:
        sys.path.remove(str(SUITE))
    stage = {"status": "ok", "median_ms": 1.25, "min_ms": 1.2, "p90_ms": 1.4, "runs": 30}
    result = {
        "dry_run": False, "date": "2026-01-01T00:00:00+00:00", "wall_seconds": 500.0,
        "budget_seconds": 540.0,
        "environment": {"device": "NVIDIA H100 80GB HBM3", "driver": "580.00", "driver_cuda": "13.0",
                        "capability": "sm_90", "versions": {"torch": "2.9.0"}},
        "steps": [
            {"name": "matmul 4096x4096x4096", "status": "ok", "seconds": 60.0, "log": "l", "detail": {
                "shape": "4096x4096x4096", "candidates": 184, "default": {"ms": 9.5}, "tuned": {"ms": 7.25},
                "torch_ms": 3.5, "tflops": {"default": 14.5, "tuned": 18.9, "torch": 39.3},
                "ratio_default_over_torch": 2.71, "ratio_tuned_over_torch": 2.07}},
            {"name": "latency bert_base", "status": "ok", "seconds": 90.0, "log": "l", "detail": {
                "tmlir_default": {**stage, "launches": 138, "compile_seconds": 30.5, "max_abs": 2e-6,
                                  "max_rel": 3e-6, "memory": {"peak_bytes": 3 * 2**20,
                                                              "no_reuse_bytes": 9 * 2**20}},
                "tmlir_tuned": {"status": "not run: no tuning records"},
                "torch_eager": {**stage, "median_ms": 4.5},
                "torch_compile": {**stage, "median_ms": 2.75, "vs_eager": {"max_rel": 1e-6}}}},
        ],
    }
    write_markdown(tmp_path / "results.md", result)
    text = (tmp_path / "results.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| bert_base"))
    for cell in ("138", "30.5", "1.250", "not run: no tuning records", "4.500", "2.750", "3 (no reuse 9)"):
        assert cell in row, (cell, row)
    row = next(line for line in text.splitlines() if line.startswith("| 4096x4096x4096"))
    for cell in ("9.500", "7.250", "3.500", "2.71", "2.07"):
        assert cell in row, (cell, row)
    assert "NVIDIA H100 80GB HBM3" in text and "580.00 (CUDA 13.0)" in text


def test_model_latency_gpu_path_on_cpu(tmp_path: Path) -> None:
    """model_latency.py's GPU stages, run with torch on the CPU and tmlir on emu (--cpu),
    where torch and transformers are installed: the same model object, its logits against
    tmlir's and torch.compile's, every stage's numbers recorded."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = tmp_path / "gpt2.json"
    done = subprocess.run([sys.executable, str(SUITE / "model_latency.py"),
                           str(ROOT / "examples" / "models" / "gpt2.onnx"), "--name", "gpt2",
                           "--out", str(out), "--cpu", "--runs", "5", "--tune-seconds", "0"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    for stage in ("reference", "tmlir_default", "torch_eager", "torch_compile"):
        assert result[stage]["status"] == "ok", (stage, result[stage])
    assert result["tmlir_default"]["max_rel"] < 1e-4 and result["tmlir_default"]["agree"]
    assert result["torch_compile"]["vs_eager"]["max_rel"] < 1e-4
    assert result["tmlir_default"]["runs"] == 5 and result["tmlir_default"]["median_ms"] > 0
    assert result["tmlir_tuned"]["status"] == "not run: --tune-seconds 0"
