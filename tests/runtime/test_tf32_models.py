"""Opt-in TF32 for float32 models: ``graph-mixed-precision{dtype=tf32}`` marks the f32
matmuls the tensor-core template takes (unit attribute ``tf32``) instead of converting
anything; ``precision="tf32"`` (InferenceSession, ``lower-to-cuda``, ``tm-run``) then runs
them on ``matmul_tc`` with TF32 mma, weights staying float32, matching float64 numpy at
TF32 tolerance on emu; an unmarked f32 matmul stays SIMT; shapes the template does not
take, convolutions and sm_75 are left unmarked; the tuner names the kernel ``tf32``."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from models import make_model
from onnx import helper

import tmlir
from tmlir.gpu_limits import max_shared_bytes
from tmlir.passes.graph_mixed_precision import GraphMixedPrecision
from tmlir.registry import make_context
from tmlir.runtime.ir_program import parse_ir
from tmlir.runtime.session import compile_model
from tmlir.schedules.tc_gemm import TC_TF32
from tmlir.schedules.templates import TF32_ATTR, tunable_problem
from tmlir.tools.tm_run import main as tm_run

M, K, N = 40, 64, 44  # N a multiple of 4, not of 8: f32 rows copy in 4-float chunks
RNG = np.random.default_rng(0)
W = RNG.standard_normal((K, N)).astype(np.float32)
B = RNG.standard_normal(N).astype(np.float32)
X = RNG.standard_normal((M, K)).astype(np.float32)
TF32_RTOL = 2e-3  # of the output's largest magnitude: operands keep 10 mantissa bits


def matmul_add_relu(k: int = K) -> onnx.ModelProto:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    return make_model(nodes, {"x": (M, k)}, {"y": (M, N)}, {"w": W[:k].copy(), "b": B})


def assert_tf32_close(got: np.ndarray, want: np.ndarray) -> None:
    scale = float(np.abs(want).max())
    assert got.dtype == np.float32 and got.shape == want.shape
    assert float(np.abs(got - want).max()) <= TF32_RTOL * scale


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TMLIR_COMPILE_CACHE", raising=False)


IR = f"""func.func @main(%x: tensor<{M}x{K}xf32>, %x2: tensor<{M}x62xf32>, %i: tensor<1x4x8x8xf32>,
    %f: tensor<8x4x3x3xf32>) -> (tensor<{M}x{N}xf32>, tensor<{M}x{N}xf32>, tensor<1x8x6x6xf32>) {{
  %w = graph.weight "w" : tensor<{K}x{N}xf32>
  %y = graph.matmul %x, %w : (tensor<{M}x{K}xf32>, tensor<{K}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %w2 = graph.weight "w2" : tensor<62x{N}xf32>
  %z = graph.matmul %x2, %w2 : (tensor<{M}x62xf32>, tensor<62x{N}xf32>) -> tensor<{M}x{N}xf32>
  %c = graph.conv %i, %f {{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>,
    dilations = array<i64: 1, 1>, group = 1 : i64}} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return %y, %z, %c : tensor<{M}x{N}xf32>, tensor<{M}x{N}xf32>, tensor<1x8x6x6xf32>
}}
"""


def marked(arch: str = "sm_90") -> list[str]:
    """The ops of `IR` that ``graph-mixed-precision{dtype=tf32}`` marks, and what it leaves."""
    table = {"w": W, "w2": np.zeros((62, N), np.float32)}
    module = parse_ir(IR.encode(), "tf32.mlir")
    GraphMixedPrecision("tf32", arch).apply(make_context(weights=table), module)
    module.verify()
    assert sorted(table) == ["w", "w2"]  # nothing converted
    return [f"{op.name} {TF32_ATTR in op.attributes}" for op in module.walk()
            if op.name in ("graph.matmul", "graph.conv")]


def test_the_pass_marks_the_f32_matmuls_the_template_takes():
    assert marked() == ["graph.matmul True", "graph.matmul False", "graph.conv True"]  # K = 62: no
    assert marked("sm_75") == ["graph.matmul False"] * 2 + ["graph.conv False"]
    module = parse_ir(IR.encode(), "tf32.mlir")
    GraphMixedPrecision("tf32").apply(make_context(weights={"w": W}), module)
    first = next(op for op in module.walk() if op.name == "graph.matmul")
    assert "{tf32}" in str(first)  # printed, so the opt-in survives a round trip through text
    assert tunable_problem(first)[0] == "matmul_tc"  # type: ignore[index]
    del first.attributes[TF32_ATTR]
    assert tunable_problem(first)[0] == "matmul_simt"  # type: ignore[index]


def test_tf32_session_runs_matmul_tc_with_float32_weights(cache):
    fp32 = tmlir.InferenceSession(matmul_add_relu())
    tf32 = tmlir.InferenceSession(matmul_add_relu(), precision="tf32")
    assert [k.template for k in tf32.program.kernels] == ["matmul_tc"]  # bias and relu fused
    assert [k.template for k in fp32.program.kernels] == ["matmul_simt"]
    assert "tmlir_mma_m16n8k8_tf32" in tf32.program.source
    assert {b.source: b.dtype for b in tf32.program.buffers if b.kind == "weight"} == \
        {"w": "float32", "b": "float32"}
    want = np.maximum(X.astype(np.float64) @ W.astype(np.float64) + B, 0.0)
    (y,) = tf32.run(None, {"x": X})
    assert_tf32_close(y, want)
    (y32,) = fp32.run(None, {"x": X})
    assert not np.array_equal(y, y32)  # TF32 rounding, not float32


def test_gemm_trans_b_alpha_beta_in_tf32(cache):
    w = RNG.standard_normal((N, K)).astype(np.float32)
    c = RNG.standard_normal((1, N)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)]
    session = tmlir.InferenceSession(make_model(nodes, {"x": (M, K)}, {"y": (M, N)}, {"w": w, "c": c}),
                                     precision="tf32")
    assert [k.template for k in session.program.kernels] == ["matmul_tc"]
    (y,) = session.run(None, {"x": X})
    assert_tf32_close(y, 0.5 * X.astype(np.float64) @ w.astype(np.float64).T + 2.0 * c)


def test_shapes_the_template_does_not_take_stay_simt(cache):
    program, _ = compile_model(matmul_add_relu(k=62), precision="tf32")  # K not a multiple of 4
    assert [k.template for k in program.kernels] == ["matmul_simt"]
    program, _ = compile_model(matmul_add_relu(), precision="tf32", target_arch="sm_75")
    assert [k.template for k in program.kernels] == ["matmul_simt"]


def test_tf32_convolution_with_a_relu_prologue(cache):
    """conv(relu(x)) + b in f32 with precision tf32: one conv2d_tc kernel (the relu read
    through its gathered input), float32 weights, TF32 accuracy."""
    x = RNG.standard_normal((2, 16, 7, 9)).astype(np.float32)
    w = (RNG.standard_normal((24, 16, 3, 3)) * 0.3).astype(np.float32)
    b = RNG.standard_normal(24).astype(np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Conv", ["r", "w", "b"], ["y"], pads=[1, 1, 1, 1])]
    model = make_model(nodes, {"x": x.shape}, {"y": (2, 24, 7, 9)}, {"w": w, "b": b})
    session = tmlir.InferenceSession(model, precision="tf32")
    assert [k.template for k in session.program.kernels] == ["conv2d_tc"]
    assert "tmlir_mma_m16n8k8_tf32" in session.program.source
    assert {b.dtype for b in session.program.buffers if b.kind == "weight"} == {"float32"}
    padded = np.pad(np.maximum(x.astype(np.float64), 0), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = sum(np.einsum("nchw,oc->nohw", padded[:, :, i:i + 7, j:j + 9], w[:, :, i, j].astype(np.float64))
               for i in range(3) for j in range(3)) + b[None, :, None, None]
    (y,) = session.run(None, {"x": x})
    assert_tf32_close(y, want)


def test_tm_run_and_the_tuner_take_tf32(tmp_path, capsys, cache):
    path = tmp_path / "mm.onnx"
    onnx.save(matmul_add_relu(), path)
    assert tm_run([str(path), "--precision", "tf32", "--check", "--rtol", "1e-2", "--atol", "1e-2"]) == 0
    assert "check: ok" in capsys.readouterr().out
    from tmlir.tuning.model import model_kernels

    (kernel,) = model_kernels(str(path), precision="tf32")
    assert kernel.kernel.signature.startswith("matmul_tc(") and kernel.kernel.signature.endswith("; tf32)")
    assert kernel.kernel.space.template == "matmul_tc" and kernel.kernel.candidates()
    limit = max_shared_bytes(kernel.kernel.arch)  # the arch's opt-in shared memory per block
    assert all(c.params.shared_bytes(kernel.kernel.gemm, TC_TF32) <= limit for c in kernel.kernel.candidates())
