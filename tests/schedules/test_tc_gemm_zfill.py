"""Partial tiles of the tensor-core GEMM engine: a chunk past an operand's end is one
zero-filling ``tm.cp_async ... zfill_unless %inside`` whose overhanging source index is
clamped (``arith.select %inside, idx, 0``), with no ``scf.if`` and no zero stores; the
kernel matches numpy on the emu, in a sanitizer build too (the clamped addresses stay in
bounds), and compiles with NVRTC for sm_80 and sm_90 without spills."""

from __future__ import annotations

import numpy as np
import pytest
from test_matmul_tc import assert_matches, lowered, problem, reference  # tests/schedules is on sys.path
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float16Type, ModuleOp

from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import kernel_stats, nvrtc_version
from tmlir.dialects import tm
from tmlir.schedules.matmul_tc import MATMUL_TC_SPACE, MatmulTcParams, matmul_tc_kernel

needs_nvrtc = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC (cuda.bindings) not available")

PARTIAL = problem(40, 24, 48)  # M and N overhang 32 x 32 tiles; K = 48 overhangs block_k 32
PARAMS = MatmulTcParams(32, 32, 32, (1, 2), 2)


def test_partial_tiles_copy_with_zero_filling_cp_async() -> None:
    assert MATMUL_TC_SPACE.first_violation(PARAMS, PARTIAL) is None
    kernel = matmul_tc_kernel("mm_tc", PARTIAL, PARAMS)
    ModuleOp([kernel]).verify()
    copies = [op for op in kernel.walk() if isinstance(op, tm.CpAsyncOp)]
    assert copies and all(op.inside is not None for op in copies)
    ifs = [op for op in kernel.walk() if isinstance(op, scf.IfOp)]
    assert [op.cond.name_hint for op in ifs] == ["has_next"]  # only the k loop's next tile
    smem = {c.dst for c in copies}
    assert not any(isinstance(op, tm.StoreOp) and op.memref in smem for op in kernel.walk())  # no zero stores
    for c in copies:  # each overhanging source index is clamped by the copy's own condition
        clamped = [i.owner for i in c.src_indices if isinstance(i.owner, arith.SelectOp)]
        assert clamped and all(s.cond is c.inside for s in clamped)


def test_full_tiles_copy_unconditionally() -> None:
    kernel = matmul_tc_kernel("mm_tc", problem(64, 64, 64), PARAMS)
    assert all(op.inside is None for op in kernel.walk() if isinstance(op, tm.CpAsyncOp))


def test_partial_tiles_match_numpy_under_the_sanitizer() -> None:
    program = lowered(PARTIAL, PARAMS)
    assert "tmlir_cp_async_zfill<16>(" in program.source and "tmlir_cp_async<16>(" not in program.source
    rng = np.random.default_rng(5)
    a = rng.standard_normal(PARTIAL.lhs_shape).astype(np.float16)
    b = rng.standard_normal(PARTIAL.rhs_shape).astype(np.float16)
    c = np.full(PARTIAL.out_shape, np.nan, np.float32)
    with compile_emu(program.source, [k.signature for k in program.kernels], check=True) as emu:
        emu.launch("mm_tc", PARAMS.blocks(PARTIAL), PARAMS.threads, [a, b, c])  # a violation raises EmuError
    assert_matches(c, reference(PARTIAL, a, b, None), PARTIAL.k)


@needs_nvrtc
def test_partial_tile_candidate_compiles_without_spills() -> None:
    prob, params = problem(96, 80, 48, True), MatmulTcParams(64, 64, 16, (2, 2), 3)
    source = lowered(prob, params, Float16Type()).source
    assert "tmlir_cp_async_zfill<16>(" in source
    for arch in ("sm_80", "sm_90"):
        stats = kernel_stats(source, arch, compiler="nvrtc")["mm_tc"]
        assert stats.spill_bytes == 0 and stats.local_bytes == 0, (arch, stats)
