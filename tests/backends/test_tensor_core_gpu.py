"""On a GPU: the tensor-core primitives' test kernels (tests/backends/tensor_core_kernels.py)
and the tm-level mma tile (tests/ir/test_tensor_core_ops.py) run with their inline PTX and
must give the answers the emu gives and numpy expects: the fragment layouts the emu
emulates are the hardware's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tensor_core_kernels import cases

from tmlir.backends.cuda_runtime import cuda_available

KERNEL = Path(__file__).parents[1] / "filecheck" / "backends" / "cuda_tensor_core.mlir"
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU")]


def _run_on_gpu(source: str, signature, grid, block, args: list[np.ndarray]) -> list[np.ndarray]:
    from tmlir.backends.cuda_runtime import CudaModule, DeviceBuffer, device_arch
    from tmlir.backends.ptx import compile_ptx

    module = CudaModule(compile_ptx(source, device_arch()), [signature])
    buffers = [DeviceBuffer.from_array(np.ascontiguousarray(a)) for a in args]
    module.launch(signature.name, grid, block, buffers)
    module.synchronize()
    out = [b.to_host().reshape(a.shape) for a, b in zip(args, buffers, strict=True)]
    for b in buffers:
        b.free()
    return out


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_primitive_kernel_on_the_gpu(case) -> None:
    args = _run_on_gpu(case.source, case.signature, case.grid, case.block, case.args())
    case.check(args, on_gpu=True)


def test_tm_mma_tile_on_the_gpu() -> None:
    from xdsl.parser import Parser

    from tmlir.backends.cuda_c import emit_cuda
    from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
    from tmlir.registry import make_context

    ctx = make_context()
    module = Parser(ctx, KERNEL.read_text()).parse_module()
    ConvertTmToGpu().apply(ctx, module)
    program = emit_cuda(module)
    kernel = program.kernel("mma_tile")
    rng = np.random.default_rng(17)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b_t = rng.standard_normal((8, 16)).astype(np.float16)
    c = np.full((16, 8), np.nan, np.float32)
    _, _, c = _run_on_gpu(program.source, kernel.signature, 1, 32, [a, b_t, c])
    np.testing.assert_allclose(c, a.astype(np.float64) @ b_t.astype(np.float64).T, rtol=1e-5, atol=1e-5)
