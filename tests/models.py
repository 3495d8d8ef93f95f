"""Small ONNX models for the tests, built with onnx.helper (ir_version 10 for onnxruntime),
and numpy references the tests share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model(nodes, inputs: dict[str, Sequence[int]], outputs: dict[str, Sequence[int]],
               initializers: dict[str, np.ndarray] | None = None,
               opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in outputs.items()],
        [numpy_helper.from_array(v.astype(np.float32), n) for n, v in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def mlp(batch: int, dims: Sequence[int], seed: int = 0) -> onnx.ModelProto:
    """Gemm(transB=1) + Relu layers, like a PyTorch nn.Linear stack."""
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], {}, "x"
    for i, (fan_in, fan_out) in enumerate(zip(dims[:-1], dims[1:])):
        inits[f"fc{i}.weight"] = rng.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in)
        inits[f"fc{i}.bias"] = rng.standard_normal(fan_out)
        out = "y" if i == len(dims) - 2 else f"h{i}"
        nodes.append(helper.make_node("Gemm", [x, f"fc{i}.weight", f"fc{i}.bias"], [out],
                                      transB=1, name=f"fc{i}"))
        x = out
        if out != "y":
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"], name=f"relu{i}"))
            x = f"r{i}"
    return make_model(nodes, {"x": (batch, dims[0])}, {"y": (batch, dims[-1])}, inits)


def run_onnxruntime(model: onnx.ModelProto | bytes, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime

    data = model if isinstance(model, bytes) else model.SerializeToString()
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, feed)


def dynamic_mlp() -> onnx.ModelProto:
    """`mlp` with a symbolic batch dim ``N`` on its input and output."""
    model = mlp(1, [8, 16, 4])
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    return model


def manifest_feed(inputs: dict[str, dict], seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs as a model of ``examples/models/models.json`` describes them (its
    ``inputs``): normal floats, integers (token ids) drawn from their ``range``."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, spec in inputs.items():
        if spec["dtype"] == "float32":
            arrays[name] = rng.standard_normal(spec["shape"]).astype(np.float32)
        else:
            low, high = spec["range"]
            arrays[name] = rng.integers(low, high, spec["shape"]).astype(spec["dtype"])
    return arrays


def typed_model(nodes, inputs: dict[str, tuple[np.dtype, tuple[int, ...]]],
                outputs: dict[str, np.dtype], constants: dict[str, np.ndarray] | None = None,
                opset: int = 18) -> onnx.ModelProto:
    """A model of `nodes` with typed inputs and outputs: `inputs` name -> (dtype, shape),
    `outputs` name -> dtype (shapes inferred), `constants` as initializers."""
    def info(name, dtype, shape=None):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)

    graph = helper.make_graph(
        nodes, "typed", [info(n, d, list(s)) for n, (d, s) in inputs.items()],
        [info(n, d) for n, d in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (constants or {}).items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 10
    return proto


def reference_conv(problem: Any, x: np.ndarray, w: np.ndarray,
                   bias: np.ndarray | None) -> np.ndarray:
    """The convolution in float64: zero-padded input, one strided, dilated window per tap."""
    p = problem
    n, c, h, wd = p.input_shape
    top, left, bottom, right = p.pads
    padded = np.zeros((n, c, h + top + bottom, wd + left + right))
    padded[:, :, top:top + h, left:left + wd] = x
    (oh, ow), (sh, sw), (dh, dw) = p.out_hw, p.strides, p.dilations
    y = np.zeros(p.out_shape)
    cg, cog = p.group_in, p.group_out
    for g in range(p.groups):
        for kh in range(p.kernel[0]):
            for kw in range(p.kernel[1]):
                window = padded[:, g * cg:(g + 1) * cg,
                                kh * dh:kh * dh + (oh - 1) * sh + 1:sh,
                                kw * dw:kw * dw + (ow - 1) * sw + 1:sw]
                taps = w[g * cog:(g + 1) * cog, :, kh, kw].astype(np.float64)
                y[:, g * cog:(g + 1) * cog] += np.einsum("nchw,oc->nohw", window, taps)
    if bias is not None:
        y += bias.astype(np.float64)[None, :, None, None]
    return y


def to_float16(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` in float16 the way an exporter's ``model.half()`` gives it: every float tensor
    (initializers, ``Constant`` and ``ConstantOfShape`` values, graph inputs and outputs) is
    float16 (values past float16's range become infinities, as a -3.4e38 attention mask
    does), a ``Cast`` to float casts to float16, and ``value_info`` is dropped (stale)."""
    import warnings

    model = onnx.ModelProto.FromString(model.SerializeToString())

    def half(t: onnx.TensorProto) -> None:
        if t.data_type == TensorProto.FLOAT:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # overflow to inf, on purpose
                t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))

    graph = model.graph
    for t in graph.initializer:
        half(t)
    for v in (*graph.input, *graph.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del graph.value_info[:]
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                half(a.t)
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    return model


def post_ln_block(m: int, d: int, seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """BERT's post-LN step in float32, ``h = LayerNorm(x); y = h @ w + b + h``: the layer
    norm feeds a matmul and the residual add. The model of an ``(m, d)`` input ``x`` and
    its weights (``scale``, ``bias``, ``w``, ``b``)."""
    rng = np.random.default_rng(seed)
    weights = {"scale": 1 + rng.standard_normal(d) / 4, "bias": rng.standard_normal(d) / 4,
               "w": rng.standard_normal((d, d)) / np.sqrt(d), "b": rng.standard_normal(d)}
    weights = {k: v.astype(np.float32) for k, v in weights.items()}
    nodes = [helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["h"], axis=-1, epsilon=1e-5),
             helper.make_node("MatMul", ["h", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Add", ["a", "h"], ["y"])]
    return make_model(nodes, {"x": (m, d)}, {"y": (m, d)}, weights), weights


def upcast_attention_block(m: int, d: int, seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A float16 model's attention step as exporters write one: the layer norm and the
    softmax computed in float32 between ``Cast``s, the matmuls in float16::

        h = f16(LayerNorm(f32(x)));  p = f16(Softmax(f32(h @ wq)));  y = p @ wv + h

    The model of an ``(m, d)`` float16 ``x`` and its weights (``scale``, ``bias`` float32;
    ``wq``, ``wv`` float16)."""
    rng = np.random.default_rng(seed)
    weights = {"scale": (1 + rng.standard_normal(d) / 4).astype(np.float32),
               "bias": (rng.standard_normal(d) / 4).astype(np.float32),
               "wq": (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float16),
               "wv": (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float16)}
    cast = {"to": TensorProto.FLOAT}
    nodes = [helper.make_node("Cast", ["x"], ["x32"], **cast),
             helper.make_node("LayerNormalization", ["x32", "scale", "bias"], ["h32"], axis=-1, epsilon=1e-5),
             helper.make_node("Cast", ["h32"], ["h"], to=TensorProto.FLOAT16),
             helper.make_node("MatMul", ["h", "wq"], ["s"]),
             helper.make_node("Cast", ["s"], ["s32"], **cast),
             helper.make_node("Softmax", ["s32"], ["p32"], axis=-1),
             helper.make_node("Cast", ["p32"], ["p"], to=TensorProto.FLOAT16),
             helper.make_node("MatMul", ["p", "wv"], ["a"]),
             helper.make_node("Add", ["a", "h"], ["y"])]
    return typed_model(nodes, {"x": (np.float16, (m, d))}, {"y": np.float16}, weights), weights
