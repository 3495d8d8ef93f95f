"""Split-K: the k range of each output tile shared by S blocks, added up deterministically
by the last of them to finish, in one kernel. Any GEMM engine calls it between its k-loop
and its epilogue.

A GEMM with few output tiles and a long K (BERT's 128 x 768 x 3072 projection: 24 tiles of
64 x 64 for 132 SMs) leaves most SMs idle while each block walks K alone. With ``split_k =
S`` the grid has S blocks per tile: block (tile t, split s) accumulates the k-tiles
``[s kt / S, (s + 1) kt / S)`` of the ``kt`` k-tiles (`SplitK.k_range`; the ranges differ
by at most one tile). Then, in `SplitK.last_block`:

1. every block stores its accumulators to the workspace, ``ws[s][t][r][tid]`` for
   accumulator register ``r`` (consecutive threads at consecutive addresses), then
   ``tm.fence`` (its stores are visible GPU-wide before what follows) and a barrier;
2. thread 0 counts the block in, ``old = tm.atomic_add counters[t], 1`` (an integer
   atomic), fences (the acquire side) and publishes ``old`` in shared memory; a barrier;
3. the block that saw ``old == S - 1`` is the last: every other block is done with the
   tile. It adds the S partials **in split order** 0, 1, ..., S-1, all read back from the
   workspace with ``tm.load_cg`` (which reads L2, never a stale L1 line; its own partial
   too, so the sums need no registers besides the accumulators), one split per iteration of
   a loop: ptxas hoisted the loads of every split of an unrolled sum and spilled threads
   of 128 accumulators; resets ``counters[t]`` to 0 for the next launch, and runs the
   epilogue (alpha, bias, a fused epilogue: whatever the engine's ``store_c`` does) on the
   sums. The other blocks end.

The sum is ``((p0 + p1) + p2) + ...`` whichever block arrives last, so a result is bit for
bit the same from run to run; no float is ever added atomically. It is a different
summation order from S = 1's, so results differ from the unsplit kernel's by rounding.

**Scratch.** The kernel's last two arguments are scratch (``tmlir/ir/kernel_ops.py``):
``workspace``, ``memref<S x tiles x R x threads x f32>`` (R accumulators per thread: the
tile's ``block_m x block_n`` floats per split), an intermediate the memory plan places in
its arena for that launch, and ``counters``, ``memref<tiles x i32>``, a zeroed buffer that
every launch leaves zero. `add_scratch` appends them to a kernel.

**Cost.** The workspace moves ``S x tiles x block_m x block_n x 4`` bytes each way per
launch: each block writes its partial, the last block of a tile reads all S. The branch
the last block takes carries ``tm.branch_weights = [1, S-1]``, so ``-t cost`` counts what
executes, not every block running the reduction.

An engine uses it like this (``tc_gemm.py`` does)::

    plan = SplitK(S, k_tiles, tiles, threads)
    workspace, counters = add_scratch(kernel, plan, acc_type)      # before building the body
    ...  # block mapping spatial(*tile_grid, S): tile = bid / S, split = bid % S
    first, count = plan.k_range(b, split)
    for step in range(plan.steps):                               # a loop; k-tile first + step
        with plan.step_guard(b, step, count):
            ...                                                  # the k-step
    with plan.last_block(b, acc, tid, tile, split, workspace, counters):
        epilogue()                                               # only in the last block
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseArrayBase, MemRefType, i32, i64
from xdsl.ir import Block, SSAValue

from tmlir.dialects import tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.ir.kernel_ops import BRANCH_WEIGHTS, scratch_attr
from tmlir.mapping import repeat
from tmlir.schedules.space import Constraint

__all__ = ["MIN_SPLIT_K_TILES", "SPLIT_K_CHOICES", "SPLIT_K_SHARED_BYTES", "SplitK", "add_scratch",
           "split_k_constraints"]

#: The smallest number of k-tiles a split may walk in a template's space (the pipeline
#: needs a few steps to pay its fill and drain).
MIN_SPLIT_K_TILES = 4
#: The split-K choices of a template's space (1: no split).
SPLIT_K_CHOICES = (1, 2, 3, 4, 6, 8)
#: Shared memory `SplitK.last_block` adds to a block: the arrival count thread 0 publishes.
SPLIT_K_SHARED_BYTES = 4


@dataclass(frozen=True)
class SplitK:
    """The split of a GEMM's `k_tiles` k-tiles over `splits` blocks per output tile, for a
    launch of `tiles` output tiles of `threads` threads each (see the module docstring).
    ``splits == 1`` is the plain GEMM: `k_range` is everything and `last_block` adds
    nothing. ValueError when a split would get no k-tile."""

    splits: int
    k_tiles: int
    tiles: int
    threads: int

    def __post_init__(self) -> None:
        if self.splits < 1:
            raise ValueError(f"split_k must be >= 1, got {self.splits}")
        if self.splits > self.k_tiles:
            raise ValueError(f"split_k={self.splits} is more than the {self.k_tiles} k-tiles: a split "
                             "would have none")

    @property
    def steps(self) -> int:
        """The most k-tiles one split walks (the k-loop's trip count)."""
        return math.ceil(self.k_tiles / self.splits)

    @property
    def uneven(self) -> bool:
        """Whether some splits walk one k-tile fewer than `steps`."""
        return self.k_tiles % self.splits != 0

    def k_range(self, b: IRBuilder, split: Index) -> tuple[Index, Index]:
        """(first k-tile, number of k-tiles) of split `split`: ``[s kt / S, (s + 1) kt / S)``."""
        S, kt = self.splits, self.k_tiles
        if S == 1:
            return 0, kt
        if not self.uneven:
            return b.mul(split, kt // S, "k_first"), kt // S
        first = b.div(b.mul(split, kt), S, "k_first")
        end = b.div(b.mul(b.add(split, 1), kt), S, "k_end")
        return first, b.sub(end, first, "k_count")

    @contextmanager
    def step_guard(self, b: IRBuilder, step: Index, count: Index) -> Iterator[None]:
        """The body of k-loop step `step` runs when the split has that many k-tiles (`count`
        from `k_range`): a block-uniform ``if`` when the splits are uneven, else nothing.
        Its branch weights say how often it is taken, over all steps and splits."""
        if not self.uneven:
            yield
            return
        taken = self.k_tiles
        with _weighted_if(b, b.lt(step, count, "in_split"), taken, self.splits * self.steps - taken):
            yield

    def scratch(self, acc_type: MemRefType) -> list[tuple[str, MemRefType]]:
        """The kind and type of each scratch argument for accumulators of `acc_type` per
        thread: the workspace and the counters; none for one split."""
        if self.splits == 1:
            return []
        registers = math.prod(acc_type.get_shape())
        return [("workspace", MemRefType(acc_type.element_type, [self.splits, self.tiles, registers,
                                                                 self.threads])),
                ("counters", MemRefType(i32, [self.tiles]))]

    @contextmanager
    def last_block(self, b: IRBuilder, acc: SSAValue, tid: SSAValue, tile: Index, split: Index,
                   workspace: SSAValue | None, counters: SSAValue | None) -> Iterator[None]:
        """The split-K protocol (module docstring) after the k-loop: the `with` body, the
        epilogue, runs only in the last block of tile `tile`, with the register buffer `acc`
        (any static shape; its elements are the partial sums of block (`tile`, `split`),
        thread `tid`) holding the tile's full sums. With one split, just the body."""
        if self.splits == 1:
            yield
            return
        assert workspace is not None and counters is not None, "add_scratch first"
        shape = list(acc.type.get_shape())  # type: ignore[attr-defined]
        every = repeat(*shape, unroll=[True] * len(shape))  # registers: constant indices
        names = [f"a{d}" for d in range(len(shape))]
        with b.for_task(every, None, names) as index:  # 1. publish the partial
            register = _linear(b, index, shape)
            b.store(b.load(acc, list(index)), workspace, [split, tile, register, tid])
        b.insert(tm.FenceOp())
        b.insert(tm.BarrierOp())
        arrived = b.insert(tm.AllocOp("shared", MemRefType(i32, [1])), "arrived").results[0]
        first_thread = b.eq(tid, 0, "first_thread")
        with b.if_(first_thread):  # 2. count the block in
            one = b.constant(1, i32)
            old = b.insert(tm.AtomicAddOp(counters, [b.value(tile)], one), "before").results[0]
            b.insert(tm.FenceOp())
            b.store(old, arrived, [0])
        b.insert(tm.BarrierOp())
        before = b.load(arrived, [0], name="arrived_before")
        last = b.insert(arith.CmpiOp(before, b.constant(self.splits - 1, i32), "eq"), "last_block").results[0]
        with _weighted_if(b, last, 1, self.splits - 1):  # 3. the last block adds up, in order
            # every partial from the workspace, its own too (published in step 1): the sums
            # live in `acc` alone, and a loop over the splits has one split's loads in
            # flight, not all of them (ptxas spilled a 128-accumulator thread at S = 6)
            with b.for_task(every, None, names) as index:
                b.store(self._published(b, index, shape, workspace, 0, tile, tid), acc, list(index))
            with b.loop(1, self.splits, rolled=True, name="s") as s:
                with b.for_task(every, None, names) as index:
                    part = self._published(b, index, shape, workspace, s, tile, tid)
                    b.store(b.fop(arith.AddfOp, b.load(acc, list(index)), part), acc, list(index))
            with b.if_(first_thread):
                b.store(b.constant(0, i32), counters, [tile])
            yield

    @staticmethod
    def _published(b: IRBuilder, index: tuple[SSAValue, ...], shape: list[int], workspace: SSAValue,
                   s: Index, tile: Index, tid: SSAValue) -> SSAValue:
        """Split `s`'s partial of accumulator `index` of thread `tid`, read from L2."""
        at = [s, tile, _linear(b, index, shape), tid]
        return b.insert(tm.LoadCgOp(workspace, [b.value(i) for i in at]), "part").results[0]


def split_k_constraints(sms: int) -> list[Constraint]:
    """The constraints split-K adds to a GEMM template's space, for parameters with
    ``split_k``, ``k_tiles(problem)`` and ``tile_count(problem)``: each split walks at least
    `MIN_SPLIT_K_TILES` k-tiles, and a split is added only while one fewer would leave some
    of the reference GPU's `sms` SMs without a block (``tiles * (split_k - 1) < sms``)."""
    return [
        Constraint(f"each split walks >= {MIN_SPLIT_K_TILES} k-tiles",
                   lambda P, p: P.split_k == 1 or P.k_tiles(p) // P.split_k >= MIN_SPLIT_K_TILES),
        Constraint("split-K only while SMs idle",
                   lambda P, p: P.split_k == 1 or P.tile_count(p) * (P.split_k - 1) < sms),
    ]


def add_scratch(kernel: tm.KernelOp, plan: SplitK, acc_type: MemRefType
                ) -> tuple[SSAValue | None, SSAValue | None]:
    """Append the workspace and counters arguments `plan` needs to `kernel` (nothing for
    one split), for accumulators of `acc_type` (per thread), and mark them scratch; return
    them."""
    scratch = plan.scratch(acc_type)
    if not scratch:
        return None, None
    block = kernel.body.block
    args = []
    for kind, type in scratch:
        arg = block.insert_arg(type, len(block.args))
        arg.name_hint = kind
        args.append(arg)
    kernel.properties["scratch"] = scratch_attr([kind for kind, _ in scratch])  # type: ignore[assignment]
    return args[0], args[1]


def _linear(b: IRBuilder, index: tuple[SSAValue, ...], shape: list[int]) -> Index:
    """Row-major linear index of `index` in `shape` (the accumulator register's number)."""
    linear: Index = 0
    for i, extent in zip(index, shape):
        linear = b.add(b.mul(linear, extent), i)
    if isinstance(linear, SSAValue) and linear.name_hint is None:
        linear.name_hint = "reg"
    return linear


def _weights(then: int, other: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [then, other])


@contextmanager
def _weighted_if(b: IRBuilder, condition: SSAValue, then: int, other: int) -> Iterator[None]:
    """``b.if_(condition)`` whose op carries branch weights: taken `then` times for every
    `other` times it is not."""
    body = Block()
    op = scf.IfOp(condition, [], [body])
    op.attributes[BRANCH_WEIGHTS] = _weights(then, other)
    b.insert(op)
    with b.at(body):
        yield
        b.insert(scf.YieldOp())
