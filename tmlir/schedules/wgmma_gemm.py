"""The Hopper GEMM engine: ``C = A @ B`` on ``wgmma`` (sm_90a), fed by a warp-specialised
pipeline of shared k-tiles with mbarriers.

In: an empty ``tm.kernel``, a `MatmulProblem` (M, N, K, batch; B stored ``K x N``, or ``N x
K`` when ``transpose_rhs``), `MatmulWgmmaParams`, the operands' element type (f16, bf16; f32
runs as tf32) and, per block, where the operands come from and where C goes (the
tensor-core engine's `TcOperands`: dense operands only). Out: the kernel body. Each block
computes a ``64 W x block_n`` tile of C with f32 accumulators in registers::

    blocks      spatial(batch, M / 64W, N / block_n [, split_k])          on block_id
    consumers   W warpgroups (threads 0 .. 128W-1): warpgroup w owns rows 64w .. 64w+63,
                one m64nNk16 (tf32: m64nNk8) wgmma chain over each k-tile, N = block_n
    producer    P warps after them (threads 128W ..): the cp.async copies of every k-tile

**Shared tiles.** A ring of ``stages`` k-tiles of ``block_k`` elements -- one 128-byte row:
64 halves, 32 floats -- for A and for B, in the canonical layouts wgmma reads
(tmlir.wgmma_layouts), all with the 128-byte swizzle. Each operand is one 2-D ``[mn, k]``
buffer, the stages stacked along mn (A ``[stages * 64W, block_k]``, B ``[stages * block_n,
block_k]``), so a stage's warpgroup tile is the ``(64, k)`` or ``(block_n, k)`` descriptor
tile at row ``stage * rows``: A K-major (``row_major(rows, 64) ^ swizzle(3, 3, 3)`` for f16),
B K-major when it is stored ``N x K``, else N-major (``row_major(rows / 64, 8) *
column_major(64, 8) ^ swizzle(3, 3, 3)``: 8 consecutive n of one k are one 16-byte chunk, as
they lie in global memory).

**Copies.** ``cp.async.cg`` of 16 bytes, each chunk to its swizzled place. A bulk copy
(``cp.async.bulk``) moves a contiguous run of bytes, but the swizzle permutes the chunks of
every 128-byte row (by the row's index), so a tile in these layouts is 16-byte pieces
either way, and one bulk copy per chunk is thousands of TMA operations per stage; TMA
*tensor* copies (``cp.async.bulk.tensor`` with a ``CUtensorMap``, which swizzle on the way
in) are the real answer and are not built yet. ``cp.async`` also zero-fills: a chunk past M,
N or K is ``tm.cp_async ... zfill_unless %inside`` with its source clamped inside the
operand, as in ``tc_gemm.py``, so partial tiles need no other code; C's stores are guarded.

**Barriers.** Two mbarriers per stage. ``full[s]`` (one arrival per producer thread): a
producer thread arrives once the copies it issued into stage ``s`` have landed
(``cp_async_wait``) and, by ``fence.proxy.async``, are visible to the tensor cores.
``empty[s]`` (one arrival per consumer thread): a consumer thread arrives once the wgmmas
that read stage ``s`` have completed (``wgmma_wait``). Phases alternate: k-tile ``t`` uses
stage ``t % stages`` in phase ``t / stages``, so the consumers wait ``full`` with parity
``(t / stages) % 2`` and the producer waits ``empty`` with parity ``(t / stages + 1) % 2``
(which a fresh barrier passes at once: the ring starts empty).

**Producer** (every producer thread, k-tile ``t`` of ``count``; ``L = stages - 2``)::

    wait empty[t % S]                 the wgmmas that read tile t - S are done
    cp.async tile t -> stage t % S;  commit
    cp_async_wait pending(L)          tile t - L has landed (this thread's part)
    fence.proxy.async;  arrive full[(t - L) % S]

and L more iterations without copies (empty commits) announce the last tiles. Up to ``L +
1 = stages - 1`` tiles are in flight. The lag cannot be longer: the consumers release tile
``t - S`` only after they have waited for tile ``t - S + 1``.

**Consumers** (k-tile ``t``)::

    wait full[t % S];  wgmma_fence
    wgmma x (block_k / k) on stage t % S (descriptors advanced by 32 bytes);  commit
    wgmma_wait pending(1)             the group of tile t - 1 has completed ...
    arrive empty[(t - 1) % S]         ... so its stage may be refilled

so one wgmma group runs while the next tile's barrier is awaited, and a stage is never
refilled while a wgmma reads it. After the loop ``wgmma_wait pending(0)``; then split-K's
reduction (``split_k.py``, every thread: the producers' accumulators are zeros) and the
epilogue, by the consumers: accumulator register ``4j + 2h + e`` of thread ``32v + lane`` of
warpgroup ``w`` is ``C[64w + 16v + 8h + g][8j + 2t + e]`` (``g = lane / 4``, ``t = lane %
4``; tmlir.wgmma_layouts.wgmma_accumulator), iterated by unrolled loops over ``(j, h, e)``
so that each register index is a constant (computed from the row and column, it would put
the accumulators on the stack), and handed to `TcOperands.store_c`.

**On the emu** every part of this is checked: a wgmma reads shared memory at the
``wgmma_wait`` that completes it, a ``cp.async`` lands at its ``cp_async_wait``, an mbarrier
wait blocks the fiber. `wgmma_gemm`'s ``drop`` leaves out one of the waits (planted bugs,
for tests): each gives a wrong result.

This first version is not what a tuned Hopper GEMM does in three ways: no TMA (see above),
no register reallocation (``setmaxnreg``: the producer warps hold as many registers as the
consumers), and the producer waits for its own copies (``cp.async.mbarrier.arrive.noinc``,
which lets the copy unit arrive instead, is not a primitive yet).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseArrayBase, Float32Type, IntegerAttr, MemRefType, i64
from xdsl.ir import Attribute, Block, SSAValue

from tmlir.dialects import tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.ir.kernel_ops import BRANCH_WEIGHTS
from tmlir.layout import DataLayout
from tmlir.mapping import repeat, spatial
from tmlir.schedules.gemm import MatmulProblem
from tmlir.schedules.matmul_wgmma_params import (
    COPY_BYTES,
    SWIZZLE_BYTES,
    WGMMA_M,
    MatmulWgmmaParams,
    WgmmaElement,
    wgmma_element,
)
from tmlir.schedules.split_k import add_scratch
from tmlir.schedules.tc_gemm import TcOperand, TcOperands
from tmlir.wgmma_layouts import WARPGROUP, canonical_layout, wgmma_shape

__all__ = ["DROPPABLE_WAITS", "BlockOperands", "wgmma_gemm"]

BlockOperands = Callable[[IRBuilder, Sequence[Index]], TcOperands]

DROPPABLE_WAITS = ("wgmma_wait", "full_wait", "empty_wait")
"""The waits `wgmma_gemm` can leave out (planted bugs): the consumers' ``wgmma_wait
pending(1)`` (before they release a stage), their wait on ``full``, the producer's on
``empty``."""


def wgmma_gemm(kernel: tm.KernelOp, problem: MatmulProblem, params: MatmulWgmmaParams, element: Attribute,
               block_operands: BlockOperands, block_names: Sequence[str] = ("batch", "tile_m", "tile_n"),
               *, drop: Collection[str] = ()) -> None:
    """Fill `kernel` with the GEMM of `problem` on operands of `element` (see the module
    docstring). `block_operands(b, batch_coords)` is called once inside the block's
    mapping. `drop` names waits of `DROPPABLE_WAITS` to leave out (tests)."""
    unknown = set(drop) - set(DROPPABLE_WAITS)
    assert not unknown, f"unknown waits {unknown}"
    E = wgmma_element(element)
    if params.block_k != E.row:
        raise ValueError(f"matmul_wgmma: block_k must be {E.row} for {E.dtype} operands (one {SWIZZLE_BYTES}-byte "
                         f"row), got {params.block_k}")
    kernel.attributes["tm.min_blocks_per_sm"] = IntegerAttr(1, 64)
    gemm = _WgmmaGemm(IRBuilder.at_end(kernel.body.block), problem, params, element, E, frozenset(drop))
    gemm.workspace, gemm.counters = add_scratch(kernel, gemm.split, params.acc_type)
    gemm.build(block_operands, block_names)


@contextmanager
def _roles(b: IRBuilder, is_consumer: SSAValue, consumers: int, producers: int) -> Iterator[tuple[Block, Block]]:
    """An ``scf.if`` / ``else`` on the thread's role, weighted by the threads of each (so the
    cost report counts each branch for its threads); yields (consumer block, producer block)."""
    consumer, producer = Block(), Block()
    op = scf.IfOp(is_consumer, [], [consumer], [producer])
    op.attributes[BRANCH_WEIGHTS] = DenseArrayBase.from_list(i64, [consumers, producers])
    b.insert(op)
    yield consumer, producer
    for block in (consumer, producer):
        with b.at(block):
            b.insert(scf.YieldOp())


class _WgmmaGemm:
    """Builds the kernel body (one object per kernel: the builder, the buffers, the roles)."""

    def __init__(self, b: IRBuilder, problem: MatmulProblem, params: MatmulWgmmaParams, element: Attribute,
                 E: WgmmaElement, drop: frozenset[str]) -> None:
        self.b, self.p, self.P, self.element, self.E, self.drop = b, problem, params, element, E, drop
        self.split = params.split(problem)
        self.b_major = "k" if problem.transpose_rhs else "mn"
        self.workspace: SSAValue | None = None
        self.counters: SSAValue | None = None

    def alloc(self, scope: str, element: Attribute, shape: Sequence[int], name: str,
              layout: DataLayout | None = None) -> SSAValue:
        return self.b.insert(tm.AllocOp(scope, MemRefType(element, list(shape)), layout), name).results[0]

    def build(self, block_operands: BlockOperands, block_names: Sequence[str]) -> None:
        b, p, P, E = self.b, self.p, self.P, self.E
        S, bk = P.stages, P.block_k
        bid = b.insert(tm.BlockIdOp(), "bid").results[0]
        self.tid = tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
        a_rows, b_rows = S * P.block_m, S * P.block_n
        self.a_smem = self.alloc("shared", self.element, (a_rows, bk), "a_smem",
                                 canonical_layout(a_rows, bk, E.bytes, "k", SWIZZLE_BYTES))
        self.b_smem = self.alloc("shared", self.element, (b_rows, bk), "b_smem",
                                 canonical_layout(b_rows, bk, E.bytes, self.b_major, SWIZZLE_BYTES))
        self.full = self.alloc("shared", i64, (S,), "full")
        self.empty = self.alloc("shared", i64, (S,), "empty")
        self.acc = self.alloc("register", Float32Type(), (P.block_n // 2,), "acc")
        zero = b.constant(0.0, Float32Type())
        with b.for_task(repeat(P.block_n // 2, unroll=[True]), None, ["r"]) as (r,):
            b.store(zero, self.acc, [r])  # the producers' stay 0 (split-K adds them up)
        with b.if_(b.eq(tid, 0, "first_thread")):
            for s in range(S):
                b.insert(tm.MbarrierInitOp(self.full, [b.value(s)], P.producer_threads))
                b.insert(tm.MbarrierInitOp(self.empty, [b.value(s)], P.consumer_threads))
        b.insert(tm.BarrierOp())
        splits = (P.split_k,) if P.split_k > 1 else ()  # block (tile, split): split fastest
        with b.for_task(spatial(*P.tile_grid(p), *splits), bid,
                        [*block_names, *(["split"] if splits else [])]) as (bb, tile_m, tile_n, *split):
            ops = block_operands(b, b.unravel(bb, p.batch_shape, in_range=True))
            assert ops.a.k_major and ops.b.k_major == p.transpose_rhs, "operand layouts"
            assert ops.a.load is None and ops.b.load is None, "matmul_wgmma copies dense operands only"
            self.row0 = b.mul(tile_m, P.block_m, "row0")
            self.col0 = b.mul(tile_n, P.block_n, "col0")
            split_index = split[0] if split else 0
            self.k_first, self.k_count = self.split.k_range(b, split_index)
            is_consumer = b.lt(tid, P.consumer_threads, "is_consumer")
            with _roles(b, is_consumer, P.consumer_threads, P.producer_threads) as (consumer, producer):
                with b.at(consumer):
                    self.consume()
                with b.at(producer):
                    self.produce(ops)
            tile = b.div(bid, P.split_k, "tile")  # block = tile * split_k + split
            with self.split.last_block(b, self.acc, tid, tile, split_index, self.workspace, self.counters), \
                    b.if_(is_consumer):
                self.epilogue(ops.store_c)

    # ---- the producer warps -----------------------------------------------------------------
    def produce(self, ops: TcOperands) -> None:
        """Every k-tile of the block's split, into the ring (see the module docstring)."""
        b, P = self.b, self.P
        S, lag, count, steps = P.stages, P.lag, self.k_count, self.split.steps
        self.ptid = b.sub(self.tid, P.consumer_threads, "ptid")
        # over all splits the loop runs splits * (steps + lag) times, k_tiles with a tile
        taken, runs = self.split.k_tiles, self.split.splits * (steps + lag)
        with b.loop(0, steps + lag, name="kt") as kt:
            stage = b.rem(kt, S, "stage")
            with _weighted_if(b, b.lt(kt, count, "has_tile"), taken, runs - taken):
                if "empty_wait" not in self.drop:  # the wgmmas of tile kt - S are done
                    phase = b.rem(b.add(b.div(kt, S), 1), 2, "empty_parity")
                    b.insert(tm.MbarrierWaitOp(self.empty, [stage], b.value(phase)))
                self.issue_tile(ops, b.add(self.k_first, kt, "k_tile"), stage)
            b.insert(tm.CpAsyncCommitOp())
            done = b.sub(kt, lag, "landed") if lag else kt
            conditions = [b.ge(kt, lag)] if lag else []
            if not (isinstance(count, int) and count == steps):  # uneven splits: past the split's end
                conditions.append(b.lt(done, count))
            announce = b.all_of(conditions)
            with _weighted_if(b, announce, taken, runs - taken) if announce is not None else _nothing():
                b.insert(tm.CpAsyncWaitOp(lag))
                b.insert(tm.FenceProxyAsyncOp())
                b.insert(tm.MbarrierArriveOp(self.full, [b.value(b.rem(done, S, "full_stage"))]))

    def issue_tile(self, ops: TcOperands, k_tile: Index, stage: Index) -> None:
        b, P = self.b, self.P
        k0 = b.mul(k_tile, P.block_k, "k0")
        self.copy(ops.a, self.a_smem, b.mul(stage, P.block_m, "a_base"), self.row0, k0, P.block_m, self.p.m)
        self.copy(ops.b, self.b_smem, b.mul(stage, P.block_n, "b_base"), self.col0, k0, P.block_n, self.p.n)

    def copy(self, op: TcOperand, smem: SSAValue, base: Index, outer0: Index, k0: Index, outer_tile: int,
             outer_extent: int) -> None:
        """The producer threads' 16-byte copies of one operand's ``outer_tile x block_k`` tile
        from ``(outer0, k0)`` into rows ``base ..`` of its ``[mn, k]`` buffer; consecutive
        threads on consecutive chunks of a global row. A chunk past the operand's end is
        zero-filled, its source indices clamped to 0 (see ``tc_gemm.py``)."""
        b, P, E, K = self.b, self.P, self.E, self.p.k
        assert op.buffer is not None and op.index is not None
        # the tile as it lies in global memory: rows x (chunks of a row), 8 threads a row's
        # 8 consecutive chunks (128 bytes), the rest of the row and the other rows repeated
        rows, cols = (outer_tile, P.block_k) if op.k_major else (P.block_k, outer_tile)
        per_row, threads = cols // E.chunk, P.producer_threads
        assert per_row % 8 == 0 and rows % (threads // 8) == 0, (rows, per_row, threads)
        mapping = repeat(rows // (threads // 8), per_row // 8, unroll=[True, True]) * spatial(threads // 8, 8)
        with b.for_task(mapping, self.ptid, ["cr", "cc"]) as (r, cc):
            c = b.mul(cc, E.chunk, "cs")
            outer, k = (r, c) if op.k_major else (c, r)
            g_outer, g_k = b.add(outer0, outer, "g_outer"), b.add(k0, k, "g_k")
            checks = []
            if outer_extent % outer_tile:
                checks.append(b.lt(g_outer, outer_extent))
            if K % P.block_k:
                checks.append(b.lt(g_k, K))
            inside = b.all_of(checks)
            if inside is not None:
                inside.name_hint = "inside"
                if outer_extent % outer_tile:
                    g_outer = self._clamp(inside, g_outer)
                if K % P.block_k:
                    g_k = self._clamp(inside, g_k)
            dst = [b.value(b.add(base, outer, "s_row")), b.value(k)]
            src = [b.value(i) for i in op.index(g_outer, g_k)]
            b.insert(tm.CpAsyncOp(COPY_BYTES, smem, dst, op.buffer, src, inside))

    def _clamp(self, inside: SSAValue, x: Index) -> SSAValue:
        b = self.b
        return b.insert(arith.SelectOp(inside, b.value(x), b.value(0)), "clamped").results[0]

    # ---- the consumer warpgroups ------------------------------------------------------------
    def consume(self) -> None:
        """Every k-tile's wgmmas, one group in flight (see the module docstring)."""
        b, P, E = self.b, self.P, self.E
        S, n = P.stages, P.block_n
        self.warpgroup = wg = b.div(self.tid, WARPGROUP, "wg")
        shape = wgmma_shape(n, E.dtype)
        with b.loop(0, self.split.steps, name="kt") as kt, self.split.step_guard(b, kt, self.k_count):
            stage = b.rem(kt, S, "stage")
            if "full_wait" not in self.drop:
                phase = b.rem(b.div(kt, S), 2, "full_parity")
                b.insert(tm.MbarrierWaitOp(self.full, [stage], b.value(phase)))
            b.insert(tm.WgmmaFenceOp())
            a_row = b.add(b.mul(stage, P.block_m), b.mul(wg, WGMMA_M), "a_row")
            b_row = b.mul(stage, n, "b_row")
            for kk in range(P.block_k // E.k):
                desc_a = b.insert(tm.WgmmaDescOp("k", self.a_smem, [b.value(a_row), b.value(kk * E.k)],
                                                 (WGMMA_M, E.k)), "desc_a").results[0]
                desc_b = b.insert(tm.WgmmaDescOp(self.b_major, self.b_smem, [b.value(b_row), b.value(kk * E.k)],
                                                 (n, E.k)), "desc_b").results[0]
                b.insert(tm.WgmmaOp(shape, E.dtype, self.acc, desc_a, desc_b, "k", self.b_major))
            b.insert(tm.WgmmaCommitOp())
            if "wgmma_wait" not in self.drop:
                b.insert(tm.WgmmaWaitOp(1, [self.acc]))
            with b.if_(b.ge(kt, 1, "has_previous")):  # the previous tile's wgmmas are done
                previous = b.rem(b.sub(kt, 1), S, "released")
                b.insert(tm.MbarrierArriveOp(self.empty, [b.value(previous)]))
        b.insert(tm.WgmmaWaitOp(0, [self.acc]))

    # ---- epilogue ---------------------------------------------------------------------------
    def epilogue(self, store_c: Callable[[Index, Index, SSAValue], None]) -> None:
        """Register ``4j + 2h + e`` is ``C[64w + 16v + 8h + g][8j + 2t + e]`` of the block's
        tile (w: warpgroup, v: its warp), handed to `store_c`."""
        b, P = self.b, self.P
        tid = self.tid
        wg = b.div(tid, WARPGROUP, "wg")
        warp = b.rem(b.div(tid, 32), 4, "wg_warp")
        lane = b.rem(tid, 32, "lane")
        g, t2 = b.div(lane, 4, "g"), b.mul(b.rem(lane, 4), 2, "t2")
        row_base = b.add(b.add(self.row0, b.mul(wg, WGMMA_M)), b.add(b.mul(warp, 16), g), "row_base")
        col_base = b.add(self.col0, t2, "col_base")
        with b.for_task(repeat(P.block_n // 8, 2, 2, unroll=[True] * 3), None, ["j", "h", "e"]) as (j, h, e):
            row = b.add(row_base, b.mul(h, 8), "row")
            col = b.add(col_base, b.add(b.mul(j, 8), e), "col")
            register = b.add(b.add(b.mul(j, 4), b.mul(h, 2)), e, "reg")
            store_c(row, col, b.load(self.acc, [register], name="sum"))


@contextmanager
def _nothing() -> Iterator[None]:
    yield


@contextmanager
def _weighted_if(b: IRBuilder, condition: SSAValue, then: int, other: int) -> Iterator[None]:
    """``b.if_(condition)`` taken `then` times for every `other` times it is not (the cost
    report counts the producer's copies for the k-tiles that have them)."""
    body = Block()
    op = scf.IfOp(condition, [], [body])
    op.attributes[BRANCH_WEIGHTS] = DenseArrayBase.from_list(i64, [then, other])
    b.insert(op)
    with b.at(body):
        yield
        b.insert(scf.YieldOp())
