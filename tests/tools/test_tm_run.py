"""``tm-run`` and ``tmlir.runtime.ir_program``: hand-written IR with inline constants runs
and matches numpy; weights given by name or filled, reproducibly by seed; ``--check``
agrees with onnxruntime on a model and catches a program that computes something else;
every user error is one ``tm-run: error:`` line; ``graph-outline-constants`` moves the
data of every element type into the weight table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from models import mlp

from tmlir.dialects import graph
from tmlir.passes.graph_outline_constants import GraphOutlineConstants
from tmlir.registry import make_context
from tmlir.runtime.ir_program import ProgramError, bind_weights, module_weights, parse_ir
from tmlir.tools.tm_run import main

W = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]], np.float32)
IR = """func.func @main(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %w = graph.constant dense<[[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]]> : tensor<2x3xf32>
  %b = graph.constant dense<0.25> : tensor<3xf32>
  %v = graph.weight "v" : tensor<4x3xf32>
  %y = graph.matmul %x, %w, %b : (tensor<4x2xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %s = graph.add %y, %v : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = graph.relu %s : tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}
"""


def _write(tmp_path: Path, name: str, text: str = IR) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        status = main(argv)
    except SystemExit as exc:  # a usage error: argparse exits
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def test_inline_constants_run_and_match_numpy(tmp_path, capsys):
    x = np.random.default_rng(3).standard_normal((4, 2)).astype(np.float32)
    v = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    np.savez(tmp_path / "in.npz", x=x)
    np.save(tmp_path / "v.npy", v)
    status, out, err = _run([_write(tmp_path, "m.mlir"), "--inputs", str(tmp_path / "in.npz"),
                             "--weight", f"v={tmp_path / 'v.npy'}", "--save", str(tmp_path / "out.npz")],
                            capsys)
    assert status == 0, err
    assert out.startswith("r: float32 [4, 3] [")
    got = np.load(tmp_path / "out.npz")["r"]
    np.testing.assert_allclose(got, np.maximum(x @ W + 0.25 + v, 0), rtol=1e-6, atol=1e-6)


def test_random_weights_are_reproducible_by_seed(tmp_path, capsys):
    source = _write(tmp_path, "m.mlir")
    outputs = []
    for seed in (7, 7, 8):
        save = tmp_path / f"out{len(outputs)}.npz"
        status, _, err = _run([source, "--weight", "v=random", "--seed", str(seed), "--save", str(save)],
                              capsys)
        assert status == 0, err
        outputs.append(np.load(save)["r"])
    np.testing.assert_array_equal(outputs[0], outputs[1])
    assert not np.array_equal(outputs[0], outputs[2])


def test_onnx_check_against_onnxruntime(tmp_path, capsys):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(2, [8, 16, 4]), path)
    status, out, err = _run([str(path), "--check", "--runs", "2"], capsys)
    assert status == 0, err
    assert "y: float32 [2, 4]" in out
    assert "check: ok (1 output within rtol 0.0001, atol 1e-05 of onnxruntime)" in out


@pytest.mark.slow
def test_example_model_check_against_onnxruntime(capsys):
    model = Path(__file__).parents[2] / "examples" / "models" / "vit.onnx"
    status, out, err = _run([str(model), "--check"], capsys)
    assert status == 0, err
    assert "check: ok" in out


def test_check_catches_a_program_that_computes_something_else(tmp_path, capsys):
    source = _write(tmp_path, "m.mlir")
    other = _write(tmp_path, "other.mlir", IR.replace("dense<0.25>", "dense<0.5>"))
    status, out, err = _run([source, "--weights", "zeros", "--check"], capsys)
    assert status == 0 and "check r: max abs err 0" in out, err
    status, out, err = _run([source, "--weights", "zeros", "--check", "--check-against-file", other],
                            capsys)
    assert status == 1
    assert "check r: max abs err 0.25" in out and "MISMATCH" in out
    assert err.count("\n") == 1 and err.startswith("tm-run: check failed: 1 of 1 outputs differ")


@pytest.mark.parametrize("args, message", [
    (["{missing}"], "cannot open '{missing}'"),
    (["{bad}"], "{bad}:2:19: operand is used with type tensor<3xf32>, but has been previously"),
    (["{ir}"], "weight 'v' (float32 [4, 3]) has no data: give it by name (tm-run --weight v="),
    (["{ir}", "--weight", "v={v64}"], "weight 'v': expected float32 [4, 3], got float64 [4, 3]"),
    (["{ir}", "--weight", "u=ones"], "--weight u: '{ir}' names no such weight; its weights: ['v']"),
    (["{ir}", "--weights", "zeros", "--input", "y={v64}"], "unknown input 'y'; the program has ['x']"),
    (["{ir}", "--weights", "zeros", "--input", "x={v64}"], "input 'x': expected float32 [4, 2], got float64"),
    (["{ir}", "--weights", "zeros", "-p", "no-such-pass"], "bad pass pipeline 'no-such-pass': "),
    (["{ir}", "--weights", "zeros", "-p", "graph-canonicalize"],
     "'graph.constant' is above the gpu level after the pipeline graph-canonicalize; end it with"),
    (["{ir}", "--weights", "zeros", "--device", "gpu"], "argument --device: invalid choice"),
])
def test_user_errors_are_one_line(tmp_path, capsys, args, message):
    np.save(tmp_path / "v64.npy", np.zeros((4, 3)))
    names = {"missing": str(tmp_path / "missing.mlir"), "ir": _write(tmp_path, "m.mlir"),
             "v64": str(tmp_path / "v64.npy"),
             "bad": _write(tmp_path, "bad.mlir", "func.func @f(%x: tensor<2xf32>) -> tensor<3xf32> {\n"
                           "  %y = graph.relu %x : tensor<3xf32>\n  func.return %y : tensor<3xf32>\n}\n")}
    status, _, err = _run([a.format(**names) for a in args], capsys)
    assert status == 1
    assert err.count("\n") == 1 and err.startswith(f"tm-run: error: {message.format(**names)}"), err


def test_cuda_without_a_gpu_is_one_line(tmp_path, capsys):
    from tmlir.backends.cuda_runtime import cuda_available

    if cuda_available():
        pytest.skip("this machine has a GPU")
    status, _, err = _run([_write(tmp_path, "m.mlir"), "--weights", "zeros", "--device", "cuda"], capsys)
    assert status == 1 and err.count("\n") == 1 and err.startswith("tm-run: error: --device cuda: no CUDA device")


@pytest.mark.parametrize("array", [
    np.array([[1.5, -2.0]], np.float32), np.array([1, -7, 3], np.int64), np.array([3], np.uint8),
    np.array([0.5, 2.0], np.float16), np.array([True, False, True]), np.array(2.5, np.float64),
    np.array([1.5, -2.0], "bfloat16"),
])
def test_outline_moves_the_data_of_every_dtype_into_the_table(array):
    module = parse_ir("func.func @f() {\n  func.return\n}\n")
    function = next(iter(module.ops))
    constant = graph.ConstantOp.from_array(array)
    constant.result.name_hint = "c"
    function.body.block.insert_op_before(constant, function.body.block.first_op)
    module = parse_ir(str(module))  # the printed constant parses back
    ctx = make_context()
    GraphOutlineConstants().apply(ctx, module)
    (weight,) = [op for op in module.walk() if isinstance(op, graph.WeightOp)]
    assert weight.weight_name.data == "c"
    got = ctx.weights["c"]
    assert got.dtype == array.dtype and got.shape == array.shape
    np.testing.assert_array_equal(got, array)


def test_bind_weights_fills_and_checks():
    specs = {"a": ((2, 3), "float32"), "e": ((0, 4), "float32"), "n": ((2,), "int64")}
    table = bind_weights(specs, {"n": "ones"}, fill="zeros")
    assert table["a"].shape == (2, 3) and not table["a"].any() and table["n"].tolist() == [1, 1]
    assert bind_weights(specs, {"n": "ones", "a": "random"}, seed=1)["e"].shape == (0, 4)
    with pytest.raises(ProgramError, match="weight 'a' \\(float32 \\[2, 3\\]\\) has no data"):
        bind_weights(specs, {"n": "ones"})
    assert module_weights(parse_ir(IR)) == {"v": ((4, 3), "float32")}


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["ir", "onnx"])
def test_cuda_run_matches_the_reference(tmp_path, capsys, kind):
    """On a GPU: hand-written IR against the same IR unfused, and an ONNX model against
    onnxruntime, both run with --device cuda."""
    from tmlir.backends.cuda_runtime import cuda_available

    if not cuda_available():
        pytest.skip("no CUDA GPU")
    if kind == "ir":
        argv = [_write(tmp_path, "m.mlir"), "--weight", "v=random"]
    else:
        onnx.save(mlp(2, [8, 16, 4]), tmp_path / "mlp.onnx")
        argv = [str(tmp_path / "mlp.onnx")]
    status, out, err = _run([*argv, "--device", "cuda", "--check", "--runs", "3"], capsys)
    assert status == 0, err
    assert "on cuda" in out and "check: ok" in out


def test_check_errors_are_relative_to_the_outputs_scale():
    """A ReLU's zero outputs must not turn a 1e-7 difference into a huge per-element
    ratio; a shape mismatch is an infinite error, not a crash."""
    from tmlir.tools.tm_run import _errors

    want = np.array([0.0, 2.0, 4.0], np.float32)
    got = np.array([1e-7, 2.0, 4.0], np.float32)
    worst, relative = _errors(got, want)
    assert worst == pytest.approx(1e-7, rel=1e-3) and relative == pytest.approx(2.5e-8, rel=1e-3)
    assert _errors(got[:2], want) == (float("inf"), float("inf"))
    assert _errors(np.array([np.inf, np.nan]), np.array([np.inf, np.nan])) == (0.0, 0.0)
