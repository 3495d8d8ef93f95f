"""Dynamic shared memory on emu: the printer's form (``extern __shared__ ... tmlir_dynamic_smem[]``
and typed views into it) runs with the same results as static arrays, one buffer per worker
as large as any GPU gives a block; the sanitizer checks the views' bounds and races as it
checks ``__shared__`` arrays; a launch asking for more than that buffer is refused."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import EmuError, compile_emu
from tmlir.backends.emu.emu import HEADER
from tmlir.backends.kernel_abi import KernelParam, KernelSignature
from tmlir.gpu_limits import MAX_SHARED_BYTES
from tmlir.registry import make_context

LIT = Path(__file__).parents[1] / "filecheck" / "backends" / "cuda_dynamic_shared.mlir"


def test_the_worker_buffer_is_the_largest_block():
    size = re.search(r"tmlir_dynamic_smem\[(\d+) \* 1024\]", HEADER.read_text())
    assert size is not None and int(size.group(1)) * 1024 == MAX_SHARED_BYTES


@pytest.mark.parametrize("check", [False, True], ids=["emu", "sanitizer"])
def test_printed_dynamic_shared_memory_runs(check):
    """The lit test's program: a kernel with 65552 bytes of shared arrays (dynamic), launched
    twice with its bytes, and one with 48 KiB (static)."""
    module = Parser(make_context(), LIT.read_text()).parse_module()
    program = emit_cuda(module)
    assert [launch.shared_bytes for launch in program.launches] == [65552, 65552, 0]
    assert program.kernel("dynamic").dynamic_shared_bytes == 65552
    x = np.arange(1024, dtype=np.float32)
    y = np.zeros(1024, np.float32)
    buffers = [x, y]
    with compile_emu(program.source, [k.signature for k in program.kernels], check=check) as emu:
        for launch in program.launches[:1]:
            emu.launch(launch.kernel, launch.grid, launch.block, [buffers[i] for i in launch.args],
                       launch.shared_bytes)
    t = np.arange(256)
    np.testing.assert_array_equal(y[:256], x[255 - t] * 2)  # a[2][255 - t] + b[255 - t]


SIG = KernelSignature("views", (KernelParam("x", "const float*"), KernelParam("y", "float*")))
PLANTED = """
extern "C" __global__ void __launch_bounds__(64) views(const float* __restrict__ x, float* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char tmlir_dynamic_smem[];  // 65792 bytes
  float (&a)[16384] = *reinterpret_cast<float (*)[16384]>(tmlir_dynamic_smem);
  float (&b)[64] = *reinterpret_cast<float (*)[64]>(tmlir_dynamic_smem + 65536);
  const int t = threadIdx.x;
  a[t] = x[t];
  b[t] = x[t];
  %s
  y[t] = a[%s] + b[%s];
}
"""


@pytest.mark.parametrize(("barrier", "a_index", "b_index", "message"), [
    ("__syncthreads();", "(t + 1) % 64", "t + 1", r"out-of-bounds load from __shared__ 'b': index 64 of dimension 0"),
    ("", "(t + 1) % 64", "t", r"thread \(1,0,0\): shared-memory race on 'a'\[1\]: write by thread \(1,0,0\) "
                               r"after a read by thread \(0,0,0\)"),
])
def test_the_sanitizer_checks_the_views(barrier, a_index, b_index, message):
    source = PLANTED % (barrier, a_index, b_index)
    with compile_emu(source, [SIG], check=True) as emu, pytest.raises(EmuError, match=message):
        emu.launch("views", 1, 64, [np.ones(64, np.float32), np.zeros(64, np.float32)], 65792)
    fixed = PLANTED % ("__syncthreads();", "(t + 1) % 64", "t")
    y = np.zeros(64, np.float32)
    with compile_emu(fixed, [SIG], check=True) as emu:
        emu.launch("views", 1, 64, [np.arange(64, dtype=np.float32), y], 65792)
    np.testing.assert_array_equal(y, (np.arange(64) + 1) % 64 + np.arange(64))


def test_more_than_a_block_has_is_refused():
    fixed = PLANTED % ("__syncthreads();", "t", "t")
    with compile_emu(fixed, [SIG]) as emu, pytest.raises(EmuError, match="232449 bytes of dynamic shared memory"):
        emu.launch("views", 1, 64, [np.ones(64, np.float32), np.zeros(64, np.float32)], MAX_SHARED_BYTES + 1)
