"""The latency model (tmlir.latency) and the GPUs it knows (tmlir.gpus): the formulas on
hand-made launches, and its error on the committed H200 kernel measurements."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from tmlir import latency
from tmlir.gpus import GPUS, SM80, SM90, gpu
from tmlir.latency import KLoop, Launch, estimate, issue_efficiency, resident_blocks

ROOT = Path(__file__).resolve().parent.parent
H200 = gpu("H200")


def test_gpus_by_name_and_alias() -> None:
    assert gpu("h200") is gpu("NVIDIA H200") is GPUS["H200"]
    assert gpu("NVIDIA H100 80GB HBM3").name == "H100"
    assert gpu("A100").limits is SM80 and gpu("H100").limits is SM90
    for g in GPUS.values():  # the FP32 peak is SMs x lanes x 2 FLOPs x clock
        assert g.fp32_flops == pytest.approx(g.sms * g.fp32_lanes * 2 * g.clock_hz, rel=0.01)
    with pytest.raises(ValueError, match=r"unknown GPU 'V100' \(known: A100, H100, H200\)"):
        gpu("V100")


def test_resident_blocks_take_the_scarcest_resource() -> None:
    # 256 threads at 128 registers: 65536 / (128 * 256) = 2 blocks
    assert resident_blocks(128, 0, 256, SM90) == 2
    # registers are allocated per warp in units of 256: 129 registers -> 4352 per warp
    assert resident_blocks(129, 0, 256, SM90) == 1
    # shared memory: 100 KiB + 1 KiB reserved per block of 228 KiB
    assert resident_blocks(32, 100 * 1024, 128, SM90) == 2
    assert resident_blocks(32, 100 * 1024, 128, SM80) == 1
    assert resident_blocks(32, 0, 32, SM90) == 32  # the 32-block cap
    assert resident_blocks(32, 300 * 1024, 32, SM90) == 0


def test_issue_efficiency_grows_with_warps() -> None:
    values = [issue_efficiency(w) for w in (1, 2, 4, 8)]
    assert values == sorted(values) and values[-1] < latency.ISSUE_EFFICIENCY
    assert issue_efficiency(latency.ISSUE_HALF_WARPS) == pytest.approx(latency.ISSUE_EFFICIENCY / 2)


def _gemm(blocks: int, steps: int, depth: int = 1, instructions: int = 300, threads: int = 128,
          registers: int = 64) -> Launch:
    loop = KLoop(steps, instructions, tile_bytes=4096, depth=depth)
    return Launch(blocks, threads, registers, 8192, flops=1, bytes=blocks * steps * 4096, loop=loop)


def test_latency_bound_loop_pays_a_round_trip_per_step_divided_by_depth() -> None:
    """One small block per SM and no reuse (compulsory bytes = bytes loaded): every step
    after the first waits one DRAM round trip (the first's tile comes with the fill), or a
    third of one with three steps in flight (the first three come with the fill)."""
    one = estimate(_gemm(132, 100, instructions=50), H200, launch_overhead=False)
    assert one.bound == "latency" and one.rounds == 1
    assert one.seconds == pytest.approx(100 * latency.DRAM_LATENCY_S, rel=0.01)
    deep = estimate(_gemm(132, 100, depth=3, instructions=50), H200, launch_overhead=False)
    assert deep.seconds == pytest.approx((97 / 3 + 1) * latency.DRAM_LATENCY_S, rel=0.02)
    with_launch = estimate(_gemm(132, 100, instructions=50), H200)
    assert with_launch.seconds == pytest.approx(one.seconds + latency.LAUNCH_S)


def test_issue_bound_loop_and_the_last_round() -> None:
    """Many instructions per step: issue-bound. 3 blocks fit an SM; 132 * 4 blocks are 4
    per SM: a round of 3 together and a last round of 1 alone, which issues 3x faster."""
    launch = _gemm(132 * 4, 10, instructions=20000, registers=160)
    e = estimate(launch, H200, launch_overhead=False)
    assert (e.resident, e.rounds, e.bound) == (3, 2, "issue")
    warps = 4

    def step(blocks: int) -> float:
        busy = math.ceil(blocks * warps / 4)
        return busy * 20000 / H200.clock_hz / issue_efficiency(busy)

    assert e.seconds == pytest.approx(10 * (step(3) + step(1)), rel=0.02)


def test_a_launch_is_never_faster_than_its_achievable_roofline() -> None:
    streaming = Launch(132, 256, 32, 0, flops=0, bytes=10**9)
    e = estimate(streaming, H200, launch_overhead=False)
    assert e.bound == "memory"
    assert e.seconds == pytest.approx(1e9 / (H200.hbm_bytes_per_s * latency.BANDWIDTH_EFFICIENCY))
    small = estimate(Launch(4, 32, 32, 0, flops=0, bytes=4096, serial_loads=3), H200, launch_overhead=False)
    assert small.seconds == pytest.approx(3 * latency.DRAM_LATENCY_S)


def _calibration():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("latency_model", ROOT / "benchmarks" / "latency_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["latency_model"] = module
    spec.loader.exec_module(module)
    return module


def test_error_on_the_committed_h200_kernel_measurements_is_within_25_percent() -> None:
    """The issue's bound on every committed data point, for the kernels (the full models
    need build/models/: `benchmarks/latency_model.py` checks those)."""
    calibration = _calibration()
    points = calibration.matmul_points(calibration.RUN) + calibration.record_points(calibration.RUN)
    assert len(points) == 12
    for point in points:
        error = point.estimate_us(H200) / point.measured_us - 1
        assert abs(error) <= 0.25, (point.name, point.measured_us, point.estimate_us(H200))
