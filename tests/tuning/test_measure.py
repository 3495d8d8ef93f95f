"""GPU timing (skipped without a GPU): correct candidates timed, records written."""

from __future__ import annotations

import pytest
from tuning_models import conv_net

from tmlir.backends.cuda_runtime import CudaRuntimeError, cuda_available
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.tuning import TunableKernel, TuningRecords, TuningTarget, time_candidates, tune_model

HAVE_GPU = cuda_available()


def gpu_test(fn):
    """Mark `fn` as needing a CUDA GPU and skip it where there is none."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU")(fn))


@gpu_test
def test_time_candidates():
    kernel = TunableKernel("matmul_simt", MatmulProblem.plain(200, 136, 72))
    candidates = kernel.candidates()[:3]
    target = TuningTarget.current()
    times = time_candidates(kernel, candidates, target.arch, jobs=2, repeats=5)
    default = next(c for c in kernel.candidates() if c.default)
    assert set(times) == {default.index, *(c.index for c in candidates)}
    assert all(isinstance(t, float) and 0 < t < 1 for t in times.values())


@gpu_test
def test_time_tensor_core_candidates():
    """f16 and bf16 operands, checked at their precision: every candidate correct."""
    for element in ("f16", "bf16"):
        kernel = TunableKernel("matmul_tc", MatmulProblem.plain(128, 96, 64), element)
        candidates = kernel.candidates()[:3]
        times = time_candidates(kernel, candidates, TuningTarget.current().arch, jobs=2, repeats=5)
        assert all(isinstance(t, float) and 0 < t < 1 for t in times.values()), times


@gpu_test
def test_tune_model_writes_records_that_compiles_use(tmp_path):
    path = tmp_path / "records.jsonl"
    target = TuningTarget.current()
    report = tune_model(conv_net(), target, records=path, jobs=2, limit=3, repeats=5)
    records = TuningRecords(path).load()
    assert len(records) == len(report.kernels) == 3
    assert all(k.best is not None and k.best_seconds > 0 for k in report.kernels)
    assert {r.device for r in records.values()} == {target.device_name}


@pytest.mark.skipif(HAVE_GPU, reason="a CUDA GPU is present")
def test_no_gpu_no_target():
    with pytest.raises(CudaRuntimeError, match="^no CUDA device"):
        TuningTarget.current()
