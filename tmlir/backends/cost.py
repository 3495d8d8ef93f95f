"""The ``cost`` target: FLOPs, global-memory bytes and a roofline time per kernel launch,
read from gpu-level IR, no GPU needed.

For every ``tmgpu.launch`` of the host function (in order):

* **FLOPs executed.** Every float arithmetic op of the kernel body counts 1: ``arith``'s
  ``addf subf mulf divf remf negf maximumf minimumf maxnumf minnumf`` and every ``math.*``
  op with a float result (``exp``, ``erf``, ``tanh``, ``log``, ``sqrt``, ``powf``, ...).
  Comparisons, selects, casts and integer/index arithmetic do not count. Each op is
  weighted by the trip counts of its enclosing ``scf.for`` loops, which must have constant
  bounds (they do after ``lower-to-cuda``; unrolled loops too), and an ``scf.if`` counts
  its larger branch; the per-thread count times grid x block threads is the launch's.
  So it is an upper bound: threads a guard leaves idle, and padded tiles, count in full.
* **Global bytes read and written.** A kernel argument the body reads (``memref.load``)
  counts the buffer's bytes as read, one it writes (``memref.store``) as written: the
  compulsory DRAM traffic if each buffer the kernel touches moves once. When the launch
  executes fewer accesses of a buffer than it has elements (counted like FLOPs), it
  counts those instead: a gather reading 128 rows of a 30522-row embedding table moves
  128 rows, not the table. Arguments that are the same host buffer (through
  ``tmgpu.view``) count once per launch. Both are upper bounds of the distinct bytes.
* **Tensor cores.** A ``tmgpu.mma`` counts its share of the warp's ``2 M N K`` FLOPs
  (m16n8k16: 128 per thread; m16n8k8: 64) into ``flops`` and into ``tensor_flops``, and a
  ``tmgpu.cp_async`` from a kernel argument is a read of that buffer (its bytes, in the
  buffer's elements) like a ``memref.load``; so is a ``tmgpu.load_vector`` (its width in
  elements). ``ldmatrix`` reads shared memory: no global
  bytes.
* **Roofline time on an H100 SXM5**: ``max(simt_flops / PEAK_FP32_FLOPS + tensor_flops /
  PEAK_TENSOR_FLOPS[dtype], bytes / PEAK_HBM_BYTES_PER_S)``, compute-bound when the
  compute term is the larger. No launch overhead is added; the launch count is reported.

``tm-opt model.onnx -p lower-to-cuda -t cost`` prints a table, one row per launch, then
the totals; ``-t 'cost{format=json}'`` prints :meth:`ModelCost.to_json` instead.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict, dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import AnyFloat, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from tmlir import dtypes
from tmlir.backends.cuda_c import above_gpu_level
from tmlir.dialects import tmgpu
from tmlir.ir.diagnostics import attach_op

PEAK_FP32_FLOPS = 67e12
"""H100 SXM5, FP32 without tensor cores: 67 TFLOPS (NVIDIA H100 Tensor Core GPU datasheet)."""
PEAK_HBM_BYTES_PER_S = 3.35e12
"""H100 SXM5, HBM3 memory bandwidth: 3.35 TB/s (NVIDIA H100 Tensor Core GPU datasheet)."""
PEAK_TENSOR_FLOPS = {"f16": 989.4e12, "bf16": 989.4e12, "tf32": 494.7e12}
"""H100 SXM5 tensor cores, dense, by mma operand type (NVIDIA H100 Tensor Core GPU datasheet)."""
RIDGE_FLOPS_PER_BYTE = PEAK_FP32_FLOPS / PEAK_HBM_BYTES_PER_S
"""Arithmetic intensity above which a launch is compute-bound: 20 FLOP/byte."""
DEVICE = "H100 SXM5"
FORMATS = ("table", "json")

_ARITH_FLOAT_OPS = frozenset(
    f"arith.{op}" for op in ("addf", "subf", "mulf", "divf", "remf", "negf", "maximumf",
                             "minimumf", "maxnumf", "minnumf")
)


class CostError(DiagnosticException):
    """The module is not gpu-level IR the cost report can read, or a bad option."""


@dataclass(frozen=True)
class KernelCost:
    """The cost of one kernel launch. `seconds` is the roofline time on the H100 SXM5
    and `bound` says which roof sets it: ``compute`` or ``memory``."""

    kernel: str
    template: str
    grid: int
    block: int
    flops: int
    bytes_read: int
    bytes_written: int
    seconds: float
    bound: str
    tensor_flops: int = 0
    """Of `flops`, those executed by tensor cores (``mma``)."""

    @property
    def bytes(self) -> int:
        """Global bytes moved: read plus written."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float | None:
        """FLOPs per global byte; None when the launch moves no bytes."""
        return self.flops / self.bytes if self.bytes else None

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "roofline_us": self.seconds * 1e6, "intensity": self.intensity}


@dataclass(frozen=True)
class ModelCost:
    """The launches of a module in order, with the sums over them (the roofline times
    add up: launches run one after the other)."""

    launches: tuple[KernelCost, ...]
    kernels: int

    @property
    def flops(self) -> int:
        return sum(k.flops for k in self.launches)

    @property
    def tensor_flops(self) -> int:
        return sum(k.tensor_flops for k in self.launches)

    @property
    def bytes_read(self) -> int:
        return sum(k.bytes_read for k in self.launches)

    @property
    def bytes_written(self) -> int:
        return sum(k.bytes_written for k in self.launches)

    @property
    def seconds(self) -> float:
        return sum(k.seconds for k in self.launches)

    def bound_count(self, bound: str) -> int:
        """How many launches are `bound` (``compute`` or ``memory``)."""
        return sum(k.bound == bound for k in self.launches)

    def top(self, n: int) -> list[KernelCost]:
        """The `n` launches with the longest roofline time, longest first."""
        return sorted(self.launches, key=lambda k: -k.seconds)[:n]

    def to_json(self) -> dict[str, object]:
        return {
            "device": DEVICE,
            "peak_fp32_flops": PEAK_FP32_FLOPS,
            "peak_tensor_flops": PEAK_TENSOR_FLOPS,
            "peak_hbm_bytes_per_s": PEAK_HBM_BYTES_PER_S,
            "launches": len(self.launches),
            "kernels": self.kernels,
            "flops": self.flops,
            "tensor_flops": self.tensor_flops,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "roofline_us": self.seconds * 1e6,
            "compute_bound": self.bound_count("compute"),
            "memory_bound": self.bound_count("memory"),
            "per_launch": [k.to_json() for k in self.launches],
        }


def roofline(flops: int, nbytes: int, tensor_seconds: float = 0.0) -> tuple[float, str]:
    """(seconds, ``compute`` or ``memory``) of `flops` (on CUDA cores) plus
    `tensor_seconds` of tensor-core work, and `nbytes`, on the H100 SXM5."""
    compute, memory = flops / PEAK_FP32_FLOPS + tensor_seconds, nbytes / PEAK_HBM_BYTES_PER_S
    return max(compute, memory), ("compute" if compute > memory else "memory")


def _mma_flops_per_thread(op: tmgpu.MmaOp) -> int:
    """A lane's share of one warp-wide ``mma``'s ``2 M N K`` FLOPs."""
    m, n, k = (int(x) for x in op.shape.data[1:].replace("n", " ").replace("k", " ").split())
    return 2 * m * n * k // 32


# ---- reading the IR ----------------------------------------------------------------------

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
        elif isinstance(op, tmgpu.CpAsyncOp):
            source = op.src
            if isinstance(source, BlockArgument) and isinstance(source.owner.parent_op(), tmgpu.KernelOp):
                counts[("load", source.index)] += op.bytes.data // element_bytes(source)
        elif isinstance(op, tmgpu.LoadVectorOp):  # `width` elements in one access
            buffer = op.memref
            if isinstance(buffer, BlockArgument) and isinstance(buffer.owner.parent_op(), tmgpu.KernelOp):
                counts[("load", buffer.index)] += op.width
        elif isinstance(op, memref.LoadOp | memref.StoreOp):
            buffer = op.memref
            if isinstance(buffer, BlockArgument) and isinstance(buffer.owner.parent_op(),
                                                                tmgpu.KernelOp):
                kind = "load" if isinstance(op, memref.LoadOp) else "store"
                counts[(kind, buffer.index)] += 1
        elif isinstance(op, scf.ForOp):
            trips = 1 if grid_stride_blocks(op) else trip_count(op, kernel)
            for key, n in block_counts(op.body.block, kernel).items():
                counts[key] += trips * n
        elif isinstance(op, scf.IfOp):
            branches = [block_counts(b, kernel) for region in (op.true_region, op.false_region)
                        for b in region.blocks]
            for key in {k for branch in branches for k in branch}:
                counts[key] += max(branch[key] for branch in branches)
        elif op.regions:
            raise CostError(f"kernel @{kernel}: the cost report cannot count inside '{op.name}'"
                            " (only scf.for and scf.if)")
    return counts


def block_flops(block: Block, kernel: str) -> int:
    """FLOPs one thread executes in `block`: loops weighted by their trip counts, the
    larger branch of each scf.if."""
    return block_counts(block, kernel)["flops"]


@dataclass(frozen=True)
class _KernelFacts:
    """What a launch needs of a kernel: its template and what one thread executes."""

    template: str
    per_thread: Counts
    blocks: int | None = None
    """The virtual blocks of a grid-stride kernel (its work, whatever the launch's grid)."""

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


def _kernel_facts(kernel: tmgpu.KernelOp) -> _KernelFacts:
    """The template and per-thread counts of `kernel`."""
    loop = next((op for op in kernel.body.block.ops if isinstance(op, scf.ForOp)
                 and grid_stride_blocks(op)), None)
    return _KernelFacts(template(kernel), block_counts(kernel.body.block, kernel.sym_name.data),
                        grid_stride_blocks(loop) if loop is not None else None)


def element_bytes(value: SSAValue) -> int:
    """Bytes of one element of a buffer (a bool is one byte)."""
    element = dtypes.from_ir(value.type.element_type)
    if element is None:
        raise CostError(f"the cost report does not know the size of {value.type.element_type}")
    return element.numpy.itemsize


def buffer_bytes(value: SSAValue) -> int:
    """Bytes of a host buffer: elements times the element size."""
    return math.prod(value.type.get_shape()) * element_bytes(value)


def _root(value: SSAValue) -> SSAValue:
    """The host buffer behind `value`, through any tmgpu.view."""
    while isinstance(value.owner, tmgpu.ViewOp):
        value = value.owner.source
    return value


def _moved(args: tuple[SSAValue, ...], accesses: dict[int, int], threads: int) -> int:
    """Bytes moved to or from the distinct host buffers behind the accessed arguments: per
    buffer, its size, or fewer when the launch executes fewer accesses than it has elements
    (a gather reading a few rows of a table)."""
    executed: Counter[SSAValue] = Counter()
    for index, per_thread in accesses.items():
        executed[_root(args[index])] += per_thread * threads
    return sum(min(buffer_bytes(buffer), n * element_bytes(buffer))
               for buffer, n in executed.items())


def cost_report(module: ModuleOp) -> ModelCost:
    """The cost of every launch of a gpu-level module (see ``lower-to-cuda``), in order."""
    leftover = above_gpu_level(module)
    if leftover is not None:
        raise attach_op(CostError(f"'{leftover.name}' is above the gpu level; run -p lower-to-cuda first"),
                        leftover)
    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, tmgpu.KernelOp)}
    facts: dict[str, _KernelFacts] = {}
    launches = []
    for function in (op for op in module.ops if isinstance(op, func.FuncOp)):
        for op in function.walk():
            if not isinstance(op, tmgpu.LaunchOp):
                continue
            name = op.kernel.string_value()
            if name not in kernels:
                raise CostError(f"tmgpu.launch of @{name}: no tmgpu.kernel of that name")
            if name not in facts:
                facts[name] = _kernel_facts(kernels[name])
            f = facts[name]
            args = tuple(op.args)
            grid, block = op.grid.data, op.block.data
            threads = (f.blocks or grid) * block  # a grid-stride kernel does all its blocks' work
            flops = f.flops_per_thread * threads
            tensor = {dtype: n * threads for dtype, n in f.accesses("tensor_flops").items()}
            read = _moved(args, f.accesses("load"), threads)
            written = _moved(args, f.accesses("store"), threads)
            seconds, bound = roofline(flops - sum(tensor.values()), read + written,
                                      sum(n / PEAK_TENSOR_FLOPS[dtype] for dtype, n in tensor.items()))
            launches.append(KernelCost(name, f.template, grid, block, flops, read, written,
                                       seconds, bound, sum(tensor.values())))
    return ModelCost(tuple(launches), len(kernels))


# ---- output ------------------------------------------------------------------------------

def totals_line(cost: ModelCost) -> str:
    """One line of sums: launches, kernels, MFLOP, KiB, roofline µs, bounds."""
    return (f"total: {_count(len(cost.launches), 'launch', 'launches')}, "
            f"{_count(cost.kernels, 'kernel', 'kernels')}, "
            f"{cost.flops / 1e6:.3f} MFLOP, {cost.bytes_read / 1024:.2f} KiB read, "
            f"{cost.bytes_written / 1024:.2f} KiB written, {cost.seconds * 1e6:.3f} µs roofline "
            f"({cost.bound_count('compute')} compute-bound, "
            f"{cost.bound_count('memory')} memory-bound)")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


_COLUMNS = ("kernel", "template", "grid x block", "MFLOP", "KiB read", "KiB written",
            "roofline µs", "bound")


def format_table(cost: ModelCost) -> str:
    """A text table, one row per launch, under a line naming the peaks, then the totals."""
    rows = [(k.kernel, k.template, f"{k.grid} x {k.block}", f"{k.flops / 1e6:.3f}",
             f"{k.bytes_read / 1024:.2f}", f"{k.bytes_written / 1024:.2f}",
             f"{k.seconds * 1e6:.3f}", k.bound) for k in cost.launches]
    widths = [max(len(r[i]) for r in [_COLUMNS, *rows]) for i in range(len(_COLUMNS))]

    def line(cells: tuple[str, ...]) -> str:
        left = [c.ljust(w) for c, w in zip(cells[:2], widths)]
        right = [c.rjust(w) for c, w in zip(cells[2:7], widths[2:7])]
        return "  ".join([*left, *right, cells[7]]).rstrip()

    header = (f"# roofline on {DEVICE}: {PEAK_FP32_FLOPS / 1e12:g} TFLOP/s FP32, "
              f"{PEAK_TENSOR_FLOPS['f16'] / 1e12:g} f16/bf16 and {PEAK_TENSOR_FLOPS['tf32'] / 1e12:g} "
              "tf32 on tensor cores, "
              f"{PEAK_HBM_BYTES_PER_S / 1e12:g} TB/s HBM3, "
              f"ridge {RIDGE_FLOPS_PER_BYTE:g} FLOP/byte; no launch overhead")
    body = [line(_COLUMNS), *(line(r) for r in rows)]
    return "\n".join([header, *body, totals_line(cost)]) + "\n"


@dataclass(frozen=True)
class CostTarget(Target):
    """``-t cost``: the cost report of a gpu-level module as a table, or
    ``-t 'cost{format=json}'`` as JSON."""

    name: ClassVar[str] = "cost"
    format: str = "table"

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise CostError(f"-t cost: format must be one of {', '.join(FORMATS)}, "
                            f"got '{self.format}'")

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        cost = cost_report(module)
        if self.format == "json":
            output.write(json.dumps(cost.to_json(), indent=2) + "\n")
        else:
            output.write(format_table(cost))
