"""Tensor-core primitives (mma, ldmatrix, cp.async): their emu emulation against numpy by the
contract's fragment layouts, the planted missing-wait race, and their PTX for sm_80/sm_90."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import numpy as np
import pytest
from tensor_core_kernels import (
    TcKernel,
    cases,
    combined_source,
    cp_async_case,
    cp_async_groups_case,
    ldmatrix_case,
    mma_case,
)

from tmlir.backends import ptx
from tmlir.backends.cuda_types import prelude
from tmlir.backends.emu import EmuError, EmuModule, compile_emu
from tmlir.backends.kernel_abi import KernelParam, KernelSignature
from tmlir.backends.tensor_core import DEFINITIONS, prelude_for, used_primitives

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
needs_nvrtc = pytest.mark.skipif(ptx.nvrtc_version() is None, reason="NVRTC does not load")

SWAPPED = mma_case("f16", swap_a12=True)
MISALIGNED = TcKernel(
    "extern \"C\" __global__ void cp_async_misaligned(const float* src, float* out) {\n"
    "  alignas(16) __shared__ float buf[64];\n"
    "  tmlir_cp_async<16>(&buf[4 * threadIdx.x + 1], src);\n"
    "  tmlir_cp_async_commit();\n  tmlir_cp_async_wait<0>();\n  out[0] = buf[1];\n}\n",
    KernelSignature("cp_async_misaligned", (KernelParam("src", "const float*"), KernelParam("out", "float*"))),
    32, (np.zeros(8, np.float32),), np.zeros(1, np.float32), np.zeros(1, np.float32),
    np.testing.assert_array_equal)
ALL = [*cases(), SWAPPED, MISALIGNED]


@pytest.fixture(scope="module")
def module() -> Iterator[EmuModule]:
    """Every test kernel in one emu module (one compile)."""
    with compile_emu(combined_source(ALL), [k.signature for k in ALL]) as m:
        yield m


def run(module: EmuModule, case: TcKernel, block: int | None = None) -> np.ndarray:
    args = case.args()
    module.launch(case.name, case.grid, block or case.block, args)
    return args[-1]


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_emu_matches_reference(module: EmuModule, case: TcKernel) -> None:
    """mma against float64 numpy A@B+C (rtol 1e-5), ldmatrix and cp.async exactly."""
    args = case.args()
    module.launch(case.name, case.grid, case.block, args)
    case.check(args)


def test_mma_wrong_fragment_layout_is_caught(module: EmuModule) -> None:
    """Loading a[1] and a[2] swapped gives a different D: the layout is really checked."""
    out = run(module, SWAPPED)
    assert not np.allclose(out, SWAPPED.expected, rtol=1e-3, atol=1e-3)


def test_tf32_operands_are_rounded_to_nearest_away(module: EmuModule) -> None:
    """Operands with more than 10 mantissa bits are rounded like cvt.rna.tf32.f32: the
    reference with unrounded operands is measurably off."""
    case = mma_case("tf32", tf32_exact=False)
    a, b, c = (x.astype(np.float64) for x in case.inputs)
    unrounded = a @ b + c
    assert np.abs(unrounded - case.expected).max() > 1e-4
    np.testing.assert_allclose(run(module, case), case.expected, rtol=1e-5, atol=1e-5)


def test_missing_cp_async_wait_reads_old_shared_memory(module: EmuModule) -> None:
    """The planted race: without the wait, the copies have not landed when shared memory is
    read, so the result is wrong (the sentinel), not accidentally right."""
    src = cp_async_case(wait=True).inputs[0]
    out = run(module, cp_async_case(wait=False))
    assert not np.array_equal(out, src)
    assert (out == -1.0).all()


def test_wait_one_leaves_the_newest_group_in_flight(module: EmuModule) -> None:
    case = cp_async_groups_case()
    out = run(module, case)
    np.testing.assert_array_equal(out[:128], case.inputs[0][:128])
    assert (out[128:] == -1.0).all()


def test_copies_do_not_leak_into_the_next_launch(module: EmuModule) -> None:
    """Copies never waited for are dropped when their thread exits."""
    run(module, cp_async_case(wait=False))
    np.testing.assert_array_equal(run(module, cp_async_case(wait=True)), cp_async_case().expected)


def test_partial_warp_and_misaligned_copy_fail_the_launch(module: EmuModule) -> None:
    lanes = r"^kernel 'mma_f16': mma.sync needs all 32 lanes of the warp in block \(0,0,0\) thread"
    with pytest.raises(EmuError, match=lanes):
        run(module, mma_case("f16"), block=16)
    with pytest.raises(EmuError, match=r"cp.async with an address not aligned to its size in block"):
        run(module, MISALIGNED)
    np.testing.assert_array_equal(run(module, cp_async_case()), cp_async_case().expected)  # still usable


def test_sanitizer_build_runs_the_primitives() -> None:
    """A check build (bounds and shared races) compiles and runs the same kernels."""
    picked = [mma_case("bf16"), ldmatrix_case(), cp_async_case()]
    with compile_emu(combined_source(picked), [k.signature for k in picked], check=True) as m:
        for case in picked:
            case.check([*case.inputs, run(m, case)])


def test_prelude_has_only_what_a_source_uses() -> None:
    body = "tmlir_ldmatrix_x4_trans(r, p); tmlir_cp_async<16>(s, g); tmlir_cp_async_wait<0>();"
    assert used_primitives(body) == ["tmlir_ldmatrix_x4_trans", "tmlir_cp_async", "tmlir_cp_async_wait"]
    text = prelude_for(body)
    assert text.startswith("// Tensor-core") and "#ifndef TMLIR_EMU" in text and text.endswith("#endif  // TMLIR_EMU\n")
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in text and "m8n8.x4.shared" not in text
    assert "cp.async.commit_group" not in text and "mma" not in text
    assert prelude_for("float x = 1.0f;") == ""
    assert len(DEFINITIONS) == 13  # 3 mma, 6 ldmatrix, 4 cp.async (one zero-filling)
    assert "tmlir_cp_async_zfill" not in text  # a name that only starts like a used one
    assert prelude(body).endswith(text)  # what cuda_c puts ahead of a kernel
    assert prelude("tm_half h;" + body).endswith(text)


PTX_INSTRUCTIONS = ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cvt.rna.tf32.f32",
                    "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                    "cp.async.cg.shared.global", "cp.async.ca.shared.global", "cp.async.commit_group",
                    "cp.async.wait_group 1")


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_for_sm80_and_sm90(arch: str) -> None:
    text = ptx.compile_ptx(combined_source(ALL), arch)
    assert sorted(ptx.ptx_kernel_names(text)) == sorted(k.name for k in ALL)
    for instruction in PTX_INSTRUCTIONS:
        assert instruction in text, instruction


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_no_spills(arch: str) -> None:
    stats = ptx.ptxas_stats(combined_source(ALL), arch)
    assert set(stats) == {k.name for k in ALL}
    assert all(s.spill_bytes == 0 and s.local_bytes == 0 for s in stats.values()), stats


def test_sanitizer_reports_copies_never_waited_for() -> None:
    case = cp_async_case(wait=False)
    with compile_emu(case.source, [case.signature], check=True) as m:
        with pytest.raises(EmuError, match=r"thread \(0,0,0\): 3 cp.async copies never waited for .*\(and 31 more"):
            run(m, case)
