"""The recurrence of LSTM, GRU and RNN layers: one kernel that loops over time on chip.

``graph.recurrence`` gets the input projection ``X · Wᵀ`` of every step precomputed (one
``graph.matmul``); what is left is sequential in time. One thread block runs one batch
row in one direction for the whole sequence, its hidden state ``h`` in shared memory
(two halves, read and written in turns) and the LSTM's cell state ``c`` in registers::

    blocks   spatial(B, D)                        on block_id  -> (n, d)
    units    repeat(U) * spatial(T)               on thread_id -> hidden unit j = u*T + t
    steps    for s in 0 .. len(n) - 1             (t = s forward, len - 1 - s reverse)
      gates     every unit j: acc_g = sum_k rt[d, k, g*H + j] * h[s % 2][k] for the G
                gates, then the cell on xw[t, n, d, g*H + j] + biases + acc_g;
                h[(s + 1) % 2][j] and Y[t] stored
      barrier   (the new h is whole, and nobody reads the old one any more)

so a step costs ``G * H`` multiply-adds per unit and one barrier, and nothing leaves the
chip but the step's ``Y[t]``. ``R`` arrives transposed (``rt``), so the threads of a warp
read consecutive addresses at each ``k``. A thread owns ``U = ceil(H / T)`` units, whose
``c`` it keeps in a register array indexed by ``u``; the template unrolls ``repeat(U)``
itself, so the indices are constants. A GRU without ``linear_before_reset`` needs
``r ⊙ h`` of every unit before its candidate state, so its step has one more phase
(``r ⊙ h`` and ``z`` to shared buffers, barrier). With ``sequence_lens`` the step loop
stops at the row's length (block-uniform, so the barriers inside it are too), then the
remaining steps of ``Y`` are stored as zeros and the state stays frozen (an empty row's
final state is zeros), as onnxruntime does. Biases and peepholes are read per step
(L1-resident); ``R`` is read from L2 each step: this template is for the small and
medium hidden sizes of sequence models, where a block per row and direction keeps
``B * D`` blocks busy; very large ``H`` would want ``R`` split across a cluster. ``H`` is
bounded by the static shared memory (48 KiB: ``2 * H`` floats, ``4 * H`` for the
two-phase GRU).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, IndexType, MemRefType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.gpu_limits import MAX_STATIC_SHARED_BYTES, MAX_THREADS_PER_BLOCK, WARP_SIZE
from tmlir.ir.builder import Index, IRBuilder
from tmlir.mapping import UNROLL_LIMIT, spatial
from tmlir.schedules.common import f32_memref, kernel_attributes, name_args
from tmlir.schedules.elementwise_functions import UNARY
from tmlir.schedules.registry import schedules

#: The most threads a block gets by default (more hidden units: several per thread).
MAX_THREADS = 256

#: The gate functions and clip, as the elementwise ops compute them.
_ACTIVATIONS = {"sigmoid": UNARY[graph.SigmoidOp], "tanh": UNARY[graph.TanhOp],
                "relu": UNARY[graph.ReluOp]}
_CLIP = UNARY[graph.ClipOp]


@dataclass(frozen=True)
class RecurrenceProblem:
    """One ``graph.recurrence``: the cell, its sizes and which optional operands it has
    (``lens_type``: the element type of ``sequence_lens``, None without it)."""

    cell: str
    steps: int
    batch: int
    directions: int
    hidden: int
    reverse: bool = False
    """A single direction that runs backwards (ONNX ``direction = "reverse"``)."""
    activations: tuple[str, ...] = ()
    batch_major: bool = False
    clip: float | None = None
    input_forget: bool = False
    linear_before_reset: bool = False
    bias: bool = False
    lens_type: Attribute | None = None
    initial_h: bool = False
    initial_c: bool = False
    peepholes: bool = False

    @classmethod
    def of(cls, op: graph.RecurrenceOp) -> RecurrenceProblem:
        s, b, d, h = op.sizes()
        lens = op.sequence_lens
        return cls(op.cell_name, s, b, d, h, op.direction.data == "reverse", op.activation_names,
                   op.batch_major is not None, op.clip_value, op.input_forget is not None,
                   op.linear_before_reset is not None, op.bias is not None,
                   lens.type.get_element_type() if lens is not None else None,  # type: ignore[attr-defined]
                   op.initial_h is not None, op.initial_c is not None, op.peepholes is not None)

    @property
    def gates(self) -> int:
        return len(graph.CELL_GATES[self.cell])

    @property
    def state_shape(self) -> tuple[int, int, int]:
        b, d, h = self.batch, self.directions, self.hidden
        return (b, d, h) if self.batch_major else (d, b, h)

    def projection_index(self, t: Index, n: Index, d: Index, row: Index) -> list[Index]:
        return [n, t, d, row] if self.batch_major else [t, n, d, row]

    def y_index(self, t: Index, n: Index, d: Index, j: Index) -> list[Index]:
        return [n, t, d, j] if self.batch_major else [t, d, n, j]

    def state_index(self, n: Index, d: Index, j: Index) -> list[Index]:
        return [n, d, j] if self.batch_major else [d, n, j]


@dataclass(frozen=True)
class RecurrenceParams:
    """Threads per block (whole warps); each thread owns ``ceil(H / threads)`` units."""

    threads: int = WARP_SIZE

    def __post_init__(self) -> None:
        if self.threads < WARP_SIZE or self.threads % WARP_SIZE or self.threads > 1024:
            raise ValueError(f"threads must be whole warps, 32 to 1024, got {self.threads}")

    @classmethod
    def default_for(cls, problem: RecurrenceProblem) -> RecurrenceParams:
        """A thread per hidden unit, up to `MAX_THREADS`; 1024 threads where a thread would
        own more than ``UNROLL_LIMIT`` units (the template emits each unit's code once)."""
        threads = min(MAX_THREADS, WARP_SIZE * math.ceil(problem.hidden / WARP_SIZE))
        if math.ceil(problem.hidden / threads) > UNROLL_LIMIT:
            threads = MAX_THREADS_PER_BLOCK
        return cls(threads)


class _RecurrenceSchedule:
    """The kernel being built: its arguments, shared state and per-unit loops."""

    def __init__(self, name: str, p: RecurrenceProblem, P: RecurrenceParams) -> None:
        shared = 4 * p.hidden * (4 if p.cell == "gru" and not p.linear_before_reset else 2)
        if shared > MAX_STATIC_SHARED_BYTES:
            raise ValueError(f"hidden size {p.hidden} is too large for the recurrence template "
                             f"(its state needs {shared} bytes of shared memory, at most "
                             f"{MAX_STATIC_SHARED_BYTES})")
        self.p, self.T = p, P.threads
        self.U = math.ceil(p.hidden / P.threads)
        g, h, d = p.gates, p.hidden, p.directions
        projection = (p.batch, p.steps, d, g * h) if p.batch_major else (p.steps, p.batch, d, g * h)
        args: list[tuple[str, Sequence[int], Attribute]] = [
            ("xw", projection, Float32Type()), ("rt", (d, h, g * h), Float32Type())]
        optional = [("bias", p.bias, (d, 2 * g * h)), ("lens", p.lens_type is not None, (p.batch,)),
                    ("h0", p.initial_h, p.state_shape), ("c0", p.initial_c, p.state_shape),
                    ("peepholes", p.peepholes, (d, 3 * h))]
        args += [(n, shape, p.lens_type if n == "lens" else Float32Type())
                 for n, present, shape in optional if present]
        y = (p.batch, p.steps, d, h) if p.batch_major else (p.steps, d, p.batch, h)
        args += [("y", y, Float32Type()), ("y_h", p.state_shape, Float32Type())]
        args += [("y_c", p.state_shape, Float32Type())] if p.cell == "lstm" else []
        direction = "bidirectional" if d == 2 else "reverse" if p.reverse else "forward"
        self.kernel = tm.KernelOp(
            name, [MemRefType(t, shape) for _, shape, t in args], p.batch * d, self.T,
            kernel_attributes("recurrence", {
                "cell": p.cell, "direction": direction, "steps": p.steps, "hidden": h,
                "threads": self.T, "units_per_thread": self.U}))
        name_args(self.kernel, [n for n, _, _ in args])
        self.args = dict(zip((n for n, _, _ in args), self.kernel.args))
        b = self.b = IRBuilder.at_end(self.kernel.body.block)
        self.bid = b.insert(tm.BlockIdOp(), "bid").results[0]
        self.tid = b.insert(tm.ThreadIdOp(), "tid").results[0]
        self.h = b.insert(tm.AllocOp("shared", f32_memref((2, h))), "h").results[0]
        self.acc = b.insert(tm.AllocOp("register", f32_memref((g,))), "acc").results[0]
        self.backward: SSAValue | None = None
        """Whether the block runs backwards in time (set for two directions)."""
        self.cur: Index = 0
        """Which half of ``h`` holds the state this step (the step's parity)."""

    def register(self, name: str) -> SSAValue:
        """A register array of one value per unit of the thread."""
        return self.b.insert(tm.AllocOp("register", f32_memref((self.U,))), name).results[0]

    def units(self) -> Iterator[tuple[int, Index]]:
        """The thread's hidden units ``j = u * T + t``, for ``for u, j in s.units():``: the
        ``repeat(U)`` is unrolled here, one ``spatial(T)`` task per ``u``, so that the
        register arrays indexed by ``u`` have constant indices (``#pragma unroll`` is only
        a hint, and a register array with a variable index lives in local memory). The
        body runs only for ``j < H``."""
        b, p = self.b, self.p
        for u in range(self.U):
            with b.for_task(spatial(self.T), self.tid, ["lane"]) as (lane,):
                j = b.add(u * self.T, lane, "j")
                inside = b.lt(j, p.hidden, "in_hidden") if (u + 1) * self.T > p.hidden else None
                with b.if_(inside) if inside is not None else nullcontext():
                    yield u, j

    def matvec(self, gates: Sequence[int], source: SSAValue, prefix: Sequence[Index], d: Index,
               j: Index) -> list[SSAValue]:
        """``sum_k R[d, g*H + j, k] * source[*prefix, k]`` for each gate g in `gates`, with
        one pass over ``source`` (shared memory). ``R`` is read transposed,
        ``rt[d, k, g*H + j]``: at each ``k`` the threads of a warp read consecutive
        addresses."""
        b, h = self.b, self.p.hidden
        for slot, _ in enumerate(gates):
            b.store(b.f32(0.0), self.acc, [slot])
        with b.loop(0, h, unroll=h <= 8, name="k") as k:
            hk = b.load(source, [*prefix, k], name="hk")
            for slot, g in enumerate(gates):
                w = b.load(self.args["rt"], [d, k, b.add(g * h, j)], name="w")
                total = b.fop(arith.AddfOp, b.load(self.acc, [slot]), b.fop(arith.MulfOp, w, hk))
                b.store(total, self.acc, [slot])
        return [b.load(self.acc, [slot], name=f"acc{g}") for slot, g in enumerate(gates)]

    def input(self, g: int, t: Index, n: Index, d: Index, j: Index, recurrent_bias: bool = True
              ) -> SSAValue:
        """``xw[t, n, d, g*H + j] + (Wb[g] + Rb[g])``: the gate's input part. The biases are
        summed first: the same in every step, they are one register after the compiler
        hoists them out of the time loop."""
        b, p = self.b, self.p
        row = b.add(g * p.hidden, j)
        x = b.load(self.args["xw"], p.projection_index(t, n, d, row), name="x")
        if not p.bias:
            return x
        bias = self.bias(g, d, j, recurrent=False)
        if recurrent_bias:
            bias = b.fop(arith.AddfOp, bias, self.bias(g, d, j, recurrent=True), name="b")
        return b.fop(arith.AddfOp, x, bias)

    def bias(self, g: int, d: Index, j: Index, recurrent: bool) -> SSAValue:
        """``Wb`` (or with `recurrent` ``Rb``) of gate g, unit j."""
        b, p = self.b, self.p
        offset = ((p.gates if recurrent else 0) + g) * p.hidden
        return b.load(self.args["bias"], [d, b.add(offset, j)], name="rb" if recurrent else "wb")

    def activate(self, which: int, x: SSAValue, clip: bool = True) -> SSAValue:
        """Activation number `which` of the cell of ``clip(x)`` (of `x` without `clip`); with
        two directions that differ in it, both, selected by `backward`."""
        b, p = self.b, self.p
        if p.clip is not None and clip:
            x = _CLIP(b, x, {"min": -p.clip, "max": p.clip})
        per = len(p.activations) // p.directions
        names = [p.activations[dd * per + which] for dd in range(p.directions)]
        results = [_ACTIVATIONS[n](b, x, {}) for n in dict.fromkeys(names)]
        if len(results) == 1:
            return results[0]
        assert self.backward is not None
        return b.fop(arith.SelectOp, self.backward, results[1], results[0])


def _sum(b: IRBuilder, *terms: SSAValue) -> SSAValue:
    """``terms[0] + terms[1] + ...``."""
    total = terms[0]
    for term in terms[1:]:
        total = b.fop(arith.AddfOp, total, term)
    return total


def _mul(b: IRBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.fop(arith.MulfOp, x, y)


def recurrence_kernel(name: str, p: RecurrenceProblem,
                      params: RecurrenceParams | None = None) -> tm.KernelOp:
    """The kernel ``(xw, rt, [bias], [lens], [h0], [c0], [peepholes], y, y_h[, y_c])`` of
    one ``graph.recurrence`` (the module docstring gives the schedule)."""
    s = _RecurrenceSchedule(name, p, params or RecurrenceParams.default_for(p))
    b, args = s.b, s.args
    lstm, gru = p.cell == "lstm", p.cell == "gru"
    c = s.register("c") if lstm else None
    two_phase = gru and not p.linear_before_reset
    if two_phase:  # r ⊙ h for all units, and each unit's z until the second phase
        rh = b.insert(tm.AllocOp("shared", f32_memref((p.hidden,))), "rh").results[0]
        z_keep = b.insert(tm.AllocOp("shared", f32_memref((p.hidden,))), "z").results[0]
    with b.for_task(spatial(p.batch, p.directions), s.bid, ["n", "d"]) as (n, d):
        s.backward = b.eq(d, 1, "backward") if p.directions == 2 else None
        for u, j in s.units():
            at = p.state_index(n, d, j)
            b.store(b.load(args["h0"], at, name="h_init") if p.initial_h else b.f32(0.0), s.h, [0, j])
            if c is not None:
                b.store(b.load(args["c0"], at, name="c_init") if p.initial_c else b.f32(0.0), c, [u])
        b.insert(tm.BarrierOp())
        length = _length(b, args["lens"], n, p.steps) if p.lens_type is not None else p.steps
        with b.loop(0, length, name="step") as step:
            t = _time(b, p, step, length, s.backward)
            s.cur = b.rem(step, 2, "cur")  # h[cur] is read this step, h[next] written
            after = b.sub(1, s.cur, "next")
            for u, j in s.units():
                if lstm:
                    h_new = _lstm_step(s, c, u, t, n, d, j)
                elif p.cell == "rnn":
                    (acc,) = s.matvec([0], s.h, [s.cur], d, j)
                    h_new = s.activate(0, b.fop(arith.AddfOp, s.input(0, t, n, d, j), acc))
                elif two_phase:
                    acc_z, acc_r = s.matvec([0, 1], s.h, [s.cur], d, j)
                    z = s.activate(0, b.fop(arith.AddfOp, s.input(0, t, n, d, j), acc_z))
                    r = s.activate(0, b.fop(arith.AddfOp, s.input(1, t, n, d, j), acc_r))
                    b.store(z, z_keep, [j])
                    b.store(_mul(b, r, b.load(s.h, [s.cur, j], name="h_prev")), rh, [j])
                else:
                    h_new = _gru_linear_before_reset(s, b.load(s.h, [s.cur, j], name="h_prev"),
                                                     t, n, d, j)
                if not two_phase:
                    b.store(h_new, s.h, [after, j])
                    b.store(h_new, args["y"], p.y_index(t, n, d, j))
            if two_phase:
                b.insert(tm.BarrierOp())  # r ⊙ h is whole
                for u, j in s.units():
                    (acc_h,) = s.matvec([2], rh, [], d, j)
                    candidate = s.activate(1, b.fop(arith.AddfOp, s.input(2, t, n, d, j), acc_h))
                    z = b.load(z_keep, [j], name="z")
                    h_prev = b.load(s.h, [s.cur, j], name="h_prev")
                    h_new = _gru_blend(b, z, candidate, h_prev)
                    b.store(h_new, s.h, [after, j])
                    b.store(h_new, args["y"], p.y_index(t, n, d, j))
            b.insert(tm.BarrierOp())  # h[next] is whole, and nobody reads h[cur] any more
        if p.lens_type is not None:  # steps past the row's length: zeros, state frozen
            with b.loop(length, p.steps, name="pad") as step:
                for _, j in s.units():
                    b.store(b.f32(0.0), args["y"], p.y_index(step, n, d, j))
        # an empty row's final state is zeros, not its initial state (as onnxruntime)
        empty = b.eq(length, 0, "empty") if p.lens_type is not None else None
        last = b.rem(length, 2, "last")
        for u, j in s.units():
            at = p.state_index(n, d, j)
            for value, out in ((b.load(s.h, [last, j], name="h_last"), "y_h"),
                               *([(b.load(c, [u], name="c_last"), "y_c")] if c is not None else [])):
                if empty is not None:
                    value = b.fop(arith.SelectOp, empty, b.f32(0.0), value)
                b.store(value, args[out], at)
    return s.kernel


def _length(b: IRBuilder, lens: SSAValue, n: Index, steps: int) -> SSAValue:
    """``sequence_lens[n]`` clamped to ``[0, steps]``, as an index."""
    raw = b.load(lens, [n], name="len_raw")
    zero, most = b.constant(0, raw.type), b.constant(steps, raw.type)
    below = b.insert(arith.CmpiOp(raw, zero, "slt")).results[0]
    above = b.insert(arith.CmpiOp(raw, most, "sgt")).results[0]
    clamped = b.fop(arith.SelectOp, below, zero, b.fop(arith.SelectOp, above, most, raw))
    return b.insert(arith.IndexCastOp(clamped, IndexType()), "len").results[0]


def _time(b: IRBuilder, p: RecurrenceProblem, step: SSAValue, length: Index,
          backward: SSAValue | None) -> Index:
    """The time index of `step`: ``step`` forward, ``len - 1 - step`` backward (where the
    flag `backward` holds, when there are two directions)."""
    if p.directions == 1 and not p.reverse:
        return step
    back = b.sub(b.sub(length, 1), step, "t_back")
    if backward is None:
        return back
    return b.fop(arith.SelectOp, backward, b.value(back), step, name="t")


def _lstm_step(s: _RecurrenceSchedule, c: SSAValue, u: Index, t: Index, n: Index, d: Index,
               j: Index) -> SSAValue:
    """The LSTM cell (gates i, o, f, c): updates ``c[u]``, returns the new ``h``."""
    b, p = s.b, s.p
    acc_i, acc_o, acc_f, acc_c = s.matvec([0, 1, 2, 3], s.h, [s.cur], d, j)
    c_prev = b.load(c, [u], name="c_prev")

    def peephole(k: int, state: SSAValue) -> list[SSAValue]:
        if not p.peepholes:
            return []
        weight = b.load(s.args["peepholes"], [d, b.add(k * p.hidden, j)], name="pw")
        return [_mul(b, weight, state)]

    i = s.activate(0, _sum(b, s.input(0, t, n, d, j), acc_i, *peephole(0, c_prev)))
    if p.input_forget:
        f = b.fop(arith.SubfOp, b.f32(1.0), i, name="f")
    else:
        f = s.activate(0, _sum(b, s.input(2, t, n, d, j), acc_f, *peephole(2, c_prev)))
    candidate = s.activate(1, _sum(b, s.input(3, t, n, d, j), acc_c))
    c_new = _sum(b, _mul(b, f, c_prev), _mul(b, i, candidate))
    b.store(c_new, c, [u])
    o = s.activate(0, _sum(b, s.input(1, t, n, d, j), acc_o, *peephole(1, c_new)))
    return _mul(b, o, s.activate(2, c_new, clip=False))  # onnxruntime: c is not clipped


def _gru_linear_before_reset(s: _RecurrenceSchedule, h_prev: SSAValue, t: Index, n: Index,
                             d: Index, j: Index) -> SSAValue:
    """The GRU with ``linear_before_reset``: ``g(xh + Wbh + r ⊙ (Rh·h + Rbh))``."""
    b, p = s.b, s.p
    acc_z, acc_r, acc_h = s.matvec([0, 1, 2], s.h, [s.cur], d, j)
    z = s.activate(0, b.fop(arith.AddfOp, s.input(0, t, n, d, j), acc_z))
    r = s.activate(0, b.fop(arith.AddfOp, s.input(1, t, n, d, j), acc_r))
    linear = b.fop(arith.AddfOp, acc_h, s.bias(2, d, j, recurrent=True)) if p.bias else acc_h
    x = s.input(2, t, n, d, j, recurrent_bias=False)
    candidate = s.activate(1, b.fop(arith.AddfOp, x, _mul(b, r, linear)))
    return _gru_blend(b, z, candidate, h_prev)


def _gru_blend(b: IRBuilder, z: SSAValue, candidate: SSAValue, h_prev: SSAValue) -> SSAValue:
    """``(1 - z) ⊙ candidate + z ⊙ h_prev``."""
    keep = b.fop(arith.SubfOp, b.f32(1.0), z)
    return _sum(b, _mul(b, keep, candidate), _mul(b, z, h_prev))


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


@schedules(graph.RecurrenceOp)
def recurrent_kernel(name: str, op: Operation) -> tm.KernelOp | None:
    """The kernel of a ``graph.recurrence``; None when it has no step or no batch row."""
    assert isinstance(op, graph.RecurrenceOp)
    problem = RecurrenceProblem.of(op)
    if 0 in (problem.steps, problem.batch, problem.hidden):
        return None
    return recurrence_kernel(name, problem)
