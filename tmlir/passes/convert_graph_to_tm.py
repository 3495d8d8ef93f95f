"""``convert-graph-to-tm``: schedule every graph operator (or fusion group) with a template.

In: a ``func.func`` of ``graph`` ops on tensors, maybe grouped into ``graph.fused`` regions
by ``graph-partition``. Out: one ``tm.kernel`` per group (an op outside any group is a
group of its own) and a host ``func.func`` on memrefs that allocates intermediates
(``tm.alloc global``), names weights (``tm.weight``) and launches the kernels in order.

Two steps. **Bufferization** gives every value that crosses a kernel boundary a buffer:
inputs are the function's arguments, outputs become trailing arguments written by the
kernels (destination passing), weights are ``tm.weight``s, other group results
``tm.alloc``s; ``graph.reshape`` gets no kernel, its result is a ``tm.view`` of its
operand's buffer (a value returned through reshapes is written into the output argument
seen through a view), and an output that no kernel writes (an input or a weight returned
as is) gets a copy kernel. A kernel's scratch arguments (a split-K workspace and counters,
``tmlir/ir/kernel_ops.py``) get buffers of their own at each launch: ``tm.alloc global``
for a workspace (an intermediate like any other, live for that launch), ``tm.alloc global
zeroed`` for counters. **Scheduling** builds each group's kernel: the anchor's
template (``tmlir/schedules/templates.py``, one dispatch for all of them) builds the
anchor's kernel as if it stood alone, and post-scheduling fusion
(``tmlir/schedules/fusion.py``) rewrites its loads and stores to compute the group's
prologue and epilogue. Tensors are f32, i64, i32 or i1 (see ``tmlir.dtypes``).

**Tuned parameters.** With ``target-device`` set (the name of the GPU the code is for,
as ``cuDeviceGetName`` reports it, e.g. ``"NVIDIA H100 80GB HBM3"``, with
``target-arch``), every tunable anchor (matmul, implicit-GEMM convolution) is built with
the parameters of its tuning record for that device, when there is one (``tm-tune``
writes them; see ``docs/tuning.md``); ``tuning-records`` names the records file (default:
``$TMLIR_TUNING_RECORDS``, else ``tuning_records.jsonl`` in the cache directory). Without
a target device, every template uses its default parameters.

**Default parameters** are the latency model's choice (``tmlir/schedules/model_choice.py``):
of a template's valid candidates for the op's problem, the one ``tmlir.latency`` estimates
fastest on the target GPU -- the named ``target-device`` when it is a known one, else the
arch's reference part. ``schedule-defaults=legacy`` gives instead the schedules chosen
before the model (the SIMT GEMM's register-path preference list, no small-M template):
the kernels the model was calibrated on, so ``benchmarks/latency_model.py`` can rebuild a
model as it was measured.

**Pinned schedules and changed defaults.** A tunable op (in a group: the anchor) may carry
a ``schedule`` attribute naming its template's parameters (``tmlir/schedules/pinned.py``,
``docs/schedules.md``): the kernel is built with them, whatever the records say.
``matmul``, ``conv`` and ``gemv`` change the default parameters of the matmul,
implicit-GEMM convolution and small-M matmul templates (``matmul="block_warps=2x2
block_k=16"``: the parameters left out keep their default for each op's problem); they
apply where neither a pin nor a record does, and not to f64 matmuls. Every pin in the module is checked before anything is
converted; a wrong parameter is one error naming the op (``OpError``) and the parameter.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, MemRefType, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tmlir import dtypes
from tmlir.backends.ptx import SUPPORTED_ARCHS
from tmlir.dialects import graph, tm
from tmlir.ir.builder import IRBuilder
from tmlir.ir.diagnostics import OpError, failing_op
from tmlir.schedules.elementwise import elementwise_kernel
from tmlir.schedules.fusion import anchor_of, fuse_group
from tmlir.schedules.kernel_key import group_key
from tmlir.schedules.model_choice import default_of, legacy_default
from tmlir.schedules.pinned import OPTIONS, check_option, pinned_params, resolve, verify_schedules
from tmlir.schedules.templates import TemplateParams, TunableProblem, TunedParams, kernel_for


def buffer_type(type: TensorType) -> MemRefType:
    """The buffer of a tensor (rank-0 tensors are stored as one element)."""
    if dtypes.from_ir(type.get_element_type()) is None:
        supported = ", ".join(str(d.ir) for d in dtypes.DTYPES)
        raise PassFailedException(f"convert-graph-to-tm: unsupported element type in {type} "
                                  f"(supported: {supported})")
    return MemRefType(type.get_element_type(), type.get_shape() or (1,))


@dataclass(frozen=True)
class KnownKernel:
    """A kernel built for a group, as a later group of the same structure launches it: its
    name, the positions of its tensor arguments' values among the group's canonical values
    (`group_key`), and the kind and type of each scratch argument (every launch gets
    scratch buffers of its own)."""

    name: str
    positions: tuple[int, ...]
    scratch: tuple[tuple[str, MemRefType], ...] = ()


@dataclass
class _Lowering:
    """State of converting one graph function: the host function being built and the
    buffer of every value seen so far; kernel numbers are unique in the module."""

    function: func.FuncOp
    host: IRBuilder
    numbers: Iterator[int]
    buffers: dict[SSAValue, SSAValue]
    destination: dict[SSAValue, SSAValue]
    kernels: dict[Hashable, KnownKernel | None]
    tuned: TunedParams | None = None
    arch: str = "sm_90"
    small_m: bool = True

    def kernel_name(self, op: Operation) -> str:
        kind = "copy" if isinstance(op, func.ReturnOp) else op.name.split(".")[-1]
        return f"{kind}_{next(self.numbers)}"

    def view(self, buffer: SSAValue, value: SSAValue) -> SSAValue:
        """The memory of `buffer` as the buffer of tensor `value`: `buffer` itself or the
        ``tm.view`` of the buffer it views (no chains of views)."""
        buffer = _root(buffer)
        wanted = buffer_type(value.type)
        if buffer.type == wanted:
            return buffer
        return self.host.insert(tm.ViewOp(buffer, wanted), value.name_hint).results[0]

    def result_buffer(self, value: SSAValue) -> SSAValue:
        """A new buffer for `value`, a kernel's result: the output argument it is returned
        through, else a ``tm.alloc``."""
        dest = self.destination.get(value)
        if dest is not None:
            return self.view(dest, value)  # the output is (a reshape of) this value
        return self.host.insert(tm.AllocOp("global", buffer_type(value.type)),
                                value.name_hint).results[0]

    def schedule(self, members: Sequence[Operation], yielded: Sequence[SSAValue],
                 results: Sequence[SSAValue]) -> None:
        """Bufferize `results` (the group's values seen from outside, one per `yielded`
        value) and launch the kernel of the group of `members`."""
        for result in results:
            self.buffers[result] = self.result_buffer(result)
        inner = {y: self.buffers[r] for y, r in zip(yielded, results)}
        key, canonical = group_key(members, yielded)
        if key in self.kernels:  # a group of the same structure was scheduled: reuse its kernel
            known = self.kernels[key]
            if known is not None:
                self.launch(known.name, [canonical[i] for i in known.positions], inner, known.scratch)
            return
        try:
            anchor = anchor_of(members, yielded)
        except ValueError as exc:
            group = failing_op(exc) or members[0].parent_op()
            assert group is not None
            raise OpError(group, f"convert-graph-to-tm: '{group.name}': {exc}") from exc
        pinned = pinned_params(anchor, self.arch, small_m=self.small_m)
        try:
            inside = set(members)
            prologue = [i for i, v in enumerate(anchor.operands) if v.owner in inside]
            kernel = kernel_for(self.kernel_name(anchor), anchor, self.tuned, pinned, self.arch, prologue,
                                self.small_m)
            if kernel is None:  # the result has no elements
                self.kernels[key] = None
                return
            values: Sequence[SSAValue] = [*anchor.operands, *anchor.results]
            if len(members) > 1:
                fused = fuse_group(kernel, members, yielded)
                kernel, values = fused.kernel, fused.args
        except ValueError as exc:  # a template's limit, or a member fusion cannot take
            at = failing_op(exc) or anchor
            raise OpError(at, f"convert-graph-to-tm: '{at.name}': {exc}") from exc
        position = {value: i for i, value in reversed(list(enumerate(canonical)))}
        scratch = tuple(zip(kernel.scratch_kinds, (a.type for a in kernel.scratch_args)))
        known = KnownKernel(kernel.sym_name.data, tuple(position[v] for v in values), scratch)  # type: ignore[arg-type]
        self.kernels[key] = known
        self.function.parent_block().insert_op_before(kernel, self.function)
        self.launch(known.name, values, inner, known.scratch)

    def launch(self, kernel: str, values: Sequence[SSAValue], inner: dict[SSAValue, SSAValue],
               scratch: Sequence[tuple[str, MemRefType]] = ()) -> None:
        """Launch `kernel` on the buffers of `values`: those of the graph, else of `inner`
        (the group's yielded values), else new ones (results nobody reads); then a buffer
        of its own for each of its `scratch` arguments (kind, type): a ``tm.alloc global``
        for a workspace, ``tm.alloc global zeroed`` for counters."""
        args = []
        for value in values:
            if value not in self.buffers and value not in inner:  # a result nobody reads
                inner[value] = self.result_buffer(value)
            args.append(self.buffers[value] if value in self.buffers else inner[value])
        for kind, type in scratch:
            alloc = tm.AllocOp("global", type, zeroed=kind == "counters")
            args.append(self.host.insert(alloc, kind).results[0])
        self.host.insert(tm.LaunchOp(kernel, args))

    def copy(self, source: SSAValue, dest: SSAValue, ret: func.ReturnOp) -> None:
        """A kernel copying buffer `source` into `dest` (same shape)."""
        shape = dest.type.get_shape()  # type: ignore[attr-defined]
        element = dest.type.element_type  # type: ignore[attr-defined]
        kernel = elementwise_kernel(self.kernel_name(ret), shape, [shape],
                                    lambda b, xs: xs[0], "x0", element_types=[element] * 2)
        self.function.parent_block().insert_op_before(kernel, self.function)
        self.host.insert(tm.LaunchOp(kernel.sym_name.data, [source, dest]))


SCHEDULE_DEFAULTS = ("model", "legacy")
"""The values of the ``schedule-defaults`` option."""


def check_schedule_defaults(pass_name: str, value: str) -> None:
    """A ValueError, one line naming the pass, unless `value` is a ``schedule-defaults``."""
    if value not in SCHEDULE_DEFAULTS:
        raise ValueError(f"option 'schedule-defaults' of pass '{pass_name}' must be one of "
                         f"{', '.join(SCHEDULE_DEFAULTS)}, got '{value}'")


def check_target_arch(pass_name: str, arch: str) -> None:
    """A ValueError, one line naming the pass, unless `arch` is one tmlir compiles for."""
    if arch not in SUPPORTED_ARCHS:
        raise ValueError(f"option 'target-arch' of pass '{pass_name}' must be one of "
                         f"{', '.join(SUPPORTED_ARCHS)}, got '{arch}'")


@dataclass(frozen=True)
class ConvertGraphToTm(ModulePass):
    """Schedule graph operators and fusion groups into tm kernels and a host launch
    sequence.

    ``target-device`` (default empty: no tuning records), ``target-arch`` (default sm_90)
    and ``tuning-records`` (a path; default the standard location) choose the tuning
    records that tunable anchors are built with (see the module docstring). ``matmul``,
    ``conv`` and ``gemv`` (``name=value`` words, e.g. ``"block_warps=2x2 lanes=8x4
    block_k=16"``) change the default parameters of the matmul, implicit-GEMM convolution
    and small-M matmul templates;
    a ``schedule`` attribute on an op wins over records and defaults.
    """

    name = "convert-graph-to-tm"

    target_device: str = ""
    """The GPU the code is for, as cuDeviceGetName names it; empty: no tuning records."""
    target_arch: str = "sm_90"
    """The compute capability the code is for: the tuning records are looked up for it,
    and a matmul on f16/bf16 operands runs on tensor cores from sm_80 on."""
    tuning_records: str = ""
    """The tuning records file (default: $TMLIR_TUNING_RECORDS, else the cache's)."""
    matmul: str = ""
    """The matmul template's default parameters, e.g. "lanes=8x4 block_k=16"."""
    conv: str = ""
    """The implicit-GEMM convolution template's default parameters, e.g. "block_warps=1x2"."""
    gemv: str = ""
    """The small-M matmul template's default parameters, e.g. "warps=4 unroll=2"."""
    schedule_defaults: str = "model"
    """How tunable templates choose untuned parameters: "model" (the latency model's
    fastest on the target GPU) or "legacy" (the choices before it, no small-M template)."""

    def __post_init__(self) -> None:
        check_target_arch(self.name, self.target_arch)
        check_schedule_defaults(self.name, self.schedule_defaults)
        self.default_values()  # ValueError, one line, for a bad option

    @property
    def small_m(self) -> bool:
        """Whether small-M matmuls take their own template (not under legacy defaults)."""
        return self.schedule_defaults != "legacy"

    def default_values(self) -> dict[str, dict[str, int | tuple[int, ...]]]:
        """The parameters the ``matmul``, ``conv`` and ``gemv`` options set, by template."""
        values: dict[str, dict[str, int | tuple[int, ...]]] = {}
        for template, option in OPTIONS.items():
            try:
                values[template] = check_option(template, getattr(self, option))
            except ValueError as exc:
                raise ValueError(f"convert-graph-to-tm: option '{option}': {exc}") from None
        return values

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        numbers = itertools.count()
        kernels: dict[Hashable, KnownKernel | None] = {}
        try:
            verify_schedules(op, self.target_arch, small_m=self.small_m)
        except OpError as exc:
            raise OpError(exc.op, f"convert-graph-to-tm: {exc.message}") from None
        constant = next((c for c in op.walk() if isinstance(c, graph.ConstantOp)), None)
        if constant is not None:
            raise OpError(constant, "convert-graph-to-tm: 'graph.constant' must be moved into the weight "
                          "table first: run graph-outline-constants before this pass (lower-to-cuda does)")
        recorded = None
        if self.target_device:
            from tmlir.tuning.records import TuningTarget, recorded_params

            recorded = recorded_params(TuningTarget(self.target_device, self.target_arch),
                                       self.tuning_records or None)
        tuned = _with_defaults(recorded, self.default_values(), self.target_arch, self.target_device,
                               legacy=not self.small_m)
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            signature = (*function.function_type.inputs, *function.function_type.outputs)
            if any(isinstance(t, TensorType) for t in signature):
                _convert_function(function, numbers, kernels, tuned, self.target_arch, self.small_m)


def _convert_function(function: func.FuncOp, numbers: Iterator[int],
                      kernels: dict[Hashable, KnownKernel | None],
                      tuned: TunedParams | None = None, arch: str = "sm_90", small_m: bool = True) -> None:
    old = function.body.block
    ret = old.last_op
    assert isinstance(ret, func.ReturnOp)
    for arg in old.args:
        if not isinstance(arg.type, TensorType):
            raise OpError(function, f"@{function.sym_name.data}: arguments must be tensors")
    outputs = list(ret.arguments)
    # Inputs and outputs keep their tensor's shape, rank 0 included (what the runtime hands
    # over and returns); kernels see a rank-0 one through a one-element tm.view.
    new_block = Block(arg_types=[MemRefType(buffer_type(v.type).element_type, v.type.get_shape())
                                 for v in (*old.args, *outputs)])
    for new, prev in zip(new_block.args, old.args):
        new.name_hint = prev.name_hint
    out_args = new_block.args[len(old.args):]
    for index, (arg, value) in enumerate(zip(out_args, outputs)):
        arg.name_hint = f"out{index}" if value.name_hint is None else f"{value.name_hint}_out"
    # Values written straight into an output buffer (first output that returns them, or a
    # reshape of them: graph.reshape costs no kernel, its result is a tm.view of the buffer).
    destination: dict[SSAValue, SSAValue] = {}
    for value, arg in zip(outputs, out_args):
        value = _reshape_source(value)
        if isinstance(value.owner, Operation) and not isinstance(value.owner, graph.WeightOp):
            destination.setdefault(value, arg)
    state = _Lowering(function, IRBuilder.at_end(new_block), numbers, {}, destination,
                      kernels, tuned, arch, small_m)
    for prev, new in zip(old.args, new_block.args):
        state.buffers[prev] = state.view(new, prev)

    for op in list(old.ops):
        match op:
            case func.ReturnOp():
                break
            case graph.WeightOp():
                state.buffers[op.result] = state.host.insert(
                    tm.WeightOp(op.weight_name.data, buffer_type(op.result.type)),
                    op.result.name_hint).results[0]
            case graph.ReshapeOp():
                state.buffers[op.result] = state.view(state.buffers[op.input], op.result)
            case graph.FusedOp():
                state.schedule(op.members, op.yielded, op.results)
            case _:
                state.schedule([op], op.results, op.results)

    # Outputs that no kernel wrote: copy them.
    for value, arg in zip(outputs, out_args):
        if _root(state.buffers[value]) is not arg and math.prod(arg.type.get_shape()):
            state.copy(state.buffers[value], state.view(arg, value), ret)
    state.host.insert(func.ReturnOp())

    function.body.detach_block(old)
    old.erase(safe_erase=False)
    function.body.add_block(new_block)
    function.function_type = FunctionType.from_lists([a.type for a in new_block.args], [])


def _with_defaults(recorded: TunedParams | None, defaults: dict[str, dict[str, int | tuple[int, ...]]],
                   arch: str, device: str = "", legacy: bool = False) -> TunedParams:
    """Recorded parameters, else the template's default on `arch` -- the latency model's for
    `device` (`default_of`), or with `legacy` the choice before the model -- with the
    options' `defaults` in place (ValueError naming the option where they break a
    constraint for the problem)."""

    def choose(template: str, problem: TunableProblem, element: str) -> TemplateParams | None:
        params = recorded(template, problem, element) if recorded is not None else None
        if params is not None:
            return params
        if not defaults.get(template):
            return legacy_default(template, problem, element) if legacy else \
                default_of(template, problem, element, arch, device)
        try:
            return resolve(template, problem, defaults[template], arch=arch)
        except ValueError as exc:
            raise ValueError(f"option '{OPTIONS[template]}': {exc}; pin a schedule on this op "
                             "instead") from None

    return choose


def _root(buffer: SSAValue) -> SSAValue:
    """The buffer that `buffer` views (itself if it is no ``tm.view``)."""
    return buffer.owner.source if isinstance(buffer.owner, tm.ViewOp) else buffer


def _reshape_source(value: SSAValue) -> SSAValue:
    """The value whose buffer `value` shares: through chains of ``graph.reshape``."""
    while isinstance(value.owner, graph.ReshapeOp):
        value = value.owner.input
    return value
