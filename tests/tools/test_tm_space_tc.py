"""``tm-space matmul_tc``: the tensor-core template's candidates with ptxas statistics, and
one-line errors for problems it does not cover."""

from __future__ import annotations

import json

import pytest

from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.matmul_tc import MATMUL_TC_SPACE
from tmlir.tools.tm_space import main


def test_candidates_are_compiled_with_ptxas(capsys):
    assert main(["matmul_tc", "--m", "128", "--n", "128", "--k", "64", "--limit", "2", "--json",
                 "--arch", "sm_80"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    space = MATMUL_TC_SPACE.candidates(MatmulProblem((128, 64), (64, 128), (128, 128)))
    assert [r["index"] for r in rows][:2] == [0, 1] and [r["default"] for r in rows][-1]  # --limit keeps the default
    for row, params in zip(rows, [space[r["index"]] for r in rows]):
        assert row["template"] == "matmul_tc" and row["stages"] == params.stages
        assert row["spill_bytes"] == 0 and 0 < row["registers"] <= 255
        assert row["shared_bytes"] == params.shared_bytes()


def test_table_names_the_template_and_dtype(capsys):
    assert main(["matmul_tc", "--m", "128", "--n", "128", "--k", "64", "--limit", "1", "--dtype", "bf16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("matmul_tc space for 128 x 128 x 64 (bf16) on sm_90: 2 listed candidates, 0 spill")


def test_batched_transposed_b_problem_marks_the_default_and_pins(capsys):
    assert main(["matmul_tc", "--m", "64", "--n", "44", "--k", "64", "--batch", "2", "--trans-b",
                 "--limit", "1", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0]["index"] == 0 and sum(r["default"] for r in rows) == 1
    assert main(["matmul_tc", "--m", "64", "--n", "64", "--k", "64", "--pin", "0"]) == 0
    pin = capsys.readouterr().out.strip()
    assert pin.startswith("schedule = {block_m = 64, block_n = 64, block_k = 16, warps = array<i64: 2, 2>")
    assert "convert-graph-to-tm" not in pin  # the attribute only: no pass option for this template


@pytest.mark.parametrize(("args", "needle"), [
    (["--k", "60"], "needs K and N multiples of 8"),
    (["--k", "64", "--trans-a"], "not transposed"),
    (["--k", "64", "--pin", "99"], "--pin 99: the space has candidates 0 to"),
])
def test_errors_are_one_line(capsys, args, needle):
    assert main(["matmul_tc", "--m", "64", "--n", "64", *args]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tm-space: error: ") and needle in err
