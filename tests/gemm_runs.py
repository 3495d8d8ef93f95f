"""Run GEMM-template candidates on emu against float64 numpy: many candidates of one
problem are kernels of one CUDA program, compiled once (a whole space in a few builds)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from models import reference_conv
from xdsl.dialects.builtin import ModuleOp

from tmlir.backends.cuda_c import CudaProgram, emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.dialects import tm
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.conv2d import Conv2dProblem, conv2d_implicit_gemm_kernel
from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams, matmul_simt_kernel

#: Candidates compiled as one emu program.
CHUNK = 24


def program_of(kernels: Sequence[tm.KernelOp]) -> CudaProgram:
    module = ModuleOp(list(kernels))
    module.verify()
    LowerToCuda().apply(make_context(), module)
    return emit_cuda(module)


def _run_all(build: Callable[[str, MatmulSimtParams], tm.KernelOp], params: Sequence[MatmulSimtParams],
             inputs: list[np.ndarray], out_shape: tuple[int, ...], want: np.ndarray) -> list[float]:
    """max |out - want| / max |want| of each candidate (NaN-filled outputs: every element
    must be written)."""
    errors = []
    for start in range(0, len(params), CHUNK):
        chunk = params[start:start + CHUNK]
        kernels = [build(f"k{start + i}", P) for i, P in enumerate(chunk)]
        program = program_of(kernels)
        with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
            for kernel, info in zip(kernels, program.kernels, strict=True):
                out = np.full(out_shape, np.nan, np.float32)
                emu.launch(info.signature.name, kernel.grid.data, kernel.block.data, [*inputs, out],
                           info.dynamic_shared_bytes)
                errors.append(float(np.abs(out - want).max() / np.abs(want).max()))
    return errors


def matmul_inputs(problem: MatmulProblem, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """Random A, B (and bias) for `problem`, and the float64 reference."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(problem.lhs_shape).astype(np.float32)
    b = rng.standard_normal(problem.rhs_shape).astype(np.float32)
    bias = rng.standard_normal(problem.bias_shape).astype(np.float32) if problem.bias_shape else None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if problem.transpose_lhs:
        a64 = np.swapaxes(a64, -1, -2)
    if problem.transpose_rhs:
        b64 = np.swapaxes(b64, -1, -2)
    want = problem.alpha * (a64 @ b64)
    if bias is not None:
        want = want + problem.beta * bias.astype(np.float64)
    return [a, b, *([bias] if bias is not None else [])], want


def matmul_errors(problem: MatmulProblem, params: Sequence[MatmulSimtParams], seed: int = 0,
                  **options) -> list[float]:
    """The relative error of each candidate of the SIMT matmul (`options`: `gathered`,
    `wait` of `matmul_simt_kernel`)."""
    inputs, want = matmul_inputs(problem, seed)
    return _run_all(lambda name, P: matmul_simt_kernel(name, problem, P, **options), params, inputs,
                    problem.out_shape, want)


def conv_errors(problem: Conv2dProblem, params: Sequence[MatmulSimtParams], seed: int = 0,
                **options) -> list[float]:
    """The relative error of each candidate of the implicit-GEMM convolution (`options`:
    `gathered`, `wait` of `conv2d_implicit_gemm_kernel`)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(problem.input_shape).astype(np.float32)
    w = rng.standard_normal(problem.weight_shape).astype(np.float32)
    bias = rng.standard_normal(problem.bias_shape).astype(np.float32) if problem.bias else None
    want = reference_conv(problem, x, w, bias)
    return _run_all(lambda name, P: conv2d_implicit_gemm_kernel(name, problem, P, **options), params,
                    [x, w, *([bias] if bias is not None else [])], problem.out_shape, want)
