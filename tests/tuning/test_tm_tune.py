"""The ``tm-tune`` CLI: a dry run's report, and one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tmlir.backends.cuda_runtime import cuda_available
from tmlir.tools.tm_tune import main

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def tm_tune(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tmlir.tools.tm_tune", *args],
                          capture_output=True, text=True, check=False)


@needs_nvcc
def test_dry_run_report(conv_net_path, tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main([str(conv_net_path), "--dry-run", "--limit", "1", "--jobs", "1", "--quiet",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert (report["unique_kernels"], report["occurrences"]) == (3, 4)
    assert [k["occurrences"] for k in report["kernels"]] == [1, 2, 1]
    assert report["candidates"] == sum(k["candidates"] for k in report["kernels"]) <= 6
    assert report["kept"] + sum(report["rejected"].values()) == report["candidates"]
    assert report["dry_run"] and report["records"] is None
    printed = capsys.readouterr().out
    assert "3 unique kernels for 4 ops" in printed and "candidates/s" in printed


@pytest.mark.parametrize(("args", "needle"), [
    (["missing.onnx", "--dry-run"], "no such model file: missing.onnx"),
    (["{model}", "--dry-run", "--min-occupancy", "2"], "expected a number in [0, 1], got 2.0"),
    (["{model}", "--dry-run", "--arch", "sm_1"], "invalid choice: 'sm_1'"),
    (["{model}", "--dry-run", "--precision", "fp8"], "invalid choice: 'fp8'"),
    (["{model}", "--dry-run", "--input-shape", "x"], "expected NAME=D1,D2,..."),
    (["{model}", "--dry-run", "--json", "/no/such/dir/r.json"], "--json /no/such/dir/r.json"),
    (["{bad}", "--dry-run"], "tm-tune: error: "),
])
def test_bad_inputs_are_one_line_with_status_2(args, needle, conv_net_path, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    args = [a.format(model=conv_net_path, bad=bad) for a in args]
    result = tm_tune(*args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("tm-tune: error: ") and needle in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.skipif(cuda_available(), reason="a CUDA GPU is present")
def test_tuning_without_a_gpu_says_so(conv_net_path):
    result = tm_tune(str(conv_net_path))
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "found none" in result.stderr and "--dry-run" in result.stderr
