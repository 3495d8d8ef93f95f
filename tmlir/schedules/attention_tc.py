"""The ``attention_tc`` template: ``softmax(scale * q @ kᵀ + bias) @ v`` on tensor cores.

In: an `AttentionProblem` with f16 or bf16 q, k and v (``attention_tc_params.check_problem``:
D a multiple of 16, Dv of 8), `AttentionTcParams` and the operands a fused prologue
computes. Out: a ``tm.kernel`` ``(q, k, v, [bias,] out)`` (bias and out f32) computing the
attention as FlashAttention-2 does (Dao, 2023): the ``[Sq, Sk]`` scores live in mma
accumulators, the online softmax runs on them in registers, and P goes back into the
tensor cores without touching shared memory. Each block owns ``block_q`` query rows of
one batch element (one head), one warp per 16 rows::

    blocks   spatial(batch, ceil(Sq / block_q))     on block_id -> (bh, qt)
    warps    spatial(block_q / 16)                   on tid / 32 -> w: rows 16 w .. 16 w + 15
    lanes    g = lane / 4, t = lane % 4              (the mma fragments, ``mma_layouts``)

1. The query tile (``block_q x D``) is copied once into shared memory and loaded into the
   warp's A fragments (``ldmatrix .x4``, one per 16 columns of D), where it stays.
2. Key and value tiles of ``block_k`` rows go through a ``stages``-deep ``cp.async``
   pipeline into shared tiles (``tc_gemm``'s scheme: ``stages - 1`` tiles in flight, one
   commit per step, ``wait pending(stages - 2)`` and one barrier before each step). The
   key loop is unrolled by ``stages`` and each stage is a buffer of its own, so a step
   reads and fills tiles at addresses that do not change from round to round. Every tile's
   16-byte chunks are swizzled (``chunk_swizzle``'s XOR with the row) by the template's
   indices (`_Builder.column`), from the lane's part of the row: computed once per lane.
3. ``S = Q Kᵀ``: per 16 columns of D, ``ldmatrix .x2`` of each 8-key B fragment -- from a
   ``[key][d]`` tile (k as stored: an N x K operand) plainly, from a ``[d][key]`` tile
   (``k_transposed``) with ``.trans`` -- and ``mma.m16n8k16`` into ``s[nt]``.
4. Online softmax on the accumulators: lane ``(g, t)`` holds rows ``g`` and ``g + 8`` of
   its warp at keys ``8 nt + 2t, 8 nt + 2t + 1``; each score is scaled (f32), the bias is
   added, keys past ``Sk`` (and, causal, after the row) become ``-inf``; the row max is the
   lane's, then a ``shuffle xor`` 1 and 2 across the quad that shares the row; the running
   max ``m`` and the lane's share of the running sum ``l`` (summed over the quad only at
   the end) rescale with ``exp(m_old - m)``, and so do the output accumulators.
5. **P in registers.** The C fragment of n-tile ``nt`` holds ``P[g][8 nt + 2t + {0,1}]``
   and ``P[g + 8][...]``; the A fragment of the 16-key slice ``j`` wants
   ``{P[g][16 j + 2t + {0,1}]}, {P[g + 8][...]}, {P[g][16 j + 8 + 2t + {0,1}]}, {P[g + 8][...]}``:
   exactly the four accumulators of n-tile ``2j`` then those of ``2j + 1``, in order. So
   ``p_frag[j][e] = s[2j + e / 4][e % 4]``, rounded to f16/bf16 -- a register buffer of 8
   halves per fragment that the mma reads as 4 words (`p_half_source`; checked lane by lane
   against ``mma_layouts`` in the tests).
6. ``O += P V``: ``ldmatrix .x2.trans`` of each 8-column B fragment from the ``[key][c]``
   value tile, ``mma`` into ``o[dt]``.

At the end ``out = o / l`` (``l`` summed over the quad), 0 for a fully masked row with
``zero_masked_rows`` (NaN otherwise, as softmax); rows past ``Sq`` are not stored. A causal
block skips the key tiles after its last row, and a round past the last tile its steps
(``scf.if`` with ``tm.branch_weights``, for the cost report). An
operand that a prologue computes, or that ``cp.async`` cannot copy (a kᵀ with Sk not a
multiple of 8), is gathered instead: its elements read with ``tm.load`` and stored into the
same shared tile by the threads, right after the step's barrier. The output is written once
with ``tm.store``, so epilogues fuse; so do prologues on gathered operands and the bias.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager, nullcontext

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, IntegerAttr, IntegerType, MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.gpu_limits import CP_ASYNC_ARCH, WARP_SIZE, arch_number
from tmlir.ir.builder import Index, IRBuilder
from tmlir.layout import chunk_swizzle
from tmlir.mapping import repeat, spatial
from tmlir.schedules.attention_params import AttentionProblem, mask_score
from tmlir.schedules.attention_tc_params import (
    CHUNK,
    MMA_K,
    MMA_M,
    MMA_N,
    AttentionTcParams,
    check_problem,
    copy_kinds,
    covers,
    default_for,
    half_dtype,
)
from tmlir.schedules.common import broadcast_index, kernel_attributes, name_args, weighted_if

__all__ = ["AttentionTcParams", "attention_tc_kernel", "p_half_source", "takes"]

COPY_BYTES = 16


def p_half_source(e: int) -> tuple[int, int]:
    """Half `e` (0..7, register order) of the A fragment of a 16-key slice of P: (which of
    the slice's two 8-key n-tiles, which of its C accumulators) it is (module docstring, 5)."""
    return e // 4, e % 4


def attention_tc_kernel(name: str, problem: AttentionProblem, element: Attribute,
                        params: AttentionTcParams | None = None, *, arch: str | None = None,
                        gathered: Collection[int] = (), wait: bool = True) -> tm.KernelOp:
    """The kernel ``(q, k, v, [bias,] out)`` of `problem`, q, k, v of `element` (f16 or
    bf16), bias and out f32, with `params` (default: `default_for` on `arch`). `gathered`
    names the operands (0: q, 1: k, 2: v) a fused prologue computes: read with ``tm.load``.
    `wait=False` leaves out the key loop's ``cp_async_wait`` (a planted race, for tests).
    NoTemplate for a problem the template does not cover; ValueError for tiles that do not fit."""
    check_problem(problem, element)
    dtype = half_dtype(element)
    gathered = frozenset(gathered)
    params = params or default_for(problem, dtype, arch, gathered)
    params.check(problem)
    p = problem
    f32 = Float32Type()
    types = [MemRefType(element, list(s)) for s in (p.q_shape, p.k_shape, p.v_shape)]
    if p.bias_shape is not None:
        types.append(MemRefType(f32, list(p.bias_shape or (1,))))  # rank 0: one element
    types.append(MemRefType(f32, list(p.out_shape)))
    kernel = tm.KernelOp(name, types, params.blocks(p), params.threads, kernel_attributes(
        "attention_tc", params.describe(p, dtype, copy_kinds(p, gathered))))
    kernel.attributes["tm.min_blocks_per_sm"] = IntegerAttr(1, 64)  # as tc_gemm: ptxas may use 255
    name_args(kernel, ["q", "k", "v", *(["bias"] if p.bias_shape is not None else []), "out"])
    _Builder(kernel, p, params, element, gathered, wait).build()
    return kernel


class _Builder:
    """Builds one kernel body: the builder, the tiles and fragments, the block's place."""

    def __init__(self, kernel: tm.KernelOp, problem: AttentionProblem, params: AttentionTcParams,
                 element: Attribute, gathered: frozenset[int], wait: bool) -> None:
        self.p, self.P, self.element, self.wait = problem, params, element, wait
        self.b = IRBuilder.at_end(kernel.body.block)
        args = list(kernel.args)
        self.q, self.k, self.v = args[:3]
        self.bias = args[3] if problem.bias_shape is not None else None
        self.out = args[-1]
        self.gather = {i: kind == "gather" for i, kind in enumerate(copy_kinds(problem, gathered).values())}
        self.nt, self.dt = params.block_k // MMA_N, problem.dv // MMA_N  # n-tiles of S and of O
        # without a bias (and a positive scale), the scale applies after the max: the row max
        # of the raw scores times the scale is that of the scaled ones, and ``exp(s scale - m)``
        # takes one FFMA where ``s scale`` then ``- m`` took two instructions
        self.late_scale = problem.bias_shape is None and problem.scale > 0 and problem.scale != 1.0
        self.d_slices, self.k_slices = problem.d // MMA_K, params.block_k // MMA_K

    def alloc(self, scope: str, element: Attribute, shape: Sequence[int], name: str) -> SSAValue:
        return self.b.insert(tm.AllocOp(scope, MemRefType(element, list(shape))), name).results[0]

    def shared(self, shape: Sequence[int], name: str) -> SSAValue:
        """A tile of halves, row-major: the template swizzles its columns itself (`column`)."""
        return self.alloc("shared", self.element, shape, name)

    def column(self, row: Index, chunk: Index, cols: int, within: Index = 0) -> Index:
        """The column of element `within` of 16-byte chunk `chunk` in a row of a tile of
        `cols` halves: the chunk XOR-ed with bits of the row as ``chunk_swizzle`` gives them
        (the 8 rows one ldmatrix phase reads at one chunk land in 8 bank groups). `row` may
        be any value congruent to the row modulo 8 -- a lane's part of it, which makes the
        XOR the same for every tile and step, computed once (a swizzle in the buffer's
        layout would XOR the whole offset, step by step)."""
        b = self.b
        swizzle = chunk_swizzle(cols, 2)
        if swizzle is None:
            return b.add(b.mul(chunk, CHUNK), within)
        chunks_log2 = (cols // CHUNK).bit_length() - 1
        low = b.shr(row, swizzle.shift - chunks_log2) if swizzle.shift > chunks_log2 else row
        return b.add(b.mul(b.xor(chunk, b.and_(low, (1 << swizzle.bits) - 1)), CHUNK), within)

    def build(self) -> None:
        b, p, P = self.b, self.p, self.P
        f32, word = Float32Type(), IntegerType(32)
        bid = b.insert(tm.BlockIdOp(), "bid").results[0]
        self.tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
        warp, self.lane = b.div(self.tid, WARP_SIZE, "warp"), b.rem(self.tid, WARP_SIZE, "lane")
        k_tile = (p.d, P.block_k) if p.k_transposed else (P.block_k, p.d)
        self.q_smem = self.shared((P.block_q, p.d), "q_smem")
        # one buffer per stage: a step's tiles are then at constant addresses (docstring, 2)
        self.k_smem = [self.shared(k_tile, f"k_smem{s}") for s in range(P.stages)]
        self.v_smem = [self.shared((P.block_k, p.dv), f"v_smem{s}") for s in range(P.stages)]
        self.q_frag = self.alloc("register", word, (self.d_slices, 4), "q_frag")
        self.k_frag = self.alloc("register", word, (self.nt, 2), "k_frag")
        self.v_frag = self.alloc("register", word, (self.dt, 2), "v_frag")
        self.s = self.alloc("register", f32, (self.nt, 4), "s")
        self.p_frag = self.alloc("register", self.element, (self.k_slices, 8), "p_frag")
        self.o = self.alloc("register", f32, (self.dt, 4), "o")
        self.m = self.alloc("register", f32, (2,), "m")
        self.l = self.alloc("register", f32, (2,), "l")
        self.stat = self.alloc("register", f32, (2,), "stat")
        with (b.for_task(spatial(p.batch, P.q_tiles(p)), bid, ["bh", "qt"]) as (bh, qt),
              b.for_task(spatial(P.warps), warp, ["w"]) as (w,)):
            self.batch = b.unravel(bh, p.batch_shape, in_range=True)
            self.q0 = b.mul(qt, P.block_q, "q0")
            self.warp_row = b.mul(w, MMA_M, "warp_row")
            self.g = b.div(self.lane, 4, "g")
            self.t2 = b.mul(b.rem(self.lane, 4), 2, "t2")
            self.row16 = b.rem(self.lane, 16, "l16")
            self.needed = self.tiles_needed()
            self.prologue()
            rounds = math.ceil(P.k_tiles(p) / P.stages)
            with b.loop(0, rounds * P.stages, P.stages, name="kt0") as kt0:
                for slot in range(P.stages):  # unrolled by stages: each step's buffer is a constant
                    kt = b.add(kt0, slot, "kt")
                    self.k0 = b.mul(kt, P.block_k, "k0")
                    with self.tile_taken(kt, slot):
                        self.step(kt, slot)
            self.store_output()

    # ---- the pipeline --------------------------------------------------------------------
    def tiles_needed(self) -> Index:
        """Key tiles this block walks: all, or (causal) up to its last row's."""
        b, p, P = self.b, self.p, self.P
        n = P.k_tiles(p)
        if not p.causal:
            return n
        last = b.div(b.add(self.q0, P.block_q + P.block_k - 1), P.block_k, "last_tile")
        fewer = b.lt(last, n)
        return b.insert(arith.SelectOp(fewer, b.value(last), b.value(n)), "tiles").results[0]

    def tile_taken(self, kt: Index, slot: int):
        """Step `slot` of a round walks its tile only if there is one: past the last key
        tile (when the rounds overhang it) or, causal, past the block's last row there is
        none. Uniform over the block, so the barriers inside are legal; the branch weights
        count the blocks' tiles taken at this slot against the rounds."""
        b, p, P = self.b, self.p, self.P
        n = P.k_tiles(p)
        overhang = n % P.stages != 0 and slot >= n % P.stages
        if not p.causal and not overhang:
            return nullcontext()
        rounds = math.ceil(n / P.stages)
        taken = sum(1 for qt in range(P.q_tiles(p)) for r in range(rounds)
                    if r * P.stages + slot < P.tiles_needed(p, qt))
        total = P.q_tiles(p) * rounds
        condition = b.lt(kt, self.needed, "tile_needed")
        return weighted_if(b, condition, taken, total - taken)

    def prologue(self) -> None:
        """The query tile, then tiles ``0 .. stages - 2`` of k and v, one commit each; once
        the query tile is in, its A fragments; the running statistics and accumulators."""
        b, p, P = self.b, self.p, self.P
        self.fill(0, self.q_smem, (P.block_q, p.d), self.q0, p.sq % P.block_q != 0)
        b.insert(tm.CpAsyncCommitOp())
        for s in range(P.stages - 1):
            if s < P.k_tiles(p):
                with b.if_(b.lt(s, self.needed)) if p.causal and s else nullcontext():
                    self.issue_kv(s, s)
            b.insert(tm.CpAsyncCommitOp())
        b.insert(tm.CpAsyncWaitOp(P.stages - 1))  # the query tile (the oldest group) is in
        b.insert(tm.BarrierOp())
        with b.for_task(repeat(self.d_slices), None, ["kk"]) as (kk,):
            col = self.column(self.row16, b.add(b.mul(kk, 2), b.div(self.lane, 16)), p.d)
            row = b.add(self.warp_row, self.row16, "q_row")
            b.insert(tm.LdmatrixOp(4, False, self.q_frag, self.q_smem, [b.value(row), b.value(col)], [kk]))
        with b.for_task(repeat(2), None, ["h"]) as (h,):
            b.store(b.f32(-math.inf), self.m, [h])
            b.store(b.f32(0.0), self.l, [h])
        with b.for_task(repeat(self.dt, 4), None, ["dt", "r"]) as (dt, r):
            b.store(b.f32(0.0), self.o, [dt, r])

    def step(self, kt: Index, stage: int) -> None:
        """Key tile `kt`, in buffer `stage`: its copies have landed (wait, barrier); the
        tile ``stages - 1`` ahead is issued into the buffer the previous step read; then
        scores, softmax and ``P V``."""
        b, P = self.b, self.P
        if self.wait:
            b.insert(tm.CpAsyncWaitOp(P.stages - 2))
        b.insert(tm.BarrierOp())
        ahead = b.add(kt, P.stages - 1, "next_kt")
        with b.if_(b.lt(ahead, self.needed, "has_next")):
            self.issue_kv(ahead, (stage + P.stages - 1) % P.stages)
        b.insert(tm.CpAsyncCommitOp())
        self.scores(stage)
        self.online_softmax()
        self.accumulate(stage)

    def issue_kv(self, tile: Index, stage: int) -> None:
        """Key and value tile `tile` into buffers `stage`."""
        p, P = self.p, self.P
        k0 = self.b.mul(tile, P.block_k, "k0")
        partial = p.sk % P.block_k != 0
        if p.k_transposed:  # kᵀ [D, Sk]: rows d, columns keys
            self.fill(1, self.k_smem[stage], (p.d, P.block_k), k0, partial, keys_along_rows=False)
        else:
            self.fill(1, self.k_smem[stage], (P.block_k, p.d), k0, partial)
        self.fill(2, self.v_smem[stage], (P.block_k, p.dv), k0, partial)

    # ---- global -> shared -------------------------------------------------------------------
    @contextmanager
    def spread(self, rows: int, cols: int, names: Sequence[str]) -> Iterator[tuple[Index, Index]]:
        """Every ``(r, c)`` of a ``rows x cols`` grid over the block's threads, consecutive
        threads on consecutive ``c``: the thread's ``i``-th is element ``i threads + tid``
        (``repeat`` unrolled -- all of a thread's loads in flight --, then ``spatial``;
        guarded where they do not divide)."""
        b, threads = self.b, self.P.threads
        total = rows * cols
        with (b.for_task(repeat(math.ceil(total / threads), unroll=[True]), None, ["i"]) as (i,),
              b.for_task(spatial(threads), self.tid, ["t"]) as (t,)):
            e = b.add(b.mul(i, threads), t, "e")
            with b.if_(b.lt(e, total, "in_tile")) if total % threads else nullcontext():
                r, c = b.unravel(e, (rows, cols), in_range=True)
                for value, name in zip((r, c), names):
                    if isinstance(value, SSAValue) and value.name_hint is None:
                        value.name_hint = name
                yield r, c

    def fill(self, operand: int, smem: SSAValue, tile: tuple[int, int],
             origin: Index, partial: bool, keys_along_rows: bool = True) -> None:
        """``smem[r][c]`` = operand's element at rows ``origin + r`` (the tile's rows
        are queries or keys; with not `keys_along_rows`, its columns are the keys, from
        ``origin + c``), 0 past the operand's end (`partial`: the tile may overhang it).
        A dense operand: one 16-byte ``cp.async`` per chunk, zero-filling past the end with
        its source index clamped; a gathered one: ``tm.load`` (0 past the end) and a store.
        Each thread's share is unrolled, so all its loads are in flight together (the tile
        rule keeps a gathered key or value tile to 16 elements a thread)."""
        b, p = self.b, self.p
        buffer = (self.q, self.k, self.v)[operand]
        shape = (p.q_shape, p.k_shape, p.v_shape)[operand]
        extent = p.sq if operand == 0 else p.sk
        lead = [*broadcast_index(self.batch, p.batch_shape, shape[:-2])]
        rows, cols = tile
        if self.gather[operand]:
            guard = [len(shape) - (2 if keys_along_rows else 1)] if partial else []
            with self.spread(rows, cols, ("r", "c")) as (r, c):
                index = (b.add(origin, r, "g_row"), c) if keys_along_rows else (r, b.add(origin, c, "g_col"))
                value = b.load(buffer, [*lead, *index], guard, name="x")
                b.store(value, smem, [r, self.column(r, b.div(c, CHUNK), cols, b.rem(c, CHUNK))])
            return
        with self.spread(rows, cols // CHUNK, ("r", "cc")) as (r, cc):
            c = b.mul(cc, CHUNK, "c")
            outer = b.add(origin, r if keys_along_rows else c, "g_row" if keys_along_rows else "g_col")
            inside = b.lt(outer, extent, "inside") if partial else None
            if inside is not None:
                outer = b.insert(arith.SelectOp(inside, b.value(outer), b.value(0)), "clamped").results[0]
            index = (outer, c) if keys_along_rows else (r, outer)
            at = self.column(r, cc, cols)
            b.insert(tm.CpAsyncOp(COPY_BYTES, smem, [b.value(r), b.value(at)], buffer,
                                  [b.value(i) for i in (*lead, *index)], inside))

    # ---- scores, softmax, P V -----------------------------------------------------------------
    def scores(self, stage: int) -> None:
        """``s[nt] = Q Kᵀ`` for the tile's 8-key n-tiles, one mma per n-tile and 16 of D."""
        b, p, P = self.b, self.p, self.P
        with b.for_task(repeat(self.nt, 4), None, ["nt", "r"]) as (nt, r):
            b.store(b.f32(0.0), self.s, [nt, r])
        with b.loop(0, self.d_slices, unroll=True, name="kk") as kk:
            k16 = b.mul(kk, MMA_K, "k16")
            with b.for_task(repeat(self.nt), None, ["nt"]) as (nt,):
                if p.k_transposed:  # [d][key]: the K x N operand, transposed by ldmatrix
                    at: list[Index] = [b.add(k16, self.row16, "k_d"), self.column(self.row16, nt, P.block_k)]
                    trans = True
                else:  # [key][d]: the N x K operand; lanes 0-7 at d k16, 8-15 at k16 + 8
                    chunk = b.add(b.mul(kk, 2), b.div(self.row16, 8))
                    key = b.add(b.mul(nt, MMA_N), b.rem(self.row16, 8), "k_key")
                    at = [key, self.column(self.row16, chunk, p.d)]
                    trans = False
                b.insert(tm.LdmatrixOp(2, trans, self.k_frag, self.k_smem[stage], [b.value(i) for i in at], [nt]))
            with b.for_task(repeat(self.nt), None, ["nt"]) as (nt,):
                b.insert(tm.MmaOp("m16n8k16", half_dtype(self.element), self.s, self.q_frag, self.k_frag,
                                  self.s, [nt], [kk], [nt], [nt]))

    def row(self, h: Index) -> Index:
        """The query row of the lane's accumulators `h` (0: row g, 1: row g + 8)."""
        b = self.b
        return b.add(b.add(self.q0, self.warp_row), b.add(self.g, b.mul(h, 8)), "row")

    def masked_score(self, h: Index, nt: Index, e: Index) -> SSAValue:
        """Accumulator ``s[nt][2h + e]`` scaled (unless `late_scale`), plus the bias;
        ``-inf`` for a key past ``Sk`` or (causal) after the row."""
        b, p, P = self.b, self.p, self.P
        row = self.row(h)
        key = b.add(self.k0, b.add(b.mul(nt, MMA_N), b.add(self.t2, e)), "key")
        x = b.load(self.s, [nt, b.add(b.mul(h, 2), e)], name="x")
        if p.scale != 1.0 and not self.late_scale:
            x = b.fop(arith.MulfOp, x, b.f32(p.scale), name="x")
        return mask_score(b, p, (P.block_q, P.block_k), self.bias, self.batch, row, key, x)

    def quad(self, value: SSAValue, op_type: type[Operation], name: str) -> SSAValue:
        """`value` combined over the 4 lanes of the quad (``shuffle xor`` 1, then 2)."""
        b = self.b
        for mask in (1, 2):
            other = b.insert(tm.ShuffleOp(value, "xor", mask), f"{name}_xor{mask}").results[0]
            value = b.fop(op_type, value, other, name=name)
        return value

    def online_softmax(self) -> None:
        """``s`` becomes ``exp(x - m)`` of the masked scores; ``m``, the lane's ``l`` and the
        output accumulators are rescaled by ``exp(m_old - m)``."""
        b = self.b
        neg_inf = b.f32(-math.inf)
        with b.for_task(repeat(2), None, ["h"]) as (h,):
            b.store(neg_inf, self.stat, [h])
            with b.for_task(repeat(self.nt, 2), None, ["nt", "e"]) as (nt, e):
                x = self.masked_score(h, nt, e)
                b.store(x, self.s, [nt, b.add(b.mul(h, 2), e)])
                b.store(b.fop(arith.MaxnumfOp, b.load(self.stat, [h]), x), self.stat, [h])
            tile_max = self.quad(b.load(self.stat, [h], name="tile_max"), arith.MaxnumfOp, "tile_max")
            if self.late_scale:
                tile_max = b.fop(arith.MulfOp, tile_max, b.f32(self.p.scale), name="tile_max")
            m_old = b.load(self.m, [h], name="m_old")
            m_new = b.fop(arith.MaxnumfOp, m_old, tile_max, name="m_new")
            empty = b.insert(arith.CmpfOp(m_new, neg_inf, "oeq"), "all_masked").results[0]
            shift = b.fop(arith.SelectOp, empty, b.f32(0.0), m_new, name="shift")
            alpha = b.fop(xmath.ExpOp, b.fop(arith.SubfOp, m_old, shift), name="alpha")
            b.store(m_new, self.m, [h])
            b.store(b.f32(0.0), self.stat, [h])
            with b.for_task(repeat(self.nt, 2), None, ["nt", "e"]) as (nt, e):
                r = b.add(b.mul(h, 2), e)
                x = b.load(self.s, [nt, r], name="x")
                if self.late_scale:
                    x = b.fop(arith.MulfOp, x, b.f32(self.p.scale))
                prob = b.fop(xmath.ExpOp, b.fop(arith.SubfOp, x, shift), name="prob")
                b.store(prob, self.s, [nt, r])
                b.store(b.fop(arith.AddfOp, b.load(self.stat, [h]), prob), self.stat, [h])
            l_new = b.fop(arith.AddfOp, b.fop(arith.MulfOp, b.load(self.l, [h]), alpha), b.load(self.stat, [h]),
                          name="l_new")
            b.store(l_new, self.l, [h])
            with b.for_task(repeat(self.dt, 2), None, ["dt", "e"]) as (dt, e):
                r = b.add(b.mul(h, 2), e)
                b.store(b.fop(arith.MulfOp, b.load(self.o, [dt, r]), alpha), self.o, [dt, r])

    def accumulate(self, stage: int) -> None:
        """``o += P V``: P's A fragments from the accumulators (`p_half_source`), V's B
        fragments by ``ldmatrix .x2.trans`` from the ``[key][c]`` tile."""
        b = self.b
        for j in range(self.k_slices):
            for e in range(8):
                pair, register = p_half_source(e)
                b.store(b.load(self.s, [2 * j + pair, register], name="p"), self.p_frag, [j, e])
        with b.loop(0, self.k_slices, unroll=True, name="j") as j:
            key = b.add(b.mul(j, MMA_K), self.row16, "v_key")
            with b.for_task(repeat(self.dt), None, ["dt"]) as (dt,):
                col = self.column(self.row16, dt, self.p.dv)
                b.insert(tm.LdmatrixOp(2, True, self.v_frag, self.v_smem[stage], [b.value(key), b.value(col)], [dt]))
            with b.for_task(repeat(self.dt), None, ["dt"]) as (dt,):
                b.insert(tm.MmaOp("m16n8k16", half_dtype(self.element), self.o, self.p_frag, self.v_frag,
                                  self.o, [dt], [j], [dt], [dt]))

    # ---- the result ------------------------------------------------------------------------
    def store_output(self) -> None:
        """``out[row][col] = o / l`` with ``l`` summed over the quad (0 for a fully masked
        row with ``zero_masked_rows``); rows past ``Sq`` are not stored."""
        b, p, P = self.b, self.p, self.P
        rank = len(p.out_shape)
        guard = [rank - 2] if p.sq % P.block_q else []
        with b.for_task(repeat(2), None, ["h"]) as (h,):
            total = self.quad(b.load(self.l, [h], name="total"), arith.AddfOp, "total")
            inverse = b.fop(arith.DivfOp, b.f32(1.0), total, name="inv_total")
            seen = b.insert(arith.CmpfOp(total, b.f32(0.0), "ogt"), "row_seen").results[0] \
                if p.zero_masked_rows else None
            row = self.row(h)
            with b.for_task(repeat(self.dt, 2), None, ["dt", "e"]) as (dt, e):
                col = b.add(b.mul(dt, MMA_N), b.add(self.t2, e), "col")
                value = b.fop(arith.MulfOp, b.load(self.o, [dt, b.add(b.mul(h, 2), e)]), inverse, name="o")
                if seen is not None:
                    value = b.fop(arith.SelectOp, seen, value, b.f32(0.0), name="o")
                b.store(value, self.out, [*self.batch, row, col], guard)


def takes(op: graph.AttentionOp, arch: str) -> bool:
    """Whether ``attention_tc`` builds `op` on `arch`: sm_80 or newer, q, k, v f16 or bf16
    and a shape it covers with tiles that fit (``attention_tc_params.covers``)."""
    element = op.q.type.get_element_type()  # type: ignore[attr-defined]
    return arch_number(arch) >= CP_ASYNC_ARCH and covers(AttentionProblem.of(op), element, arch)
