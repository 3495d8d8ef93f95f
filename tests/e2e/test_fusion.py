"""Post-scheduling fusion end to end: each pattern compiled fused and unfused, run on emu
and compared with onnxruntime (max |error| / max |onnxruntime| < 1e-4), and the number of
kernels that fusion leaves.

The shapes are chosen so that tiles overhang (guarded loads and stores: a prologue under a
guard must still give 0 outside, an epilogue must not store outside), operands broadcast,
and reshapes split and merge dims.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from models import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

import tmlir

RTOL = 1e-4


@dataclass
class Case:
    """An ONNX graph, its float inputs, its constants, and the kernels fusion leaves (by
    schedule template; None: not checked)."""

    nodes: list
    inputs: dict[str, tuple[int, ...]]
    outputs: list[str]
    fused: list[str]
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    types: dict[str, int] = field(default_factory=dict)

    def model(self):
        graph = helper.make_graph(
            self.nodes, "fusion",
            [helper.make_tensor_value_info(n, self.types.get(n, TensorProto.FLOAT), list(s))
             for n, s in self.inputs.items()],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in self.outputs],
            [numpy_helper.from_array(np.asarray(v), n) for n, v in self.constants.items()])
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        proto.ir_version = 10
        return proto


def node(op: str, inputs: list[str], outputs: list[str] | str, **attributes):
    return helper.make_node(op, inputs, [outputs] if isinstance(outputs, str) else outputs,
                            **attributes)


def weight(*shape: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + sum(shape))
    return (rng.standard_normal(shape) / np.sqrt(shape[-1] if shape else 1)).astype(np.float32)


def ints(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


MM, CONV, EW, SOFTMAX, LN, DM, REDUCE = ("matmul_simt", "conv2d_implicit_gemm", "elementwise",
                                         "reduce", "reduce", "data_movement", "reduce")
GEMV = "matmul_gemv"  # at most 16 rows

CASES = {
    # matmul, M = 33 and K = 20 not tile multiples: the prologue sits under the load guards
    "matmul_prologue_under_guards": Case(
        [node("Add", ["x", "b"], "xb"), node("Relu", ["xb"], "a"), node("MatMul", ["a", "w"], "y")],
        {"x": (33, 20), "b": (20,)}, ["y"], [MM], {"w": weight(20, 17)}),
    "matmul_both_operands_computed": Case(  # k past K must read 0 on both sides
        [node("Relu", ["x1"], "a"), node("Mul", ["x2", "two"], "b"), node("MatMul", ["a", "b"], "y")],
        {"x1": (9, 20), "x2": (20, 7)}, ["y"], [GEMV], {"two": np.float32(2)}),
    "reduce_of_exp": Case(  # 37 columns on 32-thread rows: the guarded loads give 0, not exp(0)
        [node("Exp", ["x"], "e"), node("ReduceSum", ["e", "axes"], "y", keepdims=0)],
        {"x": (5, 37)}, ["y"], [REDUCE], {"axes": ints(1)}),
    "transpose_into_matmul_load": Case(  # BERT's heads as a prologue
        [node("Transpose", ["x"], "t", perm=[0, 2, 1, 3]), node("MatMul", ["t", "w"], "y")],
        {"x": (2, 6, 3, 8)}, ["y"], [MM], {"w": weight(8, 5)}),
    "matmul_epilogue_head_split": Case(  # bias, reshape and transpose in the epilogue
        [node("MatMul", ["x", "w"], "m"), node("Add", ["m", "b"], "mb"),
         node("Reshape", ["mb", "heads"], "h"), node("Transpose", ["h"], "y", perm=[0, 2, 1, 3])],
        {"x": (1, 10, 12)}, ["y"], [GEMV], {"w": weight(12, 12), "b": weight(12),
                                          "heads": ints(1, 10, 3, 4)}),
    "matmul_epilogue_heads_merged": Case(  # the attention output: transpose, reshape back
        [node("MatMul", ["p", "v"], "c"), node("Transpose", ["c"], "ct", perm=[0, 2, 1, 3]),
         node("Reshape", ["ct", "merged"], "y")],
        {"p": (1, 3, 10, 10), "v": (1, 3, 10, 4)}, ["y"], [MM], {"merged": ints(1, 10, 12)}),
    "conv_bias_relu_residual": Case(
        [node("Conv", ["x", "w", "b"], "c", pads=[1, 1, 1, 1]), node("Add", ["c", "r"], "s"),
         node("Relu", ["s"], "y")],
        {"x": (2, 4, 9, 9), "r": (2, 6, 9, 9)}, ["y"], [CONV],
        {"w": weight(6, 4, 3, 3), "b": weight(6)}),
    "relu_into_conv1d": Case(  # a 1-D conv (the 2-D template on views) copies x with cp.async
        [node("Relu", ["x"], "r"), node("Conv", ["r", "w"], "y", pads=[1, 1])],  # unless told: fusion
        {"x": (2, 4, 21)}, ["y"], [CONV], {"w": weight(6, 4, 3)}),  # turns the copies into loads
    "pad_into_conv": Case(  # the conv's loads read through the pad (and its zeros)
        [node("Pad", ["x", "pads"], "p"), node("Conv", ["p", "w"], "y")],
        {"x": (1, 3, 7, 8)}, ["y"], [CONV], {"w": weight(5, 3, 3, 3),
                                             "pads": ints(0, 0, 2, 1, 0, 0, 1, 2)}),
    "softmax_prologue": Case(  # the attention scale and mask
        [node("Mul", ["x", "s"], "xs"), node("Add", ["xs", "mask"], "z"),
         node("Softmax", ["z"], "y", axis=-1)],
        {"x": (2, 3, 7, 7), "mask": (1, 1, 7, 7)}, ["y"], [SOFTMAX],
        {"s": np.float32(0.125)}),
    "layernorm_prologue": Case(  # the residual add
        [node("Add", ["a", "b"], "s"),
         node("LayerNormalization", ["s", "g", "beta"], "y", axis=-1, epsilon=1e-5)],
        {"a": (3, 10, 24), "b": (3, 10, 24)}, ["y"], [LN], {"g": weight(24), "beta": weight(24)}),
    "elementwise_chain": Case(
        [node("Transpose", ["x"], "t", perm=[1, 0]), node("Mul", ["t", "z"], "m"),
         node("Add", ["m", "one"], "a"), node("Sigmoid", ["a"], "y")],
        {"x": (37, 19), "z": (19, 1)}, ["y"], [EW], {"one": np.float32(1.0)}),
    "gelu_diamond_epilogue": Case(  # x * (erf(x / sqrt 2) + 1) / 2 reads x twice
        [node("MatMul", ["x", "w"], "m"), node("Add", ["m", "b"], "h"),
         node("Div", ["h", "sqrt2"], "d"), node("Erf", ["d"], "e"), node("Add", ["e", "one"], "f"),
         node("Mul", ["h", "f"], "g"), node("Mul", ["g", "half"], "y")],
        {"x": (9, 16)}, ["y"], [GEMV], {"w": weight(16, 24), "b": weight(24),
                                      "sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1),
                                      "half": np.float32(0.5)}),
    "value_with_two_users_not_fused_into_both": Case(
        [node("Relu", ["x"], "r"), node("MatMul", ["r", "w1"], "y1"),
         node("MatMul", ["r", "w2"], "y2")],
        {"x": (8, 16)}, ["y1", "y2"], [EW, GEMV, GEMV], {"w1": weight(16, 4), "w2": weight(16, 5)}),
    "no_fusion_across_a_graph_output": Case(
        [node("MatMul", ["x", "w"], "y1"), node("Relu", ["y1"], "y2")],
        {"x": (8, 16)}, ["y1", "y2"], [GEMV, EW], {"w": weight(16, 4)}),
    "broadcast_is_no_epilogue": Case(  # (8, 1) + (8, 5): one product feeds five sums
        [node("MatMul", ["x", "w"], "m"), node("Add", ["m", "z"], "y")],
        {"x": (8, 16), "z": (8, 5)}, ["y"], [GEMV, EW], {"w": weight(16, 1)}),
    # The small-M template: B stored N x K (Gemm transB) in 16-byte vectors, 37 columns on
    # 8-column blocks (clamped loads, guarded stores), bias and ReLU in the epilogue.
    "gemv_linear_relu": Case(
        [node("Gemm", ["x", "w", "b"], "g", transB=1), node("Relu", ["g"], "y")],
        {"x": (1, 68)}, ["y"], [GEMV], {"w": weight(37, 68), "b": weight(37)}),
    # relu(x) @ w: the prologue computes A, which the template then reads element by element
    # (A of B-stored-N-x-K matmuls is otherwise read in vectors too).
    "gemv_prologue_on_a": Case(
        [node("Relu", ["x"], "r"), node("Gemm", ["r", "w"], "y", transB=1)],
        {"x": (3, 132)}, ["y"], [GEMV], {"w": weight(20, 132)}),
    "gemv_prologue_on_a_kn": Case(
        [node("Relu", ["x"], "r"), node("MatMul", ["r", "w"], "m"), node("Add", ["m", "b"], "y")],
        {"x": (3, 64)}, ["y"], [GEMV], {"w": weight(64, 36), "b": weight(36)}),
    # A batch of 2 x 3 rows against an unbatched B: 6 rows in one small-M kernel.
    "gemv_folded_batch": Case(
        [node("MatMul", ["x", "w"], "m"), node("Add", ["m", "b"], "y")],
        {"x": (2, 3, 16)}, ["y"], [GEMV], {"w": weight(16, 44), "b": weight(3, 1)}),
    "split_takes_a_prologue": Case(
        [node("Relu", ["x"], "r"), node("Split", ["r", "sizes"], ["y1", "y2"], axis=1)],
        {"x": (4, 10)}, ["y1", "y2"], [DM], {"sizes": ints(3, 7)}),
    "concat_into_reduction": Case(
        [node("Concat", ["a", "b"], "c", axis=1),
         node("ReduceSum", ["c", "axes"], "y", keepdims=1)],
        {"a": (3, 5, 4), "b": (3, 2, 4)}, ["y"], [REDUCE], {"axes": ints(1)}),
    # graph-merge-matmuls: three biased projections of x (Gemm, B stored N x K) become one
    # matmul of 3 x 20 columns; the slices, the attention-like products and the Tanh go into
    # the one elementwise kernel that reads them. Then 40 rows on the SIMT template, B K x N,
    # a prologue (Relu) computing the shared A and two epilogue chains.
    "projections_merged_small_m": Case(
        [node("Gemm", ["x", "wq", "bq"], "q", transB=1), node("Gemm", ["x", "wk", "bk"], "k", transB=1),
         node("Gemm", ["x", "wv", "bv"], "v", transB=1), node("Mul", ["q", "k"], "qk"),
         node("Add", ["qk", "v"], "s"), node("Tanh", ["s"], "y")],
        {"x": (6, 36)}, ["y"], [GEMV, EW],
        {"wq": weight(20, 36), "bq": weight(20), "wk": weight(20, 36, seed=1), "bk": weight(20, seed=1),
         "wv": weight(20, 36, seed=2), "bv": weight(20, seed=2)}),
    "projections_merged_simt": Case(
        [node("Relu", ["x"], "r"), node("MatMul", ["r", "w1"], "m1"), node("MatMul", ["r", "w2"], "m2"),
         node("Tanh", ["m1"], "y1"), node("Add", ["m2", "b"], "y2")],
        {"x": (40, 24), "b": (12,)}, ["y1", "y2"], [MM, EW, EW], {"w1": weight(24, 20), "w2": weight(24, 12)}),
    "rank0_chain": Case(
        [node("Mul", ["x", "two"], "m"), node("Relu", ["m"], "y")],
        {"x": ()}, ["y"], [EW], {"two": np.float32(2)}),
    "resize_into_pool": Case(
        [node("Resize", ["x", "", "scales"], "u", mode="linear"),
         node("MaxPool", ["u"], "y", kernel_shape=[3, 3], strides=[2, 2])],
        {"x": (1, 2, 5, 6)}, ["y"], ["pool"], {"scales": np.array([1, 1, 2, 2], np.float32)}),
    "gather_with_int_prologue": Case(  # ids cast to int32, an embedding lookup, a position add
        [node("Cast", ["ids"], "i32", to=TensorProto.INT32), node("Gather", ["table", "i32"], "e"),
         node("Add", ["e", "pos"], "y")],
        {"ids": (2, 7)}, ["y"], [DM], {"table": weight(11, 6), "pos": weight(7, 6)},
        {"ids": TensorProto.INT64}),
}


def feed(case: Case, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, shape in case.inputs.items():
        if case.types.get(name) == TensorProto.INT64:
            arrays[name] = rng.integers(-3, 11, shape).astype(np.int64)
        else:
            arrays[name] = rng.standard_normal(shape).astype(np.float32)
    return arrays


@pytest.mark.parametrize("name", CASES)
def test_fused_and_unfused_match_onnxruntime(name):
    case = CASES[name]
    model = case.model()
    data = feed(case)
    want = run_onnxruntime(model, data)
    kernels = {}
    for fusion in (True, False):
        session = tmlir.InferenceSession(model, device="emu", fusion=fusion)
        got = session.run(None, data)
        for output, g, w in zip(case.outputs, got, want, strict=True):
            assert g.shape == w.shape, output
            error = float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-30))
            assert error < RTOL, f"{output} (fusion={fusion}): relative error {error:.2e}"
        kernels[fusion] = [k.template for k in session.program.kernels]
    assert kernels[True] == case.fused
