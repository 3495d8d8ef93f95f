"""The whole-compile cache of `compile_model` (`tmlir.runtime.compile_cache`): a second
compile of the same model and options is read back without importing the model; any
change to the model, its external data or an option misses; a damaged entry is compiled
again with one warning."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from models import make_model, mlp
from onnx import helper, numpy_helper

import tmlir
from tmlir.frontends import onnx as onnx_frontend
from tmlir.frontends.onnx_common import FrontendError
from tmlir.runtime import compile_cache
from tmlir.runtime.session import compile_model

ROOT = Path(__file__).resolve().parents[2]


def conv_bn() -> onnx.ModelProto:
    """Conv + BatchNormalization + Relu: the compiler folds the norm into new weights."""
    rng = np.random.default_rng(0)
    inits = {"w": rng.standard_normal((4, 3, 3, 3)), "scale": rng.random(4) + 0.5,
             "bias": rng.standard_normal(4), "mean": rng.standard_normal(4),
             "var": rng.random(4) + 0.5}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["y"])]
    return make_model(nodes, {"x": (1, 3, 8, 8)}, {"y": (1, 4, 8, 8)}, inits)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(root))
    monkeypatch.delenv("TMLIR_COMPILE_CACHE", raising=False)
    monkeypatch.delenv("TMLIR_TUNING_RECORDS", raising=False)
    return root


@pytest.fixture
def imports(monkeypatch) -> list[str]:
    """The sources of the models the frontend imports (the compiles that missed)."""
    calls: list[str] = []
    real = onnx_frontend.import_onnx

    def counting(model, **kwargs):
        calls.append(str(kwargs.get("source")))
        return real(model, **kwargs)

    monkeypatch.setattr(onnx_frontend, "import_onnx", counting)
    return calls


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, path)
    return path


def entries(cache: Path) -> list[Path]:
    return sorted(cache.glob(f"*{compile_cache.SUFFIX}"))


def assert_same(first, second) -> None:
    (program, weights), (program2, weights2) = first, second
    assert program2 == program
    assert list(weights2) == list(weights)
    for name, array in weights.items():
        assert weights2[name].dtype == array.dtype and weights2[name].shape == array.shape, name
        np.testing.assert_array_equal(weights2[name], array, err_msg=name)


def test_second_compile_is_read_back_without_import(cache, tmp_path, monkeypatch):
    path = save(conv_bn(), tmp_path / "conv_bn.onnx")
    first = compile_model(path)
    (entry,) = entries(cache)

    def no_import(*args, **kwargs):
        raise AssertionError("a hit must not import the model")

    monkeypatch.setattr(onnx_frontend, "import_onnx", no_import)
    assert_same(first, compile_model(path))
    assert_same(first, compile_model(str(path)))
    # Only the weights the compiler computed are stored; the rest are the initializers.
    initializers = {t.name for t in conv_bn().graph.initializer}
    with zipfile.ZipFile(entry) as archive:
        stored = len([n for n in archive.namelist() if n.startswith("weights/")])
    computed = [name for name in first[1] if name not in initializers]
    assert computed and stored == len(computed)


def test_computed_scalars_and_typed_initializers_read_back(cache, tmp_path, imports):
    # Size folds to a rank-0 int64 weight; an int64_data initializer has no raw bytes.
    steps = onnx.TensorProto(name="steps", data_type=onnx.TensorProto.INT64, int64_data=[2])
    model = make_model([helper.make_node("Size", ["v"], ["n"]),
                        helper.make_node("Add", ["n", "steps"], ["m"]),
                        helper.make_node("Relu", ["v"], ["y"])],
                       {"v": (2, 3)}, {"y": (2, 3)})
    model.graph.initializer.append(steps)
    model.graph.output.append(helper.make_tensor_value_info("m", onnx.TensorProto.INT64, []))
    path = save(model, tmp_path / "scalars.onnx")
    first = compile_model(path)
    assert any(array.shape == () for array in first[1].values())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(first, compile_model(path))
    assert len(imports) == 1


def test_weights_of_ml_dtypes_types_read_back_typed(cache, tmp_path, imports):
    # An input value fixed per compile is a weight the compiler stores; .npy keeps
    # bfloat16 and float8 as raw bytes, which the entry's dtype names again.
    import ml_dtypes

    model = make_model([helper.make_node("Add", ["x", "c"], ["y"])], {"x": (3,)}, {"y": (3,)})
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.elem_type = onnx.TensorProto.BFLOAT16
    model.graph.input.append(helper.make_tensor_value_info("c", onnx.TensorProto.BFLOAT16, [3]))
    path = save(model, tmp_path / "bf16.onnx")
    values = {"c": np.array([1.5, -2.0, 0.25], ml_dtypes.bfloat16)}
    first = compile_model(path, input_values=values)
    assert first[1]["c"].dtype == np.dtype(ml_dtypes.bfloat16)
    assert_same(first, compile_model(path, input_values=values))
    assert len(imports) == 1


def test_bytes_and_model_proto_hit_as_well(cache, imports):
    model = mlp(4, (32, 64, 8))
    first = compile_model(model.SerializeToString())
    assert_same(first, compile_model(model.SerializeToString()))
    assert_same(first, compile_model(model))
    assert len(imports) == 1


def options(tmp_path: Path) -> dict[str, dict]:
    records = tmp_path / "records.jsonl"
    records.write_text("")
    return {"fusion": {"fusion": False}, "target device": {"target_device": "Some GPU"},
            "target arch": {"target_device": "Some GPU", "target_arch": "sm_80"},
            "records": {"target_device": "Some GPU", "tuning_records": records}}


@pytest.mark.parametrize("option", ["fusion", "target device", "target arch", "records"])
def test_a_changed_option_misses(cache, tmp_path, imports, option):
    path = save(mlp(4, (32, 64, 8)), tmp_path / "mlp.onnx")
    compile_model(path)
    compile_model(path, **options(tmp_path)[option])
    assert len(imports) == 2
    compile_model(path, **options(tmp_path)[option])
    assert len(imports) == 2


def test_records_matter_only_with_a_target_device(cache, tmp_path, imports):
    path = save(mlp(4, (32, 64, 8)), tmp_path / "mlp.onnx")
    records = tmp_path / "records.jsonl"
    records.write_text("")
    compile_model(path, tuning_records=records)
    compile_model(path, target_device="Some GPU", tuning_records=records)
    records.write_text("\n")  # another file: the compile for a device misses
    compile_model(path, tuning_records=records)
    compile_model(path, target_device="Some GPU", tuning_records=records)
    assert len(imports) == 3


def test_input_shapes_are_part_of_the_key(cache, tmp_path, imports):
    path = tmp_path / "dynamic.onnx"
    model = mlp(1, (8, 16, 4))
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    save(model, path)
    two, three = compile_model(path, {"x": (2, 8)}), compile_model(path, {"x": [3, 8]})
    assert two[0].buffers[0].shape == (2, 8) and three[0].buffers[0].shape == (3, 8)
    assert_same(three, compile_model(path, {"x": (np.int64(3), 8)}))
    assert len(imports) == 2


def test_a_changed_weight_misses(cache, tmp_path, imports):
    path = save(mlp(4, (32, 64, 8)), tmp_path / "mlp.onnx")
    _, weights = compile_model(path)
    model = mlp(4, (32, 64, 8))
    changed = numpy_helper.to_array(model.graph.initializer[1]).copy()
    changed[0] += 1
    model.graph.initializer[1].CopyFrom(numpy_helper.from_array(changed, "fc0.bias"))
    save(model, path)
    _, weights2 = compile_model(path)
    assert len(imports) == 2
    np.testing.assert_array_equal(weights2["fc0.bias"], changed)
    assert weights["fc0.bias"][0] != weights2["fc0.bias"][0]


def test_external_data_is_part_of_the_key(cache, tmp_path, imports):
    path = tmp_path / "external.onnx"
    onnx.save(mlp(4, (32, 64, 8)), path, save_as_external_data=True,
              all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    first = compile_model(path)
    assert_same(first, compile_model(path))
    assert len(imports) == 1
    data = bytearray((tmp_path / "weights.bin").read_bytes())
    data[-1] ^= 0x40  # the last float of the last initializer
    (tmp_path / "weights.bin").write_bytes(bytes(data))
    _, weights = compile_model(path)
    assert len(imports) == 2
    assert not np.array_equal(weights["fc1.bias"], first[1]["fc1.bias"])


def truncate(entry: Path) -> None:
    entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])


def flip_a_byte(entry: Path) -> None:
    data = bytearray(entry.read_bytes())
    data[len(data) // 3] ^= 0xFF
    entry.write_bytes(bytes(data))


def garbage(entry: Path) -> None:
    entry.write_bytes(b"not a zip file")


def rewrite(entry: Path, change) -> None:
    """Rewrite `entry` with valid zip checksums, `change` applied to its members."""
    with zipfile.ZipFile(entry) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    change(members)
    with zipfile.ZipFile(entry, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def drop_a_field(entry: Path) -> None:
    rewrite(entry, lambda m: m.update({"program.json": m["program.json"].replace(
        b'"template": ', b'"templates": ', 1)}))


def reshape_a_weight(entry: Path) -> None:
    def change(members):
        members["weights/0.npy"] = members["weights/0.npy"].replace(b"(4, 3, 3, 3)", b"(3, 4, 3, 3)")

    rewrite(entry, change)


def lose_a_weight(entry: Path) -> None:
    rewrite(entry, lambda m: m.pop("weights/0.npy"))


@pytest.mark.parametrize("damage", [truncate, flip_a_byte, garbage, drop_a_field,
                                    reshape_a_weight, lose_a_weight])
def test_a_damaged_entry_is_compiled_again_with_a_warning(cache, tmp_path, imports, damage):
    path = save(conv_bn(), tmp_path / "conv_bn.onnx")
    first = compile_model(path)
    (entry,) = entries(cache)
    damage(entry)
    with pytest.warns(UserWarning, match="compile cache: ignored .*; compiling again") as caught:
        assert_same(first, compile_model(path))
    assert len(caught) == 1 and len(imports) == 2
    assert_same(first, compile_model(path))  # the entry was written again
    assert len(imports) == 2


def test_the_environment_turns_the_cache_off(cache, tmp_path, imports, monkeypatch):
    monkeypatch.setenv("TMLIR_COMPILE_CACHE", "0")
    path = save(mlp(4, (32, 64, 8)), tmp_path / "mlp.onnx")
    compile_model(path)
    compile_model(path)
    assert len(imports) == 2 and not entries(cache)


def test_a_model_that_cannot_be_read_is_reported_by_the_frontend(cache, tmp_path):
    with pytest.raises(FrontendError, match="cannot parse ONNX model"):
        compile_model(tmp_path / "missing.onnx")
    with pytest.raises(FrontendError, match="cannot parse ONNX model"):
        compile_model(b"not a model")
    assert not entries(cache)


def test_a_session_built_on_a_hit_runs_like_the_first(cache, tmp_path, imports):
    path = save(conv_bn(), tmp_path / "conv_bn.onnx")
    feed = {"x": np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    (expected,) = tmlir.InferenceSession(path, device="emu").run(None, feed)
    (got,) = tmlir.InferenceSession(path, device="emu").run(None, feed)
    assert len(imports) == 1
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", ["bert", "resnet", "mobilenet_v2"])
def test_initializer_spans_read_what_onnx_reads(name):
    path = ROOT / "examples" / "models" / f"{name}.onnx"
    model = compile_cache.ModelBytes.read(path)
    proto = onnx.load(path)
    assert proto.graph.initializer
    for tensor in proto.graph.initializer:
        expected = numpy_helper.to_array(tensor)
        got = model.initializer(tensor.name)
        if not tensor.HasField("raw_data"):
            assert got is None, tensor.name
            continue
        assert got is not None and got.dtype == expected.dtype, tensor.name
        np.testing.assert_array_equal(got, expected, err_msg=tensor.name)


def test_json_is_written_over_the_dataclass_fields():
    program, _ = compile_model(mlp(4, (32, 64, 8)))
    data = compile_cache.to_json(program)
    assert compile_cache.from_json(type(program), data) == program
    del data["kernels"][0]["block"]
    with pytest.raises(ValueError, match="KernelInfo: expected fields"):
        compile_cache.from_json(type(program), data)
