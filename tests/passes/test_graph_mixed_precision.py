"""``graph-mixed-precision`` and ``precision=`` of ``lower-to-cuda``, ``InferenceSession`` and
``tm-run``: an f32 ONNX model's matmuls run with f16 (bf16) operands and f32 accumulation,
matching float64 numpy to half precision; its weights are converted once, at compile time
(the table holds the rounded copy, no kernel converts them at run time); two matmuls share
one copy; fp32 is today's compile exactly; the precision is part of the compile-cache key;
bad values are one line."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from models import make_model
from onnx import helper

import tmlir
from tmlir.ir.pass_options import PassOptionError, parse_passes
from tmlir.passes.graph_mixed_precision import GraphMixedPrecision
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context, project_passes
from tmlir.runtime.ir_program import parse_ir
from tmlir.runtime.session import SessionError, compile_model
from tmlir.schedules import matmul_tc
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.registry import NoTemplate
from tmlir.tools.tm_run import main as tm_run

M, K, N = 32, 64, 48
RNG = np.random.default_rng(0)
W = (RNG.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
B = RNG.standard_normal(N).astype(np.float32)
X = RNG.standard_normal((M, K)).astype(np.float32)


def matmul_add_relu() -> onnx.ModelProto:
    """``relu(x @ w + b)``, 32x64x48, f32."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    return make_model(nodes, {"x": (M, K)}, {"y": (M, N)}, {"w": W, "b": B})


def reference(x: np.ndarray = X, w: np.ndarray = W) -> np.ndarray:
    return np.maximum(x.astype(np.float64) @ w.astype(np.float64) + B, 0.0)


def assert_half_close(got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    """Within `rtol` of the output's scale (its largest magnitude)."""
    scale = float(np.abs(want).max())
    assert got.dtype == np.float32 and got.shape == want.shape
    assert float(np.abs(got - want).max()) <= rtol * scale, float(np.abs(got - want).max()) / scale


def weight_buffers(session: tmlir.InferenceSession) -> dict[str, str]:
    return {b.source: b.dtype for b in session.program.buffers if b.kind == "weight"}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TMLIR_COMPILE_CACHE", raising=False)


# -- the pass on IR ----------------------------------------------------------------------------

SHARED = f"""func.func @main(%x: tensor<{M}x{K}xf32>) -> (tensor<{M}x{N}xf32>, tensor<{M}x{N}xf32>) {{
  %w = graph.weight "w" : tensor<{K}x{N}xf32>
  %y = graph.matmul %x, %w : (tensor<{M}x{K}xf32>, tensor<{K}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %z = graph.matmul %x, %w : (tensor<{M}x{K}xf32>, tensor<{K}x{N}xf32>) -> tensor<{M}x{N}xf32>
  func.return %y, %z : tensor<{M}x{N}xf32>, tensor<{M}x{N}xf32>
}}
"""


@pytest.mark.parametrize("dtype, numpy_dtype", [("f16", np.float16), ("bf16", "bfloat16")])
def test_a_weight_is_rounded_once_into_the_table(dtype, numpy_dtype):
    import ml_dtypes  # noqa: F401  (the numpy name bfloat16)

    table = {"w": W.copy()}
    module = parse_ir(SHARED.encode(), "shared.mlir")
    GraphMixedPrecision(dtype).apply(make_context(weights=table), module)
    module.verify()
    assert sorted(table) == ["w", f"w.{dtype}"]  # one copy for both matmuls; f32 kept
    np.testing.assert_array_equal(table["w"], W)
    assert table[f"w.{dtype}"].dtype == np.dtype(numpy_dtype)
    np.testing.assert_array_equal(table[f"w.{dtype}"], W.astype(numpy_dtype))
    text = str(module)
    assert text.count(f'graph.weight "w.{dtype}"') == 1 and 'graph.weight "w" ' not in text
    assert text.count("graph.cast") == 1  # %x, shared by both matmuls


def test_the_pass_leaves_what_the_template_does_not_take():
    """K = 60 is not a multiple of 8: check_problem refuses it, the pass leaves it f32."""
    with pytest.raises(NoTemplate):
        matmul_tc.check_problem(MatmulProblem((M, 60), (60, N), (M, N), None, False, False, 1.0, 1.0),
                                matmul_tc.Float16Type())
    text = SHARED.replace(f"x{K}x", "x60x").replace(f"<{K}x", "<60x")
    module = parse_ir(text.encode(), "k60.mlir")
    before = str(module)
    GraphMixedPrecision().apply(make_context(weights={"w": np.zeros((60, N), np.float32)}), module)
    assert str(module) == before


def test_bad_options_are_one_line():
    passes = project_passes()
    with pytest.raises(PassOptionError, match=r"^option 'dtype' of pass 'graph-mixed-precision' "
                       r"expects one of f16, bf16, tf32, got 'fp16'; did you mean 'f16'\?$"):
        parse_passes(passes, "graph-mixed-precision{dtype=fp16}")
    with pytest.raises(PassOptionError, match=r"expects one of fp32, fp16, bf16, tf32, got 'f32'"):
        parse_passes(passes, "lower-to-cuda{precision=f32}")
    with pytest.raises(ValueError, match=r"^lower-to-cuda: unknown precision 'half'; expected one of"):
        LowerToCuda(precision="half")  # type: ignore[arg-type]
    with pytest.raises(SessionError, match=r"^unknown precision 'f16'; expected one of fp32, fp16, "
                       r"bf16, tf32; did you mean 'fp16'\?$"):
        tmlir.InferenceSession(matmul_add_relu(), precision="f16")


def test_lower_to_cuda_runs_the_pass_before_the_partition():
    names = [p.name for p in LowerToCuda(precision="bf16").passes()]
    assert names.index("graph-mixed-precision") == names.index("graph-partition") - 1
    assert names.index("graph-mixed-precision") > names.index("graph-outline-constants")
    assert "graph-mixed-precision" not in [p.name for p in LowerToCuda().passes()]


# -- a float32 ONNX model through InferenceSession ----------------------------------------------

def test_fp16_session_matches_float64_with_weights_converted_at_compile_time(cache, monkeypatch):
    from tmlir.frontends import onnx as onnx_frontend

    imports: list[int] = []  # the compiles that missed the compile cache
    real = onnx_frontend.import_onnx
    monkeypatch.setattr(onnx_frontend, "import_onnx", lambda *a, **k: imports.append(1) or real(*a, **k))
    model = matmul_add_relu().SerializeToString()
    fp32 = tmlir.InferenceSession(model)
    fp16 = tmlir.InferenceSession(model, precision="fp16")
    assert len(imports) == 2  # the precision is part of the cache key: fp32's entry not reused
    (y16,) = fp16.run(None, {"x": X})
    assert_half_close(y16, reference(), 2e-3)
    # The result differs from fp32's by the operands' rounding: the pass did something.
    (y32,) = fp32.run(None, {"x": X})
    assert_half_close(y32, reference(), 1e-5)
    assert not np.array_equal(y16, y32)
    # f32 operands rounded to f16 and multiplied exactly: the emu's f32 sum agrees closely.
    assert_half_close(y16, reference(X.astype(np.float16), W.astype(np.float16)), 1e-5)
    # The matmul runs on the tensor-core template, fp32's does not.
    assert "schedule template 'matmul_tc'" in fp16.program.source
    assert "schedule template 'matmul_tc'" not in fp32.program.source
    # The weight is an f16 buffer of the program: no f32 copy, no kernel converts it.
    assert weight_buffers(fp32) == {"w": "float32", "b": "float32"}
    assert weight_buffers(fp16) == {"w.f16": "float16", "b": "float32"}
    weights = {i for i, b in enumerate(fp16.program.buffers) if b.kind == "weight"}
    for launch in fp16.program.launches:
        if weights & set(launch.args):
            assert launch.kernel.startswith("matmul"), launch.kernel
    # As many launches as fp32: the activation's cast is the matmul's prologue (A gathered).
    assert len(fp16.program.launches) == len(fp32.program.launches)
    # A second fp16 compile reads its own entry back, f16 weight included.
    program, table = compile_model(model, precision="fp16")
    assert len(imports) == 2 and program == fp16.program
    np.testing.assert_array_equal(table["w.f16"], W.astype(np.float16))


def test_fp32_is_todays_compile(monkeypatch):
    monkeypatch.setenv("TMLIR_COMPILE_CACHE", "0")
    model = matmul_add_relu()
    assert compile_model(model, precision="fp32")[0] == compile_model(model)[0]
    mlir = parse_ir(SHARED.encode(), "shared.mlir")
    other = parse_ir(SHARED.encode(), "shared.mlir")
    LowerToCuda().apply(make_context(weights={"w": W}), mlir)
    LowerToCuda(precision="fp32").apply(make_context(weights={"w": W}), other)
    assert str(mlir) == str(other)


def test_bf16_session_matches_at_bfloat16_tolerance(cache):
    session = tmlir.InferenceSession(matmul_add_relu(), precision="bf16")
    (y,) = session.run(None, {"x": X})
    assert_half_close(y, reference(), 1.5e-2)
    assert weight_buffers(session) == {"w.bf16": "bfloat16", "b": "float32"}
    assert "schedule template 'matmul_tc'" in session.program.source


def test_gemm_trans_b_takes_tensor_cores(cache):
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1), helper.make_node("Relu", ["g"], ["y"])]
    model = make_model(nodes, {"x": (M, K)}, {"y": (M, N)}, {"w": W.T.copy(), "b": B})
    session = tmlir.InferenceSession(model, precision="fp16")
    (y,) = session.run(None, {"x": X})
    assert_half_close(y, reference(), 2e-3)
    assert weight_buffers(session) == {"w.f16": "float16", "b": "float32"}
    assert "schedule template 'matmul_tc'" in session.program.source


def test_no_tensor_cores_before_sm80_leaves_float32(cache):
    program, weights = compile_model(matmul_add_relu(), precision="fp16", target_arch="sm_75")
    assert [k.template for k in program.kernels] == ["matmul_simt"]
    assert all(w.dtype == np.float32 for w in weights.values())


def test_tm_run_precision(tmp_path, capsys, cache):
    path = tmp_path / "mm.onnx"
    onnx.save(matmul_add_relu(), path)
    assert tm_run([str(path), "--precision", "fp16", "--check", "--rtol", "1e-2", "--atol", "1e-2"]) == 0
    assert "check: ok" in capsys.readouterr().out
    ir = tmp_path / "mm.mlir"
    ir.write_text(SHARED)
    assert tm_run([str(ir), "--precision", "fp16"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("tm-run: error: --precision applies to ONNX models; for IR give the pipeline "
                   "-p 'lower-to-cuda{precision=fp16}'")
