"""tm.shuffle through the whole pipeline: each mode, with and without a segment width,
run on emu (two warps of 32 lanes), gives the lanes CUDA's __shfl_*_sync give."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context

KERNEL = """
tm.kernel @shuffle(%x: memref<64xf32>, %y: memref<64xf32>) grid(1) block(64) {{
  %tid = tm.thread_id
  %v = tm.load %x[%tid] : memref<64xf32>
  %s = tm.shuffle {mode} %v, {offset}{width} : f32
  tm.store %s, %y[%tid] : memref<64xf32>
}}
"""


def source_lane(mode: str, lane: int, offset: int, width: int) -> int:
    """The lane whose value `lane` gets (CUDA semantics; its own when out of segment)."""
    base, pos = lane - lane % width, lane % width
    match mode:
        case "xor":
            src = lane ^ offset
            return src if src - src % width <= base else lane
        case "down":
            return lane + offset if pos + offset < width else lane
        case "up":
            return lane - offset if pos >= offset else lane
        case _:
            return base + offset


@pytest.mark.parametrize(("mode", "offset", "width"), [
    ("xor", 16, 32), ("xor", 1, 32), ("xor", 4, 8), ("down", 3, 32), ("down", 2, 8),
    ("up", 5, 32), ("up", 1, 4), ("idx", 7, 32), ("idx", 3, 16),
])
def test_shuffle_modes_on_emu(mode, offset, width):
    text = KERNEL.format(mode=mode, offset=offset,
                         width=f" width({width})" if width != 32 else "")
    module = Parser(make_context(), text).parse_module()
    module.verify()
    LowerToCuda().apply(make_context(), module)
    program = emit_cuda(module)
    x = np.arange(64, dtype=np.float32) + 100
    y = np.full(64, np.nan, np.float32)
    with compile_emu(program.source, [k.signature for k in program.kernels]) as emu:
        emu.launch("shuffle", 1, 64, [x, y])
    want = [x[32 * (t // 32) + source_lane(mode, t % 32, offset, width)] for t in range(64)]
    np.testing.assert_array_equal(y, want)
