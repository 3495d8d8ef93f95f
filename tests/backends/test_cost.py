"""The cost report (``-t cost``): FLOPs, global bytes and roofline time per launch.

Hand-written tmgpu IR whose counts are worked out by hand in the comments (loop nests with
constant bounds, an scf.if with unequal branches, a kernel reading one buffer twice, a view
aliasing a buffer), a real lowered 64x64x64 matmul + relu whose counts are known from the
shapes, and the one-line errors of ``tm-opt``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from models import make_model
from onnx import helper
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from tmlir.backends.cost import (
    PEAK_FP32_FLOPS,
    PEAK_HBM_BYTES_PER_S,
    CostError,
    CostTarget,
    ModelCost,
    cost_report,
    format_table,
)
from tmlir.registry import make_context
from tmlir.tools.tm_opt import main as tm_opt

CONSTANTS = """
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.000000e+00 : f32
"""

# Per thread: the i loop runs 3 times (0, 3, 6), the j loop 4 times (1, 3, 5, 7); j's body
# has a mulf and an addf, i's body an exp (and a cmpf, a select, an addi, a sitofp and an
# integer math.absi, none of which count): 3 * (4 * 2 + 1) = 27 FLOPs, times 2 x 16 threads.
LOOPS = f"""
tmgpu.kernel @loops(%x: memref<16x8xf32>, %y: memref<16xf32>) block(16) attributes {{tm.template = "hand"}} {{
    %tid = tmgpu.thread_id x
    {CONSTANTS}
    %acc = tmgpu.local_alloc : memref<1xf32>
    memref.store %zero, %acc[%c0] : memref<1xf32>
    scf.for %i = %c0 to %c8 step %c3 {{
      scf.for %j = %c1 to %c8 step %c2 {{
        %v = memref.load %x[%tid, %j] : memref<16x8xf32>
        %a = memref.load %acc[%c0] : memref<1xf32>
        %m = arith.mulf %v, %v : f32
        %s = arith.addf %a, %m : f32
        memref.store %s, %acc[%c0] : memref<1xf32>
      }} {{tm.unroll}}
      %k = arith.addi %i, %c1 : index
      %ki = arith.index_cast %k : index to i32
      %kabs = math.absi %ki : i32
      %kf = arith.sitofp %kabs : i32 to f32
      %t = memref.load %acc[%c0] : memref<1xf32>
      %e = math.exp %t : f32
      %p = arith.cmpf ogt, %e, %kf : f32
      %q = arith.select %p, %e, %zero : f32
      memref.store %q, %acc[%c0] : memref<1xf32>
    }}
    %r = memref.load %acc[%c0] : memref<1xf32>
    memref.store %r, %y[%tid] : memref<16xf32>
}}
func.func @main(%x: memref<16x8xf32>, %y: memref<16xf32>) {{
    tmgpu.launch @loops(%x, %y) grid(2) block(16) : memref<16x8xf32>, memref<16xf32>
    func.return
}}
"""

# Per thread: the first scf.if has 3 FLOPs (addf, mulf, tanh) against 1 (negf): 3; the
# second 1 (divf) against a 2-trip loop of subf and maximumf (4): 4. So 7, times 3 x 32.
BRANCHES = f"""
tmgpu.kernel @branches(%x: memref<96xf32>, %y: memref<96xf32>) block(32) {{
    %tid = tmgpu.thread_id x
    {CONSTANTS}
    %lt = arith.cmpi ult, %tid, %c8 : index
    %v = memref.load %x[%tid] : memref<96xf32>
    scf.if %lt {{
      %a = arith.addf %v, %v : f32
      %b = arith.mulf %a, %v : f32
      %c = math.tanh %b : f32
      memref.store %c, %y[%tid] : memref<96xf32>
    }} else {{
      %n = arith.negf %v : f32
      memref.store %n, %y[%tid] : memref<96xf32>
    }}
    %r = scf.if %lt -> (f32) {{
      %d = arith.divf %v, %v : f32
      scf.yield %d : f32
    }} else {{
      scf.for %i = %c0 to %c2 step %c1 {{
        %s = arith.subf %v, %v : f32
        %m = arith.maximumf %s, %v : f32
      }}
      scf.yield %v : f32
    }}
    scf.if %lt {{
      memref.store %r, %y[%tid] : memref<96xf32>
    }}
}}
func.func @main(%x: memref<96xf32>, %y: memref<96xf32>) {{
    tmgpu.launch @branches(%x, %y) grid(3) block(32) : memref<96xf32>, memref<96xf32>
    func.return
}}
"""

# Read: %x (64 bytes, but only 4 threads x 2 loads = 8 of its 16 elements: 32), %mask (4
# bools of 1 byte), %z (2 x 8: loaded 4 times, counted once); not %unused, nor the shared
# buffer. Written: %z (16) and %w (3 x 4), each stored 4 times, counted once.
BYTES = f"""
tmgpu.kernel @bytes(%x: memref<4x4xf32>, %unused: memref<100xf32>, %mask: memref<4xi1>, %z: memref<2xi64>, %w: memref<3xi32>) block(4) {{
    %tid = tmgpu.thread_id x
    {CONSTANTS}
    %smem = tmgpu.shared_alloc : memref<4xf32>
    %a = memref.load %x[%tid, %c0] : memref<4x4xf32>
    %b = memref.load %x[%c1, %tid] : memref<4x4xf32>
    memref.store %a, %smem[%tid] : memref<4xf32>
    %m = memref.load %mask[%tid] : memref<4xi1>
    %i = memref.load %z[%c0] : memref<2xi64>
    memref.store %i, %z[%c1] : memref<2xi64>
    %j = arith.trunci %i : i64 to i32
    memref.store %j, %w[%c2] : memref<3xi32>
}}
func.func @main(%x: memref<4x4xf32>, %u: memref<100xf32>, %mask: memref<4xi1>, %z: memref<2xi64>, %w: memref<3xi32>) {{
    tmgpu.launch @bytes(%x, %u, %mask, %z, %w) grid(1) block(4) : memref<4x4xf32>, memref<100xf32>, memref<4xi1>, memref<2xi64>, memref<3xi32>
    func.return
}}
"""

# The first launch passes one 64-byte buffer twice (itself and a view of it): read once.
# The second passes two different buffers: read twice.
ALIAS = f"""
tmgpu.kernel @alias(%a: memref<2x8xf32>, %b: memref<16xf32>, %out: memref<16xf32>) block(16) {{
    %tid = tmgpu.thread_id x
    {CONSTANTS}
    %u = memref.load %a[%c0, %c0] : memref<2x8xf32>
    %v = memref.load %b[%tid] : memref<16xf32>
    %s = arith.addf %u, %v : f32
    memref.store %s, %out[%tid] : memref<16xf32>
}}
func.func @main(%y: memref<16xf32>) {{
    %buf = tmgpu.alloc : memref<2x8xf32>
    %flat = tmgpu.view %buf : memref<2x8xf32> to memref<16xf32>
    %other = tmgpu.alloc : memref<16xf32>
    tmgpu.launch @alias(%buf, %flat, %y) grid(1) block(16) : memref<2x8xf32>, memref<16xf32>, memref<16xf32>
    tmgpu.launch @alias(%buf, %other, %y) grid(1) block(16) : memref<2x8xf32>, memref<16xf32>, memref<16xf32>
    func.return
}}
"""

# 1000 FLOPs a thread on 8 bytes: compute-bound.
COMPUTE = """
tmgpu.kernel @spin(%x: memref<1xf32>, %y: memref<1xf32>) block(1) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 1000 : index
    %v = memref.load %x[%c0] : memref<1xf32>
    scf.for %i = %c0 to %n step %c1 {
      %m = arith.mulf %v, %v : f32
    }
    memref.store %v, %y[%c0] : memref<1xf32>
}
func.func @main(%x: memref<1xf32>, %y: memref<1xf32>) {
    tmgpu.launch @spin(%x, %y) grid(1) block(1) : memref<1xf32>, memref<1xf32>
    func.return
}
"""

DYNAMIC = """
tmgpu.kernel @dynamic(%x: memref<8xf32>) block(8) {
    %tid = tmgpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %tid step %c1 {
      %v = memref.load %x[%i] : memref<8xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %x[%i] : memref<8xf32>
    }
}
func.func @main(%x: memref<8xf32>) {
    tmgpu.launch @dynamic(%x) grid(1) block(8) : memref<8xf32>
    func.return
}
"""

GRAPH = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def report(text: str) -> ModelCost:
    return cost_report(parse(text))


def test_loop_nest_counts_trip_counts_times_threads() -> None:
    (launch,) = report(LOOPS).launches
    assert (launch.kernel, launch.template, launch.grid, launch.block) == ("loops", "hand", 2, 16)
    assert launch.flops == 27 * 2 * 16
    assert (launch.bytes_read, launch.bytes_written) == (16 * 8 * 4, 16 * 4)


def test_if_counts_the_larger_branch() -> None:
    (launch,) = report(BRANCHES).launches
    assert launch.template == "hand-written"
    assert launch.flops == 7 * 3 * 32
    assert (launch.bytes_read, launch.bytes_written) == (96 * 4, 96 * 4)


def test_bytes_count_each_touched_argument_once_by_element_size() -> None:
    (launch,) = report(BYTES).launches
    assert launch.flops == 0
    assert launch.bytes_read == 32 + 4 + 16
    assert launch.bytes_written == 16 + 12


# A gather: 8 threads each read one row of 4 from a 1000-row table, at an index they load.
GATHER = f"""
tmgpu.kernel @gather(%table: memref<1000x4xf32>, %ids: memref<8xi64>, %out: memref<8x4xf32>) block(8) {{
    %tid = tmgpu.thread_id x
    {CONSTANTS}
    %c4 = arith.constant 4 : index
    %id = memref.load %ids[%tid] : memref<8xi64>
    %row = arith.index_cast %id : i64 to index
    scf.for %j = %c0 to %c4 step %c1 {{
      %v = memref.load %table[%row, %j] : memref<1000x4xf32>
      memref.store %v, %out[%tid, %j] : memref<8x4xf32>
    }}
}}
func.func @main(%t: memref<1000x4xf32>, %i: memref<8xi64>, %o: memref<8x4xf32>) {{
    tmgpu.launch @gather(%t, %i, %o) grid(1) block(8) : memref<1000x4xf32>, memref<8xi64>, memref<8x4xf32>
    func.return
}}
"""


def test_a_gather_counts_the_rows_it_reads_not_the_table() -> None:
    (launch,) = report(GATHER).launches
    assert launch.bytes_read == 8 * 4 * 4 + 8 * 8  # 8 rows of 4 floats, 8 ids
    assert launch.bytes_written == 8 * 4 * 4


def test_a_view_of_the_same_buffer_counts_once_per_launch() -> None:
    cost = report(ALIAS)
    assert cost.kernels == 1
    first, second = cost.launches
    assert (first.bytes_read, first.bytes_written) == (64, 64)
    assert (second.bytes_read, second.bytes_written) == (128, 64)
    assert first.flops == second.flops == 16
    assert (cost.flops, cost.bytes_read, cost.bytes_written) == (32, 192, 128)


def test_roofline_time_and_bound() -> None:
    (memory,) = report(LOOPS).launches
    assert memory.bound == "memory"
    assert memory.seconds == pytest.approx((512 + 64) / PEAK_HBM_BYTES_PER_S)
    assert memory.intensity == pytest.approx(864 / 576)
    (compute,) = report(COMPUTE).launches
    assert (compute.flops, compute.bytes_read, compute.bytes_written) == (1000, 4, 4)
    assert compute.bound == "compute"
    assert compute.seconds == pytest.approx(1000 / PEAK_FP32_FLOPS)
    cost = report(ALIAS)
    assert cost.seconds == pytest.approx(sum(k.seconds for k in cost.launches))


def test_table_and_json() -> None:
    cost = report(ALIAS)
    lines = format_table(cost).splitlines()
    assert lines[0].startswith("# H100: 132 SMs, 67 TFLOP/s FP32, 989.4 f16/bf16 and 494.7 tf32 on tensor "
                               "cores, 3.35 TB/s HBM")
    assert lines[1].split() == ["kernel", "template", "grid", "x", "block", "MFLOP", "KiB", "read",
                                "KiB", "written", "roofline", "µs", "bound", "estimate", "µs", "limit"]
    assert lines[2].split() == ["alias", "hand-written", "1", "x", "16", "0.000", "0.06", "0.06",
                                "0.000", "memory", "2.800", "latency"]
    assert len(lines) == 5
    assert lines[4].startswith("total: 2 launches, 1 kernel, 0.000 MFLOP, 0.19 KiB read, "
                               "0.12 KiB written, ")
    data = json.loads(json.dumps(cost.to_json()))
    assert (data["launches"], data["kernels"], data["flops"]) == (2, 1, 32)
    assert (data["bytes_read"], data["bytes_written"]) == (192, 128)
    assert data["per_launch"][1]["bytes_read"] == 128
    assert data["roofline_us"] == pytest.approx(cost.seconds * 1e6)
    assert data["estimate_us"] == pytest.approx(cost.estimate_seconds * 1e6) == pytest.approx(5.6)
    assert data["per_launch"][0]["estimate_us"] == pytest.approx(2.8)
    assert "launch" not in data["per_launch"][0]


def test_estimates_on_a_named_gpu() -> None:
    """The same module on an H200: its HBM3e (4.8 TB/s) lowers the memory roofline; the
    latency-bound estimates stay (one DRAM round trip and a launch each)."""
    h100, h200 = report(LOOPS), cost_report(parse(LOOPS), "H200")
    assert h200.gpu.name == "H200" and h100.gpu.name == "H100"
    assert h200.seconds == pytest.approx(h100.seconds * 3.35 / 4.8)
    assert h200.estimate_seconds == pytest.approx(h100.estimate_seconds)
    assert h200.to_json()["device"] == "H200"
    with pytest.raises(ValueError, match=r"unknown GPU 'X1' \(known: A100, H100, H200\)"):
        cost_report(parse(LOOPS), "X1")


def test_gpu_option() -> None:
    assert CostTarget(gpu="h200").gpu == "h200"
    with pytest.raises(CostError, match=r"-t cost: unknown GPU 'B300'"):
        CostTarget(gpu="B300")

def test_non_constant_loop_bound_is_an_error_naming_the_kernel() -> None:
    with pytest.raises(CostError, match=r"kernel @dynamic: the upper bound of an scf.for is not a constant"):
        report(DYNAMIC)


def test_graph_level_ir_is_refused() -> None:
    with pytest.raises(CostError, match=r"'graph.relu' is above the gpu level; run -p lower-to-cuda first"):
        report(GRAPH)


def test_bad_format_option() -> None:
    assert CostTarget(format="json").format == "json"
    with pytest.raises(CostError, match="format must be one of table, json, got 'xml'"):
        CostTarget(format="xml")


def run_tm_opt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = tm_opt(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize(("text", "target", "message"), [
    (LOOPS, "cost{format=xml}", "-t cost: format must be one of table, json, got 'xml'"),
    (DYNAMIC, "cost", "kernel @dynamic: the upper bound of an scf.for is not a constant"),
])
def test_tm_opt_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    text: str, target: str, message: str) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(text)
    status, out, err = run_tm_opt(capsys, str(source), "-t", target)
    assert status == 1
    assert out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(f"tm-opt: error: {message}")


def test_tm_opt_names_the_op_above_the_gpu_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(GRAPH)
    status, out, err = run_tm_opt(capsys, str(source), "-t", "cost")
    line = next(n for n, text in enumerate(GRAPH.splitlines(), 1) if "graph.relu" in text)
    assert (status, out) == (1, "")
    first, shown, caret = err.splitlines()
    assert first == (f"tm-opt: error: {source}:{line}:3: 'graph.relu' is above the gpu level; "
                     "run -p lower-to-cuda first")
    assert shown.strip().startswith("%") and "graph.relu" in shown and caret.strip() == "^"


def test_tm_opt_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(BYTES)
    status, out, _ = run_tm_opt(capsys, str(source), "-t", "cost{format=json}")
    assert status == 0
    data = json.loads(out)
    assert (data["bytes_read"], data["bytes_written"], data["flops"]) == (52, 28, 0)


def lowered_matmul_relu(m: int, n: int, k: int, arch: str = "sm_90", defaults: str = "model") -> ModuleOp:
    """y = relu(a @ b) with a weight b, lowered as ``InferenceSession`` compiles it for `arch`
    (`defaults`: ``schedule-defaults``)."""
    from tmlir.frontends.onnx import import_onnx
    from tmlir.passes.lower_to_cuda import LowerToCuda

    rng = np.random.default_rng(0)
    model = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        {"a": (m, k)}, {"y": (m, n)}, {"b": rng.standard_normal((k, n))},
    )
    imported = import_onnx(model)
    LowerToCuda(target_arch=arch, schedule_defaults=defaults).apply(make_context(weights=imported.weights),
                                                                   imported.module)
    return imported.module


def test_lowered_matmul_counts_its_flops_and_compulsory_bytes() -> None:
    m = n = k = 64
    cost = cost_report(lowered_matmul_relu(m, n, k))
    (launch,) = cost.launches  # the relu is fused into the matmul's epilogue
    assert launch.template == "matmul_simt"
    # Every multiply-add of the tiles, padded tiles included (a small factor at most):
    assert 2 * m * n * k <= launch.flops <= 1.5 * 2 * m * n * k
    assert launch.bytes_read == (m * k + k * n) * 4
    assert launch.bytes_written == m * n * 4
    assert cost.kernels == 1


def test_lowered_matmul_estimate_walks_its_k_loop() -> None:
    """The SIMT matmul's header gives the latency model its k-loop: ceil(K / block_k) steps,
    register prefetch (sm_75: one step in flight); ptxas' registers replace the estimate.
    From sm_80 the cp.async pipeline keeps stages - 1 steps in flight; the model's default
    is faster than the register-path default before it (``schedule-defaults=legacy``)."""
    from tmlir.backends.cost import ptxas_registers
    from tmlir.schedules.kloops import kloop

    pipelined = lowered_matmul_relu(64, 64, 256)
    (deep,) = cost_report(pipelined, "H200").launches
    header = _header(pipelined)
    assert deep.launch is not None and deep.launch.loop == kloop("matmul_simt", header)
    assert int(header["stages"]) >= 2 and deep.launch.loop.depth == int(header["stages"]) - 1
    assert (header["copy_a"], header["copy_b"]) == ("cp4", "cp16")
    module = lowered_matmul_relu(64, 64, 256, "sm_75")
    (launch,) = cost_report(module, "H200").launches
    assert launch.launch is not None and launch.launch.loop is not None
    params = launch.launch.loop
    assert params == kloop("matmul_simt", _header(module))
    split = int(_header(module).get("split_k", 1))  # the model's default may split K
    assert params.steps == math.ceil(256 // int(_header(module)["block_k"]) / split) and params.depth == 1
    assert launch.limit in ("latency", "issue")
    # A handful of k-steps of ~0.5-0.8 us each (and split-K's tail) plus a launch:
    # microseconds, far above the roofline.
    assert 2e-6 + params.steps * 0.4e-6 < launch.estimate_seconds \
        < 2e-6 + (params.steps + 2 + params.tail_round_trips) * 1e-6
    assert launch.estimate_seconds > 10 * launch.seconds
    (legacy,) = cost_report(lowered_matmul_relu(64, 64, 256, defaults="legacy"), "H200").launches
    assert deep.estimate_seconds < legacy.estimate_seconds
    registers = ptxas_registers(module, "sm_90")
    (measured,) = cost_report(module, "H200", registers).launches
    assert measured.registers == registers[launch.kernel] != 0


def _header(module: ModuleOp) -> dict[str, int | str]:
    from tmlir.backends.kernel_counts import header_params
    from tmlir.dialects import tmgpu

    (kernel,) = [op for op in module.ops if isinstance(op, tmgpu.KernelOp)]
    return header_params(kernel)


def _lowered_graph(text: str, arch: str = "sm_90") -> ModuleOp:
    from tmlir.passes.lower_to_cuda import LowerToCuda

    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    LowerToCuda(target_arch=arch).apply(ctx, module)
    return module


F16_MATMUL = """
func.func @mm(%x: tensor<128x64xf16>, %w: tensor<64x96xf16>, %b: tensor<96xf32>) -> tensor<128x96xf32> {
  %y = graph.matmul %x, %w, %b : (tensor<128x64xf16>, tensor<64x96xf16>, tensor<96xf32>) -> tensor<128x96xf32>
  func.return %y : tensor<128x96xf32>
}
"""


def test_tensor_core_matmul_counts_mma_flops_and_cp_async_reads() -> None:
    """Every mma is a warp's 2*16*8*16 FLOPs (on tensor cores, at their peak), the
    cp.async copies read A and B once; the SIMT build of the same op reads the same bytes
    and does the same products on CUDA cores."""
    (launch,) = cost_report(_lowered_graph(F16_MATMUL)).launches
    assert launch.template == "matmul_tc"
    # 128 x 96 padded to 128 x 128 tiles: the mmas of the padding count too (an upper bound).
    padded = 2 * 128 * 128 * 64
    assert launch.tensor_flops == padded
    assert launch.flops == padded + 128 * 128  # and one bias add per (padded) output
    assert launch.bytes_read == 128 * 64 * 2 + 64 * 96 * 2 + 96 * 4
    assert launch.bytes_written == 128 * 96 * 4
    (simt,) = cost_report(_lowered_graph(F16_MATMUL, "sm_75")).launches
    assert simt.template == "matmul_simt" and simt.tensor_flops == 0
    assert simt.bytes_read == launch.bytes_read
    assert launch.seconds < simt.seconds  # tensor cores: 989 TFLOP/s against 67
