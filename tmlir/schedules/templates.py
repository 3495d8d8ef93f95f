"""Which schedule template builds the kernel of a graph op: one dispatch for every template.

`kernel_for(name, op)` returns the ``tm.kernel`` of one graph op, built by its template
with the default parameters (or, for a tunable op, with the parameters a `TunedParams`
lookup returns: the tuning records of the target device, see ``tmlir/tuning``), with the
interface every template shares: the kernel's arguments are the op's operands, then its
results, as buffers (a rank-0 tensor is a one-element buffer); it reads an operand only
with ``tm.load`` and writes each element of a result once with ``tm.store``. That
interface is what post-scheduling fusion (``fusion.py``) rewrites, so every template here
takes a prologue and an epilogue.

=====================================  ==================================================
graph op                               template
=====================================  ==================================================
``matmul``                             ``matmul_simt.py`` (double-buffered SIMT GEMM)
elementwise, logic, ``where``, cast    ``elementwise.py`` (one thread per element)
reductions, softmax, layer norm, pools ``reduction_ops.py`` → ``reduce.py``, ``pool.py``
``conv``, ``conv_transpose``, BN       ``conv.py`` (implicit GEMM, direct, elementwise)
data movement                          ``data_movement.py`` (one thread per element)
``take``, ``gather_nd``, ...           ``indexing.py`` (run-time indices)
=====================================  ==================================================
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.schedules.conv import SCHEDULED_OPS as CONV_OPS
from tmlir.schedules.conv import conv_op_kernel, conv_problem
from tmlir.schedules.conv2d import Conv2dProblem, conv2d_kernel
from tmlir.schedules.data_movement import KERNEL_OPS as DATA_MOVEMENT_OPS
from tmlir.schedules.data_movement import kernel_for as data_movement_kernel
from tmlir.schedules.elementwise import elementwise_kernel
from tmlir.schedules.elementwise_functions import element_function
from tmlir.schedules.indexing import SCHEDULED_OPS as INDEXING_OPS
from tmlir.schedules.indexing import indexing_kernel
from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams, matmul_simt_kernel
from tmlir.schedules.reduction_ops import SCHEDULED_OPS as REDUCTION_OPS
from tmlir.schedules.reduction_ops import reduction_kernel


class NoTemplate(ValueError):
    """The op has no schedule template (or not for these element types)."""


#: Graph ops whose templates take integer and bool tensors too; every other op's
#: templates compute in f32 and take f32 tensors only.
ANY_ELEMENT_TYPE_OPS: tuple[type[Operation], ...] = (
    graph.AddOp, graph.SubOp, graph.MulOp, graph.DivOp, graph.MaxOp, graph.MinOp,
    graph.SumOp, graph.NegOp, graph.AbsOp, *graph.LOGIC_OPS, *graph.INDEXING_OPS,
    graph.TransposeOp, graph.SliceOp, graph.GatherOp, graph.ExpandOp, graph.TileOp,
    graph.PadOp, graph.ConcatOp, graph.SplitOp,
)


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def check_element_types(op: Operation) -> None:
    """NoTemplate if `op` has a non-f32 tensor and its template computes in f32 only."""
    if isinstance(op, ANY_ELEMENT_TYPE_OPS):
        return
    for value in (*op.operands, *op.results):
        element = value.type.get_element_type()  # type: ignore[attr-defined]
        if not isinstance(element, Float32Type):
            raise NoTemplate(f"'{op.name}' is scheduled for f32 tensors only, got {value.type}")


TunableProblem = MatmulProblem | Conv2dProblem
#: Recorded parameters for a tunable kernel, given its template name and problem (see
#: `tunable_problem`); None to use the template's default.
TunedParams = Callable[[str, TunableProblem], MatmulSimtParams | None]


def tunable_problem(op: Operation) -> tuple[str, TunableProblem] | None:
    """The template name and problem of an op whose kernel is built from `MatmulSimtParams`
    (a ``graph.matmul``; a 2-D ``graph.conv`` on implicit GEMM), else None. The problem is
    the one `kernel_for` builds the kernel from; ValueError for a convolution that cannot
    be built."""
    if not isinstance(op, graph.MatmulOp | graph.ConvOp):
        return None
    try:
        check_element_types(op)
    except NoTemplate:
        return None
    if isinstance(op, graph.MatmulOp):
        return "matmul_simt", MatmulProblem(
            _shape(op.lhs), _shape(op.rhs), _shape(op.result),
            (_shape(op.bias) or (1,)) if op.bias is not None else None,  # rank 0: 1 element
            op.transpose_lhs is not None, op.transpose_rhs is not None,
            op.alpha_value, op.beta_value,
        )
    if isinstance(op, graph.ConvOp) and len(_shape(op.input)) == 4:
        problem = conv_problem(_shape(op.input), _shape(op.weight), *op.attributes_tuple(),
                               op.bias is not None)
        return None if problem.prefers_direct else ("conv2d_implicit_gemm", problem)
    return None


def kernel_for(name: str, op: Operation, tuned: TunedParams | None = None
               ) -> tm.KernelOp | None:
    """The kernel of `op` (arguments: its operands, then its results) by its template;
    None when it writes no element. A tunable op (`tunable_problem`) gets the parameters
    `tuned` returns for it, else its template's default. NoTemplate for an op without a
    template; ValueError for what its template cannot do."""
    check_element_types(op)
    if (tunable := tunable_problem(op)) is not None:
        template, problem = tunable
        params = tuned(template, problem) if tuned is not None else None
        if isinstance(problem, MatmulProblem):
            return matmul_simt_kernel(name, problem, params or MatmulSimtParams.default_for(problem))
        return conv2d_kernel(name, problem, params)
    if (element := element_function(op)) is not None:
        expression, compute = element
        return elementwise_kernel(
            name, _shape(op.results[0]), [_shape(v) for v in op.operands], compute, expression,
            element_types=[v.type.get_element_type()  # type: ignore[attr-defined]
                           for v in (*op.operands, op.results[0])])
    if isinstance(op, REDUCTION_OPS):
        return reduction_kernel(name, op)
    if isinstance(op, CONV_OPS):
        return conv_op_kernel(name, op)  # type: ignore[arg-type]
    if isinstance(op, DATA_MOVEMENT_OPS):
        return data_movement_kernel(name, op)
    if isinstance(op, INDEXING_OPS):
        return indexing_kernel(name, op)
    raise NoTemplate(f"no schedule template for '{op.name}'")
