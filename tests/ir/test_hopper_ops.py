"""Hopper's ops end to end: the one-warpgroup wgmma kernel of
tests/filecheck/backends/cuda_hopper.mlir (cp.async into swizzled tiles -> descriptors ->
wgmma, tm level) through tm-lower-mappings, convert-tm-to-gpu and the CUDA printer, run on
emu against float64 numpy; dropping its ``tm.wgmma_wait``, its ``tm.wgmma_fence`` or its
``tm.cp_async_wait`` (planted bugs) must give a wrong result. And a tm kernel that loads a
tile with bulk copies on an mbarrier, with and without its wait."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from tmlir.backends.cuda_c import CudaEmitError, emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.dialects import tm
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.tm_lower_mappings import TmLowerMappings
from tmlir.registry import make_context

KERNEL = Path(__file__).parents[1] / "filecheck" / "backends" / "cuda_hopper.mlir"

BULK_TILE = """
tm.kernel @bulk_tile(%x: memref<64x64xf16>, %y: memref<64x64xf16>) grid(1) block(128) {
  %t = tm.thread_id
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %s = tm.alloc shared layout(row_major(64, 64) ^ swizzle(3, 3, 3)) : memref<64x64xf16>
  %bar = tm.alloc shared : memref<1xi64>
  %first = arith.cmpi eq, %t, %c0 : index
  scf.if %first {
    tm.mbarrier_init %bar[%c0] count(1) : memref<1xi64>
  }
  tm.barrier
  scf.if %first {
    tm.mbarrier_arrive %bar[%c0] expect_tx(8192) : memref<1xi64>
  }
  // 512 chunks of 16 bytes, 4 a thread, each to its swizzled place
  tm.for_task (%r, %q) in spatial(16, 8) * repeat(4, 1) on %t {
    %col = arith.muli %q, %c8 : index
    tm.cp_async_bulk bytes(16) %s[%r, %col], %x[%r, %col], %bar[%c0]
        : memref<64x64xf16>, memref<64x64xf16>, memref<1xi64>
  }
  WAIT
  tm.for_task (%i, %j) in spatial(16, 8) * repeat(4, 8) on %t {
    %v = tm.load %s[%i, %j] : memref<64x64xf16>
    tm.store %v, %y[%i, %j] : memref<64x64xf16>
  }
}
"""


def _lower(text: str, drop: type | None = None):
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    if drop is not None:
        for op in [o for o in module.walk() if isinstance(o, drop)]:
            op.detach()
            op.erase()
    TmLowerMappings().apply(ctx, module)
    ConvertTmToGpu().apply(ctx, module)
    return module


def _run_wgmma_tile(drop: type | None = None) -> tuple[np.ndarray, np.ndarray]:
    program = emit_cuda(_lower(KERNEL.read_text(), drop))
    kernel = program.kernel("wgmma_tile")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 16)).astype(np.float16)
    b = rng.standard_normal((16, 64)).astype(np.float16)
    c = np.full((64, 64), np.nan, np.float32)
    with compile_emu(program.source, [kernel.signature]) as emu:
        emu.launch("wgmma_tile", 1, 128, [a, b, c])
    return c, a.astype(np.float64) @ b.astype(np.float64)


def test_wgmma_tile_on_emu_matches_numpy() -> None:
    c, expected = _run_wgmma_tile()
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)  # f16 products, f32 sums


@pytest.mark.parametrize("drop", [tm.WgmmaWaitOp, tm.CpAsyncWaitOp], ids=["wgmma_wait", "cp_async_wait"])
def test_a_missing_wait_gives_a_wrong_result(drop: type) -> None:
    c, expected = _run_wgmma_tile(drop)
    assert not np.allclose(c, expected, rtol=1e-2, atol=1e-2)


def test_a_missing_wgmma_fence_gives_nan() -> None:
    c, _ = _run_wgmma_tile(tm.WgmmaFenceOp)
    assert np.isnan(c).all()


def test_other_archs_are_refused_in_one_line() -> None:
    module = _lower(KERNEL.read_text())
    emit_cuda(module, "sm_90a")
    with pytest.raises(CudaEmitError, match=r"^'tmgpu.wgmma_fence' needs target arch sm_90a "
                                            r"\(wgmma is sm_90a-specific\), not sm_90$"):
        emit_cuda(module, "sm_90")


@pytest.mark.parametrize("wait", [True, False])
def test_bulk_copies_land_at_the_mbarrier_wait(wait: bool) -> None:
    text = BULK_TILE.replace("WAIT", "tm.mbarrier_wait %bar[%c0] parity(%c0) : memref<1xi64>" if wait else "")
    program = emit_cuda(_lower(text))
    assert "tmlir_cp_async_bulk(&s[" in program.source
    x = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float16)
    y = np.zeros_like(x)
    with compile_emu(program.source, [program.kernel("bulk_tile").signature]) as emu:
        emu.launch("bulk_tile", 1, 128, [x, y])
    if wait:
        np.testing.assert_array_equal(y, x)  # through the swizzle and back
    else:
        assert not np.array_equal(y, x)


def test_swizzled_tiles_in_dynamic_shared_memory_are_aligned() -> None:
    """Past 48 KiB of shared arrays the tiles are views into dynamic shared memory: at
    offsets that are multiples of 1024 in a block aligned to 1024, so the swizzle still
    sees the hardware's address bits (on emu as on a GPU)."""
    text = KERNEL.read_text().replace(
        "  %t = tm.thread_id\n", "  %t = tm.thread_id\n  %pad = tm.alloc shared : memref<12004xf32>\n", 1)
    program = emit_cuda(_lower(text))
    source = program.source
    assert "extern __shared__ __align__(1024) unsigned char tmlir_dynamic_smem[];" in source
    for name in ("sa", "sb"):
        offset = int(source.split(f"(&{name})[1024] = *reinterpret_cast<tm_half (*)[1024]>(tmlir_dynamic_smem + ")[1]
                     .split(")")[0])
        assert offset % 1024 == 0, (name, offset)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 16)).astype(np.float16)
    b = rng.standard_normal((16, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    kernel = program.kernel("wgmma_tile")
    with compile_emu(program.source, [kernel.signature]) as emu:
        emu.launch("wgmma_tile", 1, 128, [a, b, c], shared_bytes=kernel.dynamic_shared_bytes)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)
