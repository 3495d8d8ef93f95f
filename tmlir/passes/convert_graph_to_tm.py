"""``convert-graph-to-tm``: schedule every graph operator with a template.

In: a ``func.func`` of ``graph`` ops on tensors. Out: one ``tm.kernel`` per operator,
built by its schedule template (``graph.matmul`` → the SIMT matmul template, elementwise
ops → the elementwise/broadcast template with the per-element function of
``tmlir/schedules/elementwise_functions.py``, reductions, softmaxes, layer norms and
pooling → the row-reduction and pooling templates as ``tmlir/schedules/reduction_ops.py``
chooses; an op with several results gets a buffer for each), and a host ``func.func`` on memrefs that
allocates intermediates (``tm.alloc global``), names weights (``tm.weight``) and
launches the kernels in order. Outputs become trailing function arguments written by
the kernels (destination passing); an output that no kernel writes (an input or a
weight returned as is) gets a copy kernel. ``graph.reshape`` gets no kernel: its result
is a ``tm.view`` of its operand's buffer, and a value returned through reshapes is
written into the output argument seen through a view. Data-movement ops use
``tmlir/schedules/data_movement.py``, gathers with run-time indices
``tmlir/schedules/indexing.py``; convolutions, transposed convolutions and batch
norms ``tmlir/schedules/conv.py``. Tensors are f32, i64, i32 or i1 (see ``tmlir.dtypes``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, FunctionType, MemRefType, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tmlir import dtypes
from tmlir.dialects import graph, tm
from tmlir.schedules.builder import IRBuilder
from tmlir.schedules.conv import SCHEDULED_OPS as CONV_OPS
from tmlir.schedules.conv import conv_op_kernel
from tmlir.schedules.data_movement import KERNEL_OPS as DATA_MOVEMENT_OPS
from tmlir.schedules.data_movement import kernel_for as data_movement_kernel
from tmlir.schedules.elementwise import ElementFunction, elementwise_kernel
from tmlir.schedules.elementwise_functions import element_function
from tmlir.schedules.indexing import SCHEDULED_OPS as INDEXING_OPS
from tmlir.schedules.indexing import indexing_kernel
from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams, matmul_simt_kernel
from tmlir.schedules.reduction_ops import SCHEDULED_OPS as REDUCTION_OPS
from tmlir.schedules.reduction_ops import reduction_kernel


def buffer_type(type: TensorType) -> MemRefType:
    """The buffer of a tensor (rank-0 tensors are stored as one element)."""
    if dtypes.from_ir(type.get_element_type()) is None:
        supported = ", ".join(str(d.ir) for d in dtypes.DTYPES)
        raise PassFailedException(f"convert-graph-to-tm: unsupported element type in {type} "
                                  f"(supported: {supported})")
    return MemRefType(type.get_element_type(), type.get_shape() or (1,))


@dataclass
class _Lowering:
    """State of converting one graph function; kernel numbers are unique in the module."""

    function: func.FuncOp
    host: IRBuilder
    numbers: Iterator[int]

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

    def launch(self, kernel: tm.KernelOp, args: Sequence[SSAValue]) -> None:
        self.function.parent_block().insert_op_before(kernel, self.function)
        self.host.insert(tm.LaunchOp(kernel.sym_name.data, args))

    def elementwise(self, op: Operation, inputs: Sequence[SSAValue], dest: SSAValue,
                    compute: ElementFunction, expression: str) -> None:
        kernel = elementwise_kernel(
            self.kernel_name(op),
            dest.type.get_shape(),
            [i.type.get_shape() for i in inputs],
            compute,
            expression,
            element_types=[b.type.element_type for b in (*inputs, dest)],
        )
        self.launch(kernel, [*inputs, dest])


@dataclass(frozen=True)
class ConvertGraphToTm(ModulePass):
    """Schedule graph operators into tm kernels and a host launch sequence."""

    name = "convert-graph-to-tm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        numbers = itertools.count()
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            signature = (*function.function_type.inputs, *function.function_type.outputs)
            if any(isinstance(t, TensorType) for t in signature):
                _convert_function(function, numbers)


def _convert_function(function: func.FuncOp, numbers: Iterator[int]) -> None:
    old = function.body.block
    ret = old.last_op
    assert isinstance(ret, func.ReturnOp)
    for arg in old.args:
        if not isinstance(arg.type, TensorType):
            raise PassFailedException(f"@{function.sym_name.data}: arguments must be tensors")
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
    state = _Lowering(function, IRBuilder.at_end(new_block), numbers)
    buffers = {prev: state.view(new, prev) for prev, new in zip(old.args, new_block.args)}
    # Values written straight into an output buffer (first output that returns them, or a
    # reshape of them: graph.reshape costs no kernel, its result is a tm.view of the buffer).
    destination: dict[SSAValue, SSAValue] = {}
    for value, arg in zip(outputs, out_args):
        value = _reshape_source(value)
        if isinstance(value.owner, Operation) and not isinstance(value.owner, graph.WeightOp):
            destination.setdefault(value, arg)

    for op in list(old.ops):
        if isinstance(op, func.ReturnOp):
            break
        result = op.results[0] if op.results else None
        if isinstance(op, graph.WeightOp):
            buffers[result] = state.host.insert(
                tm.WeightOp(op.weight_name.data, buffer_type(op.result.type)), result.name_hint
            ).results[0]
            continue
        if isinstance(op, graph.ReshapeOp):
            buffers[result] = state.view(buffers[op.input], result)
            continue
        _check_element_types(op)
        dests = []  # one buffer per result (graph.layer_norm may have three)
        for value in op.results:
            dest = destination.get(value)
            if dest is not None:
                dest = state.view(dest, value)  # the output is a reshape of this value
            else:
                dest = state.host.insert(tm.AllocOp("global", buffer_type(value.type)),
                                         value.name_hint).results[0]
            buffers[value] = dest
            dests.append(dest)
        dest = dests[0]
        operands = [buffers[o] for o in op.operands]
        if isinstance(op, graph.MatmulOp):
            problem = MatmulProblem(
                tuple(operands[0].type.get_shape()), tuple(operands[1].type.get_shape()),
                tuple(dest.type.get_shape()),
                tuple(operands[2].type.get_shape()) if op.bias is not None else None,
                op.transpose_lhs is not None, op.transpose_rhs is not None,
                op.alpha_value, op.beta_value,
            )
            kernel = matmul_simt_kernel(
                state.kernel_name(op), problem, MatmulSimtParams.default_for(problem)
            )
            state.launch(kernel, [*operands, dest])
        elif (element := element_function(op)) is not None:
            expr, compute = element
            state.elementwise(op, operands, dest, compute, expr)
        elif isinstance(op, REDUCTION_OPS):
            try:
                kernel = reduction_kernel(state.kernel_name(op), op)
            except ValueError as exc:
                raise PassFailedException(f"convert-graph-to-tm: '{op.name}': {exc}") from exc
            state.launch(kernel, [*operands, *dests])
        elif isinstance(op, CONV_OPS):
            try:
                kernel = conv_op_kernel(state.kernel_name(op), op)
            except ValueError as exc:
                raise PassFailedException(f"convert-graph-to-tm: '{op.name}': {exc}") from exc
            state.launch(kernel, [*operands, dest])
        elif isinstance(op, (*DATA_MOVEMENT_OPS, *INDEXING_OPS)):
            build = indexing_kernel if isinstance(op, INDEXING_OPS) else data_movement_kernel
            try:
                kernel = build(state.kernel_name(op), op)
            except ValueError as exc:
                raise PassFailedException(f"convert-graph-to-tm: '{op.name}': {exc}") from exc
            if kernel is not None:  # None: the result has no elements
                state.launch(kernel, [*operands, *dests])
        else:
            raise PassFailedException(f"convert-graph-to-tm: no schedule template for '{op.name}'")

    # Outputs that no kernel wrote: copy them.
    for value, arg in zip(outputs, out_args):
        if _root(buffers[value]) is not arg and math.prod(arg.type.get_shape()):
            state.elementwise(ret, [buffers[value]], state.view(arg, value), lambda b, xs: xs[0],
                              "x0")
    state.host.insert(func.ReturnOp())

    function.body.detach_block(old)
    old.erase(safe_erase=False)
    function.body.add_block(new_block)
    function.function_type = FunctionType.from_lists([a.type for a in new_block.args], [])


def _root(buffer: SSAValue) -> SSAValue:
    """The buffer that `buffer` views (itself if it is no ``tm.view``)."""
    return buffer.owner.source if isinstance(buffer.owner, tm.ViewOp) else buffer


def _reshape_source(value: SSAValue) -> SSAValue:
    """The value whose buffer `value` shares: through chains of ``graph.reshape``."""
    while isinstance(value.owner, graph.ReshapeOp):
        value = value.owner.input
    return value


#: Graph ops whose schedules take integer and bool tensors too; every other op's
#: templates compute in f32 and take f32 tensors only.
ANY_ELEMENT_TYPE_OPS: tuple[type[Operation], ...] = (
    graph.AddOp, graph.SubOp, graph.MulOp, graph.DivOp, graph.MaxOp, graph.MinOp,
    graph.SumOp, graph.NegOp, graph.AbsOp, *graph.LOGIC_OPS, *graph.INDEXING_OPS,
    graph.TransposeOp, graph.SliceOp, graph.GatherOp, graph.ExpandOp, graph.TileOp,
    graph.PadOp, graph.ConcatOp, graph.SplitOp,
)


def _check_element_types(op: Operation) -> None:
    if isinstance(op, ANY_ELEMENT_TYPE_OPS):
        return
    for value in (*op.operands, *op.results):
        element = value.type.get_element_type()  # type: ignore[attr-defined]
        if not isinstance(element, Float32Type):
            raise PassFailedException(f"convert-graph-to-tm: '{op.name}' is scheduled for f32 "
                                      f"tensors only, got {value.type}")
