"""The tensor-core ops end to end: the one-warp mma kernel of
tests/filecheck/backends/cuda_tensor_core.mlir (cp.async -> ldmatrix -> mma, tm level)
through convert-tm-to-gpu and the CUDA printer, run on emu against numpy; dropping its
``tm.cp_async_wait`` (a planted race) must give a wrong result."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from xdsl.parser import Parser

from tmlir.backends.cuda_c import emit_cuda
from tmlir.dialects import tm
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.registry import make_context

KERNEL = Path(__file__).parents[1] / "filecheck" / "backends" / "cuda_tensor_core.mlir"


def _run_mma_tile(drop_wait: bool) -> tuple[np.ndarray, np.ndarray]:
    from tmlir.backends.emu import compile_emu

    ctx = make_context()
    module = Parser(ctx, KERNEL.read_text()).parse_module()
    module.verify()
    if drop_wait:
        for op in [o for o in module.walk() if isinstance(o, tm.CpAsyncWaitOp)]:
            op.detach()
            op.erase()
    ConvertTmToGpu().apply(ctx, module)
    program = emit_cuda(module)
    kernel = program.kernel("mma_tile")
    rng = np.random.default_rng(17)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b_t = rng.standard_normal((8, 16)).astype(np.float16)  # B (16x8) as its transpose
    c = np.full((16, 8), np.nan, np.float32)
    with compile_emu(program.source, [kernel.signature]) as emu:
        emu.launch("mma_tile", 1, 32, [a, b_t, c])
    return c, a.astype(np.float64) @ b_t.astype(np.float64).T


def test_mma_tile_on_emu_matches_numpy() -> None:
    c, expected = _run_mma_tile(drop_wait=False)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)  # f16 products, f32 sums


def test_missing_cp_async_wait_reads_stale_shared_memory() -> None:
    c, expected = _run_mma_tile(drop_wait=True)
    assert not np.allclose(c, expected, rtol=1e-2, atol=1e-2)
