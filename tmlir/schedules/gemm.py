"""What a GEMM engine is given: the problem (`MatmulProblem`) and, per block, where its
operands come from and where its result goes (`GemmOperands`).

Both engines -- the SIMT one (``simt_gemm.py``) and the tensor-core one (``tc_gemm.py``) --
compute ``C = A @ B`` over tiles of ``block_m x block_n`` and walk k in ``block_k`` steps;
the templates on top of them (a matmul, an implicit-GEMM convolution) differ only in how
element ``(outer, k)`` of an operand is found (``outer``: the row of A, the column of B)
and in what happens to each element of C. A `GemmOperand` says it in the two ways an
engine can use:

* **load** (always given): the element as a value, read with ``tm.load`` (0 outside the
  operand). An engine that stages operands through registers reads it this way, and so
  does one whose operand a fused prologue computes: fusion rewrites exactly those loads.
* **address** (given when the operand is a kernel argument the engine may copy with
  ``cp.async``): the buffer indices of element ``(outer, k)`` and a condition that it is
  inside the operand (None: always, within the GEMM's extents). Where the condition is
  false the indices must still lie inside the buffer (clamped): a zero-filling copy turns
  them into an address but reads nothing. The engine adds its own checks against M, N and
  K, and clamps ``outer`` and ``k`` to 0 where those fail before asking for the address.

`k_major` is the operand's memory order (contiguous along k, else along outer), which the
copies follow so that consecutive threads read consecutive addresses. `chunked` says that
16-byte chunks along the contiguous dimension (4 floats) are aligned and each wholly inside
or outside the operand, so that one ``cp.async`` may copy 16 bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import Attribute, SSAValue

from tmlir.ir.builder import Index, IRBuilder
from tmlir.schedules.common import broadcast_guards, broadcast_index


@dataclass(frozen=True)
class MatmulProblem:
    """Shapes and attributes of one ``graph.matmul``."""

    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    bias_shape: tuple[int, ...] | None = None
    transpose_lhs: bool = False
    transpose_rhs: bool = False
    alpha: float = 1.0
    beta: float = 1.0

    @classmethod
    def plain(cls, m: int, n: int, k: int, batch: int = 1) -> MatmulProblem:
        """``C[batch, m, n] = A[batch, m, k] @ B[batch, k, n]`` (2-D when batch is 1)."""
        lead = (batch,) if batch > 1 else ()
        return cls((*lead, m, k), (*lead, k, n), (*lead, m, n))

    @property
    def m(self) -> int:
        return self.out_shape[-2]

    @property
    def n(self) -> int:
        return self.out_shape[-1]

    @property
    def k(self) -> int:
        return self.lhs_shape[-2] if self.transpose_lhs else self.lhs_shape[-1]

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return self.out_shape[:-2]

    @property
    def batch(self) -> int:
        return math.prod(self.batch_shape)


#: Element ``(outer, k)`` of a GEMM operand, loaded from global memory: `outer` is the
#: global row (A) or column (B) index, `k` the global k index; 0 past the operand's end.
ElementLoad = Callable[[Index, Index], SSAValue]
#: The buffer indices of element ``(outer, k)`` of an operand and the condition that it is
#: inside the operand (None: always); the indices stay inside the buffer either way.
ElementAddress = Callable[[Index, Index], tuple[list[Index], SSAValue | None]]
#: Writes element ``(row, col)`` of the result from its accumulated sum.
ResultStore = Callable[[Index, Index, SSAValue], None]


def store_result(b: IRBuilder, problem: MatmulProblem, c: SSAValue, bias: SSAValue | None,
                 coords: list[Index], value: SSAValue, guarded: set[int], element: Attribute) -> None:
    """The matmul epilogue every GEMM template shares: ``alpha * value + beta * bias`` (the
    bias broadcast to C, loaded with the guards of C's `guarded` dims that it has) stored
    into C at `coords` (batch coordinates, row, column) under those guards; constants of
    `element`, the type the template computes in."""
    p = problem
    if p.alpha != 1.0:
        value = b.fop(arith.MulfOp, value, b.constant(p.alpha, element))
    if bias is not None and p.bias_shape is not None:
        bv = b.load(bias, broadcast_index(coords, p.out_shape, p.bias_shape),
                    broadcast_guards(p.out_shape, p.bias_shape, guarded), name="bias")
        if p.beta != 1.0:
            bv = b.fop(arith.MulfOp, bv, b.constant(p.beta, element))
        value = b.fop(arith.AddfOp, value, bv)
    b.store(value, c, coords, sorted(guarded))


@dataclass(frozen=True)
class GemmOperand:
    """Where the k-tiles of one operand come from (see the module docstring)."""

    k_major: bool
    load: ElementLoad
    buffer: SSAValue | None = None
    address: ElementAddress | None = None
    chunked: bool = False

    @property
    def copyable(self) -> bool:
        """Whether an engine may copy the operand with ``cp.async`` (else it gathers it)."""
        return self.buffer is not None and self.address is not None


@dataclass(frozen=True)
class GemmOperands:
    """One block's operands and where its results go: the part of a GEMM that a matmul and
    an implicit-GEMM convolution do differently."""

    a: GemmOperand
    b: GemmOperand
    store_c: ResultStore
