"""``tm-run``: compile an IR file or an ONNX model and run it, printing what it computes.

    tm-run mlp.mlir                                # graph-level IR: lower-to-cuda, run on emu
    tm-run mlp.mlir --weights random --seed 1      # data for the weights the text only names
    tm-run mlp.mlir -p 'my-pass,lower-to-cuda' --check   # did my pass keep the meaning?
    tm-run model.onnx --device cuda --runs 20 --check    # against onnxruntime
    tm-run model.onnx --precision fp16 --check --rtol 1e-2   # matmuls on tensor cores, f16 operands
    tm-run model.onnx --precision tf32 --check --rtol 1e-2   # matmuls on tensor cores, TF32 mma

In: a ``.mlir`` file (graph level, lowered by ``-p`` or ``lower-to-cuda``; or already at
the gpu level) or an ``.onnx`` model; inputs from ``--input NAME=FILE.npy`` and
``--inputs FILE.npz``, random (seeded by ``--seed``) for the rest; for IR, the data of
weights the text names but does not hold from ``--weights FILE.npz``, ``--weight
NAME=zeros|ones|random|FILE.npy`` and ``--weights random|zeros|ones`` for every one still
missing. Out: each output (name, dtype, shape, first values, min / max / mean), the
compile time and the median run time of ``--runs``; ``--save FILE.npz`` keeps the
outputs. ``--check`` compares the outputs with a reference -- onnxruntime for a model, the
same IR through ``--check-against`` (default ``lower-to-cuda{fusion=false}``) or the IR of
``--check-against-file`` for IR -- and exits 1 when one differs beyond ``--rtol`` /
``--atol``. Every user error is one ``tm-run: error:`` line.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from tmlir.tools.cli import ToolParser, one_line_failures, positive_int

REFERENCE_PIPELINE = "lower-to-cuda{fusion=false}"
SHOWN_VALUES = 6


class RunError(ValueError):
    """A user error of tm-run: one line."""


Runnable = Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]


def _parser() -> ToolParser:
    p = ToolParser(prog="tm-run", status=1, description="Compile an IR file or an ONNX model, "
                   "run it on emu or cuda, print its outputs, and optionally check them.")
    p.add_argument("file", help="a .mlir file (graph or gpu level) or an .onnx model")
    p.add_argument("-p", "--passes", default=None, metavar="PIPELINE",
                   help="pass pipeline for IR (default: lower-to-cuda for graph-level IR)")
    p.add_argument("--device", choices=("emu", "cuda"), default="emu")
    p.add_argument("--precision", choices=("fp32", "fp16", "bf16", "tf32"), default="fp32",
                   help="ONNX models: fp16/bf16 run the float32 matmuls that fit the tensor-core "
                        "template with half-precision operands, tf32 with TF32 mma on float32 "
                        "operands (default fp32); for IR use "
                        "-p 'lower-to-cuda{precision=fp16}'")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    p.add_argument("--inputs", default=None, metavar="FILE.npz")
    p.add_argument("--weight", action="append", default=[], metavar="NAME=zeros|ones|random|FILE.npy")
    p.add_argument("--weights", action="append", default=[], metavar="FILE.npz|random|zeros|ones",
                   help="weights by name from a .npz, or a fill for every weight not given")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs and weights")
    p.add_argument("--runs", type=positive_int, default=1, help="runs to time (the median is shown)")
    p.add_argument("--save", default=None, metavar="FILE.npz", help="save the outputs")
    p.add_argument("--check", action="store_true", help="compare the outputs with a reference")
    p.add_argument("--check-against", default=None, metavar="PIPELINE",
                   help=f"reference pipeline for IR (default: {REFERENCE_PIPELINE})")
    p.add_argument("--check-against-file", default=None, metavar="FILE.mlir",
                   help="reference IR file (lowered with --check-against)")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    return p


def _load(path: str, what: str) -> np.ndarray | dict[str, np.ndarray]:
    """A .npy array or a .npz archive's arrays, or a RunError naming `what`."""
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise RunError(f"{what}: cannot open '{path}'") from None
    except (OSError, ValueError) as exc:
        raise RunError(f"{what}: cannot read '{path}' as .npy/.npz: {' '.join(str(exc).split())}") from None
    if isinstance(data, np.ndarray):
        return data
    with data:
        return {name: data[name] for name in data.files}


def _assignment(text: str, flag: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise RunError(f"{flag} '{text}': expected NAME=VALUE")
    return name, value


def _archive(path: str, flag: str) -> dict[str, np.ndarray]:
    data = _load(path, flag)
    if not isinstance(data, dict):
        raise RunError(f"{flag} '{path}': expected a .npz archive of named arrays, got one array")
    return data


def _given_inputs(args) -> dict[str, np.ndarray]:
    feed = _archive(args.inputs, "--inputs") if args.inputs else {}
    for text in args.input:
        name, path = _assignment(text, "--input")
        array = _load(path, f"--input {name}")
        if isinstance(array, dict):
            raise RunError(f"--input {name}: '{path}' is a .npz archive; use --inputs for it")
        feed[name] = array
    return feed


def _given_weights(args) -> tuple[dict[str, object], str | None]:
    """Weights by name (arrays or fill names) and the fill for all other weights."""
    from tmlir.runtime.ir_program import FILLS

    given: dict[str, object] = {}
    fill = None
    for value in args.weights:
        if value in FILLS:
            fill = value
        else:
            given.update(_archive(value, "--weights"))
    for text in args.weight:
        name, value = _assignment(text, "--weight")
        given[name] = value if value in FILLS else _load(value, f"--weight {name}")
        if isinstance(given[name], dict):
            raise RunError(f"--weight {name}: '{value}' is a .npz archive; use --weights for it")
    return given, fill


def _feed(specs: Mapping[str, tuple[tuple, str]], given: Mapping[str, np.ndarray], seed: int
          ) -> dict[str, np.ndarray]:
    """`given` inputs, and random data (by name and seed) for the inputs not given."""
    from tmlir.runtime.ir_program import fill_array

    unknown = sorted(set(given) - set(specs))
    if unknown:
        raise RunError(f"unknown input '{unknown[0]}'; the program has {sorted(specs)}")
    return {name: given[name] if name in given else fill_array("random", shape, dtype, seed, name)
            for name, (shape, dtype) in specs.items()}


def _check_device(device: str) -> None:
    if device == "cuda":
        from tmlir.backends.cuda_runtime import CudaRuntimeError, device_name

        try:
            device_name()
        except CudaRuntimeError as exc:
            raise RunError(f"--device cuda: {exc}") from None


def _compile_ir(path: str, passes: str | None, weights: tuple[dict, str | None], seed: int, device: str
                ) -> tuple[Runnable, dict[str, tuple[tuple, str]]]:
    """The IR file compiled for `device`: its runner and its inputs' specs."""
    from tmlir.runtime.ir_program import (
        ProgramRunner,
        bind_weights,
        compile_ir,
        module_weights,
        parse_ir,
        parse_pipeline,
    )

    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as exc:
        raise RunError(f"cannot open '{path}': {exc.strerror or exc}") from None
    pipeline = parse_pipeline(passes) if passes else None  # a bad pipeline before any weight
    module = parse_ir(text, path)
    specs = module_weights(module)
    given, fill = weights
    unknown = sorted(n for n in given if n not in specs)
    if unknown:
        raise RunError(f"--weight {unknown[0]}: '{path}' names no such weight; its weights: "
                       f"{sorted(specs) or 'none'}")
    table = bind_weights(specs, given, fill, seed)
    program, table = compile_ir(module, table, pipeline)
    runner = ProgramRunner(program, table, device)
    return runner.run, {b.source: (b.shape, b.dtype) for b in runner.inputs}


def _compile_onnx(path: str, device: str, precision: str = "fp32"
                  ) -> tuple[Runnable, dict[str, tuple[tuple, str]]]:
    from tmlir import dtypes
    from tmlir.runtime.session import InferenceSession

    if not os.path.isfile(path):
        raise RunError(f"cannot open '{path}'")
    session = InferenceSession(path, device=device, precision=precision)
    specs = {}
    for info in session.get_inputs():
        dtype = next((d.name for d in dtypes.DTYPES if d.onnx_type == info.type), "float32")
        if not all(isinstance(d, int) and d >= 0 for d in info.shape):
            raise RunError(f"input '{info.name}' has the dynamic shape {list(info.shape)}: give it "
                           f"with --input {info.name}=FILE.npy or --inputs FILE.npz")
        specs[info.name] = (tuple(info.shape), dtype)
    names = [o.name for o in session.get_outputs()]

    def run(feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(names, session.run(None, dict(feed))))

    return run, specs


def _onnxruntime(path: str) -> Runnable:
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feed: dict(zip(names, session.run(None, dict(feed))))


def _summary(name: str, array: np.ndarray) -> str:
    flat = array.reshape(-1)
    shown = ", ".join(_number(v) for v in flat[:SHOWN_VALUES]) + (", ..." if flat.size > SHOWN_VALUES else "")
    line = f"{name}: {array.dtype} {list(array.shape)} [{shown}]"
    if flat.size and array.dtype.kind in "biuf":
        wide = flat.astype(np.float64)
        line += f"  min {_number(wide.min())}  max {_number(wide.max())}  mean {_number(wide.mean())}"
    return line


def _number(value: object) -> str:
    return f"{value:.5g}" if isinstance(value, float | np.floating) else str(value)


def _errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    """Max abs error of `got` against `want` and the same relative to the largest finite
    |want| (NaN against NaN, and equal infinities, count as equal). Relative to the scale,
    not per element: an element of 0 (after a ReLU) makes a per-element ratio meaningless."""
    if got.shape != want.shape:
        return float("inf"), float("inf")
    a, b = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf
        diff = np.abs(a - b)
    both_nan = np.isnan(a) & np.isnan(b)
    diff[both_nan | (a == b)] = 0.0
    finite = np.abs(b[np.isfinite(b)])
    scale = float(finite.max(initial=0.0))
    worst = float(diff.max(initial=0.0))
    return worst, (worst / scale if scale > 0 else (0.0 if worst == 0 else float("inf")))


def _check(outputs: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray], what: str,
           rtol: float, atol: float) -> bool:
    """Print each output's errors against `reference` (by position); whether all agree."""
    if len(outputs) != len(reference):
        raise RunError(f"check: {len(outputs)} outputs, but {what} gives {len(reference)}")
    bad = []
    for (name, got), want in zip(outputs.items(), reference.values()):
        abs_err, rel_err = _errors(got, want)
        ok = got.shape == want.shape and bool(np.allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True))
        shape = "" if got.shape == want.shape else f" (shape {list(got.shape)} vs {list(want.shape)})"
        print(f"check {name}: max abs err {abs_err:.3g}, max rel err {rel_err:.3g}{shape}: "
              f"{'ok' if ok else 'MISMATCH'}")
        if not ok:
            bad.append(f"{name}: max abs err {abs_err:.3g}")
    if bad:
        print(f"tm-run: check failed: {len(bad)} of {len(outputs)} outputs differ from {what} beyond "
              f"rtol {rtol:g}, atol {atol:g} ({'; '.join(bad)})", file=sys.stderr)
        return False
    print(f"check: ok ({_plural(len(outputs), 'output')} within rtol {rtol:g}, atol {atol:g} of {what})")
    return True


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _run(args) -> int:
    from tmlir.runtime.ir_program import ProgramError
    from tmlir.runtime.session import SessionError

    is_onnx = args.file.endswith(".onnx")
    if is_onnx and (args.passes or args.weight or args.weights or args.check_against
                    or args.check_against_file):
        raise RunError("-p, --weight(s) and --check-against(-file) apply to IR files; an ONNX "
                       "model holds its weights and is checked against onnxruntime")
    if not is_onnx and args.precision != "fp32":
        raise RunError(f"--precision applies to ONNX models; for IR give the pipeline "
                       f"-p 'lower-to-cuda{{precision={args.precision}}}'")
    _check_device(args.device)
    weights = _given_weights(args) if not is_onnx else ({}, None)
    inputs = _given_inputs(args)
    start = time.perf_counter()
    try:
        if is_onnx:
            run, specs = _compile_onnx(args.file, args.device, args.precision)
        else:
            run, specs = _compile_ir(args.file, args.passes, weights, args.seed, args.device)
    except (ProgramError, SessionError) as exc:
        raise RunError(str(exc)) from None
    compile_s = time.perf_counter() - start
    feed = _feed(specs, inputs, args.seed)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        try:
            outputs = run(feed)
        except (ProgramError, SessionError) as exc:
            raise RunError(str(exc)) from None
        times.append(time.perf_counter() - start)
    for name, array in outputs.items():
        print(_summary(name, array))
    print(f"compile {compile_s:.3g} s, run {statistics.median(times) * 1e3:.3g} ms "
          f"(median of {args.runs} on {args.device})")
    if args.save:
        try:
            np.savez(args.save, **outputs)
        except OSError as exc:
            raise RunError(f"--save: cannot write '{args.save}': {exc.strerror or exc}") from None
    if not args.check:
        return 0
    if is_onnx:
        reference, what = _onnxruntime(args.file), "onnxruntime"
    else:
        pipeline = args.check_against or REFERENCE_PIPELINE
        source = args.check_against_file or args.file
        what = f"{source} through {pipeline}"
        try:
            reference = _compile_ir(source, pipeline, weights, args.seed, args.device)[0]
        except ProgramError as exc:
            raise RunError(f"check: {exc}") from None
    try:
        expected = reference(feed)
    except (ProgramError, SessionError) as exc:
        raise RunError(f"check: {what}: {exc}") from None
    return 0 if _check(outputs, expected, what, args.rtol, args.atol) else 1


@one_line_failures("tm-run")
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tm-run`` console script."""
    from tmlir.backends.cache import CacheError
    from tmlir.backends.cuda_runtime import CudaRuntimeError
    from tmlir.backends.emu import EmuError
    from tmlir.runtime.resources import ResourceError

    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except (ValueError, CacheError, CudaRuntimeError, EmuError, ResourceError) as exc:
        # RunError, the ONNX frontend's errors, a cache, a GPU or memory that fails us
        print(f"tm-run: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
