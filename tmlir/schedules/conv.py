"""Kernels for ``graph.conv``, ``graph.conv_transpose`` and ``graph.batch_norm``.

`conv_kernel` builds a 2-D convolution with `conv2d_kernel` (implicit GEMM on the matmul
template, or the direct kernel for depthwise ones), and a 1-D one as a 2-D convolution of
height 1: the ``(N, C, W)`` tensors are viewed as ``(N, C, 1, W)`` (`view_kernel_args`),
so no data moves. `conv_transpose_kernel` does the same for transposed convolutions with
the direct kernel of ``conv_transpose.py``. `batch_norm_kernel` is the elementwise template with the four
``(C,)`` statistics broadcast along the channel dim (viewed as ``(C, 1, ..., 1)``).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.ir import SSAValue

from tmlir.dialects import graph, tm
from tmlir.ir.builder import IRBuilder
from tmlir.schedules.common import name_args
from tmlir.schedules.conv2d import Conv2dProblem, conv2d_kernel
from tmlir.schedules.conv_transpose import ConvTransposeProblem
from tmlir.schedules.conv_transpose import conv_transpose_kernel as conv_transpose_2d_kernel
from tmlir.schedules.elementwise import elementwise_kernel
from tmlir.schedules.registry import schedules
from tmlir.schedules.views import view_kernel_args


@schedules(graph.ConvOp, graph.ConvTransposeOp, graph.BatchNormOp)
def conv_op_kernel(name: str, op: graph.ConvOp | graph.ConvTransposeOp | graph.BatchNormOp,
                   ) -> tm.KernelOp:
    """The kernel of a ``graph.conv`` or ``graph.conv_transpose`` (``(x, w, [bias,] y)``)
    or a ``graph.batch_norm`` (``(x, scale, bias, mean, var, y)``); ValueError for a
    convolution it cannot build."""
    shape = tuple(op.input.type.get_shape())
    if isinstance(op, graph.BatchNormOp):
        return batch_norm_kernel(name, shape, op.epsilon_value)
    if isinstance(op, graph.ConvTransposeOp):
        return conv_transpose_kernel(name, shape, tuple(op.weight.type.get_shape()),
                                     *op.attributes_tuple(), op.group_value,
                                     op.bias is not None)
    strides, pads, dilations, group = op.attributes_tuple()
    return conv_kernel(name, shape, tuple(op.weight.type.get_shape()), strides, pads,
                       dilations, group, op.bias is not None)


def conv_problem(input_shape: Sequence[int], weight_shape: Sequence[int],
                 strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                 group: int, bias: bool) -> Conv2dProblem:
    """The 2-D problem of a 1-D or 2-D convolution (a 1-D one has height 1); pads are the
    begins then the ends. Raises ValueError ``conv: ...`` for other ranks."""
    spatial = len(input_shape) - 2
    if spatial == 2:
        return Conv2dProblem(tuple(input_shape), tuple(weight_shape), tuple(strides),
                             tuple(pads), tuple(dilations), group, bias)
    if spatial == 1:
        (n, c, w), (co, cg, kw) = input_shape, weight_shape
        return Conv2dProblem((n, c, 1, w), (co, cg, 1, kw), (1, strides[0]),
                             (0, pads[0], 0, pads[1]), (1, dilations[0]), group, bias)
    raise ValueError(f"conv: {spatial}-D convolutions are not supported (only 1-D and 2-D)")


def conv_kernel(name: str, input_shape: Sequence[int], weight_shape: Sequence[int],
                strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                group: int, bias: bool) -> tm.KernelOp:
    """A kernel ``(x, w, [bias,] y)`` for a 1-D or 2-D convolution with the default
    parameters of `conv2d_kernel`."""
    problem = conv_problem(input_shape, weight_shape, strides, pads, dilations, group, bias)
    kernel = conv2d_kernel(name, problem)
    if len(input_shape) == 3:
        out = problem.out_shape
        view_kernel_args(kernel, {0: input_shape, 1: weight_shape,
                                  len(kernel.args) - 1: (out[0], out[1], out[3])})
    return kernel


def conv_transpose_kernel(name: str, input_shape: Sequence[int], weight_shape: Sequence[int],
                          strides: Sequence[int], pads: Sequence[int],
                          dilations: Sequence[int], output_padding: Sequence[int],
                          group: int, bias: bool) -> tm.KernelOp:
    """A kernel ``(x, w, [bias,] y)`` for a 1-D, 2-D or 3-D transposed convolution."""
    spatial = len(input_shape) - 2
    if spatial in (2, 3):
        problem = ConvTransposeProblem(tuple(input_shape), tuple(weight_shape), tuple(strides),
                                       tuple(pads), tuple(dilations), tuple(output_padding),
                                       group, bias)
        return conv_transpose_2d_kernel(name, problem)
    if spatial != 1:
        raise ValueError(f"conv_transpose: {spatial}-D transposed convolutions are not "
                         "supported (only 1-D, 2-D and 3-D)")
    (n, c, w), (ci, cog, kw) = input_shape, weight_shape
    problem = ConvTransposeProblem((n, c, 1, w), (ci, cog, 1, kw), (1, strides[0]),
                                   (0, pads[0], 0, pads[1]), (1, dilations[0]),
                                   (0, output_padding[0]), group, bias)
    kernel = conv_transpose_2d_kernel(name, problem)
    out = problem.out_shape
    return view_kernel_args(kernel, {0: input_shape, 1: weight_shape,
                                     len(kernel.args) - 1: (out[0], out[1], out[3])})


def batch_norm_kernel(name: str, shape: Sequence[int], epsilon: float) -> tm.KernelOp:
    """A kernel ``(x, scale, bias, mean, var, y)``: ``y = (x - mean) * (scale / sqrt(var +
    epsilon)) + bias`` per element, the statistics indexed by the channel (dim 1)."""
    shape = tuple(shape)
    per_channel = (shape[1], *([1] * (len(shape) - 2)))

    def compute(b: IRBuilder, xs: Sequence[SSAValue]) -> SSAValue:
        x, scale, bias, mean, var = xs
        std = b.fop(xmath.SqrtOp, b.fop(arith.AddfOp, var, b.f32(epsilon)))
        factor = b.fop(arith.DivfOp, scale, std)
        centered = b.fop(arith.SubfOp, x, mean)
        return b.fop(arith.AddfOp, b.fop(arith.MulfOp, centered, factor), bias)

    expression = f"batch_norm(x, scale, bias, mean, var, epsilon={epsilon:.6g})"
    kernel = elementwise_kernel(name, shape, [shape, *[per_channel] * 4], compute, expression)
    name_args(kernel, ["x", "scale", "bias", "mean", "var", "out"])
    return view_kernel_args(kernel, dict.fromkeys(range(1, 5), (shape[1],)))
