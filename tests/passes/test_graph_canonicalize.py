"""graph-canonicalize: models with transpose/reshape chains and no-op copies, compiled with
the pass and run on emu, give onnxruntime's results, and the chains are gone.

Data movement must be exact, so outputs are compared with ``assert_array_equal`` where
the model only moves data, and within 1e-5 (relative to the largest output) where it
multiplies. Each model is also compiled without the pass, to check that the kernel count
drops. The attention scores cut out of the committed ViT, BERT and GPT-2 are checked the
same way. A randomized check runs chains of transposes, reshapes and matmuls through the
pass and a small numpy interpreter of those three ops (no compiling), exactly.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnx.utils
import pytest
from models import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.parser import Parser

from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.dialects import graph
from tmlir.frontends.onnx import import_onnx
from tmlir.passes.graph_canonicalize import GraphCanonicalize
from tmlir.passes.lower_to_cuda import pipeline
from tmlir.registry import make_context

RTOL = 1e-5
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "models"


def model(nodes, inputs: dict[str, tuple[int, ...]], outputs: list[str],
          constants: dict[str, np.ndarray] | None = None, opset: int = 18):
    """An ONNX model whose `constants` keep their dtype (int64 shapes, float32 weights)."""
    graph_proto = helper.make_graph(
        nodes, "canonicalize",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (constants or {}).items()])
    proto = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 10
    return proto


def ints(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def graph_ops(module: ModuleOp) -> Counter[str]:
    return Counter(op.name for op in module.walk() if op.name.startswith("graph.")
                   and not isinstance(op, graph.WeightOp))


class Compiled:
    """An ONNX model imported, optionally canonicalized, lowered and run on emu."""

    def __init__(self, proto, canonicalize: bool, fusion: bool = False) -> None:
        imported = import_onnx(proto)
        ctx = make_context(weights=imported.weights)
        if canonicalize:
            GraphCanonicalize().apply(ctx, imported.module)
            imported.module.verify()
        self.ops = graph_ops(imported.module)
        self.weights = imported.weights
        self.output_names = imported.output_names
        # lower-to-cuda, without fusion unless asked for (kernels are counted), and without
        # `canonicalize` unless asked for
        for step in pipeline(fusion=fusion):
            if not isinstance(step, GraphCanonicalize):
                step.apply(ctx, imported.module)
        self.program = emit_cuda(imported.module)

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        buffers = []
        for buf in self.program.buffers:
            if buf.kind == "input":
                buffers.append(np.ascontiguousarray(feed[buf.source], buf.dtype).reshape(buf.shape))
            elif buf.kind == "weight":
                buffers.append(np.ascontiguousarray(self.weights[buf.source], buf.dtype)
                               .reshape(buf.shape))
            else:
                buffers.append(np.zeros(buf.shape, buf.dtype))
        signatures = [k.signature for k in self.program.kernels]
        with compile_emu(self.program.source, signatures) as emu:
            for launch in self.program.launches:
                emu.launch(launch.kernel, launch.grid, launch.block, [buffers[i] for i in launch.args])
        outputs = {b.source: buffers[i].reshape(b.shape) for i, b in enumerate(self.program.buffers)
                   if b.kind == "output"}
        return [outputs[name] for name in self.output_names]


def check(proto, *, exact: bool = True) -> tuple[Compiled, Compiled]:
    """Compile `proto` with and without the pass, and with it and fusion; all three match
    onnxruntime on random inputs. Returns (canonicalized, plain)."""
    rng = np.random.default_rng(0)
    constants = {t.name for t in proto.graph.initializer}
    feed = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
            .astype(np.float32) for i in proto.graph.input if i.name not in constants}
    want = run_onnxruntime(proto, feed)
    compiled = Compiled(proto, canonicalize=True), Compiled(proto, canonicalize=False)
    for c in (*compiled, Compiled(proto, canonicalize=True, fusion=True)):
        for name, g, w in zip(c.output_names, c.run(feed), want, strict=True):
            assert g.shape == w.shape, name
            if exact:
                np.testing.assert_array_equal(g, w, err_msg=name)
            else:
                assert np.abs(g - w).max() <= RTOL * np.abs(w).max(), name
    return compiled


def canonicalized(proto) -> ModuleOp:
    """`proto` imported and canonicalized (graph level)."""
    imported = import_onnx(proto)
    GraphCanonicalize().apply(make_context(weights=imported.weights), imported.module)
    imported.module.verify()
    return imported.module


def kernels(c: Compiled) -> int:
    return len(c.program.launches)


# -- models ---------------------------------------------------------------------------------


def test_attention_as_exported():
    """BERT/GPT-2 self-attention as torch's exporter writes it (heads split by Reshape and
    Transpose, K^T through a Reshape to 3-D and back): the two transposes of K become one."""
    rng = np.random.default_rng(1)
    seq, hidden, heads = 16, 32, 2
    head = hidden // heads
    weights = {f"w{n}": (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
               for n in "qkv"}
    nodes = []
    for n in "qkv":
        nodes += [helper.make_node("MatMul", ["x", f"w{n}"], [f"{n}_proj"]),
                  helper.make_node("Reshape", [f"{n}_proj", "heads_shape"], [f"{n}_heads"]),
                  helper.make_node("Transpose", [f"{n}_heads"], [f"{n}_t"], perm=[0, 2, 1, 3])]
    nodes += [
        helper.make_node("Reshape", ["k_t", "batch3_shape"], ["k3"]),
        helper.make_node("Transpose", ["k3"], ["k3_t"], perm=[0, 2, 1]),
        helper.make_node("Reshape", ["k3_t", "kt4_shape"], ["k_tt"]),
        helper.make_node("MatMul", ["q_t", "k_tt"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v_t"], ["context"]),
        helper.make_node("Transpose", ["context"], ["context_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["context_t", "out_shape"], ["y"]),
    ]
    constants = {**weights, "heads_shape": ints(1, seq, heads, head),
                 "batch3_shape": ints(heads, seq, head), "kt4_shape": ints(1, heads, head, seq),
                 "out_shape": ints(1, seq, hidden), "scale": np.float32(1 / np.sqrt(head))}
    canonical, plain = check(model(nodes, {"x": (1, seq, hidden)}, ["y"], constants), exact=False)
    assert plain.ops["graph.transpose"] == 5
    assert canonical.ops["graph.transpose"] == 4
    assert kernels(canonical) == kernels(plain) - 1


@pytest.mark.parametrize("name, scores", [("vit", "val_74"), ("bert", "val_101"), ("gpt2", "val_157")])
def test_exported_attention_scores(tmp_path, name, scores):
    """The first attention's scores of the committed ViT, BERT and GPT-2 (cut out of the
    model: the rest does not import yet): K's two transposes become one."""
    path = tmp_path / f"{name}_scores.onnx"
    onnx.utils.extract_model(str(EXAMPLES / f"{name}.onnx"), str(path), ["layer_norm"], [scores])
    canonical, plain = check(onnx.load(path), exact=False)
    assert (plain.ops["graph.transpose"], canonical.ops["graph.transpose"]) == (3, 2)
    assert kernels(canonical) == kernels(plain) - 1


def test_transpose_chains():
    """Transposes that compose to one, to none, and one that only moves extent-1 dims."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["a"], perm=[2, 0, 1]),
        helper.make_node("Transpose", ["a"], ["b"], perm=[2, 0, 1]),
        helper.make_node("Relu", ["b"], ["y0"]),
        helper.make_node("Transpose", ["x"], ["c"], perm=[1, 2, 0]),
        helper.make_node("Transpose", ["c"], ["d"], perm=[2, 0, 1]),
        helper.make_node("Neg", ["d"], ["y1"]),
        helper.make_node("Transpose", ["u"], ["e"], perm=[1, 0, 3, 2]),
        helper.make_node("Abs", ["e"], ["y2"]),
    ]
    canonical, plain = check(model(nodes, {"x": (3, 70, 5), "u": (1, 9, 1, 7)}, ["y0", "y1", "y2"]))
    assert plain.ops["graph.transpose"] == 5
    assert canonical.ops["graph.transpose"] == 1
    assert kernels(canonical) == kernels(plain) - 4


def test_reshape_chains():
    """Unsqueeze, Reshape, Flatten and Squeeze in a row: one reshape, or none when the
    chain returns to the input's shape (returning the input itself needs a copy)."""
    nodes = [
        helper.make_node("Unsqueeze", ["x", "axes0"], ["a"]),
        helper.make_node("Reshape", ["a", "shape"], ["b"]),
        helper.make_node("Flatten", ["b"], ["c"], axis=3),
        helper.make_node("Relu", ["c"], ["y0"]),
        helper.make_node("Reshape", ["c", "back"], ["d"]),
        helper.make_node("Squeeze", ["d", "axes0"], ["y1"]),
    ]
    constants = {"axes0": ints(0), "shape": ints(1, 4, 6, 5), "back": ints(1, 4, 30)}
    canonical, plain = check(model(nodes, {"x": (4, 30)}, ["y0", "y1"], constants))
    assert plain.ops["graph.reshape"] == 5
    assert canonical.ops["graph.reshape"] == 1
    assert kernels(canonical) == kernels(plain)


def test_no_op_copies():
    """Expand and Tile to the same shape, Pad by zeros, Resize by 1, one-input Concat and
    Max, ReduceMean over an extent-1 dim: all vanish, the outputs become copies of the
    inputs. (The frontend already drops all but the Resize and the ReduceMean.)"""
    nodes = [
        helper.make_node("Expand", ["x", "same"], ["e"]),
        helper.make_node("Tile", ["e", "ones"], ["t"]),
        helper.make_node("Pad", ["t", "zero_pads"], ["p"], mode="edge"),
        helper.make_node("Resize", ["p", "", "unit_scales"], ["r"], mode="linear"),
        helper.make_node("Concat", ["r"], ["c"], axis=1),
        helper.make_node("Max", ["c"], ["y0"]),
        helper.make_node("ReduceMean", ["u", "axis1"], ["y1"], keepdims=1),
    ]
    constants = {"same": ints(3, 70, 5), "ones": ints(1, 1, 1), "zero_pads": ints(0, 0, 0, 0, 0, 0),
                 "unit_scales": np.ones(3, np.float32), "axis1": ints(1)}
    canonical, plain = check(model(nodes, {"x": (3, 70, 5), "u": (6, 1, 9)}, ["y0", "y1"], constants))
    assert plain.ops == {"graph.resize": 1, "graph.reduce_mean": 1}
    assert sum(canonical.ops.values()) == 0
    assert kernels(canonical) == 2  # the two outputs are copies of the inputs


def test_copy_chains():
    """Expand of Expand, Tile of Tile, Slice of Slice (with negative steps): one op each."""
    nodes = [
        helper.make_node("Expand", ["x", "shape1"], ["e1"]),
        helper.make_node("Expand", ["e1", "shape2"], ["y0"]),
        helper.make_node("Tile", ["x", "reps1"], ["t1"]),
        helper.make_node("Tile", ["t1", "reps2"], ["y1"]),
        helper.make_node("Slice", ["z", "s1", "e1_", "a01", "st1"], ["c1"]),
        helper.make_node("Slice", ["c1", "s2", "e2_", "a01", "st2"], ["y2"]),
    ]
    constants = {"shape1": ints(3, 4), "shape2": ints(2, 3, 4), "reps1": ints(1, 2), "reps2": ints(2, 3),
                 "s1": ints(1, -1), "e1_": ints(40, -100), "st1": ints(2, -1),
                 "s2": ints(-1, 1), "e2_": ints(-100, 1000), "st2": ints(-1, 3), "a01": ints(0, 1)}
    canonical, plain = check(model(nodes, {"x": (3, 1), "z": (40, 33)}, ["y0", "y1", "y2"], constants))
    for op in ("graph.expand", "graph.tile", "graph.slice"):
        assert (plain.ops[op], canonical.ops[op]) == (2, 1), op
    assert kernels(canonical) == kernels(plain) - 3


def test_transpose_into_matmul():
    """MatMul of transposed operands (last two dims): the transposes become matmul flags.
    (The frontend folds a Transpose of an initializer into a new weight by itself.)"""
    nodes = [
        helper.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1]),
        helper.make_node("Transpose", ["b"], ["bt"], perm=[1, 0]),
        helper.make_node("MatMul", ["at", "bt"], ["y"]),
    ]
    canonical, plain = check(model(nodes, {"a": (2, 40, 17), "b": (24, 40)}, ["y"]), exact=False)
    assert plain.ops["graph.transpose"] == 2
    assert canonical.ops["graph.transpose"] == 0
    assert kernels(canonical) == kernels(plain) - 2


def test_expand_into_elementwise():
    """An Expand before a broadcasting Add is dropped; one the Add needs stays."""
    nodes = [
        helper.make_node("Expand", ["b", "shape"], ["be"]),
        helper.make_node("Add", ["x", "be"], ["y0"]),
        helper.make_node("Add", ["b", "be"], ["y1"]),
    ]
    canonical, plain = check(model(nodes, {"x": (2, 33, 70), "b": (33, 1)}, ["y0", "y1"],
                                   {"shape": ints(33, 70)}))
    assert plain.ops["graph.expand"] == 1 and canonical.ops["graph.expand"] == 1
    assert kernels(canonical) == kernels(plain)
    module = canonicalized(model(nodes, {"x": (2, 33, 70), "b": (33, 1)}, ["y0", "y1"],
                                 {"shape": ints(33, 70)}))
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    add0, add1 = [op for op in main.walk() if isinstance(op, graph.AddOp)]
    assert add0.rhs is main.args[1]  # b itself, broadcast by the add
    assert isinstance(add1.rhs.owner, graph.ExpandOp)


# -- randomized chains, checked with numpy --------------------------------------------------


def _random_shape(rng: random.Random, total: int) -> list[int]:
    """A random factorization of `total`, with extent-1 dims sprinkled in."""
    shape = []
    while total > 1 and len(shape) < 4 and rng.random() < 0.8:
        factor = rng.choice([d for d in range(2, total + 1) if total % d == 0])
        shape.append(factor)
        total //= factor
    if total > 1 or not shape:
        shape.append(total)
    for _ in range(rng.choice([0, 0, 1, 2])):
        shape.insert(rng.randint(0, len(shape)), 1)
    return shape


def _regroup(rng: random.Random, shape: list[int]) -> list[int]:
    """`shape` with two neighbouring dims merged or one dim split in two (as exporters
    split and merge attention heads)."""
    shape = list(shape)
    splittable = [d for d, n in enumerate(shape) if any(n % f == 0 for f in range(2, n))]
    if len(shape) >= 2 and (not splittable or rng.random() < 0.5):
        d = rng.randrange(len(shape) - 1)
        return [*shape[:d], shape[d] * shape[d + 1], *shape[d + 2:]]
    if not splittable:
        return [1, *shape]
    d = rng.choice(splittable)
    f = rng.choice([f for f in range(2, shape[d]) if shape[d] % f == 0])
    return [*shape[:d], f, shape[d] // f, *shape[d + 1:]]


def ttype(shape: list[int]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _random_chain(rng: random.Random) -> str:
    """A ``@main`` of transposes and reshapes (some results returned too), then a matmul."""
    total = rng.choice([12, 24, 36, 48, 60])
    shape = _random_shape(rng, total)
    args, lines, results = [f"%x: {ttype(shape)}"], [], []
    value = "%x"
    transpose = rng.random() < 0.5
    for step in range(rng.randint(2, 6)):
        transpose = rng.random() < (0.2 if transpose else 0.8)  # mostly alternating
        if transpose:
            perm = list(range(len(shape)))
            rng.shuffle(perm)
            new = [shape[d] for d in perm]
            lines.append(f"%v{step} = graph.transpose {value} {{perm = array<i64: {', '.join(map(str, perm))}>}}"
                         f" : {ttype(shape)} -> {ttype(new)}")
        else:
            new = _random_shape(rng, total) if rng.random() < 0.3 else _regroup(rng, shape)
            lines.append(f"%v{step} = graph.reshape {value} : {ttype(shape)} -> {ttype(new)}")
        value, shape = f"%v{step}", new
        if rng.random() < 0.2:
            results.append((value, ttype(shape)))
    if len(shape) >= 2:
        flag = rng.choice(["", " {transpose_lhs}"])
        m, k = (shape[-1], shape[-2]) if flag else (shape[-2], shape[-1])
        args.append(f"%w: {ttype([k, 3])}")
        out = [*shape[:-2], m, 3]
        lines.append(f"%y = graph.matmul {value}, %w{flag} : ({ttype(shape)}, {ttype([k, 3])}) -> {ttype(out)}")
        value, shape = "%y", out
    results.append((value, ttype(shape)))
    values, types = ", ".join(v for v, _ in results), ", ".join(t for _, t in results)
    body = "\n    ".join([*lines, f"func.return {values} : {types}"])
    return f"func.func @main({', '.join(args)}) -> ({types}) {{\n    {body}\n}}"


def _evaluate(module: ModuleOp, feeds: list[np.ndarray]) -> list[np.ndarray]:
    """Run ``@main`` of transposes, reshapes and matmuls with numpy."""
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    env = dict(zip(main.args, feeds))
    for op in main.body.block.ops:
        get = [env[v] for v in op.operands]
        if isinstance(op, func.ReturnOp):
            return get
        if isinstance(op, graph.TransposeOp):
            result = np.transpose(get[0], op.permutation)
        elif isinstance(op, graph.ReshapeOp):
            result = get[0].reshape(op.result.type.get_shape())
        else:
            assert isinstance(op, graph.MatmulOp) and op.bias is None, op.name
            lhs = np.swapaxes(get[0], -1, -2) if op.transpose_lhs else get[0]
            rhs = np.swapaxes(get[1], -1, -2) if op.transpose_rhs else get[1]
            result = lhs @ rhs
        assert list(result.shape) == list(op.results[0].type.get_shape()), op.name
        env[op.results[0]] = result
    raise AssertionError("no func.return")


@pytest.mark.parametrize("seed", range(300))
def test_random_transpose_reshape_chains(seed):
    """Same results (exactly: small integers), same signature, never more transposes."""
    rng = random.Random(seed)
    text = _random_chain(rng)
    module = Parser(make_context(), text).parse_module()
    module.verify()
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    signature = main.function_type
    data = np.random.default_rng(seed)
    feeds = [data.integers(-3, 4, a.type.get_shape()).astype(np.float64) for a in main.args
             if isinstance(a.type, TensorType)]
    want = _evaluate(module, feeds)
    before = graph_ops(module)["graph.transpose"]
    GraphCanonicalize().apply(make_context(), module)
    module.verify()
    assert main.function_type == signature
    assert graph_ops(module)["graph.transpose"] <= before, text
    for got, expected in zip(_evaluate(module, feeds), want, strict=True):
        np.testing.assert_array_equal(got, expected, err_msg=text)
