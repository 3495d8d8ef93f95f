"""The ``tm-space`` CLI: one JSON object per candidate with ptxas statistics, one default,
a readable table, and one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tmlir.schedules.matmul_simt import MatmulProblem, matmul_simt_space
from tmlir.schedules.model_choice import default_of
from tmlir.tools.tm_space import main

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def tm_space(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tmlir.tools.tm_space", *args],
                          capture_output=True, text=True)


@needs_nvcc
def test_json_lines(capsys):
    assert main(["matmul", "--m", "100", "--n", "64", "--k", "30", "--batch", "3",
                 "--trans-b", "--limit", "3", "--json", "--jobs", "1"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    problem = MatmulProblem((3, 100, 30), (3, 64, 30), (3, 100, 64), transpose_rhs=True)
    default = default_of("matmul_simt", problem, "f32", "sm_90")  # the latency model's choice
    candidates = matmul_simt_space("sm_90").candidates(problem)
    expected = {0, 1, 2, candidates.index(default)}
    assert {r["index"] for r in rows} == expected
    assert [r["default"] for r in rows].count(True) == 1
    for r in rows:
        params = candidates[r["index"]]
        assert r["block_m"] == params.block_m and r["threads"] == params.threads
        assert r["default"] == (params == default)
        assert 0 < r["registers"] <= 255 and r["spill_bytes"] == 0
        assert r["shared_bytes"] == params.shared_bytes(problem)


@needs_nvcc
def test_table(capsys):
    assert main(["matmul", "--m", "64", "--n", "64", "--k", "64", "--limit", "2", "--jobs", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("matmul_simt space for 64 x 64 x 64 on sm_90:")
    assert out[1].split() == ["index", "block_m", "block_n", "block_k", "stages", "split_k", "threads", "block_warps",
                              "warp_outer", "lanes", "thread_inner", "registers", "spill_bytes",
                              "shared_bytes", "default"]
    assert sum(line.rstrip().endswith("*") for line in out[2:]) == 1


@pytest.mark.parametrize(("args", "needle"), [
    (["matmul", "--m", "0", "--n", "1", "--k", "1"], "argument --m: expected a positive integer"),
    (["matmul", "--m", "x", "--n", "1", "--k", "1"], "expected a positive integer, got 'x'"),
    (["conv", "--m", "1", "--n", "1", "--k", "1"], "invalid choice: 'conv'"),
    (["matmul", "--m", "1", "--n", "1"], "the following arguments are required: --k"),
    (["matmul", "--m", "1", "--n", "1", "--k", "1", "--arch", "sm_1"], "invalid choice: 'sm_1'"),
])
def test_errors_are_one_line(args, needle):
    result = tm_space(*args)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("tm-space: error: ") and needle in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1


@needs_nvcc
def test_gemv_space(capsys):
    """The small-M template: its own columns (layout, k-slices, serial k-steps), one default."""
    assert main(["gemv", "--m", "1", "--n", "256", "--k", "512", "--trans-b", "--limit", "2", "--jobs", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("matmul_gemv space for 1 x 256 x 512 on sm_90:")
    assert out[1].split() == ["index", "layout", "warps", "vector", "unroll", "block_n", "block_k", "k_slices",
                              "k_steps", "threads", "registers", "spill_bytes", "shared_bytes", "default"]
    rows = [line.split() for line in out[2:]]
    assert {r[1] for r in rows} == {"nk"} and sum(r[-1] == "*" for r in rows) == 1


def test_gemv_pin_and_refusal():
    pinned = tm_space("gemv", "--m", "2", "--n", "64", "--k", "64", "--pin", "0")
    assert pinned.returncode == 0, pinned.stderr
    attr, option = pinned.stdout.splitlines()
    assert attr.startswith("schedule = {warps = ") and "block_n = " in attr
    assert option.startswith("-p 'convert-graph-to-tm{gemv=\"warps=")
    refused = tm_space("gemv", "--m", "17", "--n", "64", "--k", "64")
    assert refused.returncode == 1
    assert refused.stderr == "tm-space: error: gemv takes at most 16 rows of an unbatched B (use the matmul template)\n"
