"""`tune_model`: tune every tunable kernel of a model, or (dry run) compile and filter.

1. `model_kernels`: the model's tunable kernels, one per signature, with occurrences.
2. `compile_candidates`: every candidate compiled for the target arch, in chunks, on the
   executor; `filter_candidates` keeps those that neither spill nor use local memory and
   reach the minimum occupancy.
3. (not a dry run) `time_candidates` on the GPU: outputs checked against the default
   candidate's, the correct ones timed; the fastest becomes the kernel's tuning record,
   written as soon as the kernel is done (`TuningRecords.add`).

The `TuningReport` says, per kernel and in total, how many candidates there were, how
many were kept and why the others were rejected, and how long it took.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

from tmlir.schedules.model_choice import gpu_for
from tmlir.tuning.compile import MIN_OCCUPANCY, compile_candidates, filter_candidates, rejections
from tmlir.tuning.model import model_kernels
from tmlir.tuning.occupancy import SM90, SmLimits
from tmlir.tuning.records import TuningRecord, TuningRecords, TuningTarget
from tmlir.tuning.space import Candidate, TunableKernel


@dataclass
class KernelReport:
    """What tuning found for one kernel signature. `kept` candidates passed every check
    (the ptxas filter; on a GPU, the output check too); `rejected` counts the others by
    reason."""

    signature: str
    template: str
    occurrences: int
    candidates: int
    kept: int
    rejected: dict[str, int]
    default: dict[str, Any]
    timed: int = 0
    best: dict[str, Any] | None = None
    best_seconds: float | None = None
    default_seconds: float | None = None


@dataclass
class TuningReport:
    """The report of `tune_model` (``tm-tune --json`` writes `to_json()`)."""

    model: str
    arch: str
    device: str | None
    dry_run: bool
    min_occupancy: float
    kernels: list[KernelReport] = field(default_factory=list)
    compile_seconds: float = 0.0
    wall_seconds: float = 0.0
    records: str | None = None

    @property
    def candidates(self) -> int:
        return sum(k.candidates for k in self.kernels)

    @property
    def kept(self) -> int:
        return sum(k.kept for k in self.kernels)

    @property
    def rejected(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for k in self.kernels:
            total.update(k.rejected)
        return dict(sorted(total.items()))

    @property
    def compiled_per_second(self) -> float:
        return self.candidates / self.compile_seconds if self.compile_seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "arch": self.arch, "device": self.device,
            "dry_run": self.dry_run, "min_occupancy": self.min_occupancy,
            "unique_kernels": len(self.kernels),
            "occurrences": sum(k.occurrences for k in self.kernels),
            "candidates": self.candidates, "kept": self.kept, "rejected": self.rejected,
            "compile_seconds": round(self.compile_seconds, 2),
            "wall_seconds": round(self.wall_seconds, 2),
            "candidates_per_second": round(self.compiled_per_second, 2),
            "records": self.records,
            "kernels": [vars(k) for k in self.kernels],
        }


def tune_model(model: Any, target: TuningTarget, *, dry_run: bool = False,
               records: str | os.PathLike | None = None, executor: Executor | None = None,
               jobs: int | None = None, min_occupancy: float = MIN_OCCUPANCY,
               input_shapes: Mapping[str, Sequence[int]] | None = None, fusion: bool = True,
               warmup: int = 3, repeats: int = 20, limit: int | None = None,
               limits: SmLimits = SM90, progress: bool = False, precision: str = "fp32"
               ) -> TuningReport:
    """Tune the tunable kernels of ONNX `model` for `target`, or (a dry run) compile and
    filter their spaces only, no GPU needed. Records go to `records` (default: the
    standard file). Each space is taken in the latency model's order for the target's
    GPU (`TunableKernel.ranked_candidates`), and `limit` keeps only the model's `limit`
    best candidates of each space (and the default); `limits` are the SM's resources the
    occupancy is computed for;
    `precision` is the compile's (``lower-to-cuda{precision=...}``: ``fp16``/``bf16``
    tunes the tensor-core kernels a float32 model's matmuls then get).

    A dry run compiles every kernel's space at once (the most parallel). A tuning run
    takes the kernels one by one, the most work first (occurrences times GEMM size):
    compile, filter, time, record -- so a run stopped early keeps the records of the
    kernels it finished. Without an `executor`, the chunks go to a pool of `jobs`
    processes (spawned, not forked, when this process holds a CUDA context).
    """
    start = time.perf_counter()
    kernels = model_kernels(model, input_shapes, fusion, target.arch, precision)
    on = gpu_for(target.arch, target.device_name)
    spaces = {k.kernel: [c for rank, c in enumerate(k.kernel.ranked_candidates(on))
                         if limit is None or rank < limit or c.default] for k in kernels}
    report = TuningReport(str(model) if isinstance(model, str | os.PathLike) else "<model>",
                          target.arch, None if dry_run else target.device_name, dry_run,
                          min_occupancy)
    lines = {k.kernel: _kernel_report(k.occurrences, k.kernel, spaces[k.kernel])
             for k in kernels}
    report.kernels = list(lines.values())
    if dry_run:
        compile_start = time.perf_counter()
        stats = compile_candidates(list(spaces.items()), target.arch, executor, jobs,
                                   progress=progress)
        report.compile_seconds = time.perf_counter() - compile_start
        for kernel, line in lines.items():
            _filter(line, spaces[kernel], stats[kernel], min_occupancy, limits)
    else:
        store = TuningRecords(records)
        report.records = str(store.path)
        pool = None
        if executor is None:
            pool = executor = ProcessPoolExecutor(jobs, mp_context=get_context("spawn"))
        try:
            order = sorted(kernels, key=lambda k: -k.occurrences * _size(k.kernel))
            for entry in order:
                kernel = entry.kernel
                compile_start = time.perf_counter()
                stats = compile_candidates([(kernel, spaces[kernel])], target.arch, executor,
                                           progress=progress)[kernel]
                report.compile_seconds += time.perf_counter() - compile_start
                kept = _filter(lines[kernel], spaces[kernel], stats, min_occupancy, limits)
                if kept:
                    _time(lines[kernel], kernel, spaces[kernel], kept, target, store, executor,
                          warmup, repeats, progress)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
    report.wall_seconds = time.perf_counter() - start
    return report


def _size(kernel: TunableKernel) -> int:
    g = kernel.gemm
    return g.batch * g.m * g.n * g.k


def _kernel_report(occurrences: int, kernel: TunableKernel, candidates: list[Candidate]
                   ) -> KernelReport:
    default = next(c for c in candidates if c.default)
    return KernelReport(kernel.signature, kernel.template, occurrences, len(candidates), 0, {},
                        {"index": default.index, **default.params.describe()})


def _filter(line: KernelReport, candidates: list[Candidate], stats: dict, min_occupancy: float,
            limits: SmLimits) -> list[Candidate]:
    """Fill in the kept and rejected counts; return the kept candidates."""
    verdicts = filter_candidates(candidates, stats, min_occupancy, limits)
    kept = [v.candidate for v in verdicts if v.rejected is None]
    line.kept, line.rejected = len(kept), dict(rejections(verdicts))
    return kept


def _time(line: KernelReport, kernel: TunableKernel, candidates: list[Candidate],
          kept: list[Candidate], target: TuningTarget, store: TuningRecords,
          executor: Executor, warmup: int, repeats: int, progress: bool) -> None:
    """Time the kept candidates; record the fastest."""
    from tmlir.tuning.measure import time_candidates

    times = time_candidates(kernel, kept, target.arch, executor, None, warmup, repeats,
                            progress=progress)
    kept_indices = {c.index for c in kept}
    timed = {i: t for i, t in times.items() if i in kept_indices and isinstance(t, float)}
    wrong = Counter(t for i, t in times.items() if i in kept_indices and isinstance(t, str))
    line.rejected.update(wrong)
    line.kept = line.timed = len(timed)
    default = next(c for c in candidates if c.default)
    if isinstance(times.get(default.index), float):
        line.default_seconds = times[default.index]
    if not timed:
        return
    best = next(c for c in candidates if c.index == min(timed, key=timed.__getitem__))
    line.best, line.best_seconds = {"index": best.index, **best.params.describe()}, timed[best.index]
    store.add([TuningRecord.of(kernel.signature, kernel.template, target, best.params,
                               timed[best.index], len(candidates), len(timed))])
