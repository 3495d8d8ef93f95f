"""The tensor-core fragment mappings against the PTX ISA's formulas (written out here
independently, from the contract in docs), lane by lane and register by register."""

from __future__ import annotations

import pytest

from tmlir.schedules.mma_layouts import (
    MMA_ACC,
    MMA_F16_A,
    MMA_F16_B,
    MMA_FRAGMENTS,
    MMA_TF32_A,
    MMA_TF32_B,
    elements_per_register,
    fragment_elements,
    ldmatrix_layout,
)


def _f16_a(g: int, t: int) -> list[tuple[int, int]]:
    return [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1),
            (g, 2 * t + 8), (g, 2 * t + 9), (g + 8, 2 * t + 8), (g + 8, 2 * t + 9)]


def _f16_b(g: int, t: int) -> list[tuple[int, int]]:
    return [(2 * t, g), (2 * t + 1, g), (2 * t + 8, g), (2 * t + 9, g)]


def _acc(g: int, t: int) -> list[tuple[int, int]]:
    return [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]


def _tf32_a(g: int, t: int) -> list[tuple[int, int]]:
    return [(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)]


def _tf32_b(g: int, t: int) -> list[tuple[int, int]]:
    return [(t, g), (t + 4, g)]


CASES = [  # layout, PTX formula, tile shape, registers per lane
    (MMA_F16_A, _f16_a, (16, 16), 4),
    (MMA_F16_B, _f16_b, (16, 8), 2),
    (MMA_ACC, _acc, (16, 8), 4),
    (MMA_TF32_A, _tf32_a, (16, 8), 4),
    (MMA_TF32_B, _tf32_b, (8, 8), 2),
]


@pytest.mark.parametrize("layout, formula, shape, registers", CASES)
def test_mma_fragment_matches_ptx(layout, formula, shape, registers) -> None:
    assert layout.num_workers == 32
    assert layout.task_shape == shape
    assert len(formula(0, 0)) == registers * elements_per_register(layout)
    owners: dict[tuple[int, ...], int] = {}
    for lane in range(32):
        elements = fragment_elements(layout, lane)
        assert elements == formula(lane >> 2, lane & 3), f"lane {lane}"
        for e in elements:
            assert e not in owners, f"{e} held by lanes {owners.get(e)} and {lane}"
            owners[e] = lane
    assert len(owners) == shape[0] * shape[1]  # every element exactly once


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_matches_ptx(num: int, trans: bool) -> None:
    layout = ldmatrix_layout(num, trans)
    assert layout.num_workers == 32 and layout.task_shape == (num, 8, 8)
    owners = set()
    for lane in range(32):
        r, c = lane // 4, 2 * (lane % 4)
        expected = []
        for j in range(num):
            pair = [(j, c, r), (j, c + 1, r)] if trans else [(j, r, c), (j, r, c + 1)]
            expected += pair
        elements = fragment_elements(layout, lane)
        assert elements == expected, f"lane {lane}"
        owners.update(elements)
    assert len(owners) == num * 64


def test_ldmatrix_x4_of_quadrants_is_the_mma_a_fragment() -> None:
    # matrix j = the quadrant of a 16x16 tile at rows 8*(j % 2), cols 8*(j // 2)
    loaded = ldmatrix_layout(4)
    for lane in range(32):
        tile = [(i % 2 * 8 + r, i // 2 * 8 + c) for i, r, c in fragment_elements(loaded, lane)]
        assert tile == fragment_elements(MMA_F16_A, lane)


def test_table_and_errors() -> None:
    assert MMA_FRAGMENTS["m16n8k16", "bf16", "a"] is MMA_F16_A
    assert MMA_FRAGMENTS["m16n8k8", "tf32", "d"] is MMA_ACC
    with pytest.raises(ValueError, match="1, 2 or 4"):
        ldmatrix_layout(3)
    with pytest.raises(ValueError, match="lane must be in"):
        fragment_elements(MMA_ACC, 32)
