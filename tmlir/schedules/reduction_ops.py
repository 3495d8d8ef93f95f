"""The graph dialect's reductions, normalizations, pooling and axis ops on their templates.

``convert-graph-to-tm`` hands each of these ops to `reduction_kernel`:
``graph.reduce_*``, ``graph.softmax`` / ``graph.log_softmax`` and ``graph.layer_norm`` go
to the row-reduction template (``reduce.py``; a row is the elements that share every
coordinate outside the reduced axes, strided when kept dims follow a reduced one),
``graph.arg_max`` / ``graph.arg_min`` / ``graph.hardmax`` to its index-of variant
(``arg_reduce.py``), ``graph.max_pool`` / ``graph.average_pool`` to the pooling template
(``pool.py``), ``graph.cumsum`` to the scan (``scan.py``) and ``graph.top_k`` to the
per-element ranking (``topk.py``). The kernel's arguments are the op's operands, then its
results, as buffers (a rank-0 tensor is stored as one element).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from tmlir.dialects import graph, tm
from tmlir.ir.builder import IRBuilder
from tmlir.schedules.arg_reduce import arg_reduce_kernel, hardmax_kernel
from tmlir.schedules.layernorm import layernorm_kernel
from tmlir.schedules.pool import PoolProblem, pool_kernel
from tmlir.schedules.reduce import RowProblem, reduce_kernel, softmax_kernel
from tmlir.schedules.registry import schedules
from tmlir.schedules.scan import cumsum_kernel
from tmlir.schedules.topk import topk_kernel

_REDUCE_KINDS: dict[type[Operation], str] = {
    graph.ReduceSumOp: "sum", graph.ReduceMeanOp: "mean", graph.ReduceMaxOp: "max",
    graph.ReduceMinOp: "min", graph.ReduceProdOp: "prod", graph.ReduceL1Op: "l1",
    graph.ReduceL2Op: "l2", graph.ReduceSumSquareOp: "sum_square",
    graph.ReduceLogSumOp: "log_sum", graph.ReduceLogSumExpOp: "log_sum_exp",
}


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape()) or (1,)


def _element(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.get_element_type()


@schedules(graph.ReduceOp, graph.SoftmaxBaseOp, graph.LayerNormOp, graph.PoolOp,
           graph.ArgReduceOp, graph.HardmaxOp, graph.CumSumOp, graph.TopKOp)
def reduction_kernel(name: str, op: Operation) -> tm.KernelOp:
    """The kernel of a reduction, softmax, layer norm, pool or axis op; a ValueError for
    what the templates cannot do."""
    match op:
        case graph.ReduceOp():
            problem = RowProblem.from_axes(_shape(op.input), op.reduced_axes)
            return reduce_kernel(name, _REDUCE_KINDS[type(op)], problem, _shape(op.result),  # f16: as f32
                                 element=IRBuilder.computed_type(_element(op.input)))
        case graph.ArgReduceOp():
            problem = RowProblem.from_axes(_shape(op.input), [op.axis_value])
            return arg_reduce_kernel(name, problem, isinstance(op, graph.ArgMinOp),
                                     op.select_last_index is not None, _shape(op.result))
        case graph.HardmaxOp():
            return hardmax_kernel(name, RowProblem.from_axes(_shape(op.input), [op.axis_value]))
        case graph.CumSumOp():
            return cumsum_kernel(name, _shape(op.input), op.axis_value, op.exclusive is not None,
                                 op.reverse is not None, _element(op.input))
        case graph.TopKOp():
            return topk_kernel(name, _shape(op.input), op.axis_value, op.k_value,
                               op.smallest is not None, _element(op.input))
        case graph.SoftmaxBaseOp():
            problem = RowProblem.from_axes(_shape(op.input), op.reduced_axes)
            return softmax_kernel(name, problem, log=isinstance(op, graph.LogSoftmaxOp),
                                  element=IRBuilder.computed_type(_element(op.input)))
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
            return pool_kernel(name, problem, element=IRBuilder.computed_type(_element(op.input)))
    raise AssertionError(f"not a reduction op: {op.name}")
