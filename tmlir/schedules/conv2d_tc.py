"""2-D convolution (NCHW) on tensor cores: the implicit GEMM of ``conv2d.py`` on the
tensor-core GEMM engine (``tc_gemm.py``).

In: a `Conv2dProblem` with f16 or bf16 input and weight (both the same; or f32, computed
with TF32 mma, for a convolution marked ``tf32``), an f32 bias, and `MatmulTcParams`. Out:
a ``tm.kernel`` ``(x, w, [bias,] y)`` with f32 y. The GEMM is the SIMT template's
(``conv2d.py``): per group, ``M = C_out / groups`` rows of weights (A, as stored:
row-major ``M x (Cg*KH*KW)``), ``N = N*OH*OW`` output pixels (B, the im2col matrix, never
materialized), ``K = Cg*KH*KW``; groups are the GEMM's batch.

* **A, the weights**, are copied 16 bytes at a time with ``cp.async`` when K is a multiple
  of 8 (4 for f32; then every chunk of a weight row is contiguous and 16-byte aligned);
  otherwise (a first layer's ``3 x 7 x 7 = 147`` taps) the threads load them element by
  element into the shared tile.
* **B, the im2col matrix**, is gathered: each element is the input under its tap, 0 in
  the padding (``tm.load`` under the computed predicate), stored by the thread into the
  ``[block_k][block_n]`` shared tile with consecutive threads on consecutive pixels
  (consecutive input addresses for stride 1). Because the input is read by ``tm.load``,
  a fused prologue (a ReLU or a cast before the convolution) computes it in place; weights
  with a prologue (``gathered``) are loaded like those of a stem. Except for a 1x1,
  stride-1, unpadded convolution whose images' pixels are a multiple of the 16-byte chunk
  (`dense_input`, ``Conv2dProblem.dense_pixels``): B is then the input itself, ``x[n, c]``'s
  pixels, and is copied 16 bytes at a time by ``cp.async`` like a matmul's B (no prologue
  on the input; the header says ``copy_b = "cp16"``, else ``"gather"``).
* The epilogue adds the bias of the row's channel and stores into ``y`` (``conv2d.py``'s
  `conv_gemm_operands`), so f16 outputs and fused epilogues work as for every template.

The parameters and their space are the tensor-core matmul's (``MATMUL_TC_SPACE`` on
`Conv2dProblem.gemm`, ``MATMUL_TC_TF32_SPACE`` for f32); depthwise and other thin groups take the direct kernel instead
(`Conv2dProblem.prefers_direct`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, MemRefType
from xdsl.ir import Attribute

from tmlir.dialects import tm
from tmlir.ir.builder import Index, IRBuilder
from tmlir.schedules.common import kernel_attributes, name_args
from tmlir.schedules.conv2d import Conv2dProblem, conv_gemm_operands
from tmlir.schedules.registry import NoTemplate
from tmlir.schedules.tc_gemm import MatmulTcParams, TcOperand, TcOperands, check_shared_memory, tc_element, tc_gemm

__all__ = ["check_problem", "conv2d_tc_kernel", "dense_input", "dense_weights"]


def check_problem(problem: Conv2dProblem, element: Attribute) -> None:
    """`NoTemplate` naming what the template does not cover in `problem`."""
    if not isinstance(element, Float16Type | BFloat16Type | Float32Type):
        raise NoTemplate(f"the tensor-core convolution takes f16, bf16 or f32 (tf32) operands, got {element}")
    if problem.prefers_direct:
        raise NoTemplate(f"a convolution with {problem.group_out} output channels per group takes the "
                         "direct kernel")


def dense_weights(problem: Conv2dProblem, element: Attribute = Float16Type()) -> bool:
    """Whether the weights are copied by ``cp.async``: K a multiple of the 16-byte chunk's
    elements (8 halves, 4 floats)."""
    return problem.gemm.k % tc_element(element).chunk == 0


def dense_input(problem: Conv2dProblem, element: Attribute = Float16Type()) -> bool:
    """Whether the im2col matrix is copied by ``cp.async``: the input itself (a 1x1 kernel,
    stride 1, no padding) with each image's pixels a multiple of the 16-byte chunk's
    elements (8 halves, 4 floats), so no chunk crosses an image."""
    return problem.dense_pixels(tc_element(element).chunk)


def conv2d_tc_kernel(name: str, problem: Conv2dProblem, params: MatmulTcParams,
                     element: Attribute = Float16Type(), *, gathered: Collection[int] = ()) -> tm.KernelOp:
    """The kernel ``(x, w, [bias,] y)`` for `problem` with `params`; x and w of `element`
    (f16 or bf16; f32: TF32 mma), bias and y f32. The weights are loaded with ``tm.load``
    rather than copied when `gathered` holds 1 (they have a fused prologue) or K is not a
    multiple of the chunk (`dense_weights`); the input is copied when `dense_input` and
    `gathered` does not hold 0. ValueError for params whose tiles overflow shared memory."""
    check_problem(problem, element)
    p, P, gemm, E = problem, params, problem.gemm, tc_element(element)
    check_shared_memory("conv2d_tc", P, gemm, element)
    copied_input = dense_input(p, element) and 0 not in gathered
    f32 = Float32Type()
    types = [element, element, *([f32] if p.bias else []), f32]
    kernel = tm.KernelOp(name, [MemRefType(t, list(s)) for t, s in zip(types, p.arg_shapes)],
                         P.blocks(gemm), P.threads, kernel_attributes("conv2d_tc", {
                             **P.describe(), "dtype": E.mma_dtype, "M": gemm.m, "N": gemm.n,
                             "K": gemm.k, "copy_b": "cp16" if copied_input else "gather", **p.describe()}))
    name_args(kernel, ["x", "w", *(["bias"] if p.bias else []), "y"])
    x, w, *rest = kernel.args
    bias, y = (rest[0], rest[1]) if p.bias else (None, rest[0])
    taps = (p.group_in, *p.kernel)

    def block_operands(b: IRBuilder, batch_coords: Sequence[Index]) -> TcOperands:
        ops = conv_gemm_operands(b, p, (P.block_m, P.block_n, P.block_k), (x, w, bias, y), batch_coords)
        if dense_weights(p, element) and 1 not in gathered:
            co0 = b.mul(batch_coords[0] if batch_coords else 0, p.group_out, "co0")
            weights = TcOperand(True, w, lambda row, k: [b.add(co0, row), *b.unravel(k, taps, in_range=True)])
        else:
            weights = TcOperand(True, load=ops.a.load)
        if copied_input:  # column (n, oh, ow) of channel c is x[n, c0 + c, oh, ow]
            c0 = b.mul(batch_coords[0] if batch_coords else 0, p.group_in, "c0")
            pixels = (p.batch, *p.out_hw)

            def pixel_index(col: Index, k: Index) -> list[Index]:
                n, oh, ow = b.unravel(col, pixels, in_range=True)
                return [n, b.add(c0, k, "ci"), oh, ow]
            inputs = TcOperand(False, x, pixel_index)
        else:
            inputs = TcOperand(False, load=ops.b.load)
        return TcOperands(weights, inputs, ops.store_c)

    tc_gemm(kernel, gemm, P, element, block_operands, ("group", "tile_m", "tile_n"))
    return kernel
