"""What one thread of a gpu-level kernel executes, read from the IR: the counts behind the
cost report (``cost.py``) and its latency estimate.

`block_counts` walks a kernel body: float operations (``arith``'s float arithmetic and every
``math`` op with a float result count 1; a ``tmgpu.mma`` its lane's share of ``2 M N K``,
also as tensor FLOPs), and global accesses per kernel argument (``memref.load``/``store``,
a ``tmgpu.cp_async`` from an argument is a read of its bytes, a ``tmgpu.load_vector`` a read
of its width's elements, a ``tmgpu.load_cg`` a load, a ``tmgpu.atomic_add`` a load and a
store), each weighted by the trip counts of the
``scf.for`` loops around it (constant bounds, as ``lower-to-cuda`` makes them) and the
larger branch of each ``scf.if`` -- or, for one with ``tm.branch_weights`` (split-K's last
block), each branch as often as it is taken (counts may then be fractions per thread). `serial_loads` counts the global loads a thread
waits for one after another, `shared_bytes` the kernel's shared memory; `_KernelFacts`
holds what a launch needs of its kernel.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import AnyFloat, DenseArrayBase, DictionaryAttr, IntegerAttr, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from tmlir import dtypes
from tmlir.dialects import tmgpu
from tmlir.ir.kernel_ops import BRANCH_WEIGHTS

_ARITH_FLOAT_OPS = frozenset(
    f"arith.{op}" for op in ("addf", "subf", "mulf", "divf", "remf", "negf", "maximumf",
                             "minimumf", "maxnumf", "minnumf")
)


class CostError(DiagnosticException):
    """The module is not gpu-level IR the cost report can read, or a bad option."""


def _mma_flops_per_thread(op: tmgpu.MmaOp) -> int:
    """A lane's share of one warp-wide ``mma``'s ``2 M N K`` FLOPs."""
    m, n, k = (int(x) for x in op.shape.data[1:].replace("n", " ").replace("k", " ").split())
    return 2 * m * n * k // 32


def _wgmma_flops_per_thread(op: tmgpu.WgmmaOp) -> int:
    """A thread's share of one warpgroup-wide ``wgmma``'s ``2 M N K`` FLOPs (128 threads)."""
    m, n, k = (int(x) for x in op.shape.data[1:].replace("n", " ").replace("k", " ").split())
    return 2 * m * n * k // 128



def _is_flop(op: Operation) -> bool:
    if op.name in _ARITH_FLOAT_OPS:
        return True
    return (op.dialect_name() == "math" and len(op.results) == 1
            and isinstance(op.results[0].type, AnyFloat))


def _constant(value: SSAValue, what: str, kernel: str) -> int:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    raise CostError(f"kernel @{kernel}: the {what} of an scf.for is not a constant; the cost "
                    "report needs constant loop bounds, as lower-to-cuda makes them")


def grid_stride_blocks(loop: scf.ForOp) -> int | None:
    """The virtual block count of a grid-stride loop (``for b = blockIdx.x; b < N; b +=
    gridDim.x``, which ``convert-tm-to-gpu`` makes of a kernel whose grid is over CUDA's
    limit), else None. Each of its iterations is one block's work."""
    if not (isinstance(loop.lb.owner, tmgpu.BlockIdOp) and isinstance(loop.step.owner, tmgpu.GridDimOp)):
        return None
    owner = loop.ub.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def trip_count(loop: scf.ForOp, kernel: str) -> int:
    """Iterations of `loop`: ``(ub - lb + step - 1) // step`` of its constant bounds."""
    lb = _constant(loop.lb, "lower bound", kernel)
    ub = _constant(loop.ub, "upper bound", kernel)
    step = _constant(loop.step, "step", kernel)
    if step <= 0:
        raise CostError(f"kernel @{kernel}: an scf.for has step {step}; expected a positive step")
    return max(0, (ub - lb + step - 1) // step)


Counts = Counter[object]
"""Per thread: ``"flops"``, ``("tensor_flops", dtype)`` (also in ``"flops"``), and
``("load", i)`` / ``("store", i)`` accesses of argument i (elements)."""


def block_counts(block: Block, kernel: str) -> Counts:
    """What one thread executes in `block` (see `Counts`): loops weighted by their trip
    counts, each scf.if counted as the larger of its branches, key by key."""
    counts: Counts = Counter()
    for op in block.ops:
        if _is_flop(op):
            counts["flops"] += 1
        elif isinstance(op, tmgpu.MmaOp):
            flops = _mma_flops_per_thread(op)
            counts["flops"] += flops
            counts[("tensor_flops", op.dtype.data)] += flops
        elif isinstance(op, tmgpu.WgmmaOp):
            flops = _wgmma_flops_per_thread(op)
            counts["flops"] += flops
            counts[("tensor_flops", op.dtype.data)] += flops
        elif isinstance(op, tmgpu.CpAsyncOp):
            source = op.src
            if isinstance(source, BlockArgument) and isinstance(source.owner.parent_op(), tmgpu.KernelOp):
                counts[("load", source.index)] += op.bytes.data // element_bytes(source)
        elif isinstance(op, tmgpu.LoadVectorOp):  # `width` elements in one access
            buffer = op.memref
            if isinstance(buffer, BlockArgument) and isinstance(buffer.owner.parent_op(), tmgpu.KernelOp):
                counts[("load", buffer.index)] += op.width
        elif isinstance(op, memref.LoadOp | memref.StoreOp | tmgpu.LoadCgOp | tmgpu.AtomicAddOp):
            buffer = op.memref
            if isinstance(buffer, BlockArgument) and isinstance(buffer.owner.parent_op(),
                                                                tmgpu.KernelOp):
                if not isinstance(op, memref.StoreOp):  # an atomic add reads and writes
                    counts[("load", buffer.index)] += 1
                if not isinstance(op, memref.LoadOp | tmgpu.LoadCgOp):
                    counts[("store", buffer.index)] += 1
        elif isinstance(op, scf.ForOp):
            trips = 1 if grid_stride_blocks(op) else trip_count(op, kernel)
            for key, n in block_counts(op.body.block, kernel).items():
                counts[key] += trips * n
        elif isinstance(op, scf.IfOp):
            branches = [block_counts(b, kernel) for region in (op.true_region, op.false_region)
                        for b in region.blocks]
            weights = branch_weights(op)
            for key in {k for branch in branches for k in branch}:
                if weights is None:
                    counts[key] += max(branch[key] for branch in branches)
                else:  # the expected count: each branch as often as it is taken
                    counts[key] += sum(Fraction(w, sum(weights)) * branch[key]
                                       for w, branch in zip(weights, branches))
        elif op.regions:
            raise CostError(f"kernel @{kernel}: the cost report cannot count inside '{op.name}'"
                            " (only scf.for and scf.if)")
    return counts


def branch_weights(op: scf.IfOp) -> tuple[int, int] | None:
    """How often the then and else branches of `op` are taken, relative to each other (its
    `BRANCH_WEIGHTS` attribute: split-K's ``if last block`` is taken by 1 block of S), or
    None when unknown (then the larger branch counts)."""
    attr = op.attributes.get(BRANCH_WEIGHTS)
    if not isinstance(attr, DenseArrayBase):
        return None
    weights = tuple(int(w) for w in attr.get_values())
    if len(weights) != 2 or min(weights) < 0 or not sum(weights):
        return None
    return weights[0], weights[1]


def block_flops(block: Block, kernel: str) -> int:
    """FLOPs one thread executes in `block`: loops weighted by their trip counts, the
    larger branch of each scf.if."""
    return block_counts(block, kernel)["flops"]


@dataclass(frozen=True)
class KernelFacts:
    """What a launch needs of a kernel: its template and header parameters, what one thread
    executes, its shared memory and the global loads a thread waits for in a row."""

    template: str
    per_thread: Counts
    blocks: int | None = None
    """The virtual blocks of a grid-stride kernel (its work, whatever the launch's grid)."""
    params: dict[str, int | str] | None = None
    """The header parameters (``tm.params``)."""
    shared_bytes: int = 0
    serial_loads: int = 1

    @property
    def flops_per_thread(self) -> int:
        return self.per_thread["flops"]

    def accesses(self, kind: str) -> dict[int, int]:
        """Argument index -> accesses of `kind` (``load``, ``store``) per thread; or, for
        ``tensor_flops``, mma operand type -> FLOPs per thread."""
        return {key[1]: n for key, n in self.per_thread.items()
                if isinstance(key, tuple) and key[0] == kind}


def template(kernel: tmgpu.KernelOp) -> str:
    """The kernel's schedule template (its ``tm.template``), ``hand-written`` if none."""
    attr = kernel.attributes.get("tm.template")
    return attr.data if isinstance(attr, StringAttr) else "hand-written"


def header_params(kernel: tmgpu.KernelOp) -> dict[str, int | str]:
    """The kernel's header parameters (its ``tm.params``: integers and strings)."""
    attr = kernel.attributes.get("tm.params")
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {name: value.value.data if isinstance(value, IntegerAttr) else value.data
            for name, value in attr.data.items() if isinstance(value, IntegerAttr | StringAttr)}


def shared_bytes(kernel: tmgpu.KernelOp) -> int:
    """Bytes of the kernel's shared arrays (``tmgpu.shared_alloc``)."""
    return sum(math.prod(op.result.type.get_shape()) * element_bytes(op.result)
               for op in kernel.walk() if isinstance(op, tmgpu.SharedAllocOp))


def _reads_global(op: Operation) -> bool:
    """A global read: a load (or vector load) of a kernel argument or a cp.async from one."""
    buffer = op.memref if isinstance(op, memref.LoadOp | tmgpu.LoadVectorOp) else \
        op.src if isinstance(op, tmgpu.CpAsyncOp) else None
    return isinstance(buffer, BlockArgument) and isinstance(buffer.owner.parent_op(), tmgpu.KernelOp)


#: A loop of at most this many iterations is unrolled by nvcc (so its loads issue together);
#: a longer one is unrolled by `NVCC_UNROLL` (SASS of the reductions' row loops, sm_90).
NVCC_FULL_UNROLL = 32
NVCC_UNROLL = 4


def serial_loads(block: Block, kernel: str) -> int:
    """Global loads one thread of `block` waits for one after another: 1 for the loads
    of straight-line code (issued together, also those of unrolled loops), plus per loop
    its body's times its trip count -- divided by the loads nvcc puts in flight by
    unrolling it (all of them up to `NVCC_FULL_UNROLL` iterations, `NVCC_UNROLL` beyond);
    the larger branch of an scf.if. An upper bound where straight-line loads depend on each
    other (a gather's index)."""
    rounds, direct = 0, False
    for op in block.ops:
        if _reads_global(op):
            direct = True
        elif isinstance(op, scf.ForOp):
            inner = serial_loads(op.body.block, kernel)
            if "tm.unroll" in op.attributes or grid_stride_blocks(op):
                rounds += inner if grid_stride_blocks(op) else 0
                direct = direct or (inner > 0 and "tm.unroll" in op.attributes)
            else:
                trips = trip_count(op, kernel)
                if "tm.no_unroll" in op.attributes:  # #pragma unroll 1: one trip's loads at a time
                    rounds += inner * trips
                else:
                    rounds += inner * (1 if trips <= NVCC_FULL_UNROLL else math.ceil(trips / NVCC_UNROLL))
        elif isinstance(op, scf.IfOp):
            rounds += max((serial_loads(b, kernel) for r in (op.true_region, op.false_region)
                           for b in r.blocks), default=0)
    return rounds + int(direct)


def kernel_facts(kernel: tmgpu.KernelOp) -> KernelFacts:
    """The template, header parameters, per-thread counts, shared memory and serial loads
    of `kernel`."""
    name = kernel.sym_name.data
    loop = next((op for op in kernel.body.block.ops if isinstance(op, scf.ForOp)
                 and grid_stride_blocks(op)), None)
    return KernelFacts(template(kernel), block_counts(kernel.body.block, name),
                       grid_stride_blocks(loop) if loop is not None else None, header_params(kernel),
                       shared_bytes(kernel), max(1, serial_loads(kernel.body.block, name)))


def element_bytes(value: SSAValue) -> int:
    """Bytes of one element of a buffer (a bool is one byte)."""
    element = dtypes.from_ir(value.type.element_type)
    if element is None:
        raise CostError(f"the cost report does not know the size of {value.type.element_type}")
    return element.numpy.itemsize


def buffer_bytes(value: SSAValue) -> int:
    """Bytes of a host buffer: elements times the element size."""
    return math.prod(value.type.get_shape()) * element_bytes(value)


def root_buffer(value: SSAValue) -> SSAValue:
    """The host buffer behind `value`, through any tmgpu.view."""
    while isinstance(value.owner, tmgpu.ViewOp):
        value = value.owner.source
    return value


def moved_bytes(args: tuple[SSAValue, ...], accesses: dict[int, int], threads: int) -> int:
    """Bytes moved to or from the distinct host buffers behind the accessed arguments: per
    buffer, its size, or fewer when the launch executes fewer accesses than it has elements
    (a gather reading a few rows of a table)."""
    executed: Counter[SSAValue] = Counter()
    for index, per_thread in accesses.items():
        executed[root_buffer(args[index])] += per_thread * threads
    return sum(min(buffer_bytes(buffer), round(n * element_bytes(buffer)))
               for buffer, n in executed.items())

