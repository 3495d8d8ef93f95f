"""Sizes past 32 bits: 64-bit index arithmetic per kernel and grids within CUDA's limits.

A kernel whose index values may pass 2^31 - 1 computes them in ``long long``; every other
kernel keeps ``int`` and its CUDA C is unchanged. A kernel with more blocks than a launch
may have loops over its blocks (grid-stride); forced on small shapes with
``convert-tm-to-gpu{max-grid=...}``, such kernels run on emu and match numpy.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from models import typed_model
from onnx import helper

from tmlir.backends import ptx
from tmlir.backends.cuda_c import CudaProgram, emit_cuda
from tmlir.frontends.onnx import import_onnx
from tmlir.gpu_limits import GRID_STRIDE_BLOCKS, MAX_GRID_X
from tmlir.ir.index_width import INT_MAX
from tmlir.passes.convert_tm_to_gpu import ConvertTmToGpu
from tmlir.passes.lower_to_cuda import pipeline
from tmlir.registry import make_context

needs_nvrtc = pytest.mark.skipif(ptx.nvrtc_version() is None, reason="NVRTC does not load")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TMLIR_COMPILE_CACHE", "0")


def compile_program(model: onnx.ModelProto, max_grid: int = MAX_GRID_X
                    ) -> tuple[CudaProgram, dict[str, np.ndarray]]:
    """`model` through ``lower-to-cuda`` with ``convert-tm-to-gpu{max-grid=max_grid}``."""
    imported = import_onnx(model)
    passes = [ConvertTmToGpu(max_grid) if isinstance(p, ConvertTmToGpu) else p for p in pipeline()]
    ctx = make_context(weights=imported.weights)
    for p in passes:
        p.apply(ctx, imported.module)
    return emit_cuda(imported.module), imported.weights


def slice_last_row(rows: int, cols: int, dtype=np.uint8) -> onnx.ModelProto:
    """``x[rows-1:rows, :]`` of an input ``x`` of shape ``[rows, cols]``."""
    i64 = np.int64
    return typed_model([helper.make_node("Slice", ["x", "s", "e", "a"], ["y"])],
                       {"x": (dtype, (rows, cols))}, {"y": dtype},
                       {"s": np.array([rows - 1], i64), "e": np.array([rows], i64),
                        "a": np.array([0], i64)})


SMALL_SLICE = """\
// Kernel slice_0: schedule template 'data_movement' (op=slice, starts=2,0, steps=1,1, block=256), 256 threads per block
extern "C" __global__ void __launch_bounds__(256) slice_0(const unsigned char* __restrict__ x, unsigned char* __restrict__ out) {
  const int bid = blockIdx.x;
  const int tid = threadIdx.x;
  const int gid = (bid * 256) + tid;
  if (gid < 1000) {
    const int i1 = gid % 1000;
    const unsigned char v = x[2 * 1000 + i1];
    out[i1] = v;
  }
}
"""  # noqa: E501
"""The kernel as the compiler printed it before 64-bit indexing existed (byte for byte)."""


def test_small_kernel_keeps_int() -> None:
    program, _ = compile_program(slice_last_row(3, 1000))
    assert program.kernel("slice_0").source == SMALL_SLICE
    assert "long long" not in program.source


@needs_nvrtc
def test_slice_of_3e9_elements_indexes_in_64_bits() -> None:
    program, _ = compile_program(slice_last_row(3, 1_000_000_000))
    source = program.kernel("slice_0").source
    assert "64-bit indices" in source
    assert "const long long gid = (bid * 256) + tid;" in source
    assert "x[2000000000 + i1]" in source  # the constant row offset folded: no int * int
    assert not re.search(r"\bint\b", source.split("\n", 1)[1])
    assert program.launches[0].grid == 3_906_250
    ptx.compile_ptx(source, "sm_80")


def huge_model(op: str, shape: tuple[int, ...]) -> onnx.ModelProto:
    if op == "MatMul":
        m, k, n = shape
        return typed_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                           {"a": (np.float32, (m, k)), "b": (np.float32, (k, n))}, {"y": np.float32})
    return typed_model([helper.make_node(op, ["x"], ["y"])], {"x": (np.float32, shape)}, {"y": np.float32})


@needs_nvrtc
@pytest.mark.parametrize("op, shape, blocks", [
    ("Relu", (10**12,), 3_906_250_000),
    ("MatMul", (10**7, 64, 10**7), None),  # the default's tiles (~6e9 of them), barriers in the loop body
])
def test_grid_beyond_the_limit_is_capped_with_a_grid_stride_loop(op: str, shape, blocks: int | None) -> None:
    if blocks is None:
        from tmlir.schedules.matmul_simt import MatmulProblem
        from tmlir.schedules.model_choice import default_of

        m, k, n = shape
        problem = MatmulProblem.plain(m, n, k)
        blocks = default_of("matmul_simt", problem, "f32", "sm_90").blocks(problem)
        assert blocks > MAX_GRID_X
    program, _ = compile_program(huge_model(op, shape))
    (launch,) = program.launches
    assert launch.grid == GRID_STRIDE_BLOCKS <= MAX_GRID_X
    source = program.kernel(launch.kernel).source
    assert f"for (long long bid = first_block; bid < {blocks}LL; bid += grid_blocks) {{" in source
    assert "const long long grid_blocks = gridDim.x;" in source
    ptx.compile_ptx(source, "sm_80")


def test_index_arithmetic_beyond_int_is_wide() -> None:
    """Every buffer is small enough, but the threads (grid * block) pass INT_MAX: a thread id
    would overflow, so the kernel is wide."""
    from xdsl.dialects.builtin import MemRefType, f32

    from tmlir.dialects import tm
    from tmlir.ir.builder import IRBuilder
    from tmlir.ir.index_width import largest_index, needs_wide_index

    kernel = tm.KernelOp("k", [MemRefType(f32, [16])], grid=2**23, block=256)
    b = IRBuilder.at_end(kernel.body.block)
    gid = b.add(b.mul(b.insert(tm.BlockIdOp()).results[0], 256), b.insert(tm.ThreadIdOp()).results[0])
    b.rem(gid, 16)
    assert largest_index(kernel, 2**23 * 256) == 2**31 - 1 == INT_MAX
    assert not needs_wide_index(kernel, 2**23, 256)
    assert needs_wide_index(kernel, 2**23 + 1, 256)


def test_magnitude_bounds_follow_the_arithmetic() -> None:
    """Bounds of |v| through constants, worker ids, loops, + - * / %, selects and extrema;
    a value read from memory has none (and neither has what is computed from it)."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType, MemRefType, i1

    from tmlir.dialects import tm
    from tmlir.ir.builder import IRBuilder
    from tmlir.ir.index_width import magnitude_bounds

    kernel = tm.KernelOp("k", [MemRefType(IndexType(), [8]), MemRefType(i1, [1])], grid=10, block=32)
    data, flags = kernel.body.block.args
    b = IRBuilder.at_end(kernel.body.block)
    bid, tid = b.insert(tm.BlockIdOp()).results[0], b.insert(tm.ThreadIdOp()).results[0]
    diff = b.insert(arith.SubiOp(tid, bid)).results[0]  # in (-10, 32)
    flag = b.load(flags, [b.value(0)])
    pick = b.insert(arith.SelectOp(flag, diff, b.value(-100))).results[0]
    high = b.insert(arith.MaxSIOp(bid, tid)).results[0]
    read = b.insert(tm.LoadOp(data, [tid])).results[0]
    with b.loop(0, b.mul(bid, 1000)) as i:
        inner = b.add(b.rem(i, 7), b.div(b.mul(i, 3), tid))
        wild = b.add(read, i)
    bounds = magnitude_bounds(kernel)
    assert (bounds[bid], bounds[tid], bounds[diff], bounds[pick], bounds[high]) == (10, 32, 41, 101, 32)
    assert bounds[i] == 9001 and bounds[inner] == 8 + 27001 - 1  # % 7 < |7| + 1, conservatively
    assert read not in bounds and wild not in bounds


# ---- grid-stride kernels on emu, forced on small shapes ----------------------------------

def _run_emu(program: CudaProgram, weights: dict[str, np.ndarray], feed: dict[str, np.ndarray]
             ) -> list[np.ndarray]:
    from tmlir.backends.emu import compile_emu
    from tmlir.runtime.memory_plan import plan_memory
    from tmlir.runtime.runners import EmuRunner

    module = compile_emu(program.source, [k.signature for k in program.kernels])
    runner = EmuRunner(program, weights, module, plan_memory(program))
    inputs = {i: feed[b.source] for i, b in enumerate(program.buffers) if b.kind == "input"}
    outputs = runner.run(inputs)
    module.close()
    return [outputs[i] for i in sorted(outputs)]


def _cases():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 700)).astype(np.float32), rng.standard_normal(700).astype(np.float32)
    yield "add", typed_model([helper.make_node("Add", ["a", "b"], ["y"])],
                             {"a": (np.float32, a.shape), "b": (np.float32, b.shape)}, {"y": np.float32}), \
        {"a": a, "b": b}, a + b
    x = rng.standard_normal((9, 2000)).astype(np.float32)  # partial sums in shared memory.astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    yield "softmax", typed_model([helper.make_node("Softmax", ["x"], ["y"], axis=1)],
                                 {"x": (np.float32, x.shape)}, {"y": np.float32}), \
        {"x": x}, e / e.sum(axis=1, keepdims=True)
    m, k = rng.standard_normal((70, 24)).astype(np.float32), rng.standard_normal((24, 90)).astype(np.float32)
    yield "matmul", typed_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                                {"a": (np.float32, m.shape), "b": (np.float32, k.shape)}, {"y": np.float32}), \
        {"a": m, "b": k}, m @ k


@pytest.mark.parametrize("name, model, feed, expected", [pytest.param(*c, id=c[0]) for c in _cases()])
def test_grid_stride_kernels_run_on_emu(name: str, model, feed, expected) -> None:
    reference, _ = compile_program(model)
    blocks = reference.launches[0].grid
    assert blocks > 2, f"{name}: needs several blocks to stride over"
    program, weights = compile_program(model, max_grid=2)
    (launch,) = program.launches
    assert launch.grid == 2
    source = program.kernel(launch.kernel).source
    assert f"for (int bid = first_block; bid < {blocks}; bid += grid_blocks) {{" in source
    if name != "add":  # barriers, and one more as the trip's last statement
        assert re.search(r"__syncthreads\(\);\n  }\n}", source)
    (got,) = _run_emu(program, weights, feed)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, model", [pytest.param(c[0], c[1], id=c[0]) for c in _cases()])
def test_cost_report_counts_a_grid_stride_kernels_whole_work(name: str, model) -> None:
    """``-t cost`` of a grid-stride kernel: the same FLOPs and bytes as with a full grid."""
    from tmlir.backends.cost import cost_report

    def cost(max_grid: int):
        imported = import_onnx(model)
        passes = [ConvertTmToGpu(max_grid) if isinstance(p, ConvertTmToGpu) else p for p in pipeline()]
        ctx = make_context(weights=imported.weights)
        for p in passes:
            p.apply(ctx, imported.module)
        (launch,) = cost_report(imported.module).launches
        return launch

    full, strided = cost(MAX_GRID_X), cost(2)
    assert strided.grid == 2 and full.grid > 2
    assert (strided.flops, strided.bytes_read, strided.bytes_written) == \
        (full.flops, full.bytes_read, full.bytes_written)


# ---- sizes past 2^31 for real (slow; nvcc: tests/filecheck/backends/wide_nvcc.mlir) -------------

@pytest.mark.slow
def test_slice_of_3e9_uint8_runs_on_emu() -> None:
    """The last row of a [3, 10^9] uint8 input (3 GB in, 1 GB out), run on emu."""
    from tmlir import InferenceSession

    cols = 1_000_000_000
    x = np.empty((3, cols), np.uint8)
    x[:2] = 7
    x[2] = np.resize(np.arange(251, dtype=np.uint8), cols)  # i % 251: a shifted offset shows
    (y,) = InferenceSession(slice_last_row(3, cols)).run(None, {"x": x})
    assert y.shape == (1, cols)
    np.testing.assert_array_equal(y[0], x[2])
