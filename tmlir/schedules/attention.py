"""The ``attention`` template: ``softmax(scale * q @ kᵀ + bias) @ v`` in one kernel.

In: an `AttentionProblem` (``graph.attention``'s shapes and attributes) and
`AttentionParams`. Out: a ``tm.kernel`` ``(q, k, v, [bias,] out)`` computing the attention
with the online softmax of FlashAttention (Dao et al., 2022) on CUDA cores, in f32: the
``[Sq, Sk]`` score matrix never leaves the chip. Each block owns ``block_q`` query rows of
one batch element (one head)::

    blocks   spatial(batch, ceil(Sq / block_q))                 on block_id -> (bh, qt)
    threads  spatial(block_q / rows_per_thread, threads_per_row) on thread_id -> (g, t)

so the ``threads_per_row`` lanes ``t`` of row group ``g`` (part of one warp) share its
``rows_per_thread`` query rows. The block's query tile is read once, scaled, into shared
memory (``q_smem[d][row]``); then the block walks the keys in tiles of ``block_k``:

1. barrier; the key and value tiles are copied into shared memory by all threads
   (``k_smem[d][key]``, ``v_smem[key][c]``; ``repeat * spatial`` over the tile, the
   operand's contiguous dim fastest), barrier;
2. scores: thread ``(g, t)`` computes its rows against the keys ``jj * threads_per_row + t``
   (``repeat(rows_per_thread, block_k / threads_per_row)`` in registers, a loop over D);
   the bias is added, keys past ``Sk`` (and, causal, after the row) become ``-inf``;
3. online softmax: the tile's row max (a butterfly of ``tm.shuffle xor`` over the row's
   lanes) updates the running max ``m``; ``p = exp(s - m)`` goes to ``p_smem``; the running
   sum ``l`` and the accumulators are rescaled by ``exp(m_old - m)`` and ``l`` adds the
   tile's row sum (another butterfly); barrier;
4. ``acc += p @ v_tile``: thread ``(g, t)`` owns the output columns ``c * threads_per_row +
   t`` of its rows (``repeat(rows_per_thread, ceil(Dv / threads_per_row))``).

At the end ``out = acc / l``. A row whose running max is still ``-inf`` (every key masked
so far) shifts by 0 instead, so ``exp`` gives 0 and no NaN; a fully masked row ends with
``l = 0``: NaN (``0 / 0``), as softmax gives it, or 0 with ``zero_masked_rows``. With
``causal`` a block skips the key tiles after its last row (an ``scf.if`` per tile whose
``tm.branch_weights`` give the cost report the fraction of tiles taken). Operands are read
with ``tm.load`` only and the output written once with ``tm.store``, so fused prologues
(the heads' reshape and transpose, a bias add, the slices of a merged QKV projection) and
epilogues (the transpose and reshape after it) need no code here; f16 and bf16 tensors
are read widened and written rounded (``half_arguments``), the math stays f32.

The tile sizes follow a rule (`AttentionParams.default_for`, ``attention_params.py``), not a
tuning space.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, MemRefType
from xdsl.ir import Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import repeat, spatial
from tmlir.schedules import attention_tc
from tmlir.schedules.attention_params import AttentionParams, AttentionProblem, mask_score, supports
from tmlir.schedules.common import (
    broadcast_index,
    f32_memref,
    kernel_attributes,
    name_args,
    weighted_if,
)
from tmlir.schedules.registry import BuildTarget, NoTemplate, schedules

__all__ = ["AttentionParams", "AttentionProblem", "attention_kernel", "attention_op_kernel", "supports"]


def attention_kernel(name: str, problem: AttentionProblem, params: AttentionParams | None = None) -> tm.KernelOp:
    """A kernel ``(q, k, v, [bias,] out)`` of `problem` (f32 buffers) with `params` (default:
    `AttentionParams.default_for`); ValueError for tiles that do not fit."""
    if params is None:
        params = AttentionParams.default_for(problem)
        if params is None:
            raise NoTemplate(f"no attention tiles fit a head size of {problem.d} (values {problem.dv})")
    params.check(problem)
    p = problem
    shapes = [p.q_shape, p.k_shape, p.v_shape, *([p.bias_shape] if p.bias_shape is not None else []), p.out_shape]
    kernel = tm.KernelOp(name, [f32_memref(s or (1,)) for s in shapes], params.blocks(p), params.threads,
                         kernel_attributes("attention", params.describe(p)))
    name_args(kernel, ["q", "k", "v", *(["bias"] if p.bias_shape is not None else []), "out"])
    _AttentionBuilder(kernel, p, params).build()
    return kernel


@schedules(graph.AttentionOp, target=True)
def attention_op_kernel(name: str, op: Operation, target: BuildTarget | None = None) -> tm.KernelOp:
    """The kernel of a ``graph.attention``: ``attention_tc`` where it takes the op on the
    target's arch (f16/bf16 q, k, v, sm_80+, D a multiple of 16 and Dv of 8; its operands
    with a fused prologue gathered), else this template."""
    assert isinstance(op, graph.AttentionOp)
    problem = AttentionProblem.of(op)
    if target is not None and attention_tc.takes(op, target.arch):
        element = op.q.type.get_element_type()  # type: ignore[attr-defined]
        return attention_tc.attention_tc_kernel(name, problem, element, arch=target.arch,
                                                gathered=target.prologue)
    return attention_kernel(name, problem)


class _AttentionBuilder:
    """Builds one kernel body: the builder, the tiles and registers, the block's place."""

    def __init__(self, kernel: tm.KernelOp, problem: AttentionProblem, params: AttentionParams) -> None:
        self.kernel, self.p, self.P = kernel, problem, params
        self.b = IRBuilder.at_end(kernel.body.block)
        args = list(kernel.args)
        self.q, self.k, self.v = args[:3]
        self.bias = args[3] if problem.bias_shape is not None else None
        self.out = args[-1]
        self.rd = params.cols_per_thread(problem)

    def alloc(self, scope: str, shape: Sequence[int], name: str) -> SSAValue:
        return self.b.insert(tm.AllocOp(scope, MemRefType(Float32Type(), list(shape))), name).results[0]

    def build(self) -> None:
        b, p, P = self.b, self.p, self.P
        rq, rk, rd, tr = P.rows_per_thread, P.keys_per_thread, self.rd, P.threads_per_row
        bid = b.insert(tm.BlockIdOp(), "bid").results[0]
        self.tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
        self.q_smem = self.alloc("shared", (p.d, P.block_q + 1), "q_smem")
        self.k_smem = self.alloc("shared", (p.d, P.block_k + 1), "k_smem")
        self.v_smem = self.alloc("shared", (P.block_k, rd * tr), "v_smem")
        self.p_smem = self.alloc("shared", (P.block_q, P.block_k + 1), "p_smem")
        self.acc = self.alloc("register", (rq, rd), "acc")
        self.s = self.alloc("register", (rq, rk), "s")
        self.m = self.alloc("register", (rq,), "m")
        self.l = self.alloc("register", (rq,), "l")
        self.stat = self.alloc("register", (rq,), "stat")
        self.q_frag = self.alloc("register", (rq,), "q_frag")
        self.k_frag = self.alloc("register", (rk,), "k_frag")
        self.v_frag = self.alloc("register", (rd,), "v_frag")
        with (b.for_task(spatial(p.batch, P.q_tiles(p)), bid, ["bh", "qt"]) as (bh, qt),
              b.for_task(spatial(P.row_groups, tr), self.tid, ["g", "t"]) as (self.g, self.t)):
            self.batch = b.unravel(bh, p.batch_shape, in_range=True)
            self.q0 = b.mul(qt, P.block_q, "q0")
            self.load_q_tile()
            with b.for_task(repeat(rq), None, ["i"]) as (i,):
                b.store(b.f32(-math.inf), self.m, [i])
                b.store(b.f32(0.0), self.l, [i])
                with b.for_task(repeat(rd), None, ["c"]) as (c,):
                    b.store(b.f32(0.0), self.acc, [i, c])
            with b.loop(0, P.k_tiles(p), name="kt") as kt:
                self.k0 = b.mul(kt, P.block_k, "k0")
                with self.tile_taken():
                    self.key_tile()
            self.store_output()

    # ---- global -> shared -------------------------------------------------------------------
    @contextmanager
    def cooperative(self, rows: int, cols: int, names: Sequence[str]) -> Iterator[tuple[Index, Index]]:
        """Every element ``(r, c)`` of a ``rows x cols`` tile, spread over the block's threads
        (``repeat * spatial``: consecutive threads on consecutive ``c``)."""
        b, threads = self.b, self.P.threads
        total = rows * cols
        per = math.ceil(total / threads)
        mapping = spatial(threads) if per == 1 else repeat(per) * spatial(threads)
        with (b.for_task(mapping, self.tid, ["e"]) as (e,),
              b.if_(b.lt(e, total, "in_tile")) if total % threads else nullcontext()):
            r, c = b.unravel(e, (rows, cols), in_range=True)
            for value, name in zip((r, c), names):
                if isinstance(value, SSAValue) and value.name_hint is None:
                    value.name_hint = name
            yield r, c

    def index(self, shape: Sequence[int], last_two: tuple[Index, Index]) -> list[Index]:
        """An operand's index: its batch dims broadcast from the block's, then `last_two`."""
        return [*broadcast_index(self.batch, self.p.batch_shape, shape[:-2]), *last_two]

    def load_q_tile(self) -> None:
        """``q_smem[d][r] = scale * q[q0 + r, d]`` (0 past ``Sq``)."""
        b, p, P = self.b, self.p, self.P
        guard = [len(p.q_shape) - 2] if p.sq % P.block_q else []
        with self.cooperative(P.block_q, p.d, ("r", "d")) as (r, d):
            value = b.load(self.q, self.index(p.q_shape, (b.add(self.q0, r, "row"), d)), guard, name="q")
            if p.scale != 1.0:
                value = b.fop(arith.MulfOp, value, b.f32(p.scale))
            b.store(value, self.q_smem, [d, r])

    def load_kv_tiles(self) -> None:
        """``k_smem[d][j] = k[k0 + j, d]`` and ``v_smem[j][c] = v[k0 + j, c]`` (0 past the
        tensors: keys past ``Sk``, columns past ``Dv``)."""
        b, p, P = self.b, self.p, self.P
        partial = p.sk % P.block_k != 0
        rank = len(p.k_shape)
        if p.k_transposed:  # kᵀ [D, Sk]: consecutive keys are contiguous
            with self.cooperative(p.d, P.block_k, ("d", "j")) as (d, j):
                key = b.add(self.k0, j, "key")
                value = b.load(self.k, self.index(p.k_shape, (d, key)), [rank - 1] if partial else [], name="kv")
                b.store(value, self.k_smem, [d, j])
        else:
            with self.cooperative(P.block_k, p.d, ("j", "d")) as (j, d):
                key = b.add(self.k0, j, "key")
                value = b.load(self.k, self.index(p.k_shape, (key, d)), [rank - 2] if partial else [], name="kv")
                b.store(value, self.k_smem, [d, j])
        rank = len(p.v_shape)
        guard = [d for d, g in ((rank - 2, partial), (rank - 1, self.rd * P.threads_per_row != p.dv)) if g]
        with self.cooperative(P.block_k, self.rd * P.threads_per_row, ("j", "c")) as (j, c):
            value = b.load(self.v, self.index(p.v_shape, (b.add(self.k0, j, "key"), c)), guard, name="vv")
            b.store(value, self.v_smem, [j, c])

    # ---- one key tile ------------------------------------------------------------------------
    def tile_taken(self):
        """Causal: only the key tiles up to the block's last row (uniform over the block, so
        the barriers inside are legal)."""
        b, p, P = self.b, self.p, self.P
        if not p.causal:
            return nullcontext()
        taken = P.causal_tiles(p)
        total = P.k_tiles(p) * P.q_tiles(p)
        return weighted_if(b, b.lt(self.k0, b.add(self.q0, P.block_q), "tile_needed"), taken, total - taken)

    def key_tile(self) -> None:
        b = self.b
        b.insert(tm.BarrierOp())  # the previous tile's k, v and p are read
        self.load_kv_tiles()
        b.insert(tm.BarrierOp())
        self.scores()
        self.online_softmax()
        b.insert(tm.BarrierOp())  # p_smem written
        self.accumulate()

    def row(self, i: Index) -> Index:
        """The block's row (of ``block_q``) of the thread's `i`-th row."""
        return self.b.add(self.b.mul(self.g, self.P.rows_per_thread), i)

    def scores(self) -> None:
        """``s[i][jj]`` = the scaled dot products of the thread's rows and keys."""
        b, p, P = self.b, self.p, self.P
        rq, rk, tr = P.rows_per_thread, P.keys_per_thread, P.threads_per_row
        with b.for_task(repeat(rq, rk), None, ["i", "jj"]) as (i, jj):
            b.store(b.f32(0.0), self.s, [i, jj])
        with b.loop(0, p.d, name="d") as d:
            with b.for_task(repeat(rq), None, ["i"]) as (i,):
                b.store(b.load(self.q_smem, [d, self.row(i)]), self.q_frag, [i])
            with b.for_task(repeat(rk), None, ["jj"]) as (jj,):
                b.store(b.load(self.k_smem, [d, b.add(b.mul(jj, tr), self.t)]), self.k_frag, [jj])
            with b.for_task(repeat(rq, rk), None, ["i", "jj"]) as (i, jj):
                prod = b.fop(arith.MulfOp, b.load(self.q_frag, [i], name="qf"), b.load(self.k_frag, [jj], name="kf"))
                b.store(b.fop(arith.AddfOp, b.load(self.s, [i, jj]), prod), self.s, [i, jj])

    def masked_score(self, i: Index, jj: Index) -> SSAValue:
        """``s[i][jj]`` plus the bias, ``-inf`` for a key past ``Sk`` or (causal) after the row."""
        b, p, P = self.b, self.p, self.P
        row = b.add(self.q0, self.row(i), "row")
        key = b.add(self.k0, b.add(b.mul(jj, P.threads_per_row), self.t), "key")
        x = b.load(self.s, [i, jj], name="x")
        return mask_score(b, p, (P.block_q, P.block_k), self.bias, self.batch, row, key, x)

    def butterfly(self, value: SSAValue, op_type: type[Operation], name: str) -> SSAValue:
        """``value op= shuffle xor value, m`` for m = threads_per_row / 2, ..., 1: the row
        group's lanes all end with the combination of theirs."""
        b, mask = self.b, self.P.threads_per_row // 2
        while mask:
            other = b.insert(tm.ShuffleOp(value, "xor", mask), f"{name}_xor{mask}").results[0]
            value = b.fop(op_type, value, other, name=name)
            mask //= 2
        return value

    def online_softmax(self) -> None:
        """Update ``m``, ``l`` and the accumulators with this tile; ``p_smem`` gets ``exp(s - m)``."""
        b, P = self.b, self.P
        rk, tr = P.keys_per_thread, P.threads_per_row
        neg_inf = b.f32(-math.inf)
        with b.for_task(repeat(P.rows_per_thread), None, ["i"]) as (i,):
            b.store(neg_inf, self.stat, [i])
            with b.for_task(repeat(rk), None, ["jj"]) as (jj,):
                x = self.masked_score(i, jj)
                b.store(x, self.s, [i, jj])
                b.store(b.fop(arith.MaxnumfOp, b.load(self.stat, [i]), x), self.stat, [i])
            tile_max = self.butterfly(b.load(self.stat, [i], name="tile_max"), arith.MaxnumfOp, "tile_max")
            m_old = b.load(self.m, [i], name="m_old")
            m_new = b.fop(arith.MaxnumfOp, m_old, tile_max, name="m_new")
            empty = b.insert(arith.CmpfOp(m_new, neg_inf, "oeq"), "all_masked").results[0]
            shift = b.fop(arith.SelectOp, empty, b.f32(0.0), m_new, name="shift")
            alpha = b.fop(xmath.ExpOp, b.fop(arith.SubfOp, m_old, shift), name="alpha")
            b.store(b.f32(0.0), self.stat, [i])
            with b.for_task(repeat(rk), None, ["jj"]) as (jj,):
                prob = b.fop(xmath.ExpOp, b.fop(arith.SubfOp, b.load(self.s, [i, jj]), shift), name="prob")
                b.store(prob, self.p_smem, [self.row(i), b.add(b.mul(jj, tr), self.t)])
                b.store(b.fop(arith.AddfOp, b.load(self.stat, [i]), prob), self.stat, [i])
            tile_sum = self.butterfly(b.load(self.stat, [i], name="tile_sum"), arith.AddfOp, "tile_sum")
            l_new = b.fop(arith.AddfOp, b.fop(arith.MulfOp, b.load(self.l, [i]), alpha), tile_sum, name="l_new")
            b.store(l_new, self.l, [i])
            b.store(m_new, self.m, [i])
            with b.for_task(repeat(self.rd), None, ["c"]) as (c,):
                b.store(b.fop(arith.MulfOp, b.load(self.acc, [i, c]), alpha), self.acc, [i, c])

    def accumulate(self) -> None:
        """``acc[i][c] += p[row i][j] * v[j][col c]`` over the tile's keys."""
        b, P = self.b, self.P
        rq, rd, tr = P.rows_per_thread, self.rd, P.threads_per_row
        with b.loop(0, P.block_k, name="j") as j:
            with b.for_task(repeat(rq), None, ["i"]) as (i,):
                b.store(b.load(self.p_smem, [self.row(i), j]), self.stat, [i])
            with b.for_task(repeat(rd), None, ["c"]) as (c,):
                b.store(b.load(self.v_smem, [j, b.add(b.mul(c, tr), self.t)]), self.v_frag, [c])
            with b.for_task(repeat(rq, rd), None, ["i", "c"]) as (i, c):
                prod = b.fop(arith.MulfOp, b.load(self.stat, [i], name="pf"), b.load(self.v_frag, [c], name="vf"))
                b.store(b.fop(arith.AddfOp, b.load(self.acc, [i, c]), prod), self.acc, [i, c])

    # ---- the result ----------------------------------------------------------------------------
    def store_output(self) -> None:
        """``out[row][col] = acc / l`` (0 for a fully masked row with ``zero_masked_rows``)."""
        b, p, P = self.b, self.p, self.P
        rank = len(p.out_shape)
        guard = [d for d, g in ((rank - 2, p.sq % P.block_q), (rank - 1, self.rd * P.threads_per_row != p.dv)) if g]
        with b.for_task(repeat(P.rows_per_thread), None, ["i"]) as (i,):
            row = b.add(self.q0, self.row(i), "row")
            total = b.load(self.l, [i], name="total")
            inverse = b.fop(arith.DivfOp, b.f32(1.0), total, name="inv_total")
            seen = b.insert(arith.CmpfOp(total, b.f32(0.0), "ogt"), "row_seen").results[0] \
                if p.zero_masked_rows else None
            with b.for_task(repeat(self.rd), None, ["c"]) as (c,):
                col = b.add(b.mul(c, P.threads_per_row), self.t, "col")
                value = b.fop(arith.MulfOp, b.load(self.acc, [i, c]), inverse, name="o")
                if seen is not None:
                    value = b.fop(arith.SelectOp, seen, value, b.f32(0.0), name="o")
                b.store(value, self.out, [*self.batch, row, col], guard)
