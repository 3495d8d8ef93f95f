"""Parallel compilation on any executor, and the ptxas filter."""

from __future__ import annotations

import shutil
from concurrent.futures import ProcessPoolExecutor

import pytest

from tmlir.backends.ptx import KernelStats
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.tuning import TunableKernel, compile_candidates, filter_candidates
from tmlir.tuning.compile import rejections, verdict

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

KERNEL = TunableKernel("matmul_simt", MatmulProblem.plain(48, 40, 24))


def report(stats) -> dict:
    candidates = KERNEL.candidates()
    return {v.candidate.index: v.row() for v in filter_candidates(
        [c for c in candidates if c.index in stats], stats)}


@needs_nvcc
def test_process_pool_and_dask_give_the_same_report(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    default = next(c for c in KERNEL.candidates() if c.default)
    work = [(KERNEL, [*KERNEL.candidates()[:2], default])]

    monkeypatch.setenv("TMLIR_CACHE_DIR", str(tmp_path / "pool"))  # each compiles afresh
    with ProcessPoolExecutor(2) as pool:
        by_pool = compile_candidates(work, executor=pool, chunk=1)[KERNEL]

    monkeypatch.setenv("TMLIR_CACHE_DIR", str(tmp_path / "dask"))
    with (distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   dashboard_address=None) as cluster,
          distributed.Client(cluster) as client):
        by_dask = compile_candidates(work, executor=client.get_executor(), chunk=1)[KERNEL]

    assert set(by_pool) == {c.index for c in work[0][1]}
    assert report(by_pool) == report(by_dask)
    assert all(s.registers > 0 for s in by_pool.values())


def test_verdicts_say_why():
    candidates = KERNEL.candidates()
    c = next(c for c in candidates if c.params.threads == 256)
    ok = KernelStats(registers=64, spill_bytes=0, shared_bytes=8192, local_bytes=0)
    assert verdict(c, ok).rejected is None and verdict(c, ok).occupancy == 0.5
    assert verdict(c, KernelStats(64, 16, 8192, 16)).rejected == "spills registers"
    assert verdict(c, KernelStats(64, 0, 8192, 64)).rejected == "uses local memory"
    low = KernelStats(registers=255, spill_bytes=0, shared_bytes=8192, local_bytes=0)
    assert verdict(c, low).occupancy == 0.125
    assert verdict(c, low, min_occupancy=0.25).rejected == "occupancy < 0.25"
    assert verdict(c, "NVRTC failed ...").rejected == "compile error"
    verdicts = [verdict(c, s, 0.25) for s in (ok, low, low, "error")]
    assert rejections(verdicts) == {"occupancy < 0.25": 2, "compile error": 1}


def test_progress_in_a_log_is_periodic_lines(capsys, monkeypatch):
    from tmlir.tuning import compile as compile_module

    monkeypatch.setattr(compile_module.sys.stderr, "isatty", lambda: False, raising=False)
    bar = compile_module._progress(40, "compile", enabled=True)
    bar.every = 0.0  # a line per update
    bar.update(10)
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("tm-tune: compile: 0/40 candidates (0%)")
    assert lines[1].startswith("tm-tune: compile: 10/40 candidates (25%)")
    quiet = compile_module._progress(40, "compile", enabled=False)
    quiet.update(40)
    quiet.close()
    assert capsys.readouterr().err == ""
