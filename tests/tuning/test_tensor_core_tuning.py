"""The tensor-core matmul as a tunable template: f16/bf16 kernels of a model with their own
signatures, their candidates compiled without spills, half-precision inputs for timing,
and records that later compiles use (and that a SIMT record never feeds)."""

from __future__ import annotations

import json
import shutil

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto
from tuning_models import conv_net, half_mlp

from tmlir.runtime.session import compile_model
from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams
from tmlir.schedules.pinned import SPACES
from tmlir.schedules.tc_gemm import MatmulTcParams
from tmlir.tools.tm_tune import main
from tmlir.tuning import TunableKernel, TuningRecord, TuningRecords, TuningTarget, model_kernels
from tmlir.tuning.measure import candidate_inputs
from tmlir.tuning.records import params_from_json, params_to_json
from tmlir.tuning.space import TEMPLATES

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
H100 = TuningTarget("NVIDIA H100 80GB HBM3", "sm_90")
SQUARE = MatmulProblem.plain(64, 64, 64)


def test_an_f16_model_has_a_tensor_core_kernel_with_an_f16_signature():
    (kernel,) = model_kernels(half_mlp())
    assert (kernel.kernel.template, kernel.occurrences) == ("matmul_tc", 2)
    assert kernel.kernel.problem == SQUARE and kernel.kernel.element == "f16"
    assert kernel.kernel.signature == (
        "matmul_tc(lhs_shape=64x64, rhs_shape=64x64, out_shape=64x64, bias_shape=none, "
        "transpose_lhs=false, transpose_rhs=false, alpha=1.0, beta=1.0; f16)")
    (bf16,) = model_kernels(half_mlp(TensorProto.BFLOAT16))
    assert bf16.kernel.signature.endswith("; bf16)")
    # Before sm_80 the matmuls are SIMT kernels, tuned in f32 (their f16 tensors are a view).
    (simt,) = model_kernels(half_mlp(), arch="sm_75")
    assert simt.kernel == TunableKernel("matmul_simt", SQUARE, arch="sm_75")
    assert simt.kernel.signature.endswith("; f32)")


def test_every_template_with_a_space_is_tunable():
    assert set(TEMPLATES) == set(SPACES)


def test_a_float32_model_at_half_precision_tunes_tensor_core_kernels():
    kernels = [k.kernel for k in model_kernels(conv_net(), precision="fp16")]
    assert [k.template for k in kernels] == ["conv2d_tc", "conv2d_tc", "matmul_tc"]
    assert all(k.signature.endswith("; f16)") for k in kernels)
    conv = kernels[0]
    built = conv.kernel("conv2d_tc_c000", conv.default_params())
    built.verify()
    assert [str(a.type.element_type) for a in built.body.block.args] == ["f16", "f16", "f32", "f32"]
    assert [a.dtype for a in candidate_inputs(conv)[:3]] == [np.float16, np.float16, np.float32]


def test_tensor_core_kernels_take_half_operands():
    kernel = TunableKernel("matmul_tc", SQUARE)
    assert kernel.element == "f16" and kernel == TunableKernel("matmul_tc", SQUARE, "f16")
    candidates = kernel.candidates()
    assert [c.default for c in candidates].count(True) == 1
    default = next(c for c in candidates if c.default)
    assert isinstance(default.params, MatmulTcParams) and default.params == kernel.default_params()
    assert default.kernel_name == f"matmul_tc_c{default.index:03d}"
    assert kernel.launch_shape(default.params) == (default.params.blocks(SQUARE), default.params.threads)
    assert not kernel.is_valid(MatmulSimtParams())
    with pytest.raises(ValueError, match="takes f16, bf16 or tf32 operands, not f32"):
        TunableKernel("matmul_tc", SQUARE, "f32")
    with pytest.raises(ValueError, match="takes f32 operands, not f16"):
        TunableKernel("matmul_simt", SQUARE, "f16")
    a, b, (shape, dtype) = candidate_inputs(TunableKernel("matmul_tc", SQUARE, "bf16"))
    assert a.dtype == b.dtype == ml_dtypes.bfloat16 and (shape, dtype) == ((64, 64), np.float32)
    assert [x.dtype for x in candidate_inputs(kernel)[:2]] == [np.float16] * 2
    assert TunableKernel("matmul_simt", SQUARE).rtol < kernel.rtol < TunableKernel("matmul_tc", SQUARE, "bf16").rtol


@needs_nvcc
def test_a_dry_run_compiles_the_tensor_core_candidates_without_spills(tmp_path, capsys):
    from tmlir.schedules.model_choice import gpu_for

    model, out = tmp_path / "half.onnx", tmp_path / "report.json"
    onnx.save(half_mlp(), model)
    assert main([str(model), "--dry-run", "--limit", "3", "--jobs", "1", "--quiet", "--json", str(out)]) == 0
    (line,) = json.loads(out.read_text())["kernels"]
    assert line["template"] == "matmul_tc" and line["signature"].endswith("; f16)")
    kernel = TunableKernel("matmul_tc", SQUARE, "f16")
    default = kernel.default_params()
    assert line["occurrences"] == 2 and line["default"]["block_m"] == default.block_m
    assert line["default"]["warps"] == "x".join(map(str, default.warps))
    # the model's 3 best, and the default if it is not among them; 0 spills
    top = [c.params for c in kernel.ranked_candidates(gpu_for("sm_90"))[:3]]
    assert line["candidates"] == line["kept"] == (3 if default in top else 4) and line["rejected"] == {}
    assert "matmul_tc(lhs_shape=64x64" in capsys.readouterr().out


def test_tensor_core_params_round_trip_through_json():
    params = MatmulTcParams(64, 64, 16, (2, 2), 4)
    assert params_to_json(params) == {"block_m": 64, "block_n": 64, "block_k": 16, "warps": [2, 2],
                                      "stages": 4, "split_k": 1}
    assert params_from_json(params_to_json(params), MatmulTcParams) == params
    # A record written before split-K existed reads as no split.
    old = {"block_m": 64, "block_n": 64, "block_k": 16, "warps": [2, 2], "stages": 4}
    assert params_from_json(old, MatmulTcParams) == params
    with pytest.raises(ValueError, match="bad parameters .* for MatmulTcParams"):
        params_from_json(params_to_json(MatmulSimtParams()), MatmulTcParams)


def tuned() -> tuple[TunableKernel, MatmulTcParams]:
    """The model's tensor-core kernel and a valid candidate that is not its default."""
    kernel = TunableKernel("matmul_tc", SQUARE)
    chosen = next(c for c in kernel.candidates() if not c.default and c.params.block_k == 16)
    return kernel, chosen.params


def tc_params(path, dtype: int = TensorProto.FLOAT16) -> tuple[list[dict], str]:
    program, _ = compile_model(half_mlp(dtype), target_device=H100.device_name, target_arch="sm_90",
                               tuning_records=path)
    assert [k.template for k in program.kernels] == ["matmul_tc", "matmul_tc"]
    return [k.params for k in program.kernels], program.source


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT16, TensorProto.BFLOAT16], ids=["f16", "bf16"])
def test_a_tensor_core_record_is_used_by_later_compiles(tmp_path, dtype):
    kernel, params = tuned()
    if dtype == TensorProto.BFLOAT16:
        kernel = TunableKernel("matmul_tc", SQUARE, "bf16")
    path = tmp_path / "records.jsonl"
    TuningRecords(path).add([TuningRecord.of(kernel.signature, kernel.template, H100, params, 1e-5, 15, 15)])
    assert TuningRecords(path).lookup(kernel.signature, H100).params == params_to_json(params)
    untuned, _ = tc_params(tmp_path / "none.jsonl", dtype)
    recorded, source = tc_params(path, dtype)
    described = ", ".join(f"{k}={v}" for k, v in params.describe().items())
    assert source.count(f"schedule template 'matmul_tc' ({described}") == 2  # the header comments
    assert all(p["block_k"] == 16 and p["stages"] == params.stages for p in recorded)
    assert all(p["block_k"] == kernel.default_params().block_k for p in untuned) and untuned != recorded


def test_a_simt_record_is_not_applied_to_a_tensor_core_kernel(tmp_path):
    kernel, _ = tuned()
    path = tmp_path / "records.jsonl"
    simt = MatmulSimtParams.default_for(SQUARE)
    other = TuningTarget("Other GPU", "sm_90")
    TuningRecords(path).add([
        # SIMT parameters filed under the tensor-core signature: not MatmulTcParams.
        TuningRecord.of(kernel.signature, "matmul_tc", H100, simt, 1e-5, 15, 15),
        # A record of the SIMT template for the same problem: another signature, never found.
        TuningRecord.of(TunableKernel("matmul_simt", SQUARE).signature, "matmul_simt", H100, simt, 1e-5, 9, 9),
        # Valid tensor-core parameters, but the record names another template.
        TuningRecord.of(kernel.signature, "matmul_simt", other, MatmulTcParams(64, 64, 16, (2, 2), 4),
                        1e-5, 15, 15),
    ])
    untuned, _ = tc_params(tmp_path / "none.jsonl")
    with pytest.warns(UserWarning, match="ignored the record") as caught:
        assert tc_params(path)[0] == untuned
    assert any("bad parameters" in str(w.message) for w in caught)
    with pytest.warns(UserWarning, match="recorded for template 'matmul_simt', not 'matmul_tc'"):
        program, _ = compile_model(half_mlp(), target_device=other.device_name, target_arch="sm_90",
                                   tuning_records=path)
    assert [k.params for k in program.kernels] == untuned
