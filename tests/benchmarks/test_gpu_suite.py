"""The GPU suite (`benchmarks/gpu/run.sh`) runs here in its dry run, so it cannot rot.

The dry run does every step that needs no GPU: the GPU model tests' emu side, every
candidate of each matmul shape compiled to sm_90 PTX with its cost-report figures, each
model compiled (fp32 and tf32), run on emu against onnxruntime, compiled to PTX and
costed, the small ones profiled on emu; each GPU-only stage is recorded as "dry-run:
skipped (no GPU)". The fast test restricts it to the demo MLP's tests, one small
tensor-core matmul shape and the small BERT in fp32; the slow one is the whole dry run with the
full-size models (exported with .venv-models, or $TMLIR_EXPORT_PYTHON, when build/models/
lacks them). The report's GPU tables are checked on a result shaped like a GPU run's, and
the per-kernel bookkeeping (`kernel_costs.py`) on its own.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "gpu"


def suite_module(name: str) -> ModuleType:
    """A module of benchmarks/gpu/ (not a package: its scripts import each other by name)."""
    sys.path.insert(0, str(SUITE))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(SUITE))


kernel_costs = suite_module("kernel_costs")
repo_path = suite_module("common").repo_path
write_markdown = suite_module("report").write_markdown
DRY_RUN_SKIP = "dry-run: skipped (no GPU)"
GPU_STAGES = ("tmlir", "torch_eager", "torch_max_autotune", "torch_reduce_overhead", "torch_compile",
              "tmlir_profile", "tmlir_tuned")


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


def check_latency(step: dict[str, Any], small: bool) -> None:
    detail = step["detail"]
    compiled = detail["compile"]
    assert compiled["status"] == "ok" and compiled["kernels"] > 0
    if detail["precision"] == "fp32":
        assert detail["emu_vs_onnxruntime"]["agree"], detail["emu_vs_onnxruntime"]
    assert detail["ptx_sm_90"]["kernels"] == compiled["kernels"]
    cost = detail["cost"]
    assert cost["status"] == "ok" and len(cost["launches"]) == compiled["launches"]
    assert all(row["roofline_us"] > 0 and "estimate_us" in row for row in cost["launches"])
    assert set(cost["kernel_params"]) == {row["kernel"] for row in cost["launches"]}
    if small:
        profile = detail["emu_profile"]
        assert [row["kernel"] for row in profile["launches"]] == [row["kernel"] for row in cost["launches"]]
        assert all(row["measured_us"] > 0 for row in profile["launches"])
    for stage in GPU_STAGES:
        assert detail[stage]["status"] == DRY_RUN_SKIP


def check_no_machine_paths(out: Path) -> None:
    """Results name files relative to the repository or the results folder."""
    for path in [out / "results.json", *(out / "steps").glob("*.json")]:
        text = path.read_text()
        for absolute in (str(ROOT), str(out), sys.executable):
            assert absolute not in text, (path.name, absolute)


def test_dry_run_small_models(tmp_path: Path) -> None:
    steps = run_suite(tmp_path, "--tests", "mlp", "--matmul-shapes", "64x64x64:f16", "--models", "bert",
                      "--steps", "pytest,models,matmul", "--budget", "300", timeout=300)
    tests = steps["pytest"]["detail"]
    assert (tests["tests"], tests["skipped"], tests["failures"], tests["errors"]) == (2, 2, 0, 0)
    assert all(reason.startswith("dry-run: no GPU") for reason in tests["skip_reasons"])
    matmul = steps["matmul 64x64x64:f16"]["detail"]
    assert matmul["gpu"] == DRY_RUN_SKIP and matmul["template"] == "matmul_tc"
    assert matmul["compiled"] == matmul["candidates"] == len(matmul["estimates"]["rows"]) > 0
    columns = matmul["estimates"]["columns"]
    assert columns[:3] == ["index", "estimate_ms", "roofline_ms"] and "block_m" in columns
    assert all(row[2] > 0 for row in matmul["estimates"]["rows"])
    check_latency(steps["latency bert fp32"], small=True)
    assert "latency bert tf32" not in steps  # not asked for (the slow test runs it)
    markdown = (tmp_path / "results.md").read_text()
    for text in ("latency bert fp32", "Models, fp32: TF32 off on both sides",
                 "### bert fp32: emu host times", "64x64x64:f16", DRY_RUN_SKIP):
        assert text in markdown, text
    assert (tmp_path / "pytest.xml").exists() and (tmp_path / "logs" / "latency_bert_fp32.log").exists()
    check_no_machine_paths(tmp_path)


def test_dry_run_attention(tmp_path: Path) -> None:
    """The attention step's dry run: each length one launch fused (four unfused), at least
    10x fewer bytes at seq 2048, the emu check against float64, and its report rows."""
    steps = run_suite(tmp_path, "--steps", "attention", "--budget", "300", timeout=300)
    detail = steps["attention fp16"]["detail"]
    check = detail["emu_check"]
    assert check["agree"] and len(check["templates"]) == 1 and check["templates"][0].startswith("attention")
    assert set(detail["seqs"]) == {"128", "512", "2048"}
    for entry in detail["seqs"].values():
        assert entry["costs"]["fused"]["launches"] == 1 < entry["costs"]["unfused"]["launches"]
        assert "gpu" not in entry  # a dry run times nothing
    assert detail["seqs"]["2048"]["costs"]["bytes_ratio"] >= 10
    markdown = (tmp_path / "results.md").read_text()
    assert "## Attention" in markdown and "| attention fp16 | 2048 | 1 / 4 |" in markdown
    check_no_machine_paths(tmp_path)


@pytest.mark.slow
def test_full_dry_run(tmp_path: Path) -> None:
    models = ROOT / "build" / "models"
    names = ("bert_base", "gpt2_124m", "resnet50")
    exporter = os.environ.get("TMLIR_EXPORT_PYTHON", str(ROOT / ".venv-models" / "bin" / "python"))
    if not all((models / f"{n}.onnx").exists() for n in names) and not Path(exporter).exists():
        pytest.skip("no full-size models in build/models/ and no exporter (make full-models)")
    steps = run_suite(tmp_path, "--model-dir", str(models), "--export-python", exporter,
                      "--budget", "3600", timeout=3900)
    assert steps["pytest"]["detail"]["failures"] == 0 and steps["pytest"]["detail"]["skipped"] > 0
    for name in names:
        for precision in ("fp32", "fp16", "tf32"):
            check_latency(steps[f"latency {name} {precision}"], small=False)
        for precision in ("fp16", "tf32"):  # matmuls and convolutions on tensor cores
            templates = {row["template"] for row in steps[f"latency {name} {precision}"]["detail"]["cost"]["launches"]}
            assert {"matmul_tc", "conv2d_tc"} & templates, (name, precision)
    for name, step in steps.items():
        if name.startswith("matmul "):
            assert step["detail"]["compiled"] == step["detail"]["candidates"] > 0, name
    check_no_machine_paths(tmp_path)


def launch(kernel: str, grid: int, block: int, seconds: float, estimate: float | None) -> SimpleNamespace:
    return SimpleNamespace(kernel=kernel, template="matmul_simt", grid=grid, block=block, seconds=seconds,
                           bound="memory", flops=10, bytes=20, estimate_seconds=estimate, limit="latency",
                           registers=64, resident=2)


def test_launch_rows_pair_profile_and_cost_report_launch_by_launch() -> None:
    cost = SimpleNamespace(launches=[launch("a", 4, 128, 1e-6, 4e-6), launch("b", 2, 64, 2e-6, 3e-6)],
                           estimate_seconds=9e-6)
    times = [SimpleNamespace(kernel="a", grid=4, block=128, median_us=5.0, min_us=4.5),
             SimpleNamespace(kernel="b", grid=2, block=64, median_us=3.0, min_us=2.5)]
    rows = kernel_costs.launch_rows(cost, times)
    assert [(r["kernel"], r["measured_us"], r["estimate_us"]) for r in rows] == [("a", 5.0, 4.0), ("b", 3.0, 3.0)]
    summary = kernel_costs.summary(rows, cost, graph_ms=0.01)
    assert summary["measured_us"] == 8.0 and summary["estimate_us"] == 7.0
    assert summary["kernel_sum_error"] == pytest.approx(-1 / 8)
    assert summary["program_error"] == pytest.approx(9 / 10 - 1)
    with pytest.raises(ValueError, match="launch 1: the profile ran a"):
        kernel_costs.launch_rows(cost, [times[0], times[0]])
    with pytest.raises(ValueError, match="1 launches, the cost report 2"):
        kernel_costs.launch_rows(cost, times[:1])
    (row, _) = kernel_costs.launch_rows(cost)
    assert row["estimate_us"] == 4.0 and "measured_us" not in row


def test_matmul_candidates_get_the_cost_reports_figures() -> None:
    """Each candidate's launch goes through the cost report, in candidate order: its roofline
    and the latency model's estimate (never faster than the roofline)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        matmul = importlib.import_module("matmul")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    kernel = matmul.tunable((64, 64, 64), "f16")
    chunk = kernel.candidates()[:3]
    program, figures = matmul.lower_chunk(kernel, chunk, "H200")
    assert [k.signature.name for k in program.kernels] == [c.kernel_name for c in chunk]
    assert list(figures) == [c.index for c in chunk]
    assert all(0 < f["roofline"] <= f["estimate"] for f in figures.values())
    _, on_a100 = matmul.lower_chunk(kernel, chunk, "A100")
    assert all(on_a100[i]["roofline"] > figures[i]["roofline"] for i in figures)  # a slower part
    table = matmul.candidate_table(chunk, figures, {chunk[0].index: 1e-3, chunk[1].index: float("inf")})
    assert table["columns"][:4] == ["index", "ms", "estimate_ms", "roofline_ms"]
    assert [row[:2] for row in table["rows"]] == [[chunk[0].index, 1.0], [chunk[1].index, None],
                                                  [chunk[2].index, None]]
    assert all(row[2] > 0 for row in table["rows"])


def test_cost_gpu_names_the_latency_models_gpu() -> None:
    assert kernel_costs.cost_gpu("NVIDIA H100 80GB HBM3") == "H100"
    assert kernel_costs.cost_gpu("NVIDIA H200") == "H200"
    assert kernel_costs.cost_gpu("NVIDIA A100-SXM4-80GB") == "A100"
    assert kernel_costs.cost_gpu("NVIDIA GeForce RTX 3090") == kernel_costs.DEFAULT_GPU
    assert kernel_costs.cost_gpu(None) == kernel_costs.DEFAULT_GPU


def test_profile_record_of_a_session_pairs_launches_with_estimates() -> None:
    """A session's profile (emu: host times) beside its cost report on the H200, with
    ptxas' registers: one row per launch, every estimate at least the roofline."""
    import numpy as np
    from models import mlp

    import tmlir

    session = tmlir.InferenceSession(mlp(4, (32, 64, 8)), device="emu")
    times = session.profile({"x": np.ones((4, 32), np.float32)}, runs=1, warmup=0)
    record = kernel_costs.profile_record(session, "H200", times, graph_ms=0.01)
    assert record["registers"] == "ptxas" and len(record["launches"]) == len(session.program.launches)
    assert all(0 < r["roofline_us"] <= r["estimate_us"] and r["registers"] > 0 and r["limit"]
               for r in record["launches"])
    summary = record["summary"]
    assert summary["program_estimate_us"] == pytest.approx(summary["estimate_us"])
    assert summary["program_error"] == pytest.approx(summary["program_estimate_us"] / 10 - 1)


def test_results_record_paths_relative_to_the_repository(tmp_path: Path) -> None:
    assert repo_path(ROOT / "build" / "models" / "bert_base.onnx") == "build/models/bert_base.onnx"
    assert repo_path(tmp_path / "steps" / "x.json", tmp_path) == "$OUT/steps/x.json"
    assert repo_path("/opt/torch/.venv/bin/python3") == "python3"
    assert repo_path("relative/file.onnx") == "relative/file.onnx"


def test_torch_caches_are_measured_packed_and_restored(tmp_path: Path) -> None:
    torch_cache = suite_module("torch_cache")
    caches = tmp_path / "torch-cache"
    for part, size in (("inductor", 3000), ("triton", 5000)):
        (caches / part / "sub").mkdir(parents=True)
        (caches / part / "sub" / "entry.bin").write_bytes(bytes(range(256)) * (size // 256))
    archive = tmp_path / "out" / "torch-cache.tar.gz"
    archive.parent.mkdir()
    record = torch_cache.pack_cache(caches, archive, limit_mib=1)
    assert record["files"] == 2 and record["bytes"] == record["inductor"]["bytes"] + record["triton"]["bytes"]
    assert record["archive"] == archive.name and archive.stat().st_size == record["archive_bytes"]
    restored = tmp_path / "restored"
    assert torch_cache.unpack_cache(archive, restored) == {"archive": archive.name, "status": "ok",
                                                           "bytes": record["bytes"], "files": 2}
    assert (restored / "triton" / "sub" / "entry.bin").read_bytes() == (caches / "triton" / "sub" / "entry.bin"
                                                                         ).read_bytes()
    small = torch_cache.pack_cache(caches, archive, limit_mib=1e-6)
    assert small["archive"].startswith("not written:") and not archive.exists()
    assert torch_cache.pack_cache(tmp_path / "none", archive, 1)["archive"] == "not written: the caches are empty"
    assert torch_cache.unpack_cache(tmp_path / "missing.tar.gz", restored)["status"].startswith("not unpacked")


def gpu_latency(tmlir_ms: float, modes: dict[str, float], precision: str) -> dict[str, Any]:
    stage = {"status": "ok", "min_ms": 1.0, "p90_ms": 2.0, "runs": 30}
    detail = {"precision": precision,
              "tmlir": {**stage, "median_ms": tmlir_ms, "launches": 138, "compile_seconds": 30.5, "max_abs": 2e-6,
                        "max_rel": 3e-6, "agree": True,
                        "memory": {"peak_bytes": 3 * 2**20, "no_reuse_bytes": 9 * 2**20}},
              "torch_eager": {**stage, "median_ms": 4.5},
              "tmlir_tuned": {"status": "not run: --tune-seconds 0"}}
    for name, ms in modes.items():
        detail[name] = {**stage, "median_ms": ms, "compile_seconds": 12.0, "vs_reference": {"max_rel": 1e-6}}
    return detail


def test_report_renders_gpu_results(tmp_path: Path) -> None:
    """The tables of a GPU run (which only a GPU produces) render every number."""
    fp32 = gpu_latency(1.25, {"torch_compile": 2.75, "torch_reduce_overhead": 2.0, "torch_max_autotune": 1.6},
                       "fp32")
    fp32["tmlir_profile"] = {
        "status": "ok", "gpu": "H200", "device": "cuda", "runs": 20,
        "summary": {"launches": 3, "measured_us": 1100.0, "estimate_us": 990.0, "roofline_us": 300.0,
                    "program_estimate_us": 1020.0, "graph_us": 1250.0, "program_error": -0.184,
                    "kernel_sum_error": -0.1},
        "launches": [
            {"index": 0, "kernel": "matmul_3", "template": "matmul_simt", "grid": 96, "block": 128,
             "roofline_us": 140.0, "estimate_us": 440.0, "measured_us": 500.0, "min_us": 490.0},
            {"index": 1, "kernel": "matmul_3", "template": "matmul_simt", "grid": 96, "block": 128,
             "roofline_us": 140.0, "estimate_us": 440.0, "measured_us": 520.0, "min_us": 500.0},
            {"index": 2, "kernel": "softmax_1", "template": "reduce", "grid": 12, "block": 256,
             "roofline_us": 20.0, "estimate_us": 110.0, "measured_us": 80.0, "min_us": 75.0}],
        "kernel_params": {"matmul_3": {"block_m": 64, "block_n": 128, "block_k": 32, "stages": 3, "split_k": 4,
                                       "threads": 256}, "softmax_1": {"threads": 256}}}
    tf32 = gpu_latency(0.9, {"torch_compile": 1.5, "torch_reduce_overhead": {"status": "skipped: budget"},
                             "torch_max_autotune": 0.8}, "tf32")
    tf32["torch_reduce_overhead"] = {"status": "skipped: budget"}
    timings = {"columns": ["index", "ms", "estimate_ms", "roofline_ms", "block_m"],
               "rows": [[0, 9.5, 8.55, 2.0, 64], [1, 7.25, 7.0, 2.0, 128], [2, None, 6.0, 2.0, 32]]}
    result = {
        "dry_run": False, "date": "2026-01-01T00:00:00+00:00", "wall_seconds": 470.0, "budget_seconds": 480.0,
        "environment": {"device": "NVIDIA H100 80GB HBM3", "driver": "580.00", "driver_cuda": "13.0",
                        "capability": "sm_90", "versions": {"torch": "2.9.0"}},
        "torch_cache": {"folder": "torch-cache", "inductor": {"bytes": 30 * 2**20, "files": 900},
                        "triton": {"bytes": 50 * 2**20, "files": 400}, "bytes": 80 * 2**20, "files": 1300,
                        "archive_bytes": 12 * 2**20, "archive": "torch-cache.tar.gz"},
        "steps": [
            {"name": "latency bert_base fp32", "status": "ok", "seconds": 90.0, "log": "l", "detail": fp32},
            {"name": "latency bert_base tf32", "status": "ok", "seconds": 90.0, "log": "l", "detail": tf32},
            {"name": "latency resnet50 tf32", "status": "skipped: budget", "seconds": 0.0, "log": None,
             "detail": {}},
            {"name": "matmul 4096x4096x4096", "status": "ok", "seconds": 60.0, "log": "l", "detail": {
                "shape": "4096x4096x4096", "candidates": 184, "timed": 3, "default": {"index": 0, "ms": 9.5},
                "tuned": {"index": 1, "ms": 7.25}, "torch_ms": 3.5,
                "tflops": {"default": 14.5, "tuned": 18.9, "torch": 39.3},
                "ratio_default_over_torch": 2.71, "ratio_tuned_over_torch": 2.07, "timings": timings}},
        ],
    }
    write_markdown(tmp_path / "results.md", result)
    text = (tmp_path / "results.md").read_text()
    lines = text.splitlines()
    fp32_at, tf32_at = text.index("TF32 off on both sides"), text.index("TF32 on on both sides")
    row = next(line for line in lines if line.startswith("| bert_base | ok |") and text.index(line) > fp32_at)
    for cell in ("1.250", "4.500", "2.750", "2.000", "1.600", "0.78x (max-autotune)", "3e-06",
                 "30.5 / 12.0 / 12.0 / 12.0"):
        assert cell in row, (cell, row)
    row = next(line for line in lines if line.startswith("| bert_base | ok |") and text.index(line) > tf32_at)
    for cell in ("0.900", "skipped: budget", "0.800", "1.12x (max-autotune)"):
        assert cell in row, (cell, row)
    assert any(line.startswith("| resnet50 | skipped: budget |") for line in lines)
    row = next(line for line in lines if line.startswith("| matmul_3 |"))
    for cell in ("96 x 128", "| 2 |", "510", "440", "-14%", "140", "64x128x32, stages 3, split_k 4, threads 256"):
        assert cell in row, (cell, row)
    row = next(line for line in lines if line.startswith("| softmax_1 |"))
    assert "+38%" in row, row
    assert ("kernel times sum to 1100 µs; the graph replay takes 1250 µs; estimates sum to 990 µs (error -10%); "
            "the program is estimated at 1020 µs on H200 (error against the graph replay -18%)") in text
    row = next(line for line in lines if line.startswith("| 4096x4096x4096"))
    for cell in ("3 of 184", "9.500", "7.250", "3.500", "2.71", "2.07", "error on default -10%", "on tuned -3%",
                 "its pick ran 7.250 ms"):
        assert cell in row, (cell, row)
    assert "In all 80.0 MiB in 1300 files" in text and "Compressed 12.0 MiB: it fits in the 30 MiB" in text
    assert "NVIDIA H100 80GB HBM3" in text and "580.00 (CUDA 13.0)" in text


@pytest.mark.slow  # three torch.compile modes on the CPU, max-autotune's a minute
def test_model_latency_gpu_path_on_cpu(tmp_path: Path) -> None:
    """model_latency.py's GPU stages, run with torch on the CPU and tmlir on emu (--cpu),
    where torch and transformers are installed: the same model object, its logits against
    tmlir's and each torch.compile mode's, tmlir's per-kernel profile beside its cost
    report, every stage's numbers recorded."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = tmp_path / "gpt2.json"
    done = subprocess.run([sys.executable, str(SUITE / "model_latency.py"),
                           str(ROOT / "examples" / "models" / "gpt2.onnx"), "--name", "gpt2",
                           "--out", str(out), "--cpu", "--runs", "5", "--profile-runs", "2"],
                          capture_output=True, text=True, timeout=900, check=False,
                          env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")})
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    for stage in ("reference", "tmlir", "torch_eager", "torch_compile", "torch_reduce_overhead",
                  "torch_max_autotune", "tmlir_profile"):
        assert result[stage]["status"] == "ok", (stage, result[stage])
    assert result["tmlir"]["max_rel"] < 1e-4 and result["tmlir"]["agree"]
    for stage in ("torch_compile", "torch_reduce_overhead", "torch_max_autotune"):
        assert result[stage]["vs_reference"]["max_rel"] < 1e-4, stage
    assert result["tmlir"]["runs"] == 5 and result["tmlir"]["median_ms"] > 0
    profile = result["tmlir_profile"]
    assert len(profile["launches"]) == result["tmlir"]["launches"]
    assert all(row["measured_us"] > 0 and row["roofline_us"] > 0 for row in profile["launches"])
    assert result["tmlir_tuned"]["status"] == "not run: --tune-seconds 0"
