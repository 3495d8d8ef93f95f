"""Zeroed buffers (a kernel's counters) and workspaces (scratch arguments, see
``tmlir/ir/kernel_ops.py``) in the runtime: counters get memory of their own outside the
arena, zero before the first launch and kept across launches, runs and CUDA-graph replays
(each launch leaves them zero); workspaces are arena temps, shared between launches that
are not live together. Checked with a hand-written kernel whose 8 blocks publish partial
sums and whose last block adds them up, launched twice in one program (sharing one
counters buffer), on emu (also under the sanitizer) and on the CudaRunner with the
host-memory driver double of ``test_cuda_runner.py``."""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda_runner import HostModule, HostStream, captures, host_driver  # noqa: F401  (a fixture)

from tmlir.runtime.ir_program import ProgramRunner, compile_ir, parse_ir
from tmlir.runtime.memory_plan import plan_memory
from tmlir.runtime.runners import CudaRunner, WeightCache, make_runner

BLOCKS = 8
PROGRAM = f"""
tm.kernel @blocks_sum(%x: memref<64xf32>, %y: memref<64xf32>, %ws: memref<{BLOCKS}x64xf32>,
                      %counters: memref<1xi32>) grid({BLOCKS}) block(64) scratch(workspace, counters) {{
  %bid = tm.block_id
  %tid = tm.thread_id
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  %last = arith.constant {BLOCKS - 1} : i32
  %flag = tm.alloc shared : memref<1xi32>
  %v = tm.load %x[%tid] : memref<64xf32>
  %b1 = arith.addi %bid, %c1 : index
  %b32 = arith.index_cast %b1 : index to i32
  %scale = arith.sitofp %b32 : i32 to f32
  %p = arith.mulf %v, %scale : f32
  tm.store %p, %ws[%bid, %tid] : memref<{BLOCKS}x64xf32>
  tm.fence
  tm.barrier
  %first = arith.cmpi eq, %tid, %c0 : index
  scf.if %first {{
    %old = tm.atomic_add %counters[%c0], %one : memref<1xi32>
    tm.fence
    tm.store %old, %flag[%c0] : memref<1xi32>
  }}
  tm.barrier
  %seen = tm.load %flag[%c0] : memref<1xi32>
  %is_last = arith.cmpi eq, %seen, %last : i32
  scf.if %is_last {{
    %n = arith.constant {BLOCKS} : index
    %acc = tm.alloc register : memref<1xf32>
    %f0 = arith.constant 0.0 : f32
    tm.store %f0, %acc[%c0] : memref<1xf32>
    scf.for %b = %c0 to %n step %c1 {{
      %q = tm.load_cg %ws[%b, %tid] : memref<{BLOCKS}x64xf32>
      %a = tm.load %acc[%c0] : memref<1xf32>
      %s = arith.addf %a, %q : f32
      tm.store %s, %acc[%c0] : memref<1xf32>
    }}
    %total = tm.load %acc[%c0] : memref<1xf32>
    tm.store %total, %y[%tid] : memref<64xf32>
    scf.if %first {{
      tm.store %zero, %counters[%c0] : memref<1xi32>
    }}
  }}
}}
func.func @main(%x: memref<64xf32>, %y: memref<64xf32>, %z: memref<64xf32>)
    attributes {{tm.inputs = ["x"], tm.outputs = ["y", "z"]}} {{
  %w1 = tm.alloc global : memref<{BLOCKS}x64xf32>
  %counters = tm.alloc global zeroed : memref<1xi32>
  tm.launch @blocks_sum(%x, %y, %w1, %counters) : memref<64xf32>, memref<64xf32>, memref<{BLOCKS}x64xf32>, memref<1xi32>
  %w2 = tm.alloc global : memref<{BLOCKS}x64xf32>
  tm.launch @blocks_sum(%y, %z, %w2, %counters) : memref<64xf32>, memref<64xf32>, memref<{BLOCKS}x64xf32>, memref<1xi32>
  func.return
}}
"""
FACTOR = BLOCKS * (BLOCKS + 1) // 2  # block b adds x * (b + 1)


def compiled():
    return compile_ir(parse_ir(PROGRAM), pipeline="tm-lower-mappings,convert-tm-to-gpu")


def expected(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = x * FACTOR  # small integers: exact in any order
    return y, y * FACTOR


def test_counters_live_outside_the_arena_and_workspaces_share_it() -> None:
    program, _ = compiled()
    kinds = {b.name: b.kind for b in program.buffers}
    assert kinds == {"x": "input", "y": "output", "z": "output", "w1": "temp", "counters": "zeroed",
                     "w2": "temp"}
    plan = plan_memory(program)
    index = {b.name: i for i, b in enumerate(program.buffers)}
    assert index["counters"] not in plan.offsets
    assert plan.offsets[index["w1"]] == plan.offsets[index["w2"]]  # one launch each: same memory
    assert plan.report()["zeroed_bytes"] == 4


@pytest.mark.parametrize("check", [False, True], ids=["emu", "emu-sanitizer"])
def test_counters_stay_zero_between_launches_and_runs_on_emu(check: bool) -> None:
    program, weights = compiled()
    runner = ProgramRunner(program, weights, "emu", check=check)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.integers(-4, 5, 64).astype(np.float32)
        out = runner.run({"x": x})
        want_y, want_z = expected(x)
        np.testing.assert_array_equal(out["y"], want_y)
        np.testing.assert_array_equal(out["z"], want_z)


def test_counters_survive_cuda_graph_replays(host_driver) -> None:  # noqa: F811  (the fixture)
    from tmlir.backends.emu import compile_emu

    program, weights = compiled()
    emu = compile_emu(program.source, [k.signature for k in program.kernels])
    stream = HostStream()
    module = HostModule(emu, stream)
    runner = CudaRunner(program, weights, module, plan_memory(program), WeightCache(), stream,
                        cuda_graphs=True)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-4, 5, 64).astype(np.float32)
        y, z = runner.run({0: x}).values()
        want_y, want_z = expected(x)
        np.testing.assert_array_equal(y, want_y)
        np.testing.assert_array_equal(z, want_z)
    assert len(captures) == 1 and module.launches == 6  # captured once, replayed


def test_the_memory_guard_counts_zeroed_buffers() -> None:
    from tmlir.runtime.resources import needed_bytes

    program, weights = compiled()
    plan, _ = make_runner(program, weights, "emu")
    assert needed_bytes(program, plan, "emu")["zeroed buffers"] == 4


def test_a_run_stopped_halfway_leaves_the_counters_zero() -> None:
    """A launch that fails (a fault, Ctrl-C) may leave a count behind: the run zeroes the
    counters of its arena before it gives up, so the next run starts from zero."""
    from tmlir.runtime.runners import EmuRunner

    program, weights = compiled()
    counters = next(i for i, b in enumerate(program.buffers) if b.kind == "zeroed")

    class StopsHalfway:
        def launch(self, name, grid, block, args, shared_bytes=0) -> None:
            args[-1][...] = 5  # some blocks counted in, then the launch failed
            raise RuntimeError("interrupted")

    runner = EmuRunner(program, weights, StopsHalfway(), plan_memory(program))
    with pytest.raises(RuntimeError, match="interrupted"):
        runner.run({0: np.ones(64, np.float32)})
    ((_, slots),) = runner._free
    assert not slots[counters].any()
