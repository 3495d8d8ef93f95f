"""Half-precision activations between kernels (docs/fusion.md, "Narrow copies").

With ``precision="fp16"`` (``"bf16"``) a float32 model's layer norm that feeds a
tensor-core matmul and a residual add writes the 16-bit copy the matmul reads beside the
f32 value the add reads (``graph-partition``'s narrow copy): the matmul has no prologue
and copies A by ``cp.async``. A float16 model whose layer norm and softmax run in float32
between casts (as exporters write them) keeps every value between kernels in float16. On
emu: within half-precision tolerance of float64, and the fused compile equals the
unfused one exactly (the same roundings of the same values)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from models import post_ln_block, upcast_attention_block

import tmlir
from tmlir.runtime.session import compile_model

M, D = 32, 64
RNG = np.random.default_rng(1)
X = RNG.standard_normal((M, D)).astype(np.float32)
#: Of the output's scale: operands rounded to 11 (f16) or 8 (bf16) significant bits.
RTOL = {"fp16": 2e-3, "bf16": 1.5e-2}
#: The C type and IR name of the 16-bit element of each precision.
HALF = {"fp16": ("tm_half", "f16"), "bf16": ("tm_bf16", "bf16")}


def layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * scale + bias


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())


def headers(source: str) -> list[str]:
    """The kernel's header comment lines and its signature."""
    return [line for line in source.splitlines() if line.startswith("// Kernel") or line.startswith("//   fused")
            or "__global__" in line]


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_layer_norm_writes_the_copy_the_matmul_reads(precision: str) -> None:
    model, w = post_ln_block(M, D)
    program, _ = compile_model(model, precision=precision)
    norm, matmul = program.kernels
    assert (norm.template, matmul.template) == ("reduce", "matmul_tc")
    half, element = HALF[precision]
    # The layer norm's kernel writes h (f32, for the residual add) and its 16-bit copy.
    norm_lines = headers(norm.source)
    assert norm_lines[1] == "//   fused epilogue: cast", norm_lines
    assert re.search(rf"float\* __restrict__ out, {half}\* __restrict__ h_{element}\)", norm_lines[2]), norm_lines
    # The matmul reads the copy as stored, A by cp.async, and h in its epilogue.
    matmul_lines = headers(matmul.source)
    assert matmul_lines[1] == "//   fused epilogue: add, add", matmul_lines
    assert f"(const {half}* __restrict__ A, const {half}* __restrict__ B, " in matmul_lines[2]
    assert re.search(r"tmlir_cp_async(_zfill)?<16>\([^;]*&A\[", matmul.source)
    assert len(program.launches) == len(compile_model(model)[0].launches) == 2

    (got,) = tmlir.InferenceSession(model, device="emu", precision=precision).run(None, {"x": X})
    h = layer_norm(X, w["scale"], w["bias"])
    assert relative_error(got, h @ w["w"] + w["b"] + h) < RTOL[precision]
    (unfused,) = tmlir.InferenceSession(model, device="emu", precision=precision, fusion=False).run(None, {"x": X})
    np.testing.assert_array_equal(got, unfused)


def upcast_reference(x: np.ndarray, w: dict[str, np.ndarray]) -> np.ndarray:
    """`upcast_attention_block` in float64, rounded to float16 where the model stores it."""
    def f16(v: np.ndarray) -> np.ndarray:
        return v.astype(np.float16).astype(np.float64)

    h = f16(layer_norm(x, w["scale"], w["bias"]))
    s = h @ w["wq"].astype(np.float64)
    e = np.exp(s - s.max(-1, keepdims=True))
    p = f16(e / e.sum(-1, keepdims=True))
    return p @ w["wv"].astype(np.float64) + h


def test_float16_model_keeps_16_bit_values_between_kernels() -> None:
    model, w = upcast_attention_block(M, D)
    x = X.astype(np.float16)
    session = tmlir.InferenceSession(model, device="emu")
    program = session.program
    # Every intermediate buffer is float16: the scores leave their matmul in f16 and the
    # softmax's prologue widens them; the layer norm's result leaves narrowed.
    temps = [b.dtype for b in program.buffers if b.kind == "temp"]
    assert temps and set(temps) == {"float16"}, temps
    softmax = next(k for k in program.kernels if "op=softmax" in k.source)
    assert "//   fused prologue: cast; epilogue: cast" in headers(softmax.source)
    assert [k.template for k in program.kernels].count("matmul_tc") == 2
    (got,) = session.run(None, {"x": x})
    assert got.dtype == np.float16
    assert relative_error(got, upcast_reference(x, w)) < 3e-3
    (unfused,) = tmlir.InferenceSession(model, device="emu", fusion=False).run(None, {"x": x})
    np.testing.assert_array_equal(got, unfused)
