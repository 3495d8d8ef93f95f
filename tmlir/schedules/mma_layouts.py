"""The register fragments of the tensor-core primitives as task mappings (Hidet, sec. 4).

In: nothing (constants). Out: for each operand of ``mma.sync`` (m16n8k16 f16/bf16,
m16n8k8 tf32) and for ``ldmatrix`` (x1/x2/x4, plain or ``.trans``), the task mapping that
gives each of the warp's 32 lanes (workers) the tile elements its registers hold, IN
REGISTER ORDER: ``fragment_elements(layout, lane)[k]`` is the element of register
``k // per_register``, half ``k % per_register`` (the low half of a 32-bit word holding
two 16-bit values is the element of lower index, as PTX's .f16x2). With ``g = lane >> 2``
and ``t = lane & 3`` (PTX ISA 9.7.13.5.8.1), e.g. the accumulator C/D of m16n8k16::

    repeat(2, 1) * spatial(8, 4) * repeat(1, 2)     # 16 x 8, lane -> (g|g+8, 2t|2t+1)

Register order is what ``ranks`` is for: the A operand's registers run over its four 8x8
quadrants COLUMN-major (a[0] rows 0-7, a[1] rows 8-15, a[2] rows 0-7 cols 8-15, ...), so
its outer ``repeat`` is ``repeat(2, 2, ranks=[1, 0])``; the B operand is stored
column-major (``.col``: lane g owns column g), so its ``spatial`` numbers lanes with the row
fastest: ``spatial(4, 8, ranks=[1, 0])`` gives lane ``l`` the task ``(l % 4, l // 4) =
(t, g)``. ``ldmatrix`` loads ``num`` 8x8 matrices of 16-bit elements: its mappings are 3-D
over ``(matrix, row, col)``; matrix ``j`` lands in register ``j``. Loading the four
quadrants of a 16x16 A tile in the order (0,0), (8,0), (0,8), (8,8) gives exactly the mma
A fragment (tested). The contract with the C side is the prelude's
``tmlir_mma_*``/``tmlir_ldmatrix_*`` functions, which use the same orders.
"""

from __future__ import annotations

from tmlir.mapping import TaskMapping, repeat, spatial

__all__ = [
    "MMA_F16_A", "MMA_F16_B", "MMA_ACC", "MMA_TF32_A", "MMA_TF32_B", "MMA_FRAGMENTS",
    "ldmatrix_layout", "fragment_elements", "elements_per_register",
]

MMA_F16_A = repeat(2, 2, ranks=[1, 0]) * spatial(8, 4) * repeat(1, 2)
"""m16n8k16 f16/bf16 A (16x16, row-major): a[0]={A[g][2t],A[g][2t+1]}, a[1] rows +8,
a[2] cols +8, a[3] both."""

MMA_F16_B = repeat(2, 1) * spatial(4, 8, ranks=[1, 0]) * repeat(2, 1)
"""m16n8k16 f16/bf16 B (16x8, ``.col``): b[0]={B[2t][g],B[2t+1][g]}, b[1] rows +8."""

MMA_ACC = repeat(2, 1) * spatial(8, 4) * repeat(1, 2)
"""C and D (16x8 float) of both m16n8k16 and m16n8k8: c[0]=C[g][2t], c[1]=C[g][2t+1],
c[2]=C[g+8][2t], c[3]=C[g+8][2t+1]."""

MMA_TF32_A = repeat(2, 2, ranks=[1, 0]) * spatial(8, 4)
"""m16n8k8 tf32 A (16x8): a[0]=A[g][t], a[1]=A[g+8][t], a[2]=A[g][t+4], a[3]=A[g+8][t+4]."""

MMA_TF32_B = repeat(2, 1) * spatial(4, 8, ranks=[1, 0])
"""m16n8k8 tf32 B (8x8): b[0]=B[t][g], b[1]=B[t+4][g]."""

MMA_FRAGMENTS: dict[tuple[str, str, str], TaskMapping] = {
    **{(shape, dtype, operand): layout
       for shape, dtype, a, b in (("m16n8k16", "f16", MMA_F16_A, MMA_F16_B),
                                  ("m16n8k16", "bf16", MMA_F16_A, MMA_F16_B),
                                  ("m16n8k8", "tf32", MMA_TF32_A, MMA_TF32_B))
       for operand, layout in (("a", a), ("b", b), ("c", MMA_ACC), ("d", MMA_ACC))},
}
"""The fragment of each (shape, dtype, operand): the operands are ``a``, ``b``, ``c``, ``d``."""


def ldmatrix_layout(num: int, trans: bool = False) -> TaskMapping:
    """``ldmatrix .x<num>[.trans]`` over ``(matrix, row, col)`` of ``num`` 8x8 matrices:
    lane ``l`` gets r[j] = {M_j[l/4][2(l%4)], M_j[l/4][2(l%4)+1]}, or with `trans`
    {M_j[2(l%4)][l/4], M_j[2(l%4)+1][l/4]} (the transpose: lanes along the columns)."""
    if num not in (1, 2, 4):
        raise ValueError(f"ldmatrix loads 1, 2 or 4 matrices, got {num}")
    if trans:
        return repeat(num, 1, 1) * spatial(1, 4, 8, ranks=[0, 2, 1]) * repeat(1, 2, 1)
    return repeat(num, 1, 1) * spatial(1, 8, 4) * repeat(1, 1, 2)


def elements_per_register(layout: TaskMapping) -> int:
    """2 for the 16-bit operands (f16/bf16 A and B, ldmatrix), 1 for float words (C/D, tf32)."""
    return 2 if layout in (MMA_F16_A, MMA_F16_B) or layout.rank == 3 else 1


def fragment_elements(layout: TaskMapping, lane: int) -> list[tuple[int, ...]]:
    """The tile elements that `lane` holds, in register order (low half first)."""
    if not 0 <= lane < layout.num_workers:
        raise ValueError(f"lane must be in [0, {layout.num_workers}), got {lane}")
    return layout.worker_tasks(lane)
