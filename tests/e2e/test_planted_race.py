"""The emu backend is a real CUDA emulation: the compiler's own matmul kernel -- the
register path's double buffering (sm_75) and the cp.async pipeline (sm_90) -- with either
of its barriers removed (after the prologue's shared-memory stores, or the one per k-step),
gives a wrong result; with both, the right one. (A missing cp_async_wait:
tests/schedules/test_matmul_simt.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from models import make_model
from onnx import helper

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.dialects import tmgpu
from tmlir.frontends.onnx import import_onnx
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context


def matmul_output(remove_barrier: int | None, arch: str = "sm_90") -> tuple[np.ndarray, np.ndarray]:
    m, n, k = 64, 64, 64
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                       {"a": (m, k), "b": (k, n)}, {"y": (m, n)})
    module = import_onnx(model).module
    # several k-tiles (the default's block_k may take K in one): 8 of 8, or 4 of 16 in 3 stages from sm_80
    LowerToCuda(target_arch=arch, matmul="block_k=8" if arch == "sm_75" else "block_k=16 stages=3").apply(
        make_context(), module)
    barriers = [op for op in module.walk() if isinstance(op, tmgpu.BarrierOp)]
    assert len(barriers) == 2  # after the prologue, once per k-step
    if remove_barrier is not None:
        barriers[remove_barrier].detach()
        barriers[remove_barrier].erase()
    program = emit_cuda(module)
    assert program.source.count("__syncthreads();") == (1 if remove_barrier is not None else 2)
    emu = compile_emu(program.source, [kern.signature for kern in program.kernels])
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    (launch,) = program.launches
    emu.launch(launch.kernel, launch.grid, launch.block, [a, b, c], launch.shared_bytes)
    return c, a.astype(np.float64) @ b


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"], ids=["register_path", "pipeline"])
def test_matmul_with_its_barriers_is_right(arch):
    got, want = matmul_output(remove_barrier=None, arch=arch)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"], ids=["register_path", "pipeline"])
@pytest.mark.parametrize("barrier", [0, 1], ids=["prologue", "k_step"])
def test_missing_barrier_is_a_visible_race(barrier, arch):
    got, want = matmul_output(remove_barrier=barrier, arch=arch)
    assert np.abs(got - want).max() > 1.0
