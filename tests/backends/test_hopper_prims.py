"""Hopper's primitives (wgmma, mbarrier, bulk copies): their emu emulation against numpy, the
planted missing wait and fence, and their code for sm_90a (refused for other archs)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import numpy as np
import pytest
from hopper_kernels import NEVER_COMPLETES, WgmmaCase, bulk_case, cases, fence_rules_case, planted, wgmma_case
from tensor_core_kernels import TcKernel, combined_source

from tmlir.backends import ptx
from tmlir.backends.emu import EmuError, EmuModule, compile_emu
from tmlir.backends.tensor_core import prelude_for

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

ALL = [*cases(), *planted()]


@pytest.fixture(scope="module")
def module() -> Iterator[EmuModule]:
    """Every test kernel in one emu module (one compile)."""
    with compile_emu(combined_source(ALL), [k.signature for k in ALL]) as m:
        yield m


def run(module: EmuModule, case: TcKernel) -> np.ndarray:
    args = case.args()
    module.launch(case.name, case.grid, case.block, args)
    return args[-1]


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_emu_matches_reference(module: EmuModule, case: TcKernel) -> None:
    """wgmma of every dtype, major and swizzle against float64 numpy A@B+C (rtol 1e-5), with
    A and B staged at their layouts' offsets; bulk copies exactly."""
    args = case.args()
    module.launch(case.name, case.grid, case.block, args)
    case.check(args)


def test_missing_wgmma_wait_reads_the_old_accumulator(module: EmuModule) -> None:
    """D stored before the wait is C: the wgmma has not landed (a GPU would be racing)."""
    case = wgmma_case(WgmmaCase(n=16, a_swizzle=32, b_swizzle=32, k=16, missing="wait"))
    out = run(module, case)
    right = wgmma_case(WgmmaCase(n=16, a_swizzle=32, b_swizzle=32, k=16))
    assert not np.allclose(out, right.expected, rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(out, case.inputs[-1])


def test_missing_wgmma_fence_poisons_the_result(module: EmuModule) -> None:
    """Without a fence the wgmma is unordered with the thread's loads of C: NaN."""
    out = run(module, wgmma_case(WgmmaCase(n=16, a_swizzle=32, b_swizzle=32, k=16, missing="fence")))
    assert np.isnan(out).all()


def test_a_fence_orders_the_writes_before_it_not_after(module: EmuModule) -> None:
    """A second accumulator written before the only fence is fine; an accumulator written
    after a wgmma completed on it, with no fence since, gives NaN."""
    case = fence_rules_case()
    out = run(module, case)
    case.check([*case.inputs, out])
    assert not np.isnan(out[:1024]).any() and np.isnan(out[1024:]).all()


def test_missing_mbarrier_wait_reads_old_shared_memory(module: EmuModule) -> None:
    out = run(module, bulk_case(wait=False))
    assert (out[:512] == -1.0).all()
    np.testing.assert_array_equal(out[512:], np.arange(513, 1025, dtype=np.float32))  # phase 1 waited


def test_a_phase_that_never_completes_is_a_deadlock(module: EmuModule) -> None:
    with pytest.raises(EmuError, match=r"deadlock in block \(0,0,0\): 64 thread\(s\) wait at an mbarrier"):
        run(module, NEVER_COMPLETES)
    np.testing.assert_array_equal(run(module, bulk_case()), bulk_case().expected)  # still usable


def test_a_wrong_descriptor_gives_a_wrong_result() -> None:
    """The same kernel with the stride byte offset doubled: the emu really follows the
    descriptor (it does not read the logical tile)."""
    case = wgmma_case(WgmmaCase(n=16, a_swizzle=32, b_swizzle=32, k=16))
    source = case.body.replace("tmlir_wgmma_desc(&sa[start_a[s]], 16, 256, 32)",
                               "tmlir_wgmma_desc(&sa[start_a[s]], 16, 512, 32)")
    assert source != case.body
    with compile_emu(prelude_for(source) + source, [case.signature]) as m:
        args = case.args()
        m.launch(case.name, 1, 128, args)
    assert not np.allclose(args[-1], case.expected, rtol=1e-3, atol=1e-3)


def test_partial_warpgroup_fails_the_launch(module: EmuModule) -> None:
    case = wgmma_case(WgmmaCase())
    args = case.args()
    with pytest.raises(EmuError, match=r"wgmma needs all 128 threads of its warpgroup in block \(0,0,0\)"):
        module.launch(case.name, 1, 96, args)


@needs_nvcc
def test_cubin_for_sm90a_and_one_line_for_sm90() -> None:
    """ptxas accepts every instruction for sm_90a (no spills); for sm_90 the prelude's
    #error is the compile error's one line."""
    source = combined_source(ALL)
    stats = ptx.ptxas_stats(source, "sm_90a")
    assert set(stats) == {k.name for k in ALL}
    assert all(s.spill_bytes == 0 for s in stats.values()), stats
    text = ptx.compile_ptx(source, "sm_90a", compiler="nvcc")
    for instruction in ("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16",
                        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
                        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32", "wgmma.fence.sync.aligned",
                        "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned 0",
                        "mbarrier.init.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64",
                        "mbarrier.try_wait.parity.shared::cta.b64", "fence.proxy.async.shared::cta",
                        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"):
        assert instruction in text, instruction
    with pytest.raises(ptx.CudaCompileError, match=r"^nvcc failed to compile kernels.cu for sm_90: .*"
                                                   r"wgmma needs the arch-specific target sm_90a"):
        ptx.compile_cubin(source, "sm_90", compiler="nvcc", name="kernels.cu")


def test_prelude_guards_each_family() -> None:
    wgmma = prelude_for("tmlir_wgmma_m64n64k16_f16<0, 0>(acc, a, b, 1); tmlir_wgmma_wait<0>();")
    assert "__CUDA_ARCH_FEAT_SM90_ALL" in wgmma and "__CUDA_ARCH__ < 900" not in wgmma
    assert "m64n64k16.f32.f16.f16" in wgmma and "m64n128k16" not in wgmma
    bulk = prelude_for("tmlir_cp_async_bulk(d, s, 16, bar); tmlir_mbarrier_wait(bar, 0);")
    assert "__CUDA_ARCH__ < 900" in bulk and "SM90_ALL" not in bulk and "tmlir_wgmma" not in bulk


def test_sanitizer_build_runs_the_primitives_and_reports_unwaited_wgmmas() -> None:
    """A check build (bounds and shared races) compiles and runs the same kernels, and a
    wgmma never waited for is a violation (on a GPU it would land at an unknown time)."""
    picked = [wgmma_case(WgmmaCase()), bulk_case()]
    never = wgmma_case(WgmmaCase(n=16, a_swizzle=32, b_swizzle=32, k=16))
    body = never.body.replace("tmlir_wgmma_wait<0>();", "").replace(never.name, "wgmma_never_waited")
    source = combined_source(picked) + body
    signatures = [k.signature for k in picked] + [never.signature.__class__("wgmma_never_waited",
                                                                              never.signature.params)]
    with compile_emu(source, signatures, check=True) as m:
        for case in picked:
            case.check([*case.inputs, run(m, case)])
        with pytest.raises(EmuError, match=r"1 wgmma operation never waited for .*\(and 127 more"):
            m.launch("wgmma_never_waited", 1, 128, never.args())
