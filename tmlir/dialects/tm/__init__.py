"""The ``tm`` (task mapping) dialect: kernels written with Hidet's task mappings.

A ``tm.kernel`` is a grid of ``grid`` blocks of ``block`` threads; inside it,
``tm.block_id`` and ``tm.thread_id`` are the worker ids, and ``tm.for_task`` runs its body
once per task that a task mapping assigns to a worker, with the task's indices as region
arguments; ``tm.barrier`` synchronizes the block and ``tm.shuffle`` exchanges values
between the lanes of a warp; ``tm.mma``, ``tm.ldmatrix`` and ``tm.cp_async`` (with
``tm.cp_async_commit``/``tm.cp_async_wait``) are the tensor-core primitives
(``tensor_core.py``); ``tm.wgmma`` (with its descriptors, fence, commit and wait), the
``tm.mbarrier_*`` ops and ``tm.cp_async_bulk`` are Hopper's (``hopper.py``). Buffers
have a scope (``global`` on the host side, ``shared`` and ``register`` inside kernels);
``tm.load`` and ``tm.store`` check the dimensions listed in ``guard``
against the buffer's shape (an out-of-range load gives 0, an out-of-range store does
nothing); ``tm.load_vector x4`` reads four consecutive elements of a global buffer in
one access (``tmlir.ir.vector_ops``); ``tm.atomic_add``, ``tm.fence`` and ``tm.load_cg``
let the blocks of one launch hand each other results through global memory. The host side
is a ``func.func`` that allocates buffers and ``tm.launch``es kernels in order.

    tm.kernel @scale(%x: memref<1000xf32>, %y: memref<1000xf32>) grid(4) block(256) {
      %b = tm.block_id
      %t = tm.thread_id
      tm.for_task (%i) in spatial(4) * spatial(256) on %w {
        %v = tm.load %x[%i] guard [0] : memref<1000xf32>
        tm.store %v, %y[%i] guard [0] : memref<1000xf32>
      }
    }

The ``#tm.map<spatial(4, 8) * repeat(2, 2)>`` attribute carries a mapping; its
semantics is :class:`tmlir.mapping.TaskMapping`. Atoms take keywords:
``spatial(4, 8, ranks=[1, 0])`` numbers the workers column-major and
``repeat(2, 64, unroll=[true, false])`` says which of its loops are unrolled. The
``#tm.layout<row_major(2, 2) * column_major(4, 8, pad=1)>`` attribute carries a data layout
(:class:`tmlir.layout.DataLayout`) of a shared or register buffer, written
``tm.alloc shared layout(row_major(8, 64, pad=1)) : memref<8x64xf32>``. Both attributes and
their parsers live in ``attributes.py``.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from tmlir.dialects.tm.attributes import *  # noqa: F403
from tmlir.dialects.tm.attributes import DataLayoutAttr, TaskMappingAttr
from tmlir.dialects.tm.hopper import *  # noqa: F403
from tmlir.dialects.tm.hopper import (
    CpAsyncBulkOp,
    FenceProxyAsyncOp,
    MbarrierArriveOp,
    MbarrierInitOp,
    MbarrierWaitOp,
    WgmmaCommitOp,
    WgmmaDescOp,
    WgmmaFenceOp,
    WgmmaOp,
    WgmmaWaitOp,
)
from tmlir.dialects.tm.host import *  # noqa: F403
from tmlir.dialects.tm.host import LaunchOp, ViewOp, WeightOp
from tmlir.dialects.tm.kernel import *  # noqa: F403
from tmlir.dialects.tm.kernel import BarrierOp, BlockIdOp, ForTaskOp, KernelOp, ShuffleOp, ThreadIdOp
from tmlir.dialects.tm.memory import *  # noqa: F403
from tmlir.dialects.tm.memory import AllocOp, AtomicAddOp, FenceOp, LoadCgOp, LoadOp, LoadVectorOp, StoreOp
from tmlir.dialects.tm.tensor_core import *  # noqa: F403
from tmlir.dialects.tm.tensor_core import CpAsyncCommitOp, CpAsyncOp, CpAsyncWaitOp, LdmatrixOp, MmaOp

TM = Dialect(
    "tm",
    [KernelOp, BlockIdOp, ThreadIdOp, ForTaskOp, AllocOp, BarrierOp, ShuffleOp, LoadOp,
     LoadVectorOp, StoreOp, AtomicAddOp, FenceOp, LoadCgOp, WeightOp, ViewOp, LaunchOp, MmaOp, LdmatrixOp,
     CpAsyncOp, CpAsyncCommitOp, CpAsyncWaitOp, WgmmaDescOp, WgmmaOp, WgmmaFenceOp, WgmmaCommitOp, WgmmaWaitOp,
     MbarrierInitOp, MbarrierArriveOp, MbarrierWaitOp, CpAsyncBulkOp, FenceProxyAsyncOp],
    [TaskMappingAttr, DataLayoutAttr],
)
