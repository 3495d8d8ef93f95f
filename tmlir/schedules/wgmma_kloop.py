"""What the latency model needs of ``matmul_wgmma``: its k-loop, registers and launch.

`wgmma_kloop(params)` reads a kernel's header (``tm.params``: ``M``, ``N``, ``K``,
``block_m``, ``block_n``, ``block_k``, ``consumers``, ``producers``, ``stages``,
``split_k``, ``threads``, ``dtype``) as ``kloops.tc_kloop`` reads ``matmul_tc``'s, and
returns a `tmlir.latency.KLoop`:

* *steps*: the k-tiles one split walks;
* *instructions per warp and step*: the block's warps do different work -- a consumer warp
  issues its warpgroup's ``block_k / k`` wgmmas with their descriptors
  (`WGMMA_INSTRUCTIONS` each) and the mbarrier wait and arrival, fence, commit and wait
  (`WGMMA_CONSUMER_OVERHEAD`); a producer warp its thread's share of the stage's 16-byte
  ``cp.async`` (`WGMMA_CP_ASYNC_INSTRUCTIONS` each: the swizzled shared address, the global
  address, the copy) and its barrier traffic (`WGMMA_PRODUCER_OVERHEAD`). The model takes
  one number for every warp of a block; this one is the mean over the warps of the busiest
  scheduler (warp ``w`` issues on scheduler ``w % 4``: ``consumers`` consumer warps and one
  producer warp), so that the model's busiest scheduler issues what this one does;
* *bytes*: both operands' tiles; *depth*: ``stages - 1`` tiles in flight (the producer's
  lag, see ``wgmma_gemm.py``);
* *tensor*: ``2 block_m block_n block_k`` FLOPs a step at `WGMMA_TENSOR_EFFICIENCY` of the
  dense peak -- not mma.sync's ``TENSOR_EFFICIENCY``: wgmma is the instruction that reaches
  Hopper's full dense rate, mma.sync is not.

**Assumed, not measured**: `WGMMA_TENSOR_EFFICIENCY` (1.0: the datasheet's dense peak at the
boost clock; a GPU under load throttles below it) and the instruction counts (read off
this template's SASS for sm_90a, ``cuobjdump -sass``, not timed). Commit GPU measurements
beside the estimates when a GPU is available and refit them.

Where it plugs in: ``kloops.KLOOPS["matmul_wgmma"] = wgmma_kloop`` and
``kloops.register_estimate`` (`wgmma_registers`); `wgmma_launch` is ``model_choice.
candidate_launch`` for this template (its tensor FLOPs are the padded tiles', its shared
memory and threads its parameters').
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from tmlir.gpu_limits import MAX_REGISTERS_PER_THREAD
from tmlir.latency import KLoop, Launch
from tmlir.schedules.gemm import MatmulProblem
from tmlir.schedules.matmul_wgmma_params import COPY_BYTES, MatmulWgmmaParams, WgmmaElement, wgmma_element

__all__ = ["WGMMA_TENSOR_EFFICIENCY", "wgmma_kloop", "wgmma_launch", "wgmma_registers"]

Params = Mapping[str, int | str]

WGMMA_TENSOR_EFFICIENCY = 1.0
"""Fraction of the dense tensor peak a wgmma loop sustains (assumed: the full dense peak;
not yet measured on a GPU)."""
WGMMA_INSTRUCTIONS = 16
"""Per wgmma of a consumer warp: its two descriptors (the 18-bit shared addresses masked,
shifted and or-ed with the fields, moved to uniform registers) and the wgmma."""
WGMMA_CONSUMER_OVERHEAD = 22
"""Per k-step of a consumer warp besides its wgmmas: stage and parity, the mbarrier
try-wait, fence, commit, wait, the arrival on ``empty`` and the loop (sm_90a SASS of the
template: 83-88 instructions a step with 4 wgmmas)."""
WGMMA_CP_ASYNC_INSTRUCTIONS = 8
"""Per 16-byte cp.async of a producer thread (SASS, sm_90a, unrolled copies: 6-9)."""
WGMMA_PRODUCER_OVERHEAD = 24
"""Per k-step of a producer warp besides its copies: the wait on ``empty``, commit, wait,
fence, the arrival on ``full``, the tile's base addresses and the loop."""
SPLIT_K_ROUND_TRIPS = 2
"""A split-K block's extra memory round trips (as ``kloops.SPLIT_K_ROUND_TRIPS``)."""
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "tf32": 4}
WGMMA_K = {"f16": 16, "bf16": 16, "tf32": 8}


def wgmma_kloop(params: Params) -> KLoop:
    """The k-loop of ``matmul_wgmma`` from its header (see the module docstring)."""
    bm, bn, bk = int(params["block_m"]), int(params["block_n"]), int(params["block_k"])
    m, n, k = int(params["M"]), int(params["N"]), int(params["K"])
    consumers, producers = int(params["consumers"]), int(params["producers"])
    dtype = str(params["dtype"])
    element, wgmma_k = ELEMENT_BYTES[dtype], WGMMA_K[dtype]
    consumer = (bk // wgmma_k) * WGMMA_INSTRUCTIONS + WGMMA_CONSUMER_OVERHEAD
    copies = math.ceil((bm + bn) * bk * element / COPY_BYTES / (32 * producers))
    producer = WGMMA_CP_ASYNC_INSTRUCTIONS * copies + WGMMA_PRODUCER_OVERHEAD
    # the busiest scheduler: `consumers` consumer warps and one producer warp
    instructions = math.ceil((consumers * consumer + producer) / (consumers + 1))
    split = int(params.get("split_k", 1))
    steps = math.ceil(math.ceil(k / bk) / split)
    tile_bytes = (min(bm, m) + min(bn, n)) * min(bk, k) * element
    return KLoop(steps, instructions, tile_bytes, depth=max(1, int(params["stages"]) - 1),
                 tensor_flops=2 * bm * bn * bk, tensor=dtype,
                 tail_round_trips=SPLIT_K_ROUND_TRIPS if split > 1 else 0,
                 tensor_efficiency=WGMMA_TENSOR_EFFICIENCY)


def wgmma_registers(params: Params) -> int:
    """Registers per thread, estimated from the header as
    `MatmulWgmmaParams.register_estimate`: ``block_n / 2`` accumulators (twice with
    split-K) and ~40."""
    acc = int(params["block_n"]) // 2
    return min(MAX_REGISTERS_PER_THREAD, acc * (2 if int(params.get("split_k", 1)) > 1 else 1) + 40)


def wgmma_launch(problem: MatmulProblem, params: MatmulWgmmaParams, element: str | WgmmaElement = "f16") -> Launch:
    """What the latency model needs of the kernel of `params` for `problem` on operands of
    `element`: blocks, threads, registers, shared memory, tensor FLOPs of the padded tiles,
    compulsory bytes (the operands once, C in f32, split-K's workspace both ways) and
    `wgmma_kloop`."""
    E = element if isinstance(element, WgmmaElement) else wgmma_element(element)
    p = problem
    header = {**params.describe(), "dtype": E.dtype, "M": p.m, "N": p.n, "K": p.k}
    tiles = params.tile_count(p)
    tile = params.block_m * params.block_n
    padded = 2 * tiles * tile * math.ceil(p.k / params.block_k) * params.block_k
    operands = math.prod(p.lhs_shape) + math.prod(p.rhs_shape)
    workspace = 2 * params.split_k * tiles * tile * 4 if params.split_k > 1 else 0
    compulsory = operands * E.bytes + math.prod(p.out_shape) * 4 + workspace
    return Launch(params.blocks(p), params.threads, wgmma_registers(header), params.shared_bytes(p, E), 0,
                  compulsory, {E.dtype: padded}, wgmma_kloop(header))
