"""The SIMT GEMM engine that the fp32 matmul and the implicit-GEMM convolution share.

In: an empty ``tm.kernel``, the GEMM's shape (a `MatmulProblem`: M, N, K, batch, which
operands are stored transposed), `MatmulSimtParams` and a function giving, per block,
where the operands come from and where C goes (`GemmOperands`, ``gemm.py``). Out: the
kernel body computing ``C = A @ B`` with scalar FMAs on CUDA cores, the schedule of the
Hidet paper (Ding et al., ASPLOS 2023, Fig. 5 and 9). Each block computes a ``block_m x
block_n`` tile of C::

    blocks   spatial(batch, M / block_m, N / block_n)              on block_id
    threads  spatial(block_warps) * repeat(warp_outer)             (warp = tid / 32,
             * spatial(lanes) * repeat(thread_inner)                lane = tid % 32)

so a thread owns ``warp_outer * thread_inner`` elements of C (its register tile ``acc``).
Both operands are kept with k outermost in shared memory (``a_smem[stage][k][m]``,
``b_smem[stage][k][n]``); a k slice ``kk`` of the tile is read into register fragments
(``a_frag[slot][thread_m]``, ``b_frag[slot][thread_n]``) **one slice ahead** (slot ``kk %
2`` is multiplied while slot ``(kk + 1) % 2`` is read), and the last slice of a k-tile is
multiplied while the first slice of the next one is read, after the one barrier of the
k-step.

How k-tiles get from global to shared memory is the ``stages`` parameter:

* ``stages = 1``, **the register path** (every architecture; the only one before sm_80):
  two shared buffers; at the top of a k-step the next k-tile's elements are loaded into
  registers (``a_ldg``, ``b_ldg``: ``tm.load``, cooperative ``repeat * spatial`` mappings
  from ``auto_map`` in the operand's memory order), and stored into the other buffer after
  the step's arithmetic. One k-tile is in flight, so every k-step waits for a DRAM round
  trip that only the step's own arithmetic hides.
* ``stages = 2..4``, **the cp.async pipeline** (sm_80+): ``stages`` shared buffers filled by
  ``cp.async``. The prologue issues k-tiles ``0 .. stages-2``, one ``cp_async_commit``
  each; k-step ``kt`` issues tile ``kt+stages-1`` into the buffer that tile ``kt-1`` used
  (an empty commit past the last tile keeps one group per step), computes, and before the
  next tile's first slice waits for it (``cp_async_wait pending(stages-2)``) and meets the
  block at the step's one barrier -- which also tells every thread that the buffer the
  next step refills has been read. ``stages - 1`` k-tiles are in flight.

With ``split_k > 1`` (``split_k.py``) the grid has ``split_k`` blocks per output tile,
``spatial(batch, M / block_m, N / block_n, split_k)``: on either path a block walks only
its split's k-tiles, and the last block of a tile to finish adds the splits' partial sums
(published through a workspace) in split order before the epilogue.

Each operand travels one of four ways, named in the kernel's ``tm.params``
(``copy_a``/``copy_b``; the copies are ``simt_copies.py``):

* ``cp16``: an operand stored contiguous along its outer dimension (B as ``K x N``, A
  transposed) whose extent there is a multiple of 4 floats: 16-byte ``cp.async`` chunks of
  4 floats, consecutive threads on consecutive chunks of a k row (``auto_map`` over the
  chunk grid), landing in the same order in the shared tile;
* ``cp4``: any other copyable operand (A as ``M x K``, B as ``N x K``, the convolution's
  weights and its im2col matrix): one 4-byte ``cp.async`` per element. A k-contiguous
  operand is transposed on the way: the lanes of a warp take 8 consecutive k (a 32-byte
  sector of global memory) of 4 consecutive rows, ``repeat * spatial(threads / 8, 8)``;
* ``gather``: an operand a fused prologue computes (or an f16/bf16 one read widened, or
  any f64 one): its elements are loaded with ``tm.load`` into registers where the copies
  are issued and stored into the buffer after the step's arithmetic (register staging);
* ``ldg``: the register path's loads (``stages = 1``).

A copy past M, N or K is a zero-filling ``cp_async ... zfill_unless %inside`` whose source
indices are clamped to 0, as is an im2col element in the convolution's padding: it reads
nothing and lands zeros at the same wait.

**Bank conflicts.** Fragment loads read along m (n) within one k row: a warp reads at most
32 consecutive words of one row (lanes sharing a row index broadcast), whatever the row
padding. Stores into a tile that is contiguous along m (n) in global memory write
consecutive words (4-byte) or consecutive 16-byte chunks (cp16: a quarter warp writes
128 contiguous bytes, or whole rows of 16 or 8 floats back to back), so those tiles are
not padded. A k-contiguous operand is transposed by the stores: the 32 lanes write words
``k * S + r`` for 8 k and 4 rows r, with S the padded row; in the pipeline every such tile
is padded by 4 floats (``S = block + 4 ≡ 4 mod 8``: 8 k x 4 rows hit 32 distinct banks, and
rows stay 16-byte aligned); the register path keeps its ``32 / block_k`` padding for
``auto_map``'s spatial extents.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import DictionaryAttr, Float32Type, IntegerAttr, MemRefType, StringAttr, i64
from xdsl.ir import Attribute, SSAValue

from tmlir.dialects import tm
from tmlir.gpu_limits import WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.layout import DataLayout, row_major
from tmlir.mapping import repeat, spatial
from tmlir.schedules.gemm import GemmOperands, MatmulProblem
from tmlir.schedules.simt_copies import PipelineCopy, TileLoad, copy_kind
from tmlir.schedules.split_k import add_scratch

if TYPE_CHECKING:
    from tmlir.schedules.matmul_simt import MatmulSimtParams

BlockOperands = Callable[[IRBuilder, Sequence[Index]], GemmOperands]


def simt_gemm(kernel: tm.KernelOp, problem: MatmulProblem, params: MatmulSimtParams,
              block_operands: BlockOperands, block_names: Sequence[str] = ("batch", "tile_m", "tile_n"),
              element: Attribute = Float32Type(), *, wait: bool = True) -> None:
    """Fill `kernel` (grid and block from `params`) with the GEMM of `problem`'s M, N, K
    and batch (see the module docstring), and add ``stages``, ``split_k`` and how each
    operand travels (``copy_a``, ``copy_b``) to its ``tm.params``. With ``split_k > 1`` the
    kernel gets split-K's scratch arguments (workspace, counters: ``split_k.py``), last.

    `block_operands(b, batch_coords)` is called once inside the block's mapping with the
    block's batch coordinates; what it returns reads A (``M x K``, contiguous along k unless
    ``problem.transpose_lhs``), B (``K x N``, contiguous along n unless ``problem.transpose_rhs``)
    and writes C. Tiles, fragments and accumulators hold `element` (the type the operands
    are computed in: ``f32``, or ``f64``). `wait=False` leaves out the pipeline's
    ``cp_async_wait``s (a planted race, for tests)."""
    if params.stages > 1:  # as tc_gemm: ptxas plans for one resident block, not for registers
        kernel.attributes["tm.min_blocks_per_sm"] = IntegerAttr(1, 64)
    engine = _SimtGemm(IRBuilder.at_end(kernel.body.block), problem, params, element)
    engine.workspace, engine.counters = add_scratch(kernel, engine.split, params.acc_type(element))
    kinds = engine.build(block_operands, block_names, wait)
    params_attr = kernel.attributes.get("tm.params")
    values = dict(params_attr.data) if isinstance(params_attr, DictionaryAttr) else {}
    added = {"stages": IntegerAttr(params.stages, i64), "split_k": IntegerAttr(params.split_k, i64),
             "copy_a": StringAttr(kinds[0]), "copy_b": StringAttr(kinds[1])}
    keys = list(values)  # the pipeline's parameters after the serial ones (..., thread_n, stages)
    at = keys.index("stages") + 1 if "stages" in keys else len(keys)
    ordered = {**{k: values[k] for k in keys[:at]}, **added, **{k: values[k] for k in keys[at:]}}
    kernel.attributes["tm.params"] = DictionaryAttr(ordered)


class _SimtGemm:
    """Builds one kernel body: the builder, the buffers and the block's coordinates."""

    def __init__(self, b: IRBuilder, problem: MatmulProblem, params: MatmulSimtParams,
                 element: Attribute) -> None:
        self.b, self.p, self.P, self.element = b, problem, params, element
        self.k_tiles = params.k_tiles(problem)
        self.split = params.split(problem)
        self.workspace: SSAValue | None = None
        self.counters: SSAValue | None = None

    def alloc(self, scope: str, shape: tuple[int, ...], name: str, pad: int = 0) -> SSAValue:
        layout: DataLayout | None = row_major(*shape, pad=pad) if pad else None
        return self.b.insert(tm.AllocOp(scope, MemRefType(self.element, list(shape)), layout), name).results[0]

    def build(self, block_operands: BlockOperands, block_names: Sequence[str], wait: bool) -> tuple[str, str]:
        """The whole body; returns the copy kinds of A and B."""
        b, p, P = self.b, self.p, self.P
        bid = b.insert(tm.BlockIdOp(), "bid").results[0]
        self.tid = tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
        warp, lane = b.div(tid, WARP_SIZE, "warp"), b.rem(tid, WARP_SIZE, "lane")
        pad_a, pad_b = P.smem_pads(p)
        buffers = max(2, P.stages)
        self.a_smem = self.alloc("shared", (buffers, P.block_k, P.block_m), "a_smem", pad_a)
        self.b_smem = self.alloc("shared", (buffers, P.block_k, P.block_n), "b_smem", pad_b)
        self.a_frag = self.alloc("register", (2, P.thread_m), "a_frag")
        self.b_frag = self.alloc("register", (2, P.thread_n), "b_frag")
        if P.stages == 1:  # the register path's prefetch registers, as they always were
            a_load = TileLoad(P.block_m, P.block_k, p.transpose_lhs, P.threads)
            b_load = TileLoad(P.block_n, P.block_k, not p.transpose_rhs, P.threads)
            a_ldg = self.alloc("register", (a_load.per_thread,), "a_ldg")
            b_ldg = self.alloc("register", (b_load.per_thread,), "b_ldg")
        self.acc = self.alloc("register", (P.thread_m, P.thread_n), "acc")
        splits = (P.split_k,) if P.split_k > 1 else ()  # block (tile, split): split fastest
        with (
            b.for_task(spatial(*P.tile_grid(p), *splits), bid,
                       [*block_names, *(["split"] if splits else [])]) as (bb, tile_m, tile_n, *split),
            b.for_task(spatial(*P.block_warps), warp, ["wi", "wj"]) as (self.wi, self.wj),
            b.for_task(spatial(*P.lanes), lane, ["li", "lj"]) as (self.li, self.lj),
        ):
            ops = block_operands(b, b.unravel(bb, p.batch_shape, in_range=True))
            assert ops.a.k_major != p.transpose_lhs and ops.b.k_major == p.transpose_rhs, "operand layouts"
            self.row0 = b.mul(tile_m, P.block_m, "row0")
            self.col0 = b.mul(tile_n, P.block_n, "col0")
            zero = b.constant(0.0, self.element)
            with b.for_task(repeat(P.thread_m, P.thread_n), None, ["i", "j"]) as (i, j):
                b.store(zero, self.acc, [i, j])
            # This block's k-tiles: [k_first, k_first + k_count) of its split (all of K for one).
            split_index = split[0] if split else 0
            self.k_first, self.k_count = self.split.k_range(b, split_index)
            if P.stages == 1:
                self.register_path(ops, a_load, b_load, a_ldg, b_ldg)
                kinds = ("ldg", "ldg")
            else:
                kinds = self.pipeline(ops, wait)
            tile = b.div(bid, P.split_k, "tile")  # block = tile * split_k + split
            with self.split.last_block(b, self.acc, tid, tile, split_index, self.workspace, self.counters):
                self.epilogue(ops)
        return kinds

    # ---- the compute: shared -> fragments -> FMAs -------------------------------------------
    def tile_row(self, oi: Index, ii: Index) -> Index:  # spatial * repeat * spatial * repeat
        b, P = self.b, self.P
        return b.add(b.mul(b.add(b.mul(b.add(b.mul(self.wi, P.warp_outer[0]), oi), P.lanes[0]),
                                 self.li), P.thread_inner[0]), ii)

    def tile_col(self, oj: Index, ij: Index) -> Index:
        b, P = self.b, self.P
        return b.add(b.mul(b.add(b.mul(b.add(b.mul(self.wj, P.warp_outer[1]), oj), P.lanes[1]),
                                 self.lj), P.thread_inner[1]), ij)

    def shared_to_fragments(self, stage: Index, kk: Index, slot: Index) -> None:
        b, P = self.b, self.P
        with b.for_task(repeat(P.warp_outer[0], P.thread_inner[0]), None, ["oi", "ii"]) as (oi, ii):
            f = b.add(b.mul(oi, P.thread_inner[0]), ii)
            b.store(b.load(self.a_smem, [stage, kk, self.tile_row(oi, ii)]), self.a_frag, [slot, f])
        with b.for_task(repeat(P.warp_outer[1], P.thread_inner[1]), None, ["oj", "ij"]) as (oj, ij):
            f = b.add(b.mul(oj, P.thread_inner[1]), ij)
            b.store(b.load(self.b_smem, [stage, kk, self.tile_col(oj, ij)]), self.b_frag, [slot, f])

    def multiply_accumulate(self, slot: Index) -> None:
        b, P = self.b, self.P
        with b.for_task(repeat(P.thread_m, P.thread_n), None, ["i", "j"]) as (i, j):
            prod = b.fop(arith.MulfOp, b.load(self.a_frag, [slot, i], name="a"),
                         b.load(self.b_frag, [slot, j], name="b"))
            b.store(b.fop(arith.AddfOp, b.load(self.acc, [i, j]), prod), self.acc, [i, j])

    def tile_slices(self, stage: Index) -> None:
        """Slices 0 .. block_k-2 of the tile in `stage` (slice 0 is already in slot 0): each
        reads the next slice's fragments, then multiplies its own."""
        b = self.b
        with b.loop(0, self.P.block_k - 1, unroll=True, name="kk") as kk:
            next_kk = b.add(kk, 1, "next_kk")
            self.shared_to_fragments(stage, next_kk, b.rem(next_kk, 2, "next_slot"))
            self.multiply_accumulate(b.rem(kk, 2, "slot"))

    # ---- stages = 1: the register path -------------------------------------------------------
    def register_path(self, ops: GemmOperands, a_load: TileLoad, b_load: TileLoad,
                      a_ldg: SSAValue, b_ldg: SSAValue) -> None:
        """Two shared buffers, the next k-tile prefetched into registers (module docstring)."""
        b, P, tid = self.b, self.P, self.tid
        k_first, k_count = self.k_first, self.k_count

        def global_to_registers(k_tile: Index) -> None:  # the split's k-tile k_tile
            k0 = b.mul(b.add(k_first, k_tile), P.block_k, "k0")
            a_load.to_registers(b, ops.a.load, a_ldg, tid, self.row0, k0)
            b_load.to_registers(b, ops.b.load, b_ldg, tid, self.col0, k0)

        def registers_to_shared(stage: Index) -> None:
            a_load.to_shared(b, a_ldg, self.a_smem, stage, tid)
            b_load.to_shared(b, b_ldg, self.b_smem, stage, tid)

        # Prologue: k-tile 0 into shared stage 0, its first slice into fragment stage 0.
        global_to_registers(0)
        registers_to_shared(0)
        b.insert(tm.BarrierOp())
        self.shared_to_fragments(0, 0, 0)

        with b.loop(0, self.split.steps, name="kt") as kt, self.split.step_guard(b, kt, k_count):
            stage = b.rem(kt, 2, "stage")
            next_kt = b.add(kt, 1, "next_kt")
            has_next = b.lt(next_kt, k_count, "has_next")
            with b.if_(has_next):  # prefetch: issued before this tile's arithmetic
                global_to_registers(next_kt)
            self.tile_slices(stage)
            with b.if_(has_next):  # uniform over the block, so the barrier is legal here
                next_stage = b.rem(next_kt, 2, "next_stage")
                registers_to_shared(next_stage)
                b.insert(tm.BarrierOp())
                self.shared_to_fragments(next_stage, 0, 0)
            self.multiply_accumulate((P.block_k - 1) % 2)

    # ---- stages >= 2: the cp.async pipeline ---------------------------------------------------
    def pipeline(self, ops: GemmOperands, wait: bool) -> tuple[str, str]:
        """``stages`` shared buffers filled by cp.async (module docstring); returns the copy
        kinds of A and B."""
        b, p, P = self.b, self.p, self.P
        S = P.stages
        copies = [PipelineCopy(copy_kind(op, S, self.element), op, smem, outer, extent, origin, P)
                  for op, smem, outer, extent, origin in ((ops.a, self.a_smem, P.block_m, p.m, self.row0),
                                                          (ops.b, self.b_smem, P.block_n, p.n, self.col0))]
        staged = [c for c in copies if c.kind == "gather"]
        for c, name in zip(copies, ("a_ldg", "b_ldg")):
            if c.kind == "gather":
                c.registers = self.alloc("register", (c.per_thread,), name)

        k_first, k_count = self.k_first, self.k_count
        fewest = self.k_tiles // P.split_k  # k-tiles of the shortest split

        def issue(k_tile: Index, stage: Index, to_registers: bool) -> None:  # the split's k-tile k_tile
            k0 = b.mul(b.add(k_first, k_tile), P.block_k, "k0")
            for c in copies:
                c.issue(b, self.tid, k0, p.k, stage, to_registers)

        # Prologue: tiles 0 .. S-2 in flight, one commit each (empty past the split's last tile).
        for s in range(S - 1):
            if s < fewest:
                issue(s, s, to_registers=False)
            elif s < self.split.steps:  # only the longer splits have this tile
                with b.if_(b.lt(s, k_count)):
                    issue(s, s, to_registers=False)
            b.insert(tm.CpAsyncCommitOp())
        if wait:
            b.insert(tm.CpAsyncWaitOp(S - 2))
        b.insert(tm.BarrierOp())
        self.shared_to_fragments(0, 0, 0)

        with b.loop(0, self.split.steps, name="kt") as kt, self.split.step_guard(b, kt, k_count):
            stage = b.rem(kt, S, "stage")
            issue_kt = b.add(kt, S - 1, "issue_kt")
            has_issue = b.lt(issue_kt, k_count, "has_issue")
            with b.if_(has_issue):  # into the buffer of tile kt-1, read before the last barrier
                issue(issue_kt, b.rem(issue_kt, S, "issue_stage"), to_registers=True)
            b.insert(tm.CpAsyncCommitOp())
            self.tile_slices(stage)
            if staged:  # gathered elements, loaded before the arithmetic, into their buffer
                with b.if_(has_issue):
                    issue_stage = b.rem(issue_kt, S, "issue_stage")
                    for c in staged:
                        c.registers_to_shared(b, self.tid, issue_stage)
            next_kt = b.add(kt, 1, "next_kt")
            with b.if_(b.lt(next_kt, k_count, "has_next")):  # uniform: the barrier is legal
                if wait:  # tile kt+1 has landed (this thread's copies)
                    b.insert(tm.CpAsyncWaitOp(S - 2))
                b.insert(tm.BarrierOp())  # ... everybody's, and tile kt has been read
                self.shared_to_fragments(b.rem(next_kt, S, "next_stage"), 0, 0)
            self.multiply_accumulate((P.block_k - 1) % 2)
        return copies[0].kind, copies[1].kind

    # ---- the epilogue --------------------------------------------------------------------------
    def epilogue(self, ops: GemmOperands) -> None:
        """Each accumulator to its place in C: the caller's `store_c` scales, adds a bias,
        guards where tiles overhang (a separate step, so that another reduction -- split-K
        partial sums -- can take the accumulators instead)."""
        b, P = self.b, self.P
        with (
            b.for_task(repeat(*P.warp_outer), None, ["oi", "oj"]) as (oi, oj),
            b.for_task(repeat(*P.thread_inner), None, ["ii", "ij"]) as (ii, ij),
        ):
            row = b.add(self.row0, self.tile_row(oi, ii), "row")
            col = b.add(self.col0, self.tile_col(oj, ij), "col")
            value = b.load(self.acc, [b.add(b.mul(oi, P.thread_inner[0]), ii),
                                      b.add(b.mul(oj, P.thread_inner[1]), ij)], name="sum")
            ops.store_c(row, col, value)
