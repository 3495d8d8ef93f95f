"""The GPUs tmlir estimates for: datasheet figures and the per-SM resources they share.

A `Gpu` is what the cost report's roofline and the latency model (``tmlir.latency``) need
of a device: streaming multiprocessors, clock, FP32 and tensor-core peaks, DRAM bandwidth,
L2 size and the per-SM limits that decide how many blocks run at once. Names are looked up
case-insensitively with `gpu`, e.g. ``gpu("H200")``; an unknown name is a one-line
ValueError listing the known ones.

The figures are NVIDIA's datasheet numbers (dense tensor-core peaks, boost clock):

=========  ====  =========  ==========  =================  ===========  =========
GPU        SMs   boost GHz  FP32 TF/s   f16 / tf32 TF/s    HBM TB/s     L2 MiB
=========  ====  =========  ==========  =================  ===========  =========
A100       108   1.41       19.5        312 / 156          2.039        40
H100       132   1.98       67          989.4 / 494.7      3.35         50
H200       132   1.98       67          989.4 / 494.7      4.8          50
=========  ====  =========  ==========  =================  ===========  =========

``A100`` is the SXM4 80 GB part, ``H100`` the SXM5 80 GB part, ``H200`` the SXM 141 GB part
(the same GH100 chip as the H100 with HBM3e).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tmlir.gpu_limits import WARP_SIZE


@dataclass(frozen=True)
class SmLimits:
    """Per-SM resources of a GPU generation: what decides how many blocks are resident."""

    registers: int = 65536
    shared_bytes: int = 228 * 1024
    """Shared memory of one SM (the L1/shared carve-out at its largest)."""
    max_shared_per_block: int = 227 * 1024
    """Shared memory one block may use, with the dynamic opt-in."""
    threads: int = 2048
    blocks: int = 32
    register_unit: int = 256
    """Registers are allocated per warp in multiples of this many."""
    reserved_shared_per_block: int = 1024
    """Shared memory the CUDA runtime reserves per resident block (sm_80 and later)."""

    @property
    def warps(self) -> int:
        return self.threads // WARP_SIZE


SM80 = SmLimits(shared_bytes=164 * 1024, max_shared_per_block=163 * 1024)
SM90 = SmLimits()


@dataclass(frozen=True)
class Gpu:
    """One GPU: datasheet peaks and per-SM limits (see the module docstring)."""

    name: str
    arch: str
    sms: int
    clock_hz: float
    """Boost clock."""
    fp32_flops: float
    tensor_flops: dict[str, float]
    """Dense tensor-core peak by mma operand type (f16, bf16, tf32)."""
    hbm_bytes_per_s: float
    l2_bytes: int
    limits: SmLimits = field(default=SM90)
    fp32_lanes: int = 128
    """FP32 lanes per SM: FP32 peak = sms x fp32_lanes x 2 FLOPs x clock (64 on the A100)."""
    aliases: tuple[str, ...] = ()

    @property
    def ridge(self) -> float:
        """FLOPs per byte above which a CUDA-core kernel is compute-bound."""
        return self.fp32_flops / self.hbm_bytes_per_s

    def describe(self) -> str:
        """One line of the peaks, for report headers."""
        return (f"{self.name}: {self.sms} SMs, {self.fp32_flops / 1e12:g} TFLOP/s FP32, "
                f"{self.tensor_flops['f16'] / 1e12:g} f16/bf16 and {self.tensor_flops['tf32'] / 1e12:g} tf32 "
                f"on tensor cores, {self.hbm_bytes_per_s / 1e12:g} TB/s HBM")


_HOPPER_TENSOR = {"f16": 989.4e12, "bf16": 989.4e12, "tf32": 494.7e12}

GPUS: dict[str, Gpu] = {g.name: g for g in (
    Gpu("A100", "sm_80", 108, 1.41e9, 19.5e12, {"f16": 312e12, "bf16": 312e12, "tf32": 156e12},
        2.039e12, 40 * 2**20, SM80, 64, ("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", "A100 SXM4")),
    Gpu("H100", "sm_90", 132, 1.98e9, 67e12, _HOPPER_TENSOR, 3.35e12, 50 * 2**20, SM90, 128,
        ("H100 SXM5", "H100-SXM5", "NVIDIA H100 80GB HBM3")),
    Gpu("H200", "sm_90", 132, 1.98e9, 67e12, _HOPPER_TENSOR, 4.8e12, 50 * 2**20, SM90, 128,
        ("NVIDIA H200", "H200 SXM")),
)}
"""The known GPUs by name."""

DEFAULT_GPU = "H100"
"""The GPU the cost report assumes when none is named."""


def gpu(name: str) -> Gpu:
    """The GPU called `name` (its name or an alias, any case; ``cuDeviceGetName``'s names
    of the known parts work); ValueError, one line, for an unknown one."""
    wanted = name.strip().casefold()
    for g in GPUS.values():
        if wanted in (n.casefold() for n in (g.name, *g.aliases)):
            return g
    raise ValueError(f"unknown GPU '{name}' (known: {', '.join(GPUS)})")
