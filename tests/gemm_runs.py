"""Run GEMM-template candidates on emu against float64 numpy: many candidates of one
problem are kernels of one CUDA program, compiled once (a whole space in a few builds);
split-K candidates get their scratch (`scratch_buffers`), and `launch_twice` checks that a
kernel gives the same bits whatever order its blocks run in."""

from __future__ import annotations

import os
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
from tmlir.schedules.tc_gemm import MatmulTcParams

#: Candidates compiled as one emu program.
CHUNK = 24


def program_of(kernels: Sequence[tm.KernelOp]) -> CudaProgram:
    module = ModuleOp(list(kernels))
    module.verify()
    LowerToCuda().apply(make_context(), module)
    return emit_cuda(module)


def scratch_buffers(params: MatmulSimtParams | MatmulTcParams, gemm: MatmulProblem, dtype: type = np.float32) -> list[np.ndarray]:
    """A split-K candidate's scratch arguments: a workspace of NaN (every partial must be
    written before it is read) and zeroed counters; none for one split."""
    return [np.full(t.get_shape(), np.nan, dtype) if kind == "workspace" else np.zeros(t.get_shape(), np.int32)
            for kind, t in params.scratch(gemm)]


def launch_twice(program: CudaProgram, name: str, grid: int, block: int, tensors: list[np.ndarray],
                 scratch: list[np.ndarray], out_shape: tuple[int, ...], shared_bytes: int = 0,
                 dtype: type = np.float32) -> np.ndarray:
    """Launch kernel `name` twice, with 1 emu worker (blocks in order: the last split
    arrives last) and with 8 (any order), into fresh NaN outputs of `dtype`: both results bit
    for bit equal, split-K's counters (`scratch`, last) back at 0 after each launch."""
    results = []
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        for workers in ("1", "8"):
            out = np.full(out_shape, np.nan, dtype)
            os.environ["TMLIR_EMU_THREADS"] = workers
            try:
                emu.launch(name, grid, block, [*tensors, out, *scratch], shared_bytes)
            finally:
                del os.environ["TMLIR_EMU_THREADS"]
            assert not scratch or not scratch[-1].any(), "every launch leaves its counters zero"
            results.append(out)
    assert results[0].tobytes() == results[1].tobytes(), "not bit for bit the same"
    return results[0]


def _run_all(build: Callable[[str, MatmulSimtParams], tm.KernelOp], params: Sequence[MatmulSimtParams],
             gemm: MatmulProblem, inputs: list[np.ndarray], out_shape: tuple[int, ...],
             want: np.ndarray) -> list[float]:
    """max |out - want| / max |want| of each candidate (NaN-filled outputs: every element
    must be written); a split-K candidate gets its scratch and must leave its counters zero."""
    errors = []
    for start in range(0, len(params), CHUNK):
        chunk = params[start:start + CHUNK]
        kernels = [build(f"k{start + i}", P) for i, P in enumerate(chunk)]
        program = program_of(kernels)
        with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
            for P, kernel, info in zip(chunk, kernels, program.kernels, strict=True):
                out = np.full(out_shape, np.nan, np.float32)
                scratch = scratch_buffers(P, gemm)
                emu.launch(info.signature.name, kernel.grid.data, kernel.block.data, [*inputs, out, *scratch],
                           info.dynamic_shared_bytes)
                assert not scratch or not scratch[1].any(), f"{P}: counters not back at zero"
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
    return _run_all(lambda name, P: matmul_simt_kernel(name, problem, P, **options), params, problem, inputs,
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
                    problem.gemm, [x, w, *([bias] if bias is not None else [])], problem.out_shape, want)
