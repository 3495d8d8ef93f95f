"""The ``cost`` target: FLOPs, global-memory bytes, a roofline time and an estimated time per
kernel launch on a named GPU, read from gpu-level IR, no GPU needed.

For every ``tmgpu.launch`` of the host function (in order), from what one thread executes
(``kernel_counts.py``):

* **FLOPs executed**: float arithmetic weighted by loop trip counts (the larger branch of an
  ``scf.if``, or each as often as ``tm.branch_weights`` says), times the launch's threads; a ``tmgpu.mma`` counts its share of ``2 M N K``,
  also as ``tensor_flops``. An upper bound: idle threads and padded tiles count in full.
* **Global bytes read and written**: per kernel argument the body loads (or copies with
  ``cp.async``) or stores, its buffer's bytes -- or the accesses executed, when fewer -- once
  per distinct host buffer: the compulsory DRAM traffic.
* **Roofline time** on the GPU (``gpu=``, default the H100 SXM5; ``tmlir.gpus``):
  ``max(simt_flops / FP32 peak + tensor_flops / tensor peak, bytes / HBM bandwidth)``, bound
  ``compute`` or ``memory``. No launch overhead.
* **Estimated time** (``estimate``, and ``limit``: what sets it): the latency model of
  ``tmlir.latency`` on the launch's grid, block, registers (ptxas' figure with ``ptxas=true``,
  else the template's estimate), shared memory, counts and -- for a GEMM-like template -- its
  k-loop (``tmlir.schedules.kloops``), including the launch's cost inside a CUDA graph.

``tm-opt model.onnx -p lower-to-cuda -t 'cost{gpu=H200}'`` prints a table, one row per launch,
then the totals; ``-t 'cost{format=json gpu=H200}'`` prints :meth:`ModelCost.to_json`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from tmlir.backends.cuda_c import above_gpu_level
from tmlir.backends.kernel_counts import CostError, KernelFacts, kernel_facts, moved_bytes
from tmlir.dialects import tmgpu
from tmlir.gpus import DEFAULT_GPU, Gpu, gpu
from tmlir.ir.diagnostics import attach_op
from tmlir.latency import Launch, estimate
from tmlir.schedules.kloops import kloop, register_estimate

_DEFAULT = gpu(DEFAULT_GPU)
PEAK_FP32_FLOPS = _DEFAULT.fp32_flops
"""The default GPU's (H100 SXM5) FP32 peak without tensor cores: 67 TFLOPS."""
PEAK_HBM_BYTES_PER_S = _DEFAULT.hbm_bytes_per_s
"""The default GPU's HBM3 bandwidth: 3.35 TB/s."""
PEAK_TENSOR_FLOPS = _DEFAULT.tensor_flops
"""The default GPU's dense tensor-core peaks by mma operand type."""
FORMATS = ("table", "json")

__all__ = ["CostError", "CostTarget", "KernelCost", "ModelCost", "cost_report", "format_table",
           "roofline", "totals_line"]


@dataclass(frozen=True)
class KernelCost:
    """The cost of one kernel launch. `seconds` is the roofline time on the report's GPU and
    `bound` the roof that sets it (``compute`` or ``memory``); `estimate_seconds` is the
    latency model's time and `limit` what sets it (``latency``, ``issue``, ``tensor``,
    ``memory``)."""

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
    estimate_seconds: float = 0.0
    limit: str = ""
    registers: int = 0
    """Registers per thread the estimate assumed (ptxas' figure or the template's estimate)."""
    resident: int = 0
    """Blocks an SM holds at once, by registers, shared memory and threads."""
    launch: Launch | None = field(default=None, compare=False, repr=False)
    """What the latency model was given (to re-estimate, e.g. on another GPU)."""

    @property
    def bytes(self) -> int:
        """Global bytes moved: read plus written."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float | None:
        """FLOPs per global byte; None when the launch moves no bytes."""
        return self.flops / self.bytes if self.bytes else None

    def to_json(self) -> dict[str, object]:
        fields = {k: v for k, v in asdict(self).items() if k != "launch"}
        return {**fields, "roofline_us": self.seconds * 1e6, "estimate_us": self.estimate_seconds * 1e6,
                "intensity": self.intensity}


@dataclass(frozen=True)
class ModelCost:
    """The launches of a module in order, with the sums over them (times add up: launches
    run one after the other)."""

    launches: tuple[KernelCost, ...]
    kernels: int
    gpu: Gpu = field(default=_DEFAULT)

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

    @property
    def estimate_seconds(self) -> float:
        return sum(k.estimate_seconds for k in self.launches)

    def bound_count(self, bound: str) -> int:
        """How many launches are `bound` (``compute`` or ``memory``)."""
        return sum(k.bound == bound for k in self.launches)

    def top(self, n: int, by_estimate: bool = False) -> list[KernelCost]:
        """The `n` launches with the longest roofline (or estimated) time, longest first."""
        return sorted(self.launches, key=lambda k: -(k.estimate_seconds if by_estimate else k.seconds))[:n]

    def to_json(self) -> dict[str, object]:
        return {
            "device": self.gpu.name,
            "peak_fp32_flops": self.gpu.fp32_flops,
            "peak_tensor_flops": self.gpu.tensor_flops,
            "peak_hbm_bytes_per_s": self.gpu.hbm_bytes_per_s,
            "launches": len(self.launches),
            "kernels": self.kernels,
            "flops": self.flops,
            "tensor_flops": self.tensor_flops,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "roofline_us": self.seconds * 1e6,
            "estimate_us": self.estimate_seconds * 1e6,
            "compute_bound": self.bound_count("compute"),
            "memory_bound": self.bound_count("memory"),
            "per_launch": [k.to_json() for k in self.launches],
        }


def roofline(flops: int, nbytes: int, tensor_seconds: float = 0.0, on: Gpu = _DEFAULT) -> tuple[float, str]:
    """(seconds, ``compute`` or ``memory``) of `flops` (on CUDA cores) plus
    `tensor_seconds` of tensor-core work, and `nbytes`, on the GPU `on`."""
    compute, memory = flops / on.fp32_flops + tensor_seconds, nbytes / on.hbm_bytes_per_s
    return max(compute, memory), ("compute" if compute > memory else "memory")


#: Registers per thread assumed for a kernel that is not GEMM-like, without ptxas' figure.
DEFAULT_REGISTERS = 32


def cost_report(module: ModuleOp, on: str | Gpu = DEFAULT_GPU,
                registers: Mapping[str, int] | None = None) -> ModelCost:
    """The cost of every launch of a gpu-level module (see ``lower-to-cuda``), in order, on
    the GPU `on` (a name of ``tmlir.gpus``; ValueError for an unknown one). `registers`
    gives ptxas' registers per thread by kernel name; kernels missing there get the
    template's estimate."""
    target = gpu(on) if isinstance(on, str) else on
    leftover = above_gpu_level(module)
    if leftover is not None:
        raise attach_op(CostError(f"'{leftover.name}' is above the gpu level; run -p lower-to-cuda first"),
                        leftover)
    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, tmgpu.KernelOp)}
    facts: dict[str, KernelFacts] = {}
    launches = []
    for function in (op for op in module.ops if isinstance(op, func.FuncOp)):
        for op in function.walk():
            if not isinstance(op, tmgpu.LaunchOp):
                continue
            name = op.kernel.string_value()
            if name not in kernels:
                raise CostError(f"tmgpu.launch of @{name}: no tmgpu.kernel of that name")
            if name not in facts:
                facts[name] = kernel_facts(kernels[name])
            launches.append(_launch_cost(name, facts[name], op, target, (registers or {}).get(name)))
    return ModelCost(tuple(launches), len(kernels), target)


def _launch_cost(name: str, f: KernelFacts, op: tmgpu.LaunchOp, on: Gpu, registers: int | None) -> KernelCost:
    args = tuple(op.args)
    grid, block = op.grid.data, op.block.data
    blocks = f.blocks or grid  # a grid-stride kernel does all its (virtual) blocks' work
    threads = blocks * block
    flops = round(f.flops_per_thread * threads)  # weighted branches: fractions per thread
    tensor = {dtype: round(n * threads) for dtype, n in f.accesses("tensor_flops").items()}
    read = moved_bytes(args, f.accesses("load"), threads)
    written = moved_bytes(args, f.accesses("store"), threads)
    seconds, bound = roofline(flops - sum(tensor.values()), read + written,
                              sum(n / on.tensor_flops[dtype] for dtype, n in tensor.items()), on)
    params = f.params or {}
    regs = registers or register_estimate(f.template, params) or DEFAULT_REGISTERS
    launch = Launch(blocks, block, regs, f.shared_bytes, flops - sum(tensor.values()), read + written,
                    tensor, kloop(f.template, params), f.serial_loads)
    guess = estimate(launch, on)
    return KernelCost(name, f.template, grid, block, flops, read, written, seconds, bound,
                      sum(tensor.values()), guess.seconds, guess.bound, regs, guess.resident, launch)


# ---- output ------------------------------------------------------------------------------

def totals_line(cost: ModelCost) -> str:
    """One line of sums: launches, kernels, MFLOP, KiB, roofline and estimated µs, bounds."""
    return (f"total: {_count(len(cost.launches), 'launch', 'launches')}, "
            f"{_count(cost.kernels, 'kernel', 'kernels')}, "
            f"{cost.flops / 1e6:.3f} MFLOP, {cost.bytes_read / 1024:.2f} KiB read, "
            f"{cost.bytes_written / 1024:.2f} KiB written, {cost.seconds * 1e6:.3f} µs roofline, "
            f"{cost.estimate_seconds * 1e6:.3f} µs estimated "
            f"({cost.bound_count('compute')} compute-bound, "
            f"{cost.bound_count('memory')} memory-bound)")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


_COLUMNS = ("kernel", "template", "grid x block", "MFLOP", "KiB read", "KiB written",
            "roofline µs", "bound", "estimate µs", "limit")


def format_table(cost: ModelCost) -> str:
    """A text table, one row per launch, under a line naming the GPU, then the totals."""
    rows = [(k.kernel, k.template, f"{k.grid} x {k.block}", f"{k.flops / 1e6:.3f}",
             f"{k.bytes_read / 1024:.2f}", f"{k.bytes_written / 1024:.2f}",
             f"{k.seconds * 1e6:.3f}", k.bound, f"{k.estimate_seconds * 1e6:.3f}", k.limit)
            for k in cost.launches]
    widths = [max(len(r[i]) for r in [_COLUMNS, *rows]) for i in range(len(_COLUMNS))]
    right = {2, 3, 4, 5, 6, 8}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    header = (f"# {cost.gpu.describe()}, ridge {cost.gpu.ridge:.3g} FLOP/byte; roofline: no launch "
              "overhead; estimate: the latency model, launches in a CUDA graph")
    body = [line(_COLUMNS), *(line(r) for r in rows)]
    return "\n".join([header, *body, totals_line(cost)]) + "\n"


@dataclass(frozen=True)
class CostTarget(Target):
    """``-t cost``: the cost report of a gpu-level module as a table, or
    ``-t 'cost{format=json}'`` as JSON; ``gpu=H200`` names the GPU (H100 by default: see
    ``tmlir.gpus``), ``ptxas=true`` compiles the kernels with NVRTC for the GPU's
    architecture to take their registers from ptxas (cached) instead of estimates."""

    name: ClassVar[str] = "cost"
    format: str = "table"
    gpu: str = DEFAULT_GPU
    ptxas: bool = False

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise CostError(f"-t cost: format must be one of {', '.join(FORMATS)}, "
                            f"got '{self.format}'")
        try:
            gpu(self.gpu)
        except ValueError as exc:
            raise CostError(f"-t cost: {exc}") from None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        on = gpu(self.gpu)
        registers = ptxas_registers(module, on.arch) if self.ptxas else None
        cost = cost_report(module, on, registers)
        if self.format == "json":
            output.write(json.dumps(cost.to_json(), indent=2) + "\n")
        else:
            output.write(format_table(cost))


def ptxas_registers(module: ModuleOp, arch: str) -> dict[str, int]:
    """Registers per thread of every kernel of a gpu-level module, from ptxas (NVRTC, else
    nvcc; cached)."""
    from tmlir.backends.cuda_c import emit_cuda
    from tmlir.backends.ptx import kernel_stats

    return {name: stats.registers for name, stats in kernel_stats(emit_cuda(module).source, arch).items()}
