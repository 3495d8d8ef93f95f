"""float16 and bfloat16 ONNX models on the tensor-core matmul: ``MatMul`` and ``Gemm`` take
the ``matmul_tc`` template (from sm_80), run on emu against float64 numpy at half-precision
tolerance, fuse their epilogue and their prologue (an operand with one is gathered with
tm.load instead of copied), and fall back to the SIMT template where the tensor-core one
does not apply (sm_75, K not a multiple of 8, mixed operand types)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tmlir
from tmlir.runtime.session import compile_model

F16, BF16 = TensorProto.FLOAT16, TensorProto.BFLOAT16
NP = {F16: np.float16, BF16: ml_dtypes.bfloat16}


def model(nodes: list, inputs: list, outputs: list, weights: dict[str, np.ndarray] | None = None) -> bytes:
    graph = helper.make_graph(nodes, "tc", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in (weights or {}).items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(proto)
    return proto.SerializeToString()


def templates(data: bytes, **options: object) -> list[str]:
    program, _ = compile_model(data, **options)  # type: ignore[arg-type]
    return [k.template for k in program.kernels]


def close(got: np.ndarray, want: np.ndarray, k: int) -> None:
    """One half-precision rounding of the output, f32 sums of exact products."""
    scale = np.abs(want).max() + 1e-6
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-3 * scale + 1e-3 * np.sqrt(k))


def linear_relu(dtype: int, m: int = 40, k: int = 64, n: int = 48) -> tuple[bytes, dict, np.ndarray]:
    """relu(x @ w + b) with w, b weights: MatMul, Add, Relu."""
    rng = np.random.default_rng(0)
    half = NP[dtype]
    w = rng.standard_normal((k, n)).astype(half)
    b = rng.standard_normal(n).astype(half)
    x = rng.standard_normal((m, k)).astype(half)
    data = model([helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["s"]),
                  helper.make_node("Relu", ["s"], ["y"])],
                 [helper.make_tensor_value_info("x", dtype, [m, k])],
                 [helper.make_tensor_value_info("y", dtype, [m, n])], {"w": w, "b": b})
    want = np.maximum(x.astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64), 0)
    return data, {"x": x}, want


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_matmul_bias_relu_runs_on_tensor_cores_with_its_epilogue_fused(dtype: int) -> None:
    data, feed, want = linear_relu(dtype)
    assert templates(data) == ["matmul_tc"]  # one kernel: bias and relu in its epilogue
    (got,) = tmlir.InferenceSession(data, device="emu").run(None, feed)
    assert got.dtype == NP[dtype]
    close(got, want, 64)


def test_gemm_with_transposed_b_alpha_beta_and_bias() -> None:
    rng = np.random.default_rng(1)
    m, k, n = 24, 32, 36  # N not a multiple of 8: fine for an N x K weight
    x = rng.standard_normal((m, k)).astype(np.float16)
    w = rng.standard_normal((n, k)).astype(np.float16)
    c = rng.standard_normal((1, n)).astype(np.float16)
    data = model([helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)],
                 [helper.make_tensor_value_info("x", F16, [m, k])],
                 [helper.make_tensor_value_info("y", F16, [m, n])], {"w": w, "c": c})
    assert templates(data) == ["matmul_tc"]
    (got,) = tmlir.InferenceSession(data, device="emu").run(None, {"x": x})
    want = 0.5 * x.astype(np.float64) @ w.astype(np.float64).T + 2.0 * c.astype(np.float64)
    close(got, want, k)


def test_batched_attention_scores_keep_the_transpose_out_of_the_copied_operand() -> None:
    """q @ transpose(k) * scale on 4-D f16 tensors: the transpose fuses as a prologue of B
    (gathered), the scale as the epilogue: one kernel."""
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 3, 16, 32)).astype(np.float16)
    kk = rng.standard_normal((2, 3, 24, 32)).astype(np.float16)
    data = model([helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                  helper.make_node("MatMul", ["q", "kt"], ["s"]),
                  helper.make_node("Mul", ["s", "scale"], ["y"])],
                 [helper.make_tensor_value_info("q", F16, q.shape),
                  helper.make_tensor_value_info("k", F16, kk.shape)],
                 [helper.make_tensor_value_info("y", F16, (2, 3, 16, 24))],
                 {"scale": np.array(0.125, np.float16)})
    assert templates(data) == ["matmul_tc"]
    (got,) = tmlir.InferenceSession(data, device="emu").run(None, {"q": q, "k": kk})
    want = 0.125 * (q.astype(np.float64) @ kk.astype(np.float64).swapaxes(-1, -2))
    close(got, want, 32)


def test_a_prologue_is_gathered_into_the_tensor_core_matmul() -> None:
    """relu(x) feeding the matmul's A fuses as a prologue: the template reads A with
    tm.load (the relu computed per element) instead of cp.async, and B still by cp.async."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((32, 64)).astype(np.float16)
    w = rng.standard_normal((64, 32)).astype(np.float16)
    data = model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("MatMul", ["r", "w"], ["y"])],
                 [helper.make_tensor_value_info("x", F16, x.shape)],
                 [helper.make_tensor_value_info("y", F16, (32, 32))], {"w": w})
    program, _ = compile_model(data)
    assert [k.template for k in program.kernels] == ["matmul_tc"]
    body = program.source.split("schedule template 'matmul_tc'")[1]
    # B's copies (zero-filling: its 32 columns overhang the 64-wide tile): 2 prologue stages and the k-loop's
    assert body.count("tmlir_cp_async_zfill<16>(") == 3 and "tmlir_cp_async<16>(" not in body
    (got,) = tmlir.InferenceSession(data, device="emu").run(None, {"x": x})
    close(got, np.maximum(x.astype(np.float64), 0) @ w.astype(np.float64), 64)


def test_shapes_and_targets_the_template_does_not_take_fall_back_to_simt() -> None:
    data, feed, want = linear_relu(F16, k=60)  # K not a multiple of 8
    assert templates(data) == ["matmul_simt"]
    (got,) = tmlir.InferenceSession(data, device="emu").run(None, feed)
    close(got, want, 60)
    data, _, _ = linear_relu(F16)
    assert templates(data, target_arch="sm_75") == ["matmul_simt"]
    assert templates(data, target_arch="sm_80") == ["matmul_tc"]


def test_inputs_and_weights_at_any_address_are_copied_aligned_on_emu() -> None:
    """cp.async needs 16-byte aligned buffers: emu gives its kernels aligned copies of an
    input view starting 2 bytes into an array (the GPU runtime copies inputs anyway)."""
    data, feed, want = linear_relu(F16)
    raw = np.zeros(feed["x"].size + 1, np.float16)
    x = raw[1:].reshape(feed["x"].shape)
    x[...] = feed["x"]
    assert x.ctypes.data % 16 != 0
    (got,) = tmlir.InferenceSession(data, device="emu").run(None, {"x": x})
    close(got, want, 64)


def relu_conv(dtype: int) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """conv(relu(x), w) + b, 3x3, pad 1: 16 -> 24 channels."""
    rng = np.random.default_rng(4)
    kind = NP.get(dtype, np.float32)
    x = rng.standard_normal((2, 16, 7, 9)).astype(kind)
    w = (rng.standard_normal((24, 16, 3, 3)) * 0.3).astype(kind)
    b = rng.standard_normal(24).astype(kind)
    data = model([helper.make_node("Relu", ["x"], ["r"]),
                  helper.make_node("Conv", ["r", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
                 [helper.make_tensor_value_info("x", dtype, x.shape)],
                 [helper.make_tensor_value_info("y", dtype, (2, 24, 7, 9))], {"w": w, "b": b})
    return data, x, w, b


def conv_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """conv(relu(x), w) + b in float64: 3x3, stride 1, pad 1."""
    padded = np.pad(np.maximum(x.astype(np.float64), 0), ((0, 0), (0, 0), (1, 1), (1, 1)))
    h, wd = x.shape[2:]
    y = sum(np.einsum("nchw,oc->nohw", padded[:, :, i:i + h, j:j + wd], w[:, :, i, j].astype(np.float64))
            for i in range(3) for j in range(3))
    return y + b.astype(np.float64)[None, :, None, None]


def test_f16_conv_runs_on_tensor_cores_with_a_relu_prologue_fused() -> None:
    data, x, w, b = relu_conv(F16)
    assert templates(data) == ["conv2d_tc"]  # the relu is read through the gathered input
    assert templates(data, target_arch="sm_75") == ["conv2d_implicit_gemm"]
    (got,) = tmlir.InferenceSession(data, device="emu").run(None, {"x": x})
    close(got, conv_reference(x, w, b), 16 * 9)


def test_float32_conv_opts_in_to_fp16() -> None:
    data, x, w, b = relu_conv(TensorProto.FLOAT)
    assert templates(data) == ["conv2d_implicit_gemm"]
    program, weights = compile_model(data, precision="fp16")
    assert [k.template for k in program.kernels] == ["conv2d_tc"]  # relu and the cast read in its gather
    assert {(b.source, b.dtype) for b in program.buffers if b.kind == "weight"} == {("w.f16", "float16"),
                                                                                 ("b", "float32")}
    (got,) = tmlir.InferenceSession(data, device="emu", precision="fp16").run(None, {"x": x})
    want = conv_reference(x.astype(np.float16), w.astype(np.float16), b)
    close(got, want, 16 * 9)
