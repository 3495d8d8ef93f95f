"""Timing candidates on the GPU: CUDA events after a warm-up, outputs checked first.

`time_candidates` compiles the candidates of one tunable kernel to PTX (in chunks, on an
executor, as ``compile.py`` does), loads them (``tmlir.backends.cuda_runtime``) and runs
each on the same random inputs (of the kernel's argument types: f16 or bf16 operands for
a tensor-core matmul). The default candidate runs first: its output is the reference.
Every other candidate's output buffer is filled with NaN, the candidate runs once, and
its output must match the reference (max abs difference within `rtol` of the reference's
max abs value; by default the kernel's, `TunableKernel.rtol`: 1e-4 for f32 operands,
about the operands' precision for f16 and bf16) -- a wrong candidate is rejected and
never timed. A correct one runs `warmup` times, then `repeats` samples are timed between
two CUDA events on the default stream (each sample as many launches back to back as fill
``BATCH_SECONDS``, so that a short kernel's time is not the host's launch gap); its time
is the median sample over its launches. A candidate with scratch arguments (split-K's
workspace and counters, `TunableKernel.scratch`) gets buffers of its own, counters zeroed
once. `tune` picks the fastest of any timings.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor

import numpy as np

from tmlir.backends.kernel_abi import KernelSignature
from tmlir.tuning.compile import CHUNK, chunks
from tmlir.tuning.programs import candidate_program
from tmlir.tuning.space import RTOLS, Candidate, TunableKernel

#: Relative error (against the reference's largest magnitude) a correct f32 candidate
#: stays in (half-precision kernels: `TunableKernel.rtol`).
RTOL = RTOLS["f32"]
#: A timed sample is this long at least (as many launches as fit, up to 100).
BATCH_SECONDS = 2e-4


def compile_chunk_ptx(kernel: TunableKernel, chunk: Sequence[Candidate], arch: str
                      ) -> tuple[str, list[KernelSignature], dict[str, int]]:
    """PTX, kernel signatures and dynamic shared bytes by kernel name of one chunk of
    candidates (runs on a worker)."""
    from tmlir.backends.ptx import compile_ptx

    program = candidate_program(kernel, chunk)
    return (compile_ptx(program.source, arch), [k.signature for k in program.kernels],
            {k.signature.name: k.dynamic_shared_bytes for k in program.kernels})


def candidate_inputs(kernel: TunableKernel, seed: int = 0
                     ) -> list[np.ndarray | tuple[tuple[int, ...], np.dtype]]:
    """Random standard-normal inputs of `kernel`'s argument types and shapes (f16 or bf16
    operands of a tensor-core matmul are rounded from the same f32 draws), then the
    output's (shape, dtype)."""
    rng = np.random.default_rng(seed)
    *shapes, out_shape = kernel.arg_shapes
    *types, out_dtype = kernel.arg_dtypes
    return [*(rng.standard_normal(s).astype(np.float32).astype(t) for s, t in zip(shapes, types)),
            (out_shape, out_dtype)]


class _Events:
    """Two CUDA events on the default stream, timing what is launched between them."""

    def __init__(self) -> None:
        from cuda.bindings import driver

        from tmlir.backends.cuda_runtime import _call, _context

        _context()
        flags = driver.CUevent_flags.CU_EVENT_DEFAULT.value
        self.start = _call(driver.cuEventCreate, flags)
        self.end = _call(driver.cuEventCreate, flags)

    def seconds(self, run: Callable[[], None]) -> float:
        from cuda.bindings import driver

        from tmlir.backends.cuda_runtime import _call

        _call(driver.cuEventRecord, self.start, 0)
        run()
        _call(driver.cuEventRecord, self.end, 0)
        _call(driver.cuEventSynchronize, self.end)
        return _call(driver.cuEventElapsedTime, self.start, self.end) / 1e3

    def destroy(self) -> None:
        from cuda.bindings import driver

        from tmlir.backends.cuda_runtime import _call

        _call(driver.cuEventDestroy, self.start)
        _call(driver.cuEventDestroy, self.end)


def time_candidates(kernel: TunableKernel, candidates: Sequence[Candidate], arch: str,
                    executor: Executor | None = None, jobs: int | None = None,
                    warmup: int = 3, repeats: int = 20, rtol: float | None = None,
                    progress: bool = False) -> dict[int, float | str]:
    """Seconds per run (median of `repeats`) of each candidate by index, or why it was
    not timed ("wrong result"); the default candidate is compiled and run as the
    reference whether or not it is among `candidates`."""
    from tmlir.backends.cuda_runtime import CudaModule, DeviceBuffer
    from tmlir.tuning.compile import _progress

    default = next(c for c in kernel.candidates() if c.default)
    todo = [default, *(c for c in candidates if c.index != default.index)]
    parts = chunks(todo, CHUNK)
    if executor is None:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            compiled = list(pool.map(compile_chunk_ptx, [kernel] * len(parts), parts,
                                     [arch] * len(parts)))
    else:
        compiled = list(executor.map(compile_chunk_ptx, [kernel] * len(parts), parts,
                                     [arch] * len(parts)))
    modules = [CudaModule(ptx, sigs) for ptx, sigs, _ in compiled]
    module_of = {c.index: m for part, m in zip(parts, modules) for c in part}
    shared_bytes = {name: size for _, _, sizes in compiled for name, size in sizes.items()}

    rtol = kernel.rtol if rtol is None else rtol
    *arrays, (out_shape, out_dtype) = candidate_inputs(kernel)
    inputs = [DeviceBuffer.from_array(a) for a in arrays]
    out = DeviceBuffer.empty(out_shape, out_dtype)
    nan = np.full(out_shape, np.nan, out_dtype)
    events = _Events()
    bar = _progress(len(todo), "time", progress)

    scratch: list[DeviceBuffer] = []

    def launcher(c: Candidate) -> Callable[[], None]:
        blocks, threads = kernel.launch_shape(c.params)
        module = module_of[c.index]
        extra = []  # split-K's workspace and counters (zero once: each launch leaves them zero)
        for _, shape, dtype in kernel.scratch(c.params):
            buffer = DeviceBuffer(shape, dtype)
            buffer.fill_zero()
            extra.append(buffer)
        scratch.extend(extra)
        return lambda: module.launch(c.kernel_name, blocks, threads, [*inputs, out, *extra],
                                     shared_bytes[c.kernel_name])

    def output(c: Candidate) -> np.ndarray:
        out.copy_from(nan)
        launcher(c)()
        return out.to_host()  # waits for the launch

    results: dict[int, float | str] = {}
    try:
        reference = output(default)
        scale = float(np.abs(reference).max()) or 1.0
        for c in todo:
            got = reference if c is default else output(c)
            error = float(np.abs(got - reference).max())  # NaN where an element is unwritten
            if not error <= rtol * scale:
                results[c.index] = "wrong result"
            else:
                run = launcher(c)
                for _ in range(warmup):
                    run()
                # Launches back to back, enough to fill ~0.2 ms, so that short kernels are
                # not timed with the host's launch gaps.
                batch = max(1, min(100, int(BATCH_SECONDS / max(events.seconds(run), 1e-7))))

                def runs(run: Callable[[], None] = run, batch: int = batch) -> None:
                    for _ in range(batch):
                        run()

                results[c.index] = statistics.median(
                    events.seconds(runs) / batch for _ in range(repeats))
            bar.update(1)
    finally:
        bar.close()
        events.destroy()
        for buffer in (*inputs, out, *scratch):
            buffer.free()
        for module in modules:
            module.unload()
    return results


def tune(candidates: Sequence[Candidate], time_candidate: Callable[[Candidate], float]
         ) -> tuple[Candidate, dict[int, float]]:
    """Time every candidate with `time_candidate` (seconds per run; ``math.inf`` when it
    cannot run) and return the fastest with all timings by index."""
    times = {c.index: time_candidate(c) for c in candidates}
    best = min(candidates, key=lambda c: times[c.index])
    if math.isinf(times[best.index]):
        raise RuntimeError("no candidate could be timed")
    return best, times
