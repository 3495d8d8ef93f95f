"""The occupancy function against hand-computed sm_90 cases."""

from __future__ import annotations

import pytest

from tmlir.tuning.occupancy import SM90, SmLimits, occupancy, resident_blocks


@pytest.mark.parametrize(("registers", "shared", "threads", "blocks", "expected"), [
    (128, 0, 256, 2, 0.25),  # registers: 65536 / (128 * 256)
    (32, 0, 1024, 2, 1.0),  # threads: 2048 / 1024
    (16, 0, 32, 32, 0.5),  # the 32-block limit: 32 one-warp blocks of 64 warps
    (255, 0, 32, 8, 0.125),  # 255 -> 256 per thread, 8192 per warp: 8 warps
    (64, 48 * 1024, 128, 4, 0.25),  # shared memory: 228 KiB // (48 + 1) KiB
    (40, 0, 128, 12, 0.75),  # 1280 per warp: 51 warps, 12 blocks of 4
    (41, 0, 128, 10, 40 / 64),  # 1312 -> 1536 per warp (units of 256): 42 warps, 10 blocks
])
def test_sm90_cases(registers, shared, threads, blocks, expected):
    assert resident_blocks(registers, shared, threads) == blocks
    assert occupancy(registers, shared, threads) == pytest.approx(expected)


def test_a_block_that_does_not_fit_has_zero_occupancy():
    assert occupancy(64, 300 * 1024, 128) == 0.0  # more shared memory than the SM has


def test_limits_are_a_parameter():
    half = SmLimits(registers=SM90.registers // 2)
    assert occupancy(128, 0, 256, half) == pytest.approx(occupancy(128, 0, 256) / 2)
