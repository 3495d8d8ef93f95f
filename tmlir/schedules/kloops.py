"""What the latency model needs of each GEMM-like template: the k-loop its blocks walk.

`kloop(template, params)` turns a kernel's template name and its header parameters (the
``tm.params`` dictionary every GEMM-like template writes: ``M``, ``N``, ``K``, the block and
thread tiles, ``block_k``, ``threads``, ``stages``, ``split_k``) into a `tmlir.latency.KLoop`:
serial steps per block, instructions one warp issues per step, bytes a block loads per step
and steps in flight. The cost report reads it from the IR; a template's default choice calls
it on candidates before any IR exists. A template without an entry here (or a hand-written
kernel) is estimated as a kernel without a k-loop.

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

from tmlir.latency import KLoop

FLOAT_BYTES = 4
STEP_OVERHEAD = 30
"""Instructions per k-step and warp besides the FFMAs and the tile's loads and stores."""
GATHER_INSTRUCTIONS = 24
"""Extra instructions per im2col element of an implicit-GEMM convolution (SASS, sm_90)."""

Params = Mapping[str, int | str]


def _pair(value: int | str) -> tuple[int, int]:
    a, b = str(value).split("x")
    return int(a), int(b)


def simt_kloop(params: Params, gathered_b: bool = False) -> KLoop:
    """The k-loop of the SIMT GEMM from its header parameters (see the module docstring);
    `gathered_b`: B is an implicit-GEMM convolution's im2col view."""
    bm, bn, bk = int(params["block_m"]), int(params["block_n"]), int(params["block_k"])
    tm, tn, threads = int(params["thread_m"]), int(params["thread_n"]), int(params["threads"])
    m, n, k = int(params["M"]), int(params["N"]), int(params["K"])
    split = int(params.get("split_k", 1))
    a_loads, b_loads = bm * bk // threads, bn * bk // threads
    instructions = (tm * tn * bk + bk * (tm + tn) // 4 + 2 * (a_loads + b_loads) + STEP_OVERHEAD
                    + (GATHER_INSTRUCTIONS * b_loads if gathered_b else 0))
    steps = math.ceil(math.ceil(k / bk) / split)
    tile_bytes = (min(bm, m) + min(bn, n)) * bk * FLOAT_BYTES
    return KLoop(steps, instructions, tile_bytes, depth=1)


KLOOPS: dict[str, Callable[[Params], KLoop]] = {
    "matmul_simt": simt_kloop,
    "conv2d_implicit_gemm": lambda params: simt_kloop(params, gathered_b=True),
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


def register_estimate(template: str, params: Params) -> int | None:
    """Registers per thread of a GEMM-like kernel, estimated from its header: the SIMT
    GEMM's accumulators, two fragment stages, prefetched elements and ~24 for addresses (as
    `MatmulSimtParams.register_estimate`); None for other templates."""
    if template not in KLOOPS:
        return None
    try:
        tm, tn, threads = int(params["thread_m"]), int(params["thread_n"]), int(params["threads"])
        prefetch = (int(params["block_m"]) + int(params["block_n"])) * int(params["block_k"]) // threads
    except (KeyError, ValueError):
        return None
    return tm * tn + 2 * (tm + tn) + prefetch + 24
