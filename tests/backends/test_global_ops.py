"""The global ops blocks of one launch talk through (``atomic_add``, ``fence``, ``load_cg``):
real atomics across the emu's parallel blocks, a publish-then-count handshake that the
last block reads correctly, clean under the emu sanitizer, PTX from NVRTC for sm_80 and
sm_90, and the cost report counting them (with ``tm.branch_weights`` on the last-block
branch)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from tmlir.backends.cost import cost_report
from tmlir.backends.cuda_c import CudaProgram, emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import compile_ptx, nvrtc_version
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context

BLOCKS, THREADS = 40, 64

# Every block adds its thread ids (its "partial"), publishes them, counts itself in; the
# last of the 40 to arrive sums all partials element by element, in block order, and
# resets the counter. order[b] is the count block b saw.
HANDSHAKE = f"""
tm.kernel @handshake(%ws: memref<{BLOCKS}x{THREADS}xf32>, %counter: memref<1xi32>,
                     %order: memref<{BLOCKS}xi32>, %out: memref<{THREADS}xf32>) grid({BLOCKS}) block({THREADS}) {{
  %bid = tm.block_id
  %tid = tm.thread_id
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  %last = arith.constant {BLOCKS - 1} : i32
  %flag = tm.alloc shared : memref<1xi32>
  %t32 = arith.index_cast %tid : index to i32
  %b32 = arith.index_cast %bid : index to i32
  %sum = arith.addi %t32, %b32 : i32
  %p = arith.sitofp %sum : i32 to f32
  tm.store %p, %ws[%bid, %tid] : memref<{BLOCKS}x{THREADS}xf32>
  tm.fence
  tm.barrier
  %first = arith.cmpi eq, %tid, %c0 : index
  scf.if %first {{
    %old = tm.atomic_add %counter[%c0], %one : memref<1xi32>
    tm.fence
    tm.store %old, %flag[%c0] : memref<1xi32>
    tm.store %old, %order[%bid] : memref<{BLOCKS}xi32>
  }}
  tm.barrier
  %seen = tm.load %flag[%c0] : memref<1xi32>
  %is_last = arith.cmpi eq, %seen, %last : i32
  scf.if %is_last {{
    %blocks = arith.constant {BLOCKS} : index
    %c1 = arith.constant 1 : index
    %acc = tm.alloc register : memref<1xf32>
    %f0 = arith.constant 0.0 : f32
    tm.store %f0, %acc[%c0] : memref<1xf32>
    scf.for %b = %c0 to %blocks step %c1 {{
      %q = tm.load_cg %ws[%b, %tid] : memref<{BLOCKS}x{THREADS}xf32>
      %a = tm.load %acc[%c0] : memref<1xf32>
      %s = arith.addf %a, %q : f32
      tm.store %s, %acc[%c0] : memref<1xf32>
    }}
    %total = tm.load %acc[%c0] : memref<1xf32>
    tm.store %total, %out[%tid] : memref<{THREADS}xf32>
    scf.if %first {{
      tm.store %zero, %counter[%c0] : memref<1xi32>
    }}
  }} {{tm.branch_weights = array<i64: 1, {BLOCKS - 1}>}}
}}
"""


def program() -> CudaProgram:
    module = Parser(make_context(), HANDSHAKE).parse_module()
    module.verify()
    LowerToCuda().apply(make_context(), module)
    return emit_cuda(module)


@pytest.mark.parametrize("check", [False, True], ids=["emu", "emu-sanitizer"])
def test_the_last_block_sees_every_block_s_partial(check: bool) -> None:
    source = program()
    ws = np.full((BLOCKS, THREADS), np.nan, np.float32)
    counter = np.zeros(1, np.int32)
    want = np.arange(THREADS) * BLOCKS + np.arange(BLOCKS).sum()
    with compile_emu(source.source, [k.signature for k in source.kernels], check=check) as emu:
        for _ in range(3):  # the counter is back at 0 after each launch
            order = np.full(BLOCKS, -1, np.int32)
            out = np.full(THREADS, np.nan, np.float32)
            emu.launch("handshake", BLOCKS, THREADS, [ws, counter, order, out])
            assert sorted(order) == list(range(BLOCKS))  # one increment each, atomically
            np.testing.assert_array_equal(out, want)
            assert counter[0] == 0


@pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC (cuda.bindings) not available")
def test_the_handshake_compiles_with_nvrtc() -> None:
    source = program().source
    for arch in ("sm_80", "sm_90"):
        ptx = compile_ptx(source, arch)
        assert "atom.global.add" in ptx and "ld.global.cg.f32" in ptx and "membar.gl" in ptx


def test_cost_counts_the_last_block_branch_by_its_weights() -> None:
    module = Parser(make_context(), HANDSHAKE + """
      func.func @main(%ws: memref<40x64xf32>, %c: memref<1xi32>, %o: memref<40xi32>, %out: memref<64xf32>) {
        tm.launch @handshake(%ws, %c, %o, %out) : memref<40x64xf32>, memref<1xi32>, memref<40xi32>, memref<64xf32>
        func.return
      }""").parse_module()
    LowerToCuda().apply(make_context(), module)
    (launch,) = cost_report(module).launches
    # The last block's 40 x 64 adds, once; not 40 times (the larger branch, unweighted).
    assert launch.flops == BLOCKS * THREADS
    # Read: the whole workspace once (by the last block), the counter by 40 atomic adds
    # (4 bytes: the buffer). Written: workspace, counter, order, out.
    assert launch.bytes_read == BLOCKS * THREADS * 4 + 4
    assert launch.bytes_written == BLOCKS * THREADS * 4 + 4 + BLOCKS * 4 + THREADS * 4


def test_an_if_without_weights_still_counts_its_larger_branch() -> None:
    module = Parser(make_context(), HANDSHAKE.replace(
        f"{{tm.branch_weights = array<i64: 1, {BLOCKS - 1}>}}", "") + """
      func.func @main(%ws: memref<40x64xf32>, %c: memref<1xi32>, %o: memref<40xi32>, %out: memref<64xf32>) {
        tm.launch @handshake(%ws, %c, %o, %out) : memref<40x64xf32>, memref<1xi32>, memref<40xi32>, memref<64xf32>
        func.return
      }""").parse_module()
    LowerToCuda().apply(make_context(), module)
    assert isinstance(module, ModuleOp)
    (launch,) = cost_report(module).launches
    assert launch.flops == BLOCKS * BLOCKS * THREADS
