"""Random graphs through fusion: anchors (matmul, softmax, reductions, layer norm) among
random chains of injective ops (elementwise with broadcast constants and inputs,
transposes, reshapes that split and merge dims, slices, residual adds that make values
with two readers, extra graph outputs), compiled fused and unfused and run on emu against
onnxruntime. 12 graphs in the normal suite, 150 more under ``-m slow``.
"""

from __future__ import annotations

import numpy as np
import pytest
from models import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

import tmlir

RTOL = 2e-4


class RandomGraph:
    """Builds one random ONNX graph from a seed."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inputs: dict[str, tuple[int, ...]] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.outputs: list[str] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def add(self, op: str, inputs: list[str], shape: tuple[int, ...], **attributes) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attributes))
        self.shapes[out] = shape
        return out

    def constant(self, array: np.ndarray) -> str:
        name = self.name("c")
        self.constants[name] = array
        return name

    def new_input(self, shape: tuple[int, ...]) -> str:
        name = self.name("in")
        self.inputs[name] = shape
        self.shapes[name] = shape
        return name

    def broadcastable(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        dims = [1 if self.rng.random() < 0.4 else n for n in shape]
        return tuple(dims[int(self.rng.integers(0, len(dims) + 1)):])

    def step(self, x: str, history: list[str]) -> str:
        shape = self.shapes[x]
        r = self.rng
        kind = r.choice(["unary", "binary_const", "binary_input", "transpose", "reshape", "slice",
                         "anchor", "anchor", "residual"])
        if kind == "unary":
            op = str(r.choice(["Relu", "Tanh", "Neg", "Sigmoid", "Abs"]))
            return self.add(op, [x], shape)
        if kind in ("binary_const", "binary_input"):
            other_shape = self.broadcastable(shape)
            other = (self.constant(r.standard_normal(other_shape).astype(np.float32))
                     if kind == "binary_const" else self.new_input(other_shape))
            op = str(r.choice(["Add", "Mul", "Sub"]))
            operands = [x, other] if r.random() < 0.5 else [other, x]
            return self.add(op, operands, shape)
        if kind == "transpose" and len(shape) > 1:
            perm = [int(p) for p in r.permutation(len(shape))]
            return self.add("Transpose", [x], tuple(shape[p] for p in perm), perm=perm)
        if kind == "reshape":
            return self.reshape(x, shape)
        if kind == "slice" and max(shape) > 2:
            axis = int(np.argmax(shape))
            start = int(r.integers(0, shape[axis] // 2))
            end = int(r.integers(start + 1, shape[axis] + 1))
            sliced = list(shape)
            sliced[axis] = end - start
            return self.add("Slice", [x, self.constant(np.array([start], np.int64)),
                                      self.constant(np.array([end], np.int64)),
                                      self.constant(np.array([axis], np.int64))], tuple(sliced))
        if kind == "residual":
            same = [h for h in history if self.shapes[h] == shape and h != x]
            if same:
                return self.add("Add", [x, same[int(r.integers(0, len(same)))]], shape)
        if kind == "anchor":
            return self.anchor(x, shape)
        return self.add("Relu", [x], shape)

    def reshape(self, x: str, shape: tuple[int, ...]) -> str:
        dims = list(shape)
        d = int(self.rng.integers(0, len(dims)))
        if d + 1 < len(dims) and self.rng.random() < 0.5:  # merge two dims
            dims[d:d + 2] = [dims[d] * dims[d + 1]]
        else:  # split one (or add a unit dim)
            n = dims[d]
            factor = next((f for f in (2, 3, 5) if n % f == 0 and n > f), 1)
            dims[d:d + 1] = [factor, n // factor]
        return self.add("Reshape", [x, self.constant(np.array(dims, np.int64))], tuple(dims))

    def anchor(self, x: str, shape: tuple[int, ...]) -> str:
        r = self.rng
        kind = r.choice(["matmul", "softmax", "reduce", "layernorm"])
        if kind == "matmul" and len(shape) > 1:  # (rank >= 2: the graphs stay as generated before 1-D MatMul)
            n = int(r.integers(1, 12))
            w = self.constant((r.standard_normal((shape[-1], n)) / np.sqrt(shape[-1]))
                              .astype(np.float32))
            return self.add("MatMul", [x, w], (*shape[:-1], n))
        if kind in ("softmax", "matmul"):
            return self.add("Softmax", [x], shape, axis=-1)
        if kind == "reduce":
            return self.add("ReduceSum", [x, self.constant(np.array([-1], np.int64))],
                            (*shape[:-1], 1), keepdims=1)
        n = shape[-1]
        return self.add("LayerNormalization",
                        [x, self.constant(r.standard_normal(n).astype(np.float32)),
                         self.constant(r.standard_normal(n).astype(np.float32))],
                        shape, axis=-1)

    def build(self):
        rank = int(self.rng.integers(1, 5))
        x = self.new_input(tuple(int(self.rng.integers(1, 9)) for _ in range(rank)))
        history = [x]
        for _ in range(int(self.rng.integers(4, 9))):
            x = self.step(x, history)
            history.append(x)
            if self.rng.random() < 0.15 and x not in self.inputs:
                self.outputs.append(x)  # also a graph output: nothing fuses across it
        if x not in self.outputs:
            self.outputs.append(x)
        graph = helper.make_graph(
            self.nodes, "random",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
             for n, s in self.inputs.items()],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in self.outputs],
            [numpy_helper.from_array(v, n) for n, v in self.constants.items()])
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        proto.ir_version = 10
        return proto


def check(seed: int) -> None:
    graph = RandomGraph(seed)
    model = graph.build()
    rng = np.random.default_rng(seed)
    data = {n: rng.standard_normal(s).astype(np.float32) for n, s in graph.inputs.items()}
    want = run_onnxruntime(model, data)
    for fusion in (True, False):
        got = tmlir.InferenceSession(model, device="emu", fusion=fusion).run(None, data)
        for name, g, w in zip(graph.outputs, got, want, strict=True):
            assert g.shape == w.shape, name
            error = float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-6)) if w.size else 0.0
            assert error < RTOL, f"seed {seed}, {name} (fusion={fusion}): error {error:.2e}"


@pytest.mark.parametrize("seed", range(12))
def test_random_graph(seed):
    check(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12, 162))
def test_random_graph_slow(seed):
    check(seed)
