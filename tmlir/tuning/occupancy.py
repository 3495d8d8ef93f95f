"""Occupancy: how many warps of a kernel an SM can hold at once, from its resources.

A block needs registers (``registers`` per thread, allocated per warp in units of
`SmLimits.register_unit`), shared memory (its static ``shared_bytes`` plus the
`SmLimits.reserved_shared_per_block` the runtime keeps per block) and a slot among the
SM's threads and blocks. The fewest blocks any of these allows is the number resident;
occupancy is their warps over the SM's maximum. The defaults are sm_90's (H100): 65536
registers, 228 KiB shared memory, 2048 threads and 32 blocks per SM. For example, 256
threads at 128 registers: 65536 / (128 * 256) = 2 blocks, 16 of 64 warps, 0.25.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmlir.gpu_limits import WARP_SIZE


@dataclass(frozen=True)
class SmLimits:
    """Per-SM resources of a GPU generation."""

    registers: int = 65536
    shared_bytes: int = 228 * 1024
    threads: int = 2048
    blocks: int = 32
    #: Registers are allocated per warp in multiples of this many.
    register_unit: int = 256
    #: Shared memory the CUDA runtime reserves per resident block (sm_80 and later).
    reserved_shared_per_block: int = 1024

    @property
    def warps(self) -> int:
        return self.threads // WARP_SIZE


SM90 = SmLimits()


def resident_blocks(registers: int, shared_bytes: int, threads: int,
                    limits: SmLimits = SM90) -> int:
    """Blocks of `threads` threads, each using `registers` per thread and `shared_bytes`
    of static shared memory, that one SM holds at once (0: the block does not fit)."""
    warps = math.ceil(threads / WARP_SIZE)
    per_warp = math.ceil(max(registers, 1) * WARP_SIZE / limits.register_unit) * limits.register_unit
    by_registers = (limits.registers // per_warp) // warps
    by_shared = limits.shared_bytes // (shared_bytes + limits.reserved_shared_per_block)
    by_threads = limits.warps // warps
    return min(by_registers, by_shared, by_threads, limits.blocks)


def occupancy(registers: int, shared_bytes: int, threads: int, limits: SmLimits = SM90
              ) -> float:
    """Resident warps over the SM's maximum, between 0 and 1."""
    blocks = resident_blocks(registers, shared_bytes, threads, limits)
    return blocks * math.ceil(threads / WARP_SIZE) / limits.warps
