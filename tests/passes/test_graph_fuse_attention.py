"""graph-fuse-attention on ONNX models: each way exporters write scaled dot-product
attention (the scale on q, on kᵀ, on both or on the scores, by Mul or Div; masks built with
Where or Cast and added; causal masks as an added constant or a Where of a constant
triangle; a Where of a run-time mask on the scores; the NaN guard after the softmax)
becomes one ``attention`` kernel, and the model still matches onnxruntime on emu within
1e-5 (relative to the output's largest magnitude), NaN where onnxruntime has NaN (a fully
masked row without the NaN guard). The example BERT, GPT-2 and ViT models end with one
attention launch per layer and no softmax kernel."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from models import make_model, manifest_feed, run_onnxruntime, typed_model
from onnx import TensorProto, helper

import tmlir

B, H, SQ, SK, D = 2, 3, 20, 24, 16
RTOL = 1e-5
MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
MANIFEST = json.loads((MODELS / "models.json").read_text())["models"]
rng = np.random.default_rng(0)


def node(op: str, inputs: list[str], output: str, **attributes) -> object:
    return helper.make_node(op, inputs, [output], **attributes)


def scalar(value: float) -> np.ndarray:
    return np.array(value, np.float32)


def tril(sq: int, sk: int) -> np.ndarray:
    return np.tril(np.ones((sq, sk), bool))


def attention(scores: str, *, guard: bool, v: str = "v") -> list:
    """Softmax over the last axis, the NaN guard (``where(isnan(p), 0, p)``), then ``@ v``."""
    nodes = [node("Softmax", [scores], "p", axis=-1)]
    if guard:
        nodes += [node("IsNaN", ["p"], "nan"), node("Where", ["nan", "zero", "p"], "pg")]
    return nodes + [node("MatMul", ["pg" if guard else "p", v], "y")]


QKV = {"q": (B, H, SQ, D), "k": (B, H, SK, D), "v": (B, H, SK, D)}
OUT = {"y": (B, H, SQ, D)}
BASE = {"zero": scalar(0.0), "quarter_root": scalar(D ** -0.25), "root": scalar(D ** 0.5),
        "inv_root": scalar(D ** -0.5), "ninf": scalar(-np.inf), "min": scalar(np.finfo(np.float32).min)}


def bert_where_mask(fill: str = "min") -> tuple:
    """torch.onnx (dynamo): q and kᵀ each scaled by D^-1/4, a bool padding mask turned into
    ``where(mask, 0, min)`` (float32's lowest; or another `fill`) and added, the NaN guard."""
    nodes = [node("Mul", ["q", "quarter_root"], "qs"), node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]),
             node("Mul", ["kt", "quarter_root"], "ks"), node("MatMul", ["qs", "ks"], "s"),
             node("Where", ["mask", "zero", fill], "bias"), node("Add", ["s", "bias"], "sb"),
             *attention("sb", guard=True)]
    inputs = {**{n: (np.float32, s) for n, s in QKV.items()}, "mask": (np.bool_, (B, 1, 1, SK))}
    return typed_model(nodes, inputs, {"y": np.float32}, BASE), {"mask": padding_mask()}


def padding_mask() -> np.ndarray:
    mask = np.ones((B, 1, 1, SK), bool)
    mask[0, ..., 17:] = False
    return mask


def cast_mask() -> tuple:
    """The classic export: ``(q @ kᵀ) / sqrt(D) + (1 - float(mask)) * -10000``, no guard."""
    nodes = [node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]), node("MatMul", ["q", "kt"], "s"),
             node("Div", ["s", "root"], "sd"), node("Cast", ["mask"], "mf", to=TensorProto.FLOAT),
             node("Sub", ["one", "mf"], "inv"), node("Mul", ["inv", "big"], "bias"),
             node("Add", ["bias", "sd"], "sb"), *attention("sb", guard=False)]
    inputs = {**{n: (np.float32, s) for n, s in QKV.items()}, "mask": (np.int64, (B, 1, 1, SK))}
    weights = {**BASE, "one": scalar(1.0), "big": scalar(-10000.0)}
    return typed_model(nodes, inputs, {"y": np.float32}, weights), {"mask": padding_mask().astype(np.int64)}


def gpt2_causal_constant() -> tuple:
    """GPT-2 (dynamo): scaled q and kᵀ, an added constant causal mask of 0 and float32's
    lowest, the guard."""
    causal = np.where(tril(SQ, SQ), 0.0, np.finfo(np.float32).min).astype(np.float32)[None, None]
    nodes = [node("Mul", ["q", "quarter_root"], "qs"), node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]),
             node("Mul", ["kt", "quarter_root"], "ks"), node("MatMul", ["qs", "ks"], "s"),
             node("Add", ["s", "causal"], "sb"), *attention("sb", guard=True)]
    square = {"q": (B, H, SQ, D), "k": (B, H, SQ, D), "v": (B, H, SQ, D)}
    return make_model(nodes, square, OUT, {**BASE, "causal": causal}), {}


def causal_where() -> tuple:
    """A causal ``Where(tril, scores, -inf)`` after the scale on the scores; Sq != Sk."""
    nodes = [node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]), node("MatMul", ["q", "kt"], "s"),
             node("Mul", ["inv_root", "s"], "ss"), node("Where", ["tril", "ss", "ninf"], "sw"),
             *attention("sw", guard=False)]
    inputs = {n: (np.float32, s) for n, s in QKV.items()}
    return typed_model(nodes, inputs, {"y": np.float32}, {**BASE, "tril": tril(SQ, SK)}), {}


def vit_zero_bias() -> tuple:
    """ViT (dynamo): no mask, but a constant of zeros added; the scale on kᵀ only."""
    nodes = [node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]), node("Mul", ["kt", "inv_root"], "ks"),
             node("MatMul", ["q", "ks"], "s"), node("Add", ["s", "nothing"], "sb"), *attention("sb", guard=True)]
    return make_model(nodes, QKV, OUT, {**BASE, "nothing": np.zeros((1, 1, SQ, SK), np.float32)}), {}


def runtime_where() -> tuple:
    """``Where(mask, scores, -inf)`` with a run-time mask that hides every key of some rows:
    without the guard those rows are NaN, as onnxruntime's softmax gives them."""
    nodes = [node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]), node("MatMul", ["q", "kt"], "s"),
             node("Div", ["s", "root"], "sd"), node("Where", ["mask", "sd", "ninf"], "sw"),
             *attention("sw", guard=False)]
    mask = rng.random((B, 1, SQ, SK)) < 0.7
    mask[1, 0, 3] = False
    inputs = {**{n: (np.float32, s) for n, s in QKV.items()}, "mask": (np.bool_, (B, 1, SQ, SK))}
    return typed_model(nodes, inputs, {"y": np.float32}, BASE), {"mask": mask}


def fully_masked_guarded() -> tuple:
    """The BERT pattern with a -inf mask that hides every key of batch 1: softmax's NaN
    rows, which the guard makes 0."""
    model, _ = bert_where_mask("ninf")
    mask = padding_mask()
    mask[1] = False
    return model, {"mask": mask}


CASES = {"bert_where_mask": bert_where_mask, "cast_mask": cast_mask, "gpt2_causal_constant": gpt2_causal_constant,
         "causal_where": causal_where, "vit_zero_bias": vit_zero_bias, "runtime_where": runtime_where,
         "fully_masked_guarded": fully_masked_guarded}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pattern_is_one_attention_kernel_matching_onnxruntime(case: str) -> None:
    model, extra = CASES[case]()
    session = tmlir.InferenceSession(model.SerializeToString(), device="emu")
    templates = [k.template for k in session.program.launched()]
    assert templates.count("attention") == 1, templates
    assert not any(k.signature.name.startswith(("softmax", "matmul")) for k in session.program.kernels), templates
    feed = {name: rng.standard_normal(shape).astype(np.float32)
            for name, shape in (("q", (B, H, SQ, D)), ("k", (B, H, SK, D)), ("v", (B, H, SK, D)))}
    if case == "gpt2_causal_constant":
        feed["k"], feed["v"] = feed["k"][:, :, :SQ], feed["v"][:, :, :SQ]
    feed.update(extra)
    (got,), (want,) = session.run(None, feed), run_onnxruntime(model, feed)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    assert np.abs(got[finite] - want[finite]).max() <= RTOL * np.abs(want[finite]).max()
    if case == "runtime_where":
        assert np.isnan(want[1, :, 3]).all()
    if case == "fully_masked_guarded":
        assert not want[1].any() and not got[1].any()


def test_other_readers_keep_the_pattern() -> None:
    """The scores are also an output: nothing fuses (the softmax keeps its kernel)."""
    nodes = [node("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]), node("MatMul", ["q", "kt"], "s"),
             *attention("s", guard=False)]
    model = make_model(nodes, QKV, {**OUT, "s": (B, H, SQ, SK)})
    session = tmlir.InferenceSession(model.SerializeToString(), device="emu")
    assert "attention" not in [k.template for k in session.program.kernels]


LAYERS = {"bert": 2, "gpt2": 2, "vit": 2}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_example_models_launch_one_attention_kernel_per_layer(name: str) -> None:
    session = tmlir.InferenceSession(MODELS / MANIFEST[name]["file"], device="emu")
    launched = [k.signature.name for k in session.program.launched()]
    assert [k.template for k in session.program.launched()].count("attention") == LAYERS[name], launched
    assert not any(n.startswith("softmax") for n in launched), launched
    inputs = manifest_feed(MANIFEST[name]["inputs"], 0)
    (got,), (want,) = session.run(None, inputs), run_onnxruntime((MODELS / MANIFEST[name]["file"]).read_bytes(), inputs)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_heads_split_and_merged_in_the_same_kernel() -> None:
    """Projections' bias add, the heads' reshape and transpose (kᵀ's too) as the kernel's
    prologue, the transpose and reshape back as its epilogue: the model is one launch."""
    shape, heads = (B, SK, H * D), (B, SK, H, D)
    nodes = [node("Add", ["xq", "bq"], "qb"), node("Reshape", ["qb", "heads"], "q4"),
             node("Transpose", ["q4"], "q", perm=[0, 2, 1, 3]),
             node("Reshape", ["xk", "heads"], "k4"), node("Transpose", ["k4"], "kt", perm=[0, 2, 3, 1]),
             node("Reshape", ["xv", "heads"], "v4"), node("Transpose", ["v4"], "v", perm=[0, 2, 1, 3]),
             node("MatMul", ["q", "kt"], "s"), node("Mul", ["s", "inv_root"], "ss"),
             *attention("ss", guard=True), node("Transpose", ["y"], "yt", perm=[0, 2, 1, 3]),
             node("Reshape", ["yt", "merged"], "out")]
    weights = {**BASE, "bq": rng.standard_normal(H * D).astype(np.float32),
               "heads": np.array(heads, np.int64), "merged": np.array(shape, np.int64)}
    model = typed_model(nodes, {n: (np.float32, shape) for n in ("xq", "xk", "xv")}, {"out": np.float32}, weights)
    session = tmlir.InferenceSession(model.SerializeToString(), device="emu")
    assert [k.template for k in session.program.launched()] == ["attention"]
    feed = {n: rng.standard_normal(shape).astype(np.float32) for n in ("xq", "xk", "xv")}
    (got,), (want,) = session.run(None, feed), run_onnxruntime(model, feed)
    assert got.shape == shape and np.abs(got - want).max() <= RTOL * np.abs(want).max()
