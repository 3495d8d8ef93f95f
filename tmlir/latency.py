"""The latency model: how long a kernel launch takes on a named GPU, without running it.

The roofline (compute at peak, bytes at bandwidth) says how fast a launch *could* be; this
model says how fast it *is*, because most of tmlir's slow kernels are neither compute- nor
bandwidth-bound but latency-bound: a block that walks a serial loop (a GEMM's k-loop) pays a
memory round trip per step unless several steps' loads are in flight (Little's law). A
launch is described by `Launch` (grid, block, registers, shared memory, its FLOPs and
compulsory bytes) and, for a kernel whose blocks walk such a loop, by `KLoop` (serial
steps, instructions one warp issues per step, loads in flight, bytes a block loads per
step). `estimate` returns an `Estimate` in seconds with the term that set it.

**Residency.** `resident_blocks` from registers (per warp, in 256-register units), shared
memory (plus the 1 KiB the runtime reserves per block), threads and the 32-block cap. Each
SM gets ``nb = ceil(blocks / SMs)`` blocks (the busiest SM), run ``c = min(resident, nb)`` at a
time in ``rounds = ceil(nb / resident)`` rounds.

**A k-loop step** of ``c`` co-resident blocks takes the soft maximum (p-norm, `SOFT_MAX_P`) of

* *issue*: the busiest of the SM's 4 schedulers issues ``ceil(c * warps / 4) *
  warp_instructions`` instructions at one per clock, at `ISSUE_EFFICIENCY` (dependency and
  bank stalls, the barrier's bubble);
* *tensor cores*: ``c * tensor_flops`` at the SM's share of the tensor peak, at
  `TENSOR_EFFICIENCY` (mma.sync) or the loop's own ``tensor_efficiency`` (Hopper's wgmma);
* *latency*: one memory round trip divided by the steps in flight (``depth``: 1 for a
  register prefetch, ``stages - 1`` for a cp.async pipeline). The round trip mixes the L2
  hit latency and the DRAM latency by the launch's L2 hit rate, ``1 - compulsory bytes /
  bytes loaded`` (a tile re-read by many blocks hits L2; a GEMV's weights do not);

and a launch takes ``rounds * (steps * step + fill)`` (``fill``: the first tiles' round
trip, and for split-K two more: the arrival counter's atomic and the partial sums' reads)
or its roofline at achievable rates, whichever is longer. The first ``depth`` steps' tiles
arrive with the fill: they wait for no latency term of their own.

**Other kernels** (elementwise, reductions, data movement): the longest of the roofline at
achievable rates (`BANDWIDTH_EFFICIENCY` of the DRAM bandwidth, `ISSUE_EFFICIENCY` of the
FP32 peak) and a Little's-law floor: every round of resident blocks waits ``serial_loads``
memory round trips (the global loads a thread makes one after another: 1 for an
elementwise kernel, the trip count of a loop that loads for a reduction).

**Launches** inside a CUDA graph cost `LAUNCH_S` each, added to every launch.

The constants are calibrated on the H200 measurements committed under
``benchmarks/results/gpu/`` (matmul candidates, the GEMV, three full models); the error on
each is printed by ``benchmarks/latency_model.py`` and listed in ``docs/cost.md``. The model
is a lower-bound-leaning estimate, not a simulator: it knows nothing of bank conflicts,
instruction cache misses or DRAM page locality, and a kernel it has not been calibrated on
(a new pipeline) is predicted from the same physics, so GPU measurements of such kernels
must be committed beside its estimates whenever a GPU is available.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmlir.gpu_limits import WARP_SIZE
from tmlir.gpus import Gpu, SmLimits

SCHEDULERS_PER_SM = 4
"""Warp schedulers per SM (sm_70 to sm_90): each issues one warp instruction per clock."""
FFMA_LANES_PER_SCHEDULER = 32
"""FP32 lanes behind one scheduler at which an FFMA warp instruction issues every clock
(sm_90: 128 per SM); with fewer (the A100's 64 per SM) an FP32-bound loop issues slower."""

# ---- calibrated constants (benchmarks/latency_model.py; docs/cost.md lists the fit) ----
ISSUE_EFFICIENCY = 0.88
"""Fraction of issue slots a scheduler with many warps fills in an FFMA-heavy loop; with
``w`` warps per scheduler it fills ``ISSUE_EFFICIENCY * w / (w + ISSUE_HALF_WARPS)`` (one
warp cannot hide its own dependency and shared-load stalls). Measured on an H200: 0.52 of
the slots with one warp per scheduler, 0.71-0.78 with three or four (the fit of
``benchmarks/latency_model.py``: 0.88 and 0.5 warps)."""
ISSUE_HALF_WARPS = 0.5
"""Warps per scheduler at which the issue efficiency reaches half of `ISSUE_EFFICIENCY`."""
TENSOR_EFFICIENCY = 0.7
"""Fraction of the tensor-core peak an mma.sync loop sustains (not yet measured: assumed)."""
BANDWIDTH_EFFICIENCY = 0.85
"""Fraction of the DRAM bandwidth a streaming kernel sustains (not yet measured: assumed)."""
DRAM_LATENCY_S = 0.80e-6
"""One k-step's memory round trip from DRAM, with the step's store, barrier and first
shared read (a register-prefetch SIMT GEMV: 0.65-0.83 µs measured on an H200)."""
L2_LATENCY_S = 0.52e-6
"""The same round trip when the tile hits L2."""
SOFT_MAX_P = 4.0
"""Exponent of the soft maximum of a step's issue and latency terms (near the crossover
both partly add)."""
LAUNCH_S = 2.0e-6
"""Cost of one launch inside a CUDA graph (the gap between dependent kernels)."""


def resident_blocks(registers: int, shared_bytes: int, threads: int, limits: SmLimits) -> int:
    """Blocks of `threads` threads, each using `registers` per thread and `shared_bytes` of
    shared memory, that one SM holds at once (0: the block does not fit)."""
    warps = math.ceil(threads / WARP_SIZE)
    per_warp = math.ceil(max(registers, 1) * WARP_SIZE / limits.register_unit) * limits.register_unit
    by_registers = (limits.registers // per_warp) // warps
    by_shared = limits.shared_bytes // (shared_bytes + limits.reserved_shared_per_block)
    by_threads = limits.warps // warps
    return min(by_registers, by_shared, by_threads, limits.blocks)


@dataclass(frozen=True)
class KLoop:
    """The serial loop a kernel's blocks walk (a GEMM's k-loop), per block.

    `steps` iterations; per iteration one warp issues `warp_instructions` instructions, the
    block loads `tile_bytes` of global memory (L2 hits included) and runs `tensor_flops` on
    tensor cores (of type `tensor`); `depth` iterations' loads are in flight at once."""

    steps: int
    warp_instructions: int
    tile_bytes: int
    depth: int = 1
    tensor_flops: int = 0
    tensor: str = ""
    tail_round_trips: int = 0
    """Memory round trips after the loop besides the epilogue's stores: 2 for a split-K
    block (the counter's atomic, then the last block's reads of the other partial sums)."""
    tensor_efficiency: float = TENSOR_EFFICIENCY
    """Fraction of the tensor peak the loop's tensor-core instructions sustain: mma.sync's
    `TENSOR_EFFICIENCY` unless the template says otherwise (``wgmma_kloop.py``); the
    launch's roofline takes it too."""

    def __post_init__(self) -> None:
        if self.depth < 1 or self.steps < 0:
            raise ValueError(f"a k-loop needs depth >= 1 and steps >= 0, got {self}")


@dataclass(frozen=True)
class Launch:
    """What the model needs of one kernel launch (whole-launch totals)."""

    blocks: int
    threads: int
    registers: int
    shared_bytes: int
    flops: int
    """CUDA-core FLOPs."""
    bytes: int
    """Compulsory global bytes (read + written)."""
    tensor_flops: dict[str, int] | None = None
    loop: KLoop | None = None
    serial_loads: int = 1
    """Global loads a thread waits for one after another (kernels without a `loop`)."""


@dataclass(frozen=True)
class Estimate:
    """Estimated seconds of a launch, the term that set them, and the figures behind it."""

    seconds: float
    bound: str
    """``latency``, ``issue``, ``tensor``, ``memory`` or ``launch``."""
    resident: int
    rounds: int
    latency_seconds: float = 0.0
    """The rounds' own time (k-loop or serial loads) before the roofline's floor: of two
    launches that the roofline bounds alike, the one with more slack under it."""

    @property
    def us(self) -> float:
        return self.seconds * 1e6


def issue_efficiency(warps_per_scheduler: float) -> float:
    """Fraction of a scheduler's issue slots filled with `warps_per_scheduler` warps."""
    w = max(warps_per_scheduler, 1e-9)
    return ISSUE_EFFICIENCY * w / (w + ISSUE_HALF_WARPS)


def _soft_max(*terms: float) -> float:
    return sum(t ** SOFT_MAX_P for t in terms) ** (1 / SOFT_MAX_P)


def roofline_seconds(launch: Launch, gpu: Gpu, efficiency: bool = True) -> tuple[float, str]:
    """(seconds, ``compute`` or ``memory``): the launch's FLOPs at the FP32 and tensor peaks
    and its bytes at the DRAM bandwidth -- at the achievable fractions when `efficiency`."""
    f, b = (ISSUE_EFFICIENCY, BANDWIDTH_EFFICIENCY) if efficiency else (1.0, 1.0)
    t = (launch.loop.tensor_efficiency if launch.loop is not None else TENSOR_EFFICIENCY) if efficiency else 1.0
    compute = launch.flops / (gpu.fp32_flops * f) + sum(
        n / (gpu.tensor_flops[dtype] * t) for dtype, n in (launch.tensor_flops or {}).items())
    memory = launch.bytes / (gpu.hbm_bytes_per_s * b)
    return max(compute, memory), ("compute" if compute > memory else "memory")


def estimate(launch: Launch, gpu: Gpu, launch_overhead: bool = True) -> Estimate:
    """The estimated time of `launch` on `gpu` (see the module docstring); `launch_overhead`
    adds `LAUNCH_S`."""
    resident = max(1, resident_blocks(launch.registers, launch.shared_bytes, launch.threads, gpu.limits))
    per_sm = math.ceil(launch.blocks / gpu.sms)
    together = min(resident, per_sm)
    rounds = math.ceil(per_sm / resident)
    roof, roof_bound = roofline_seconds(launch, gpu)
    if launch.loop is not None:
        last = per_sm - (rounds - 1) * resident  # the last round's blocks on the busiest SM
        body, bound = _loop_seconds(launch, launch.loop, gpu, together)
        body = (rounds - 1) * body + (_loop_seconds(launch, launch.loop, gpu, last)[0] if rounds > 1 else body)
    else:
        body, bound = rounds * launch.serial_loads * DRAM_LATENCY_S, "latency"
    seconds, bound = (body, bound) if body >= roof else (roof, "memory" if roof_bound == "memory" else "issue")
    overhead = LAUNCH_S if launch_overhead else 0.0
    return Estimate(seconds + overhead, bound, resident, rounds, body)


def _loop_seconds(launch: Launch, loop: KLoop, gpu: Gpu, together: int) -> tuple[float, str]:
    """One round of `together` co-resident blocks walking `loop`: (seconds, bound)."""
    warps = math.ceil(launch.threads / WARP_SIZE)
    busiest = math.ceil(together * warps / SCHEDULERS_PER_SM)
    slowdown = max(1.0, FFMA_LANES_PER_SCHEDULER * SCHEDULERS_PER_SM / gpu.fp32_lanes)
    issue = busiest * loop.warp_instructions * slowdown / gpu.clock_hz / issue_efficiency(busiest)
    tensor = 0.0
    if loop.tensor_flops:
        per_sm = gpu.tensor_flops[loop.tensor] / gpu.sms
        tensor = together * loop.tensor_flops / (per_sm * loop.tensor_efficiency)
    loaded = launch.blocks * loop.steps * loop.tile_bytes
    hit = min(1.0, max(0.0, 1.0 - launch.bytes / loaded)) if loaded else 0.0
    round_trip = hit * L2_LATENCY_S + (1 - hit) * DRAM_LATENCY_S
    latency = round_trip / loop.depth
    # the first `depth` steps' tiles come with the fill; each later one waits its share
    exposed = max(0, loop.steps - loop.depth)
    body = exposed * _soft_max(issue, tensor, latency) + (loop.steps - exposed) * _soft_max(issue, tensor)
    terms = {"issue": issue, "tensor": tensor, "latency": latency if exposed else 0.0}
    return body + (1 + loop.tail_round_trips) * round_trip, max(terms, key=terms.__getitem__)
