"""Compile candidates in parallel and filter them on their ``ptxas`` statistics.

Candidates are compiled in chunks: a chunk is one CUDA C program with a kernel per
candidate (`candidate_program`), one NVRTC translation unit whose ptxas report
(``--ptxas-options=-v``) gives every kernel's registers, spills, stack frame and shared
memory. Without NVRTC, ``nvcc -cubin -Xptxas -v`` gives the same report. Reports are
cached on disk under a key of the source (``tmlir.backends.cache``), so compiling the
same candidates again is a file read.

The statistics of a chunk are also cached under a key of what determines them without
building it -- the kernel's signature, the chunk's parameters, the arch, the compiler and
a fingerprint of tmlir's own source files (`code_fingerprint`: any change to a template,
a pass or the emitter gives new keys) -- so a second run of the same space skips the
Python side too.

Chunks go to any ``concurrent.futures.Executor``: a ``ProcessPoolExecutor`` by default,
or a cluster's, such as a Dask client's ``get_executor()``. What is submitted is the
top-level `compile_chunk` and plain, picklable data (the tunable kernel, its
candidates, the arch), and it returns plain data, so a worker needs only tmlir installed.

`filter_candidates` then keeps the candidates that neither spill nor use local memory
and reach a minimum occupancy (`tmlir.tuning.occupancy`), and says why each other one was
rejected; only the kept ones are worth timing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tmlir.backends.cache import cache_key, cached_file
from tmlir.backends.ptx import (
    CudaCompileError,
    KernelStats,
    check_arch,
    kernel_stats,
    nvrtc_version,
    with_dynamic_shared,
)
from tmlir.tuning.occupancy import SM90, SmLimits, occupancy
from tmlir.tuning.programs import candidate_program
from tmlir.tuning.space import Candidate, TunableKernel

#: Candidates per translation unit: enough to share the compiler's start-up, few enough
#: that every worker gets chunks (xDSL's passes slow down a little on larger modules).
CHUNK = 4
#: The default minimum occupancy: 8 of 64 warps, two per warp scheduler.
MIN_OCCUPANCY = 0.125


@dataclass(frozen=True)
class ChunkResult:
    """What a worker returns for a chunk: stats by candidate index, or the compile error
    (its first line) that failed the whole chunk."""

    kernel: TunableKernel
    stats: dict[int, KernelStats]
    error: str | None = None
    indices: tuple[int, ...] = ()


@functools.cache
def code_fingerprint() -> str:
    """A digest of tmlir's source files (Python and the emu header)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.h")]):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _compiler_id() -> str:
    version = nvrtc_version()
    return "nvcc" if version is None else f"nvrtc-{version[0]}.{version[1]}"


def compile_chunk(kernel: TunableKernel, chunk: Sequence[Candidate], arch: str,
                  fingerprint: str | None = None) -> ChunkResult:
    """Build and compile one chunk of candidates of `kernel` (runs on a worker); cached
    under `fingerprint` (default: `code_fingerprint()`; the submitter passes its own, so
    that every worker of a run uses the same keys)."""
    indices = tuple(c.index for c in chunk)
    key = cache_key("tuning-chunk", fingerprint or code_fingerprint(), _compiler_id(), arch,
                    kernel.signature, repr([(c.kernel_name, c.params) for c in chunk]))

    def build(path: Path) -> None:
        program = candidate_program(kernel, chunk)
        dynamic = {k.signature.name: k.dynamic_shared_bytes for k in program.kernels}
        stats = with_dynamic_shared(kernel_stats(program.source, arch), dynamic)
        path.write_text(json.dumps({c.kernel_name: vars(stats[c.kernel_name]) for c in chunk}))

    try:
        cached = json.loads(cached_file(key, ".stats.json", build).read_text())
    except CudaCompileError as exc:
        return ChunkResult(kernel, {}, exc.summary, indices)
    return ChunkResult(kernel, {c.index: KernelStats(**cached[c.kernel_name]) for c in chunk},
                       None, indices)


def chunks(candidates: Sequence[Candidate], size: int) -> list[tuple[Candidate, ...]]:
    return [tuple(candidates[i:i + size]) for i in range(0, len(candidates), size)]


def compile_candidates(work: Sequence[tuple[TunableKernel, Sequence[Candidate]]],
                       arch: str = "sm_90", executor: Executor | None = None,
                       jobs: int | None = None, chunk: int = CHUNK, progress: bool = False,
                       ) -> dict[TunableKernel, dict[int, KernelStats | str]]:
    """Compile the candidates of every kernel in `work` for `arch`; for each kernel, each
    candidate's ptxas statistics, or its chunk's compile error (a string).

    Chunks run on `executor`; without one, on a ``ProcessPoolExecutor`` of `jobs`
    processes (default: the CPU count; 1 compiles in this process). `progress` shows a
    tqdm bar of candidates compiled.
    """
    check_arch(arch)
    tasks = [(kernel, part) for kernel, cands in work for part in chunks(cands, chunk)]
    results: dict[TunableKernel, dict[int, KernelStats | str]] = {k: {} for k, _ in work}
    total = sum(len(part) for _, part in tasks)
    bar = _progress(total, "compile", progress)

    def collect(result: ChunkResult) -> None:
        if result.error is not None:
            results[result.kernel].update(dict.fromkeys(result.indices, result.error))
        else:
            results[result.kernel].update(result.stats)
        bar.update(len(result.indices))

    jobs = jobs or os.cpu_count() or 1
    fingerprint = code_fingerprint()
    try:
        if executor is None and (jobs == 1 or len(tasks) <= 1):
            for kernel, part in tasks:
                collect(compile_chunk(kernel, part, arch, fingerprint))
        elif executor is None:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                _run(pool, tasks, arch, fingerprint, collect)
        else:
            _run(executor, tasks, arch, fingerprint, collect)
    finally:
        bar.close()
    return results


def _run(executor: Executor, tasks: Sequence[tuple[TunableKernel, tuple[Candidate, ...]]],
         arch: str, fingerprint: str, collect) -> None:
    futures: list[Future] = [executor.submit(compile_chunk, kernel, part, arch, fingerprint)
                             for kernel, part in tasks]
    try:
        for future in as_completed(futures):
            collect(future.result())
    except BaseException:
        for future in futures:
            future.cancel()
        raise


class _LogProgress:
    """Progress for a log (stderr is not a terminal): a line now and one every `every`
    seconds, ``tm-tune: compile: 120/3848 candidates (3%), 45 s``."""

    def __init__(self, total: int, what: str, every: float = 30.0) -> None:
        self.total, self.what, self.every, self.done = total, what, every, 0
        self.start = self.last = time.monotonic()
        self._line()

    def _line(self) -> None:
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        print(f"tm-tune: {self.what}: {self.done}/{self.total} candidates{share}, "
              f"{time.monotonic() - self.start:.0f} s", file=sys.stderr, flush=True)

    def update(self, n: int = 1) -> None:
        self.done += n
        if time.monotonic() - self.last >= self.every:
            self.last = time.monotonic()
            self._line()

    def close(self) -> None:
        pass


def _progress(total: int, what: str, enabled: bool):
    """A tqdm bar on a terminal, periodic lines in a log, nothing when not `enabled`."""
    from tqdm import tqdm

    if enabled and not sys.stderr.isatty():
        return _LogProgress(total, what)
    return tqdm(total=total, desc=what, unit="cand", disable=not enabled, leave=False,
                dynamic_ncols=True)


# ----------------------------------------------------------------------------- the filter


@dataclass(frozen=True)
class Verdict:
    """A compiled candidate: its statistics and occupancy, and why it was rejected (None:
    kept)."""

    candidate: Candidate
    stats: KernelStats | None
    occupancy: float
    rejected: str | None

    def row(self) -> dict:
        """Plain data for reports."""
        stats = vars(self.stats) if self.stats is not None else {}
        return {"index": self.candidate.index, **self.candidate.params.describe(),
                "default": self.candidate.default, **stats,
                "occupancy": round(self.occupancy, 4), "rejected": self.rejected}


def verdict(candidate: Candidate, stats: KernelStats | str,
            min_occupancy: float = MIN_OCCUPANCY, limits: SmLimits = SM90) -> Verdict:
    """Whether `candidate` is worth timing, on its ptxas statistics (or compile error)."""
    if isinstance(stats, str):
        return Verdict(candidate, None, 0.0, "compile error")
    occ = occupancy(stats.registers, stats.shared_bytes, candidate.params.threads, limits)
    if stats.spill_bytes:
        reason = "spills registers"
    elif stats.local_bytes:
        reason = "uses local memory"
    elif occ < min_occupancy:
        reason = f"occupancy < {min_occupancy:g}"
    else:
        reason = None
    return Verdict(candidate, stats, occ, reason)


def filter_candidates(candidates: Iterable[Candidate], stats: dict[int, KernelStats | str],
                      min_occupancy: float = MIN_OCCUPANCY, limits: SmLimits = SM90
                      ) -> list[Verdict]:
    """The verdict on each candidate (in order)."""
    return [verdict(c, stats[c.index], min_occupancy, limits) for c in candidates]


def rejections(verdicts: Iterable[Verdict]) -> Counter[str]:
    """How many candidates each reason rejected."""
    return Counter(v.rejected for v in verdicts if v.rejected is not None)


def ptxas_report(problem, candidates: Sequence[Candidate], arch: str = "sm_90",
                 jobs: int | None = None) -> dict[int, KernelStats]:
    """``ptxas -v`` statistics of each candidate (by index) of a matmul `problem` (or of
    any `TunableKernel`), compiled for `arch` over `jobs` processes (default: the CPU
    count). CudaCompileError if a candidate does not compile."""
    kernel = problem if isinstance(problem, TunableKernel) else TunableKernel("matmul_simt", problem)
    jobs = jobs or os.cpu_count() or 1
    size = max(1, min(CHUNK, math.ceil(len(candidates) / jobs)))
    stats = compile_candidates([(kernel, candidates)], arch, jobs=jobs, chunk=size)[kernel]
    if errors := [s for s in stats.values() if isinstance(s, str)]:
        raise CudaCompileError(errors[0])
    return stats  # type: ignore[return-value]
