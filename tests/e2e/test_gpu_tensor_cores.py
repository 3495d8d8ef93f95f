"""On a GPU: the tensor-core templates and the half-precision model path.

The matmul template's candidates (plain, batched with broadcasting, B stored N x K with
alpha, beta and bias; f16 and bf16) and the convolution template (dense and gathered
weights) run on the GPU and must match float64 numpy at half-precision tolerance, as they
do on emu (``tests/schedules/test_matmul_tc.py``, ``test_conv2d_tc.py``); a float16 ONNX
model and the example models with ``precision="fp16"`` run on ``device="cuda"`` and must
match the same model on emu. Skipped without a CUDA GPU (``pytest -m gpu``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from models import manifest_feed, reference_conv
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, ModuleOp

import tmlir
from tmlir.backends.cuda_runtime import cuda_available
from tmlir.schedules.conv2d import Conv2dProblem
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.tc_gemm import MatmulTcParams

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU")]
MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
MANIFEST = json.loads((MODELS / "models.json").read_text())["models"]


def run_kernel(kernel, args: list[np.ndarray]) -> np.ndarray:
    """Lower `kernel` with the compiler's pipeline, run it on the GPU; the last argument back."""
    from tmlir.backends.cuda_c import emit_cuda
    from tmlir.backends.cuda_runtime import CudaModule, DeviceBuffer, device_arch
    from tmlir.backends.ptx import compile_ptx
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context

    grid, block = kernel.grid.data, kernel.block.data
    module = ModuleOp([kernel])
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    (signature,) = [k.signature for k in program.kernels]
    cuda = CudaModule(compile_ptx(program.source, device_arch()), [signature])
    buffers = [DeviceBuffer.from_array(np.ascontiguousarray(a)) for a in args]
    cuda.launch(signature.name, grid, block, buffers)
    cuda.synchronize()
    out = buffers[-1].to_host().reshape(args[-1].shape)
    for b in buffers:
        b.free()
    return out


MATMULS = [
    (MatmulProblem.plain(256, 192, 320), MatmulTcParams(128, 64, 32, (2, 2), 3)),
    (MatmulProblem((2, 3, 40, 64), (3, 64, 48), (2, 3, 40, 48), (48,)), MatmulTcParams(64, 64, 32, (2, 2), 4)),
    (MatmulProblem((2, 50, 32), (1, 44, 32), (2, 50, 44), (50, 1), transpose_rhs=True, alpha=0.5, beta=2.0),
     MatmulTcParams(64, 64, 16, (2, 2), 2)),
    (MatmulProblem.plain(512, 512, 512), MatmulTcParams(128, 128, 32, (2, 4), 2)),
]


@pytest.mark.parametrize("element", [Float16Type(), BFloat16Type(), Float32Type()], ids=["f16", "bf16", "tf32"])
@pytest.mark.parametrize(("problem", "params"), MATMULS, ids=["plain", "batched", "nk-alpha-beta", "512"])
def test_matmul_tc_on_the_gpu(problem: MatmulProblem, params: MatmulTcParams, element) -> None:
    from tmlir.schedules.matmul_tc import default_params, matmul_tc_kernel

    if isinstance(element, Float32Type):  # f32 tiles take twice the shared memory: the TF32 default
        params = default_params(problem, element)

    half = {Float16Type(): np.float16, BFloat16Type(): ml_dtypes.bfloat16, Float32Type(): np.float32}[element]
    rng = np.random.default_rng(5)
    a = rng.standard_normal(problem.lhs_shape).astype(half)
    b = rng.standard_normal(problem.rhs_shape).astype(half)
    bias = rng.standard_normal(problem.bias_shape).astype(np.float32) if problem.bias_shape else None
    c = np.full(problem.out_shape, np.nan, np.float32)
    got = run_kernel(matmul_tc_kernel("mm", problem, params, element),
                     [a, b, *([bias] if bias is not None else []), c])
    rhs = b.astype(np.float64)
    want = problem.alpha * (a.astype(np.float64) @ (rhs.swapaxes(-1, -2) if problem.transpose_rhs else rhs))
    if bias is not None:
        want = want + problem.beta * bias
    if isinstance(element, Float32Type):  # the mma rounds f32 operands to TF32 (10-bit mantissa)
        assert float(np.abs(got - want).max() / np.abs(want).max()) < 2e-3
    else:
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * math.sqrt(problem.k))


@pytest.mark.parametrize("problem", [
    Conv2dProblem((2, 16, 9, 10), (24, 16, 3, 3), pads=(1, 1, 1, 1), bias=True),
    Conv2dProblem((1, 3, 20, 18), (16, 3, 7, 7), strides=(2, 2), pads=(3, 3, 3, 3), bias=True),
], ids=["3x3-dense-weights", "stem-gathered-weights"])
def test_conv2d_tc_on_the_gpu(problem: Conv2dProblem) -> None:
    from tmlir.schedules.conv2d_tc import conv2d_tc_kernel

    params = MatmulTcParams(64, 64, 32, (2, 2), 3)
    rng = np.random.default_rng(6)
    x = rng.standard_normal(problem.input_shape).astype(np.float16)
    w = rng.standard_normal(problem.weight_shape).astype(np.float16)
    bias = rng.standard_normal(problem.bias_shape).astype(np.float32)
    y = np.full(problem.out_shape, np.nan, np.float32)
    got = run_kernel(conv2d_tc_kernel("conv", problem, params), [x, w, bias, y])
    want = reference_conv(problem, x.astype(np.float64), w.astype(np.float64), bias)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * math.sqrt(problem.gemm.k))


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_example_models_in_fp16_on_cuda_match_emu(name: str) -> None:
    path = MODELS / MANIFEST[name]["file"]
    inputs = manifest_feed(MANIFEST[name]["inputs"], 0)
    cuda = tmlir.InferenceSession(path, device="cuda", precision="fp16")
    assert any(k.template.endswith("_tc") for k in cuda.program.kernels)
    got = cuda.run(None, inputs)
    want = tmlir.InferenceSession(path, device="emu", precision="fp16").run(None, inputs)
    for g, w in zip(got, want):  # same kernels, same roundings; sums may differ in order
        scale = max(float(np.abs(w).max()), 1e-30)
        assert float(np.abs(g.astype(np.float64) - w).max()) <= 1e-3 * scale, name
