"""``tm.load_vector`` through the pipeline: emu reads exactly the elements (guards give
zeros), the sanitizer reports a vector past a buffer's end and a misaligned one, a float16
view keeps the load a vector (or splits it where that width has none), and `scalar_loads`
splits it into the element loads it stands for."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import Float16Type, Float32Type, ModuleOp
from xdsl.parser import Parser

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import EmuError, compile_emu
from tmlir.dialects import tm
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.common import half_arguments, scalar_loads

# y[r, 4 j + e] = x[r, 4 j + e] through x4 loads (rows past 6 guarded: zeros) and
# z[r, 2 j + e] = x[r, 2 j + e] through x2 loads, for the first 8 columns.
COPY = """
tm.kernel @copy(%x: memref<6x16xf32>, %y: memref<8x16xf32>, %z: memref<6x8xf32>) grid(1) block(32) {
  %tid = tm.thread_id
  tm.for_task (%r, %j) in spatial(8, 4) on %tid {
    %c4 = arith.constant 4 : index
    %k = arith.muli %j, %c4 : index
    %v:4 = tm.load_vector x4 %x[%r, %k] guard [0] : memref<6x16xf32>
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %i1 = arith.addi %k, %c1 : index
    %i2 = arith.addi %k, %c2 : index
    %i3 = arith.addi %k, %c3 : index
    tm.store %v#0, %y[%r, %k] : memref<8x16xf32>
    tm.store %v#1, %y[%r, %i1] : memref<8x16xf32>
    tm.store %v#2, %y[%r, %i2] : memref<8x16xf32>
    tm.store %v#3, %y[%r, %i3] : memref<8x16xf32>
    %c6 = arith.constant 6 : index
    %in = arith.cmpi ult, %r, %c6 : index
    scf.if %in {
      %k2 = arith.muli %j, %c2 : index
      %p:2 = tm.load_vector x2 %x[%r, %k2] : memref<6x16xf32>
      %k3 = arith.addi %k2, %c1 : index
      tm.store %p#0, %z[%r, %k2] : memref<6x8xf32>
      tm.store %p#1, %z[%r, %k3] : memref<6x8xf32>
    }
  }
}
"""


def lowered(text: str) -> tuple[ModuleOp, str]:
    """The module parsed, verified and lowered to CUDA C."""
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    LowerToCuda().apply(ctx, module)
    return module, emit_cuda(module).source


@pytest.mark.parametrize("check", [False, True], ids=["plain", "sanitizer"])
def test_vector_loads_read_exactly_their_elements(check):
    module, source = lowered(COPY)
    program = emit_cuda(module)
    x = np.random.default_rng(0).standard_normal((6, 16)).astype(np.float32)
    y = np.full((8, 16), np.nan, np.float32)
    z = np.full((6, 8), np.nan, np.float32)
    with compile_emu(program.source, [k.signature for k in program.kernels], check) as emu:
        emu.launch("copy", 1, 32, [x, y, z])
    assert np.array_equal(y[:6], x) and np.array_equal(y[6:], np.zeros((2, 16), np.float32))
    assert np.array_equal(z, x[:, :8])
    assert "*reinterpret_cast<const float4*>(&x[" in source
    assert "*reinterpret_cast<const float2*>(&x[" in source


# A 1-D buffer of 10 elements read as x4 vectors at 4 t: thread 2's vector runs past the end.
PAST_THE_END = """
tm.kernel @tail(%x: memref<10xf32>, %y: memref<12xf32>) grid(1) block(3) {
  %tid = tm.thread_id
  %c4 = arith.constant 4 : index
  %k = arith.muli %tid, %c4 : index
  %v:4 = tm.load_vector x4 %x[%k] : memref<10xf32>
  tm.store %v#0, %y[%k] : memref<12xf32>
}
"""


def test_sanitizer_reports_a_vector_past_the_end():
    module, _ = lowered(PAST_THE_END)
    program = emit_cuda(module)
    x, y = np.arange(10, dtype=np.float32), np.zeros(12, np.float32)
    with compile_emu(program.source, [k.signature for k in program.kernels], True) as emu, \
            pytest.raises(EmuError) as info:
        emu.launch("tail", 1, 3, [x, y])
    message = str(info.value)
    assert "kernel 'tail': emu check: block (0,0,0) thread (2,0,0): out-of-bounds 16-byte vector load " \
           "from 'x' at indices 8..11 (buffer has 10 elements)" in message


def test_sanitizer_reports_a_misaligned_vector():
    module, _ = lowered(COPY)
    program = emit_cuda(module)
    storage = np.zeros(6 * 16 + 1, np.float32)
    x = storage[1:].reshape(6, 16)  # 4 bytes past an aligned start
    assert x.ctypes.data % 16 == 4
    y, z = np.zeros((8, 16), np.float32), np.zeros((6, 8), np.float32)
    with compile_emu(program.source, [k.signature for k in program.kernels], True) as emu, \
            pytest.raises(EmuError, match=r"thread \(0,0,0\): misaligned 16-byte vector load from 'x' at index 0"):
        emu.launch("copy", 1, 32, [x, y, z])


def test_scalar_loads_stand_for_the_vector():
    ctx = make_context()
    module = Parser(ctx, COPY).parse_module()
    vectors = [op for op in module.walk() if isinstance(op, tm.LoadVectorOp)]
    loads = scalar_loads(vectors[0])
    module.verify()
    assert [load.guarded_dims for load in loads] == [(0,)] * 4
    assert [load.result.name_hint for load in loads] == ["v"] * 4
    assert not any(isinstance(op, tm.LoadVectorOp) and op.width == 4 for op in module.walk())
    _, source = lowered(str(module))
    assert "float4" not in source and "float2" in source


@pytest.mark.parametrize("check", [False, True], ids=["plain", "sanitizer"])
def test_half_view_keeps_vectors_of_its_width(check):
    """`half_arguments` on a kernel that reads with x4 and x2 loads: the x4 loads become f16
    x4 loads (8 bytes, uint2), the x2 ones element loads (f16 has no 4-byte vector)."""
    ctx = make_context()
    module = Parser(ctx, COPY).parse_module()
    kernel = next(op for op in module.walk() if isinstance(op, tm.KernelOp))
    half_arguments(kernel, [Float16Type(), Float32Type(), Float32Type()])
    module.verify()
    widths = sorted(op.width for op in module.walk() if isinstance(op, tm.LoadVectorOp))
    assert widths == [4]
    LowerToCuda().apply(ctx, module)
    program = emit_cuda(module)
    assert "*reinterpret_cast<const uint2*>(&x[" in program.source
    x = np.random.default_rng(1).standard_normal((6, 16)).astype(np.float16)
    y = np.full((8, 16), np.nan, np.float32)
    z = np.full((6, 8), np.nan, np.float32)
    with compile_emu(program.source, [k.signature for k in program.kernels], check) as emu:
        emu.launch("copy", 1, 32, [x, y, z])
    assert np.array_equal(y[:6], x.astype(np.float32)) and not y[6:].any()
    assert np.array_equal(z, x[:, :8].astype(np.float32))
