"""The ``ptx``, ``cubin`` and ``report`` targets: a gpu-level module compiled for a GPU.

In: a module at the gpu level (after ``-p lower-to-cuda``), as ``-t cuda`` takes it. Out:
``-t ptx`` the PTX text of the whole program; ``-t cubin`` its CUBIN (bytes, so only with
``-o FILE`` or a redirected stdout); ``-t report`` one row per kernel: schedule template and
parameters, launch shapes (grid x block, from the host function's launches), and the
registers, spills, static shared memory and stack frame that ``ptxas -v`` reports, then a
totals line (``report{format=json}`` gives the same as JSON). Every target takes
``arch`` (default sm_90, or ``tm-opt --arch``) and ``compiler`` (``auto``: NVRTC when its
library loads, else nvcc)::

    tm-opt net.mlir -p lower-to-cuda -t 'ptx{arch=sm_80 compiler=nvcc}'
    tm-opt net.mlir -p lower-to-cuda -t cubin --arch sm_90 -o net.cubin

Compiles go through the artifact cache of ``tmlir.backends.ptx``: a second run is a file
read. A compile error, a missing compiler or a bad option is one line.
"""

from __future__ import annotations

import dataclasses
import difflib
import io
import json
from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from tmlir.backends.cuda_c import CudaEmitError, CudaProgram, above_gpu_level, emit_cuda
from tmlir.backends.ptx import (
    COMPILE_ARCHS,
    CudaCompileError,
    KernelStats,
    compile_cubin,
    compile_ptx,
    kernel_stats,
    with_dynamic_shared,
)
from tmlir.ir.diagnostics import attach_op, failing_op

COMPILERS = ("auto", "nvrtc", "nvcc")
FORMATS = ("table", "json")
DEFAULT_ARCH = "sm_90"


class TargetError(DiagnosticException):
    """IR the target cannot compile, or a failed compilation."""


class TargetOptionError(ValueError):
    """A bad value of a target option (a ValueError, as xDSL's option checks raise)."""


def _choice(target: str, option: str, value: str, valid: tuple[str, ...]) -> None:
    if value in valid:
        return
    close = difflib.get_close_matches(value, valid, n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise TargetOptionError(f"unknown {option} '{value}' for target '{target}'{hint} "
                            f"(valid: {', '.join(valid)})")


@dataclass(frozen=True)
class _GpuTarget(Target):
    """What the three targets share: the options, the gpu-level check and compiling."""

    arch: str = DEFAULT_ARCH
    """The GPU architecture: sm_75, sm_80, sm_86, ... sm_120; also set by `tm-opt --arch`."""
    compiler: str = "auto"
    """`nvrtc` (in-process), `nvcc`, or `auto`: NVRTC when its library loads, else nvcc."""

    def __post_init__(self) -> None:
        _choice(self.name, "arch", self.arch, COMPILE_ARCHS)
        _choice(self.name, "compiler", self.compiler, COMPILERS)

    def program(self, module: ModuleOp) -> CudaProgram:
        """The CUDA C of `module`; a one-line error if it is above the gpu level."""
        leftover = above_gpu_level(module)
        if leftover is not None:
            raise attach_op(TargetError(f"'{leftover.name}' is above the gpu level; "
                                        f"run -p lower-to-cuda before -t {self.name}"), leftover)
        try:
            program = emit_cuda(module, self.arch)
        except CudaEmitError as exc:  # an op the arch lacks
            op = failing_op(exc)
            error = TargetError(f"-t {self.name}: {exc}")
            raise (error if op is None else attach_op(error, op)) from None
        if not program.kernels:
            raise TargetError(f"-t {self.name}: the module has no tmgpu.kernel to compile")
        return program

    def compiled(self, call, *args, **kwargs):
        """`call(*args, **kwargs)` with compiler failures as one-line TargetErrors."""
        try:
            return call(*args, **kwargs)
        except CudaCompileError as exc:
            raise TargetError(f"-t {self.name}: {exc.summary}") from exc
        except ValueError as exc:  # an arch the installed compiler does not know
            raise TargetError(f"-t {self.name}: {exc}") from exc


@dataclass(frozen=True)
class PtxTarget(_GpuTarget):
    """The PTX text of the whole program, compiled for ``arch`` (its ``.target`` line)."""

    name: ClassVar[str] = "ptx"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        source = self.program(module).source
        output.write(self.compiled(compile_ptx, source, self.arch, compiler=self.compiler,
                                   name="program.cu"))


@dataclass(frozen=True)
class CubinTarget(_GpuTarget):
    """The CUBIN of the whole program (binary: give ``-o FILE``; a terminal is refused).

    Its bytes come from `emit_binary`; tm-opt writes them to the file or a redirected stdout."""

    name: ClassVar[str] = "cubin"
    binary: ClassVar[bool] = True

    def emit_binary(self, ctx: Context, module: ModuleOp) -> bytes:
        source = self.program(module).source
        return self.compiled(compile_cubin, source, self.arch, compiler=self.compiler,
                             name="program.cu")

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        raise TargetError("-t cubin writes binary; give -o FILE")


# ---- report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelReport:
    """One kernel: its schedule, its launch shapes (grid, block) in launch order, and the
    resources ptxas gave it."""

    kernel: str
    template: str
    params: dict[str, int | float | str]
    launches: tuple[tuple[int, int], ...]
    stats: KernelStats

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "template": self.template, "params": self.params,
                "launches": [{"grid": g, "block": b} for g, b in self.launches],
                "registers": self.stats.registers, "spill_bytes": self.stats.spill_bytes,
                "shared_bytes": self.stats.shared_bytes, "stack_bytes": self.stats.local_bytes}


def kernel_reports(program: CudaProgram, stats: dict[str, KernelStats]) -> list[KernelReport]:
    """Join the program's kernels and launches with ptxas' statistics (by kernel name)."""
    reports = []
    for info in program.kernels:
        name = info.signature.name
        if name not in stats:
            raise TargetError(f"-t report: ptxas reported nothing for kernel '{name}'")
        shapes = tuple(dict.fromkeys((launch.grid, launch.block) for launch in program.launches
                                     if launch.kernel == name))
        reports.append(KernelReport(name, info.template, info.params, shapes, stats[name]))
    return reports


def totals_line(reports: list[KernelReport], launches: int) -> str:
    """Kernels and launches, the most registers, and summed spills, shared memory and stack."""
    def total(field: str) -> int:
        return sum(getattr(r.stats, field) for r in reports)

    kernels = f"{len(reports)} kernel{'' if len(reports) == 1 else 's'}"
    return (f"total: {kernels}, {launches} launch{'' if launches == 1 else 'es'}, "
            f"max {max(r.stats.registers for r in reports)} registers, "
            f"{total('spill_bytes')} B spilled, {total('shared_bytes')} B shared, "
            f"{total('local_bytes')} B stack")


_COLUMNS = ("kernel", "template", "grid x block", "regs", "spill B", "smem B", "stack B",
            "parameters")


def format_report(reports: list[KernelReport], launches: int, arch: str) -> str:
    """A fixed-width table, one row per kernel, under a header line, then the totals."""
    rows = [(r.kernel, r.template,
             ", ".join(f"{g} x {b}" for g, b in r.launches) or "-",
             str(r.stats.registers), str(r.stats.spill_bytes), str(r.stats.shared_bytes),
             str(r.stats.local_bytes), ", ".join(f"{k}={v}" for k, v in r.params.items()) or "-")
            for r in reports]
    widths = [max(len(row[i]) for row in [_COLUMNS, *rows]) for i in range(len(_COLUMNS))]

    def line(cells: tuple[str, ...]) -> str:
        left = [c.ljust(w) for c, w in zip(cells[:2], widths)]
        right = [c.rjust(w) for c, w in zip(cells[2:7], widths[2:7])]
        return "  ".join([*left, *right, cells[7]]).rstrip()

    header = f"# ptxas -v for {arch}: registers per thread, bytes per thread or block"
    return "\n".join([header, line(_COLUMNS), *map(line, rows), totals_line(reports, launches)]) + "\n"


@dataclass(frozen=True)
class ReportTarget(_GpuTarget):
    """Per kernel: template, launch shapes, registers, spills, shared memory, stack (ptxas -v).

    One row per kernel in module order, its template parameters last, then a totals line;
    ``report{format=json}`` gives the same as JSON."""

    name: ClassVar[str] = "report"
    format: str = "table"
    """`table` (fixed-width text) or `json`."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _choice(self.name, "format", self.format, FORMATS)

    def reports(self, module: ModuleOp) -> tuple[list[KernelReport], int]:
        """The kernel reports of `module` and its number of launches."""
        program = self.program(module)
        stats = self.compiled(kernel_stats, program.source, self.arch, self.compiler)
        dynamic = {k.signature.name: k.dynamic_shared_bytes for k in program.kernels}
        return kernel_reports(program, with_dynamic_shared(stats, dynamic)), len(program.launches)

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        reports, launches = self.reports(module)
        if self.format == "table":
            output.write(format_report(reports, launches, self.arch))
            return
        totals = {"kernels": len(reports), "launches": launches,
                  "max_registers": max(r.stats.registers for r in reports),
                  **{key: sum(getattr(r.stats, field) for r in reports) for key, field in (
                      ("spill_bytes", "spill_bytes"), ("shared_bytes", "shared_bytes"),
                      ("stack_bytes", "local_bytes"))}}
        output.write(json.dumps({"arch": self.arch, "totals": totals,
                                 "kernels": [r.to_json() for r in reports]}, indent=2) + "\n")


# ---- the driver's side ------------------------------------------------------------------------


def build_target(factory, spec: ArgSpec, arch: str | None) -> Target:
    """The target `spec` names (``factory()`` is its class) with tm-opt's ``--arch`` given
    to its ``arch`` option; an error if the target has none, or `spec` names another arch."""
    cls = factory()
    options = [f.name for f in dataclasses.fields(cls) if f.init]
    for key in spec.normalize_parameter_names().parameters:
        if key not in options:
            close = difflib.get_close_matches(key, options, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            valid = f"options: {', '.join(options)}" if options else "it takes no options"
            raise TargetOptionError(f"target '{spec.name}' has no option '{key}'{hint} ({valid})")
    try:
        target = cls.from_spec(spec)
    except TargetOptionError:
        raise
    except ValueError as exc:  # xDSL's conversion of an option's value
        raise TargetOptionError(f"target '{spec.name}': {exc}") from exc
    if arch is None:
        return target
    if "arch" not in {f.name for f in dataclasses.fields(target)}:
        raise TargetOptionError(f"--arch applies to -t ptx, cubin and report, not -t {spec.name}")
    given = spec.normalize_parameter_names().parameters.get("arch")
    if given is not None and tuple(given) != (arch,):
        raise TargetOptionError(f"--arch {arch} and -t {spec.name}{{arch={given[0]}}} disagree: give one")
    return dataclasses.replace(target, arch=arch)


def emit_text(target: Target, ctx: Context, module: ModuleOp) -> str:
    """What `target` writes for `module`, as text."""
    output = io.StringIO()
    target.emit(ctx, module, output)
    return output.getvalue()
