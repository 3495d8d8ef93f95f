"""What the latency model needs of each GEMM-like template: the k-loop its blocks walk.

`kloop(template, params)` turns a kernel's template name and its header parameters (the
``tm.params`` dictionary every GEMM-like template writes: ``M``, ``N``, ``K``, the block and
thread tiles, ``block_k``, ``threads``, ``stages``, ``split_k``) into a `tmlir.latency.KLoop`:
serial steps per block, instructions one warp issues per step, bytes a block loads per step
and steps in flight. The cost report reads it from the IR; a template's default choice calls
it on candidates before any IR exists. A template without an entry here (or a hand-written
kernel) is estimated as a kernel without a k-loop.

**Tensor-core engine** (``matmul_tc``, ``conv2d_tc``): see `tc_kloop`; **small-M
template** (``matmul_gemv``): see `gemv_kloop`; **attention** (``attention``, its key loop):
see `attention_kloop`, and ``attention_tc``: `attention_tc_kloop`.

**SIMT GEMM, register prefetch** (``stages`` 1, the only kind before issue 27): per step
and thread ``thread_m * thread_n * block_k`` FFMAs, ``block_k * (thread_m + thread_n) / 4``
shared loads (128-bit: a thread's fragment elements are contiguous), one global load and one
shared store per prefetched element (``(block_m + block_n) * block_k / threads`` of them)
and `STEP_OVERHEAD` instructions of addresses, predicates, the barrier and the loop. An
implicit-GEMM convolution's im2col element costs `GATHER_INSTRUCTIONS` more (unravelling
``k`` into channel and tap, the padding predicate). These counts match the SASS of the
calibration kernels (``cuobjdump -sass`` of their loops, sm_90) within a few per cent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from tmlir.gpu_limits import MAX_REGISTERS_PER_THREAD
from tmlir.latency import KLoop

FLOAT_BYTES = 4
STEP_OVERHEAD = 30
"""Instructions per k-step and warp besides the FFMAs and the tile's loads and stores."""
GATHER_INSTRUCTIONS = 24
"""Extra instructions per im2col element of an implicit-GEMM convolution (SASS, sm_90)."""

SPLIT_K_ROUND_TRIPS = 2
"""A split-K block's extra memory round trips: its arrival counter's atomic, then (the last
block of a tile) the other blocks' partial sums."""

Params = Mapping[str, int | str]


def _pair(value: int | str) -> tuple[int, int]:
    a, b = str(value).split("x")
    return int(a), int(b)


#: Instructions per element a k-step copies, by how the operand travels (the header's
#: ``copy_a``/``copy_b``): ``ldg`` a global load into a register and a shared store (the
#: register prefetch), ``gather`` the same for an element a fused prologue computes,
#: ``cp4`` one 4-byte cp.async, ``cp16`` a quarter of a 16-byte one.
COPY_INSTRUCTIONS = {"ldg": 2.0, "gather": 2.0, "cp4": 3.0, "cp16": 0.75}


def k_steps(k: int, block_k: int, split: int = 1) -> int:
    """The k-steps one split of a GEMM walks: ``ceil(ceil(K / block_k) / split_k)``."""
    return math.ceil(math.ceil(k / block_k) / split)


def simt_kloop(params: Params, gathered_b: bool = False) -> KLoop:
    """The k-loop of the SIMT GEMM from its header parameters (see the module docstring);
    `gathered_b`: B is an implicit-GEMM convolution's im2col view. ``stages`` 1 (or a
    header without it: the register prefetch) keeps one step in flight, a cp.async pipeline
    of ``stages`` buffers ``stages - 1``."""
    bm, bn, bk = int(params["block_m"]), int(params["block_n"]), int(params["block_k"])
    tm, tn, threads = int(params["thread_m"]), int(params["thread_n"]), int(params["threads"])
    m, n, k = int(params["M"]), int(params["N"]), int(params["K"])
    split, stages = int(params.get("split_k", 1)), int(params.get("stages", 1))
    a_loads, b_loads = bm * bk // threads, bn * bk // threads
    copies = (COPY_INSTRUCTIONS[str(params.get("copy_a", "ldg"))] * a_loads
              + COPY_INSTRUCTIONS[str(params.get("copy_b", "ldg"))] * b_loads)
    instructions = (tm * tn * bk + bk * (tm + tn) // 4 + math.ceil(copies) + STEP_OVERHEAD
                    + (GATHER_INSTRUCTIONS * b_loads if gathered_b else 0))
    steps = k_steps(k, bk, split)
    tile_bytes = (min(bm, m) + min(bn, n)) * min(bk, k) * FLOAT_BYTES  # a k-step past K loads nothing
    return KLoop(steps, instructions, tile_bytes, depth=max(1, stages - 1),
                 tail_round_trips=SPLIT_K_ROUND_TRIPS if split > 1 else 0)


#: Bytes of one element and the k of one mma, by the tensor-core header's ``dtype``.
TC_ELEMENTS = {"f16": (2, 16), "bf16": (2, 16), "tf32": (4, 8)}
TC_STEP_OVERHEAD = 40
"""Instructions per k-step and warp of the tensor-core engine besides its mmas, ldmatrix
and copies: waits, commit, the barrier, addresses and the loop."""
CP_ASYNC_INSTRUCTIONS = 3
"""Instructions per cp.async: the address, the zero-fill predicate and the copy."""


def tc_kloop(params: Params, gathered_b: bool = False) -> KLoop:
    """The k-loop of the tensor-core engine (``tc_gemm.py``) from its header: per step and
    warp its mma tiles' ``mma.sync`` and ``ldmatrix`` for each ``mma_k`` slice, the
    16-byte copies (or, for a `gathered_b` im2col operand, the element loads and shared
    stores) of the block's tile spread over its threads, and `TC_STEP_OVERHEAD`;
    ``stages - 1`` steps in flight."""
    bm, bn, bk = int(params["block_m"]), int(params["block_n"]), int(params["block_k"])
    m, n, k, threads = int(params["M"]), int(params["N"]), int(params["K"]), int(params["threads"])
    warps_m, warps_n = _pair(params["warps"])
    element, mma_k = TC_ELEMENTS[str(params["dtype"])]
    mm, mn, slices = bm // warps_m // 16, bn // warps_n // 8, bk // mma_k
    copied_b = 0 if gathered_b else bn
    copies = math.ceil((bm + copied_b) * bk * element / 16 / threads)
    gathers = bn * bk // threads if gathered_b else 0
    instructions = (mm * mn * slices + (mm + mn) * slices + CP_ASYNC_INSTRUCTIONS * copies
                    + (GATHER_INSTRUCTIONS + 2) * gathers + TC_STEP_OVERHEAD)
    split = int(params.get("split_k", 1))
    steps = k_steps(k, bk, split)
    tile_bytes = (min(bm, m) + min(bn, n)) * min(bk, k) * element
    return KLoop(steps, instructions, tile_bytes, depth=max(1, int(params["stages"]) - 1),
                 tensor_flops=2 * bm * bn * bk, tensor=str(params["dtype"]),
                 tail_round_trips=SPLIT_K_ROUND_TRIPS if split > 1 else 0)


GEMV_STEP_OVERHEAD = 20
"""Instructions per k-step and warp of the small-M template besides its loads and FMAs."""
GEMV_VECTOR_A_ROWS = 8
"""Rows of A the small-M template loads as vectors (``matmul_gemv_params.VECTOR_A_ROWS``)."""


def gemv_kloop(params: Params) -> KLoop:
    """The k-loop of the small-M template (``matmul_gemv.py``) from its header: ``k_steps``
    steps; per step a thread issues ``unroll`` vector loads of B, the A elements they meet
    (``nk``: vectors for the first 8 rows, elements past them; ``kn``: one element per row
    and unrolled row) and ``rows x vector x unroll`` FMAs. The unrolled loads of a step are
    in flight together, not the next step's: one step in flight, each as many bytes as the
    block's threads load."""
    rows, threads = int(params["M"]), int(params["threads"])
    vector, unroll = int(params["vector"]), int(params["unroll"])
    nk = str(params["layout"]) == "nk"
    if nk:
        a_loads = min(rows, GEMV_VECTOR_A_ROWS) + max(0, rows - GEMV_VECTOR_A_ROWS) * vector
    else:
        a_loads = rows
    instructions = unroll * (1 + a_loads + rows * vector) + GEMV_STEP_OVERHEAD
    return KLoop(int(params["k_steps"]), instructions, threads * unroll * vector * FLOAT_BYTES, depth=1)


ATTENTION_COPY_INSTRUCTIONS = 9
"""Instructions per element the SIMT attention copies into shared memory per key tile:
the global load, the shared store and the element's index (unravelled, broadcast, guarded)."""
ATTENTION_SCORE_INSTRUCTIONS = 21
"""Instructions per score of the SIMT attention's online softmax: the masked score, the
max, ``exp``, the probability's shared store and the sum (SASS, sm_90: 21 per score, the
fit of ten tilings)."""
ATTENTION_BIAS_INSTRUCTIONS = 2
"""More per score with a bias (its load and add; the index is shared with the mask)."""
ATTENTION_MASK_INSTRUCTIONS = 2
"""More per score with a causal mask (the compare and select)."""
ATTENTION_ROW_INSTRUCTIONS = 6
"""Instructions per query row and key tile besides its scores: the running max and sum."""


def attention_steps(params: Params) -> int:
    """The key tiles one block of an attention kernel walks: ``ceil(Sk / block_k)``, or with
    ``causal`` the tiles up to each block's last row, averaged over the blocks (rounded up)."""
    sq, sk = int(params["Sq"]), int(params["Sk"])
    bq, bk = int(params["block_q"]), int(params["block_k"])
    tiles, q_tiles = math.ceil(sk / bk), math.ceil(sq / bq)
    if not int(params.get("causal", 0)):
        return tiles
    walked = sum(min(tiles, math.ceil((qt + 1) * bq / bk)) for qt in range(q_tiles))
    return math.ceil(walked / q_tiles)


def attention_kloop(params: Params) -> KLoop:
    """The key loop of the SIMT ``attention`` template (``attention.py``) from its header:
    `attention_steps` steps; per step a thread copies its share of the key and value tiles
    (`ATTENTION_COPY_INSTRUCTIONS` each), computes ``rows_per_thread x keys_per_thread``
    scores (D shared loads of each of its rows and keys, one FFMA per pair), runs the online
    softmax on them (`ATTENTION_SCORE_INSTRUCTIONS` per score, `ATTENTION_ROW_INSTRUCTIONS`
    and the accumulators' rescale per row) and ``P V`` (per key, shared loads of its rows'
    probabilities and columns' values, one FFMA per pair); three barriers and
    `STEP_OVERHEAD`. The loads are not prefetched: one step in flight. Bytes per step: the
    key and value tiles in f32 (the header has no element type; f16 tensors load half),
    and the bias tile."""
    d, dv, sq, sk = int(params["D"]), int(params["Dv"]), int(params["Sq"]), int(params["Sk"])
    bq, bk, threads = int(params["block_q"]), int(params["block_k"]), int(params["threads"])
    tr, rq = int(params["threads_per_row"]), int(params["rows_per_thread"])
    rk, rd = bk // tr, math.ceil(dv / tr)
    copies = math.ceil((d * bk + bk * rd * tr) / threads)
    per_score = (ATTENTION_SCORE_INSTRUCTIONS + ATTENTION_BIAS_INSTRUCTIONS * int(params.get("bias", 0))
                 + ATTENTION_MASK_INSTRUCTIONS * int(params.get("causal", 0)))
    instructions = (d * (rq + rk + rq * rk) + bk * (rq + rd + rq * rd) + ATTENTION_COPY_INSTRUCTIONS * copies
                    + rq * rk * per_score + rq * (ATTENTION_ROW_INSTRUCTIONS + rd) + STEP_OVERHEAD)
    keys = min(bk, sk)
    tile_bytes = keys * (d + dv) * FLOAT_BYTES + (min(bq, sq) * keys * FLOAT_BYTES if int(params.get("bias", 0)) else 0)
    return KLoop(attention_steps(params), instructions, tile_bytes, depth=1)


ATTENTION_TC_SCORE_INSTRUCTIONS = 11
"""Instructions per score of ``attention_tc``'s softmax, per lane: the max, ``expf`` of the
scaled and shifted score (8 of them: CUDA's accurate ``expf``), the sum, the rounding to P.
With the per-row and per-step terms below, the model is within 6% of the
instructions a step executes in SASS (sm_90, six tilings of D = 64 and 128)."""
ATTENTION_TC_ROW_INSTRUCTIONS = 16
"""Per row of a lane and key tile: the quad's max (two shuffles), the running max, ``exp``
of the rescale and the running sum."""
ATTENTION_TC_GATHER_INSTRUCTIONS = 5
"""Per element of a gathered (prologue-computed) operand's tile: the load, the conversions
and the shared store (SASS: about 4.4)."""


def attention_tc_kloop(params: Params) -> KLoop:
    """The key loop of ``attention_tc`` (``attention_tc.py``) from its header:
    `attention_steps` steps; per step and warp the mmas and ``ldmatrix`` of ``S = Q Kᵀ``
    (``block_k / 8`` n-tiles x ``D / 16`` k-slices) and of ``O += P V`` (``Dv / 8`` x
    ``block_k / 16``), the softmax on the lane's ``block_k / 2`` scores
    (`ATTENTION_TC_SCORE_INSTRUCTIONS` each, with the bias and mask costs of the SIMT
    template) and two rows (`ATTENTION_TC_ROW_INSTRUCTIONS`), the rescale of the ``Dv / 2``
    accumulators, the block's 16-byte copies of the key and value tiles spread over its
    threads (or, for a gathered operand, its elements: `ATTENTION_TC_GATHER_INSTRUCTIONS`)
    and `TC_STEP_OVERHEAD`; ``stages - 1`` tiles in flight when k and v are copied, else
    one. Tensor FLOPs per step: ``2 block_q block_k (D + Dv)``."""
    d, dv, sq, sk = int(params["D"]), int(params["Dv"]), int(params["Sq"]), int(params["Sk"])
    bq, bk, threads = int(params["block_q"]), int(params["block_k"]), int(params["threads"])
    element = TC_ELEMENTS[str(params["dtype"])][0]
    nt, dt = bk // 8, dv // 8
    mmas = nt * (d // 16) + dt * (bk // 16)
    bias, causal = int(params.get("bias", 0)), int(params.get("causal", 0))
    per_score = (ATTENTION_TC_SCORE_INSTRUCTIONS + ATTENTION_BIAS_INSTRUCTIONS * bias
                 + ATTENTION_MASK_INSTRUCTIONS * causal)
    copied = [str(params.get(f"copy_{n}", "cp16")) == "cp16" for n in "kv"]
    elements = (bk * d, bk * dv)
    chunks = sum(n for n, c in zip(elements, copied) if c) * element / 16
    gathers = sum(n for n, c in zip(elements, copied) if not c)
    instructions = (2 * mmas + (bk // 2) * per_score + 2 * ATTENTION_TC_ROW_INSTRUCTIONS + dv // 2
                    + math.ceil(CP_ASYNC_INSTRUCTIONS * chunks / threads)
                    + math.ceil(ATTENTION_TC_GATHER_INSTRUCTIONS * gathers / threads) + TC_STEP_OVERHEAD)
    keys = min(bk, sk)
    tile_bytes = keys * (d + dv) * element + (min(bq, sq) * keys * FLOAT_BYTES if bias else 0)
    depth = max(1, int(params["stages"]) - 1) if all(copied) else 1
    return KLoop(attention_steps(params), instructions, tile_bytes, depth=depth,
                 tensor_flops=2 * bq * bk * (d + dv), tensor=str(params["dtype"]))


KLOOPS: dict[str, Callable[[Params], KLoop]] = {
    "attention": attention_kloop,
    "attention_tc": attention_tc_kloop,
    "matmul_gemv": gemv_kloop,
    "matmul_simt": simt_kloop,
    # a 1x1 convolution's dense B (conv2d.Conv2dProblem.dense_b) travels in 16-byte chunks
    "conv2d_implicit_gemm": lambda params: simt_kloop(params, gathered_b=params.get("copy_b") != "cp16"),
    "matmul_tc": tc_kloop,
    # the im2col B is gathered, except a 1x1 convolution's dense input (conv2d_tc.dense_input)
    "conv2d_tc": lambda params: tc_kloop(params, gathered_b=params.get("copy_b") != "cp16"),
}
"""The k-loop of each GEMM-like template, from its header parameters."""


def kloop(template: str, params: Params) -> KLoop | None:
    """The k-loop of a kernel of `template` with header `params`; None for a template
    without one here or parameters it does not recognise (an older kernel's header)."""
    reader = KLOOPS.get(template)
    if reader is None:
        return None
    try:
        return reader(params)
    except (KeyError, ValueError):
        return None


def single_step_fragments(thread_m: int, thread_n: int, block_k: int) -> int:
    """Fragment registers of a pipelined kernel whose k-loop is one k-tile: the loop is gone,
    the tile's ``block_k`` unrolled k-slices are straight-line code, and with a fused
    epilogue ptxas hoists their shared loads -- every fragment of the tile at once (measured
    on sm_80 and sm_90: 142-153 registers at block_k 16, 255 and 36-560 bytes spilled at
    block_k 32 and 64 with 4 x 4 per thread; 56 without an epilogue)."""
    return block_k * (thread_m + thread_n)


def register_estimate(template: str, params: Params) -> int | None:
    """Registers per thread of a GEMM-like kernel, estimated from its header: the SIMT
    GEMM's accumulators, two fragment stages, prefetched elements, ~24 for addresses and 8
    more in the cp.async pipeline (as `MatmulSimtParams.register_estimate`), the tensor-core engine's accumulators, one k
    slice of fragments and ~40 (as `MatmulTcParams.register_estimate`); None for other
    templates; the attention templates' from `attention_registers` and
    `attention_tc_registers`. A split-K kernel's last block adds the partial sums one split
    at a time into its accumulators (``split_k.py``), one split's loads in flight: as many registers
    again as the accumulators (measured, NVCC 13.0: 87 -> 126-128 for 32 accumulators at
    S = 4 or 6; unrolled over the splits it took 246 at S = 4)."""
    if template not in KLOOPS:
        return None
    try:
        split = int(params.get("split_k", 1))
        if template == "matmul_gemv":  # as MatmulGemvParams.register_estimate
            rows, vector, unroll = int(params["M"]), int(params["vector"]), int(params["unroll"])
            if str(params["layout"]) != "nk":
                return rows * vector + unroll * vector + 24
            if rows <= GEMV_VECTOR_A_ROWS:
                return 24 + rows + unroll * vector + rows * vector * unroll // 2
            return 24 + 2 * rows + unroll * vector
        if template == "attention":  # accumulators, scores, the unrolled D loop's loads
            return attention_registers(params)
        if template == "attention_tc":
            return attention_tc_registers(params)
        if template in ("matmul_tc", "conv2d_tc"):
            warps_m, warps_n = _pair(params["warps"])
            mm, mn = int(params["block_m"]) // warps_m // 16, int(params["block_n"]) // warps_n // 8
            acc, base = 4 * mm * mn, 4 * mm + 2 * mn + 40
        else:
            tm, tn, threads = int(params["thread_m"]), int(params["thread_n"]), int(params["threads"])
            bk, stages = int(params["block_k"]), int(params.get("stages", 1))
            prefetch = (int(params["block_m"]) + int(params["block_n"])) * bk // threads
            pipeline = 8 if stages > 1 else 0  # copies' addresses and predicates
            one_step = "K" in params and k_steps(int(params["K"]), bk, split) <= 1
            fragments = single_step_fragments(tm, tn, bk) if stages > 1 and one_step else 2 * (tm + tn)
            acc, base = tm * tn, fragments + prefetch + 24 + pipeline
    except (KeyError, ValueError):
        return None
    return min(MAX_REGISTERS_PER_THREAD, acc * (2 if split > 1 else 1) + base)


def attention_registers(params: Params) -> int:
    """Registers per thread of the SIMT attention: its accumulators (``rows x ceil(Dv /
    threads_per_row)``) and scores, the shared loads of 8 steps of the D loop, which ptxas
    unrolls by 8 (``8 (rows + keys)``), and ~32 for addresses and the running statistics
    (ptxas, sm_90, on ten tilings: 40 to 168 registers, the estimate within 24 of the
    default tilings')."""
    tr, rq = int(params["threads_per_row"]), int(params["rows_per_thread"])
    rk, rd = int(params["block_k"]) // tr, math.ceil(int(params["Dv"]) / tr)
    return min(MAX_REGISTERS_PER_THREAD, rq * rd + rq * rk + 8 * (rq + rk) + 32)


def attention_tc_pressure(params: Params) -> int:
    """Registers ``attention_tc`` needs per thread (spills start near 248 of them): the
    output and score accumulators (4 per 8-column tile), the query's A fragments (4 words
    per 16 of D), P's (``block_k / 4`` words), one k slice of key fragments and the value
    fragments (2 words per tile), ~40 for addresses, the statistics and the loop, and 2 per
    16-byte copy a thread issues per step in the ``stages - 1`` steps of an unrolled round
    (ptxas keeps their addresses), 1 per gathered element (its load in flight). Measured on
    sm_90 over the 16 tilings of D = 64 and 128, copied and gathered: every tiling that
    spilled is above 248, none below."""
    d, dv, bk = int(params["D"]), int(params["Dv"]), int(params["block_k"])
    threads, stages = int(params["threads"]), int(params["stages"])
    nt, dt = bk // 8, dv // 8
    copied = [str(params.get(f"copy_{n}", "cp16")) == "cp16" for n in "kv"]
    per_thread = sum(n / (8 if c else 2) for n, c in zip((bk * d, bk * dv), copied)) / threads
    fragments = 4 * (nt + dt) + d // 4 + bk // 4 + 2 * (nt + dt)
    return fragments + 40 + math.ceil(2 * per_thread * max(1, stages - 1))


ATTENTION_TC_SLACK = 24
"""Registers ptxas takes beyond `attention_tc_pressure` where it may (it schedules loads
early): the sum is within 24 of ptxas' figure on the measured tilings (sm_90)."""


def attention_tc_registers(params: Params) -> int:
    """Registers per thread of ``attention_tc`` (`attention_tc_pressure` and
    `ATTENTION_TC_SLACK`, at most 255)."""
    return min(MAX_REGISTERS_PER_THREAD, attention_tc_pressure(params) + ATTENTION_TC_SLACK)
