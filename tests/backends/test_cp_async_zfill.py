"""The zero-filling cp.async (``tmlir_cp_async_zfill``, PTX's src-size operand) on the emu:
the zeros of a false condition land at the covering wait like the data (not before: a
missing wait still reads the old shared memory), the source is never read when the
condition is false (not even under the sanitizer), and the prelude's PTX has the src-size
form for sm_80 and sm_90."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest
from tensor_core_kernels import SENTINEL, TcKernel, combined_source, cp_async_zfill_case

from tmlir.backends import ptx
from tmlir.backends.emu import EmuModule, compile_emu
from tmlir.backends.kernel_abi import KernelParam, KernelSignature
from tmlir.backends.tensor_core import prelude_for, used_primitives

needs_nvrtc = pytest.mark.skipif(ptx.nvrtc_version() is None, reason="NVRTC does not load")

# Threads 8-31 are outside: their source is a null pointer, which a read would fault on.
UNREAD = TcKernel(
    "extern \"C\" __global__ void cp_async_zfill_unread(const float* src, float* out) {\n"
    "  alignas(16) __shared__ float buf[4 * 32];\n"
    "  const int tid = threadIdx.x;\n"
    "  const bool inside = tid < 8;\n"
    "  const float* from = inside ? src + 4 * tid : nullptr;  // never dereferenced when outside\n"
    f"  for (int k = 0; k < 4; ++k) buf[4 * tid + k] = {SENTINEL:.1f}f;\n"
    "  tmlir_cp_async_zfill<16>(&buf[4 * tid], from, inside);\n"
    "  tmlir_cp_async_commit();\n  tmlir_cp_async_wait<0>();\n"
    "  for (int k = 0; k < 4; ++k) out[4 * tid + k] = buf[4 * tid + k];\n}\n",
    KernelSignature("cp_async_zfill_unread", (KernelParam("src", "const float*"), KernelParam("out", "float*"))),
    32, (np.arange(1, 33, dtype=np.float32),), np.zeros(128, np.float32),
    np.concatenate([np.arange(1, 33, dtype=np.float32), np.zeros(96, np.float32)]), np.testing.assert_array_equal)
KERNELS = [cp_async_zfill_case(), cp_async_zfill_case(wait=False), UNREAD]


@pytest.fixture(scope="module")
def module() -> Iterator[EmuModule]:
    with compile_emu(combined_source(KERNELS), [k.signature for k in KERNELS]) as m:
        yield m


def run(module: EmuModule, case: TcKernel) -> np.ndarray:
    args = case.args()
    module.launch(case.name, case.grid, case.block, args)
    return args[-1]


def test_zeros_and_data_land_at_the_wait(module: EmuModule) -> None:
    case = cp_async_zfill_case()
    out = run(module, case)
    case.check([out])
    assert (out[96:128] == 0).all() and (out[152:] == 0).all()  # the zero-filled rows


def test_without_the_wait_neither_zeros_nor_data_have_landed(module: EmuModule) -> None:
    """The planted race: the result is the sentinel everywhere, the zero-filled part too."""
    out = run(module, cp_async_zfill_case(wait=False))
    assert (out == SENTINEL).all()


def test_a_false_condition_reads_nothing(module: EmuModule) -> None:
    """A null source with a false condition: no fault, 16 zero bytes."""
    UNREAD.check([run(module, UNREAD)])


def test_sanitizer_sees_no_violation() -> None:
    """A check build runs the zero-filling copies (data, zeros, an unread null source)
    without reporting anything."""
    picked = [cp_async_zfill_case(), UNREAD]
    with compile_emu(combined_source(picked), [k.signature for k in picked], check=True) as m:
        for case in picked:
            case.check([run(m, case)])


def test_prelude_defines_the_zero_filling_copy_only_when_used() -> None:
    body = "tmlir_cp_async_zfill<16>(s, g, inside); tmlir_cp_async_commit();"
    assert used_primitives(body) == ["tmlir_cp_async_zfill", "tmlir_cp_async_commit"]
    text = prelude_for(body)
    assert "cp.async.cg.shared.global [%0], [%1], 16, %2;" in text
    assert '"r"(src_size)' in text and "cuda/" not in text
    assert "tmlir_cp_async_zfill" not in prelude_for("tmlir_cp_async<16>(s, g);")


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_has_the_src_size_operand(arch: str) -> None:
    text = ptx.compile_ptx(combined_source(KERNELS), arch)
    assert re.search(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+;", text), text
    assert re.search(r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4, %r\d+;", text), text
