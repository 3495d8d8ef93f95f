"""Tuning: the hardware-centric space of every tunable kernel of a model, compiled,
filtered on ptxas statistics, timed on a GPU, and the winners kept as tuning records.

=====================  ==================================================================
module                 concern
=====================  ==================================================================
``space.py``           tunable kernels, their signature and candidates (`TunableKernel`)
``programs.py``        candidates as one CUDA C program, lowered by the compiler's pipeline
``model.py``           the tunable kernels of an ONNX model, deduplicated by signature
``compile.py``         parallel compilation (any ``concurrent.futures`` executor), ptxas
                       statistics, the filter (spills, local memory, occupancy)
``occupancy.py``       resident warps per SM from registers, shared memory and threads
``measure.py``         GPU timing with CUDA events, outputs checked against the default
``records.py``         the tuning records (JSON lines) and their lookup by compiles
``tuner.py``           `tune_model`: all of it for one model, and its report
=====================  ==================================================================

``tm-tune`` (``tmlir/tools/tm_tune.py``) is the command line; ``docs/tuning.md`` the guide.
Names are imported lazily, so ``import tmlir.tuning.records`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Candidate": "space", "TunableKernel": "space", "matmul_candidates": "space",
    "matmul_program": "programs", "candidate_program": "programs",
    "compile_candidates": "compile", "filter_candidates": "compile", "kernel_stats": "compile",
    "ptxas_report": "compile", "Verdict": "compile",
    "occupancy": "occupancy", "SmLimits": "occupancy",
    "tune": "measure", "time_candidates": "measure",
    "TuningRecord": "records", "TuningRecords": "records", "TuningTarget": "records",
    "recorded_params": "records", "default_records_path": "records",
    "ModelKernel": "model", "model_kernels": "model",
    "tune_model": "tuner", "TuningReport": "tuner",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"tmlir.tuning.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'tmlir.tuning' has no attribute {name!r}")


__all__ = list(_EXPORTS)
