"""Tuning records: round trip, atomic and concurrent writes, and pickup by later compiles."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys

import numpy as np
import pytest
from models import run_onnxruntime
from tuning_models import conv_net

import tmlir
from tmlir.backends.cuda_c import emit_cuda
from tmlir.frontends.onnx import import_onnx
from tmlir.passes.lower_to_cuda import LowerToCuda
from tmlir.registry import make_context
from tmlir.schedules.matmul_simt import MatmulSimtParams
from tmlir.tuning import TuningRecord, TuningRecords, TuningTarget, model_kernels
from tmlir.tuning.records import default_records_path, params_from_json, params_to_json

H100 = TuningTarget("NVIDIA H100 80GB HBM3", "sm_90")
DEFAULT = MatmulSimtParams()


def record(signature: str, seconds: float = 1e-5, target: TuningTarget = H100,
           params: MatmulSimtParams = DEFAULT) -> TuningRecord:
    return TuningRecord.of(signature, "matmul_simt", target, params, seconds, 100, 90)


def test_round_trip_and_replace(tmp_path):
    records = TuningRecords(tmp_path / "records.jsonl")
    assert records.load() == {}
    a, b = record("a"), record("b", target=TuningTarget("Other GPU", "sm_80"))
    records.add([a, b])
    assert records.load() == {a.key: a, b.key: b}
    faster = record("a", seconds=5e-6)
    records.add([faster])  # the same key: replaced, not appended
    assert records.load() == {a.key: faster, b.key: b}
    assert len((tmp_path / "records.jsonl").read_text().splitlines()) == 2
    assert records.lookup("a", H100) == faster and records.lookup("a", b_target()) is None


def test_simt_records_carry_split_k_and_old_ones_read_unsplit():
    split = MatmulSimtParams((2, 4), (1, 1), (4, 8), (4, 4), 64, 2, 4)
    assert params_to_json(split)["split_k"] == 4 and params_from_json(params_to_json(split)) == split
    # a record written before the pipeline and split-K: the register path, no split
    old = {"block_warps": [4, 2], "warp_outer": [2, 2], "lanes": [4, 8], "thread_inner": [4, 4], "block_k": 8}
    assert params_from_json(old) == DEFAULT and (DEFAULT.stages, DEFAULT.split_k) == (1, 1)


def b_target() -> TuningTarget:
    return TuningTarget("Other GPU", "sm_90")


def test_default_location(tmp_path, monkeypatch):
    assert default_records_path().name == "tuning_records.jsonl"
    monkeypatch.setenv("TMLIR_TUNING_RECORDS", str(tmp_path / "mine.jsonl"))
    assert TuningRecords().path == tmp_path / "mine.jsonl"


def test_a_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "records.jsonl"
    records = TuningRecords(path)
    records.add([record("a")])
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        records.add([record("b")])
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.jsonl", "records.jsonl.lock"]


def _add_many(path: str, worker: int) -> None:
    for i in range(5):
        TuningRecords(path).add([record(f"w{worker}-{i}")])


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "records.jsonl")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_add_many, args=(path, w)) for w in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert all(w.exitcode == 0 for w in workers)
    assert {key[0] for key in TuningRecords(path).load()} == {
        f"w{w}-{i}" for w in range(4) for i in range(5)}


def test_malformed_lines_are_skipped_with_a_warning(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text(record("a").to_json() + "\n{not json\n")
    with pytest.warns(UserWarning, match=r"records.jsonl:2: skipped"):
        assert list(TuningRecords(path).load()) == [record("a").key]


# ---------------------------------------------------------------------------- pickup


def compile_conv_net(**options: str):
    imported = import_onnx(conv_net())
    LowerToCuda(**options).apply(make_context(weights=imported.weights), imported.module)
    return emit_cuda(imported.module)


def tuned_pair():
    """The second conv's kernel and a valid candidate that is not its default."""
    kernel = model_kernels(conv_net())[1].kernel
    chosen = next(c for c in kernel.candidates() if not c.default and c.params.block_k == 16)
    return kernel, chosen.params


def conv_params(program) -> list[dict]:
    return [k.params for k in program.kernels if k.template == "conv2d_implicit_gemm"]


def test_a_later_compile_picks_up_the_record(tmp_path):
    kernel, params = tuned_pair()
    path = tmp_path / "records.jsonl"
    TuningRecords(path).add([TuningRecord.of(kernel.signature, kernel.template, H100, params,
                                             1e-5, 84, 80)])
    options = {"target_device": H100.device_name, "target_arch": "sm_90",
               "tuning_records": str(path)}
    tuned = conv_params(compile_conv_net(**options))
    untuned = conv_params(compile_conv_net())
    default = kernel.default_params()
    # conv 0 has no record; convs 1 and 2 share the recorded signature.
    assert [p["block_k"] for p in untuned] == [default.block_k] * 3
    assert tuned[0] == untuned[0]
    for p in tuned[1:]:
        assert {k: p[k] for k in params.describe()} == params.describe()
    # Another device, or no device: the defaults.
    other = conv_params(compile_conv_net(**{**options, "target_device": "Other GPU"}))
    assert other == untuned


def test_tm_opt_takes_the_target_device(tmp_path):
    kernel, params = tuned_pair()
    path = tmp_path / "records.jsonl"
    TuningRecords(path).add([TuningRecord.of(kernel.signature, kernel.template, H100, params,
                                             1e-5, 84, 80)])
    model = tmp_path / "net.onnx"
    model.write_bytes(conv_net().SerializeToString())
    spec = (f'lower-to-cuda{{target-device="{H100.device_name}" target-arch=sm_90 '
            f'tuning-records="{path}"}}')
    out = subprocess.run([sys.executable, "-m", "tmlir.tools.tm_opt", str(model), "-p", spec,
                          "-t", "cuda"], capture_output=True, text=True, check=True).stdout
    headers = [line for line in out.splitlines() if line.startswith("// Kernel")]
    described = [f"{k}={v}" for k, v in params.describe().items()]
    # the header comments of the two convs with the record
    assert sum(all(f" {item}," in line or f"({item}," in line for item in described) for line in headers) == 2


def test_an_invalid_record_is_ignored_with_a_warning(tmp_path):
    kernel, _ = tuned_pair()
    path = tmp_path / "records.jsonl"
    too_big = MatmulSimtParams((4, 2), (2, 2), (4, 8), (4, 4), 16)  # 128 x 128: > the 8 x 8 conv
    assert not kernel.is_valid(too_big)
    bad = TuningRecord.of(kernel.signature, kernel.template, H100, too_big, 1e-5, 84, 80)
    first = model_kernels(conv_net())[0].kernel
    garbled = TuningRecord(first.signature, first.template, H100.device_name, "sm_90",
                           {"block_k": 8, "lanes": [3, 3]}, 1e-5, 1, 1)  # not 32 lanes
    TuningRecords(path).add([bad, garbled])
    options = {"target_device": H100.device_name, "tuning_records": str(path)}
    with pytest.warns(UserWarning, match="ignored the record") as caught:
        tuned = conv_params(compile_conv_net(**options))
    assert tuned == conv_params(compile_conv_net())
    messages = [str(w.message) for w in caught]
    assert any(str(params_to_json(too_big)) in m and "not in its space" in m for m in messages)
    assert any(first.signature in m and "bad parameters" in m for m in messages)


def test_a_session_for_a_target_device_runs_the_tuned_kernels(tmp_path):
    """`InferenceSession(target_device=...)` on emu runs the kernels tuned for that GPU,
    and they still compute the model."""
    kernel, params = tuned_pair()
    path = tmp_path / "records.jsonl"
    TuningRecords(path).add([TuningRecord.of(kernel.signature, kernel.template, H100, params,
                                             1e-5, 84, 80)])
    session = tmlir.InferenceSession(conv_net(), device="emu", tuning_records=path,
                                     target_device=H100.device_name)
    assert conv_params(session.program)[1]["block_k"] == params.block_k
    x = np.random.default_rng(0).standard_normal((1, 8, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(session.run(None, {"x": x})[0],
                               run_onnxruntime(conv_net(), {"x": x})[0], rtol=1e-4, atol=1e-5)
