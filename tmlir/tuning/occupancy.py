"""Occupancy: how many warps of a kernel an SM can hold at once, from its resources.

A block needs registers (``registers`` per thread, allocated per warp in units of
`SmLimits.register_unit`), shared memory (its ``shared_bytes`` plus the
`SmLimits.reserved_shared_per_block` the runtime keeps per block) and a slot among the
SM's threads and blocks. The fewest blocks any of these allows is the number resident
(`tmlir.latency.resident_blocks`, which the latency model uses too); occupancy is their
warps over the SM's maximum. The defaults are sm_90's (H100): 65536 registers, 228 KiB
shared memory, 2048 threads and 32 blocks per SM. For example, 256 threads at 128
registers: 65536 / (128 * 256) = 2 blocks, 16 of 64 warps, 0.25.
"""

from __future__ import annotations

import math

from tmlir.gpu_limits import WARP_SIZE
from tmlir.gpus import SM90, SmLimits
from tmlir.latency import resident_blocks as _resident_blocks

__all__ = ["SM90", "SmLimits", "occupancy", "resident_blocks"]


def resident_blocks(registers: int, shared_bytes: int, threads: int,
                    limits: SmLimits = SM90) -> int:
    """Blocks of `threads` threads, each using `registers` per thread and `shared_bytes`
    of shared memory, that one SM holds at once (0: the block does not fit)."""
    return _resident_blocks(registers, shared_bytes, threads, limits)


def occupancy(registers: int, shared_bytes: int, threads: int, limits: SmLimits = SM90
              ) -> float:
    """Resident warps over the SM's maximum, between 0 and 1."""
    blocks = resident_blocks(registers, shared_bytes, threads, limits)
    return blocks * math.ceil(threads / WARP_SIZE) / limits.warps
