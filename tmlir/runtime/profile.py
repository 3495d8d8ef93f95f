"""Per-launch times of a compiled program: what each kernel costs, launch by launch.

    times = session.profile({"x": x}, runs=20)      # InferenceSession.profile
    for t in times: print(t.kernel, t.template, t.grid, t.block, t.median_us)

Each run launches the program's kernels one by one, in order, without a CUDA graph, and
times every launch:

- on cuda, with CUDA events recorded on the runner's stream between consecutive launches.
  The host queues launches more slowly than a small kernel runs, so an event pair would
  also time the host's gap before the kernel; to keep the GPU ahead of the host, each run
  starts with a spin kernel (`SPIN_SOURCE`) that holds the stream for longer than the
  host takes to queue the run, after which the launches and events execute back to back.
  Each launch reads its inputs as it does in the model (cold, in sequence), not repeated;
- on emu, with the host's wall time around each launch: the code path of the GPU's, whose
  times say nothing of a GPU.

The median over the runs of each launch is its time (`LaunchTime`). Their sum is not the
model's latency: a graph replay has no events between kernels and no host work per launch.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tmlir.backends.cuda_c import CudaProgram

#: The kernel that holds a stream busy for ``ns`` nanoseconds (the GPU's global timer).
SPIN_KERNEL = "tmlir_profile_spin"
SPIN_SOURCE = f"""extern "C" __global__ void {SPIN_KERNEL}(long long ns) {{
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {{
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }} while ((long long)(now - start) < ns);
}}
"""
#: The spin lasts this many times the host's time to queue one run (and 50 µs more).
SPIN_MARGIN = 2.0
#: The longest spin: a run slower to queue than this is timed with host gaps.
MAX_SPIN_SECONDS = 0.05


@dataclass(frozen=True)
class LaunchTime:
    """The time of one launch of a program (`index` in launch order): its kernel, the
    kernel's template and parameters (``tm.params``), grid and block, and the median and
    minimum of its time over `runs` runs, in microseconds."""

    index: int
    kernel: str
    template: str
    grid: int
    block: int
    params: dict[str, int | float | str]
    median_us: float
    min_us: float
    runs: int


def launch_times(program: CudaProgram, samples: Sequence[Sequence[float]]) -> list[LaunchTime]:
    """One `LaunchTime` per launch of `program` from `samples` (per run, the seconds of
    each launch, in launch order)."""
    count = len(program.launches)
    if not samples or any(len(run) != count for run in samples):
        raise ValueError(f"expected runs of {count} launch times each")
    times = []
    for i, (launch, kernel) in enumerate(zip(program.launches, program.launched(), strict=True)):
        seconds = [run[i] for run in samples]
        times.append(LaunchTime(i, launch.kernel, kernel.template, launch.grid, launch.block,
                                dict(kernel.params), statistics.median(seconds) * 1e6,
                                min(seconds) * 1e6, len(seconds)))
    return times


def time_cuda_launches(launch: Callable[[int], None], count: int, stream: Any, runs: int,
                       warmup: int) -> list[list[float]]:
    """Seconds of each of `count` launches (`launch(i)` queues launch i on `stream`), per
    run, after `warmup` runs, timed by CUDA events between them (see the module docstring)."""
    from tmlir.backends.cuda_runtime import Event

    spin = _spin_module()
    events = [Event() for _ in range(count + 1)]
    try:
        def queue(spin_ns: int) -> float:
            """Queue one run; the host's seconds to do so."""
            if spin_ns:
                spin.launch(SPIN_KERNEL, 1, 1, [spin_ns], stream=stream)
            start = time.perf_counter()
            for i in range(count):
                events[i].record(stream)
                launch(i)
            events[count].record(stream)
            return time.perf_counter() - start

        queue(0)  # the first launches also load their kernels (CUDA's lazy loading)
        stream.synchronize()
        queueing = queue(0)
        stream.synchronize()
        spin_ns = int(min(MAX_SPIN_SECONDS, SPIN_MARGIN * queueing + 50e-6) * 1e9)
        samples = []
        for run in range(warmup + runs):
            queue(spin_ns)
            events[count].synchronize()
            if run >= warmup:
                samples.append([events[i].elapsed_ms(events[i + 1]) / 1e3 for i in range(count)])
        return samples
    finally:
        for event in events:
            event.destroy()


def _spin_module() -> Any:
    """The spin kernel loaded for the current device (its PTX is cached on disk)."""
    from tmlir.backends.cuda_runtime import CudaModule, device_arch
    from tmlir.backends.kernel_abi import KernelParam, KernelSignature
    from tmlir.backends.ptx import compile_ptx

    signature = KernelSignature(SPIN_KERNEL, (KernelParam("ns", "long long"),))
    return CudaModule(compile_ptx(SPIN_SOURCE, device_arch()), [signature])
