"""The graph dialect's reductions, normalizations and pooling on their templates.

``convert-graph-to-tm`` hands each of these ops to `reduction_kernel`:
``graph.reduce_*``, ``graph.softmax`` / ``graph.log_softmax`` and ``graph.layer_norm`` go
to the row-reduction template (``reduce.py``; a row is the elements that share every
coordinate outside the reduced axes, strided when kept dims follow a reduced one),
``graph.max_pool`` / ``graph.average_pool`` to the pooling template (``pool.py``). The
kernel's arguments are the op's operands, then its results, as buffers (a rank-0 tensor is
stored as one element).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.schedules.pool import PoolProblem, pool_kernel
from tmlir.schedules.reduce import RowProblem, layernorm_kernel, reduce_kernel, softmax_kernel
from tmlir.schedules.registry import schedules

_REDUCE_KINDS: dict[type[Operation], str] = {
    graph.ReduceSumOp: "sum", graph.ReduceMeanOp: "mean", graph.ReduceMaxOp: "max",
    graph.ReduceMinOp: "min",
}


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape()) or (1,)


@schedules(graph.ReduceOp, graph.SoftmaxBaseOp, graph.LayerNormOp, graph.PoolOp)
def reduction_kernel(name: str, op: Operation) -> tm.KernelOp:
    """The kernel of a reduction, softmax, layer norm or pool; a ValueError for what the
    templates cannot do."""
    match op:
        case graph.ReduceOp():
            problem = RowProblem.from_axes(_shape(op.input), op.reduced_axes)
            return reduce_kernel(name, _REDUCE_KINDS[type(op)], problem, _shape(op.result))
        case graph.SoftmaxBaseOp():
            problem = RowProblem.from_axes(_shape(op.input), op.reduced_axes)
            return softmax_kernel(name, problem, log=isinstance(op, graph.LogSoftmaxOp))
        case graph.LayerNormOp():
            return layernorm_kernel(
                name, RowProblem(_shape(op.input), op.axis_value), op.epsilon_value,
                _shape(op.scale), _shape(op.bias) if op.bias is not None else None,
                statistics=bool(op.statistics))
        case graph.PoolOp():
            kernel, strides, pads, dilations = op.window()
            problem = PoolProblem(
                "max" if isinstance(op, graph.MaxPoolOp) else "average", _shape(op.input),
                kernel, strides, pads, dilations, op.ceil_mode is not None,
                isinstance(op, graph.AveragePoolOp) and op.count_include_pad is not None)
            return pool_kernel(name, problem)
    raise AssertionError(f"not a reduction op: {op.name}")
