"""Resource guards: refuse a run the machine cannot hold, before allocating anything.

A compiled variant needs, besides the weights (already in memory, or uploaded once), its
arena of intermediate buffers and its outputs; on cuda also its input slots. When that is
more than the memory available (``MemAvailable`` of ``/proc/meminfo`` for emu, the free
memory ``cuMemGetInfo`` reports for cuda), `check_memory` raises `ResourceError`, one line
with the numbers, instead of letting the allocation fail or the kernel OOM-killer end the
process halfway. ``TMLIR_MEMORY_GUARD=0`` turns the check off.
"""

from __future__ import annotations

import os

from tmlir.backends.cuda_c import CudaProgram
from tmlir.env import env_flag
from tmlir.runtime.memory_plan import MemoryPlan, buffer_bytes

GUARD_ENV = "TMLIR_MEMORY_GUARD"


class ResourceError(MemoryError):
    """A run needs more memory than is available; one line with what and how much."""


def host_available_bytes() -> int | None:
    """Memory the host can give without swapping (None where it cannot be told)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def device_free_bytes() -> int | None:
    """Free memory of GPU 0 (None where it cannot be told)."""
    try:
        from cuda.bindings import driver

        from tmlir.backends.cuda_runtime import _call, _context

        _context()
        free, _total = _call(driver.cuMemGetInfo)
        return int(free)
    except Exception:
        return None


def needed_bytes(program: CudaProgram, plan: MemoryPlan, device: str) -> dict[str, int]:
    """What a variant allocates when it is made and run, by kind (weights excluded)."""
    sizes = {"intermediate buffers": plan.arena_bytes,
             "outputs": sum(buffer_bytes(b) for b in program.buffers if b.kind == "output")}
    if device == "cuda":
        sizes["inputs"] = sum(buffer_bytes(b) for b in program.buffers if b.kind == "input")
    zeroed = sum(buffer_bytes(b) for b in program.buffers if b.kind == "zeroed")
    if zeroed:
        sizes["zeroed buffers"] = zeroed
    return sizes


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**27 else f"{n / 2**20:.1f} MiB"


def check_memory(program: CudaProgram, plan: MemoryPlan, device: str,
                 available: int | None = None) -> None:
    """Raise ResourceError when running `program` needs more than the available memory of
    `device` (measured unless given)."""
    if env_flag(GUARD_ENV) is False:
        return
    sizes = needed_bytes(program, plan, device)
    total = sum(sizes.values())
    if available is None:
        available = host_available_bytes() if device == "emu" else device_free_bytes()
    if available is None or total <= available:
        return
    parts = ", ".join(f"{kind} {_gib(n)}" for kind, n in sizes.items() if n)
    where = "on this machine" if device == "emu" else "on the GPU"
    raise ResourceError(f"running this model needs {_gib(total)} of memory ({parts}) but only "
                        f"{_gib(available)} is available {where}; use smaller input shapes "
                        f"(set {GUARD_ENV}=0 to try anyway)")
