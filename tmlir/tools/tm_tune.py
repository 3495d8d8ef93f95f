"""``tm-tune``: tune the kernels of an ONNX model and keep the winners as tuning records.

    tm-tune model.onnx --dry-run                 # compile + ptxas-filter the whole space
    tm-tune model.onnx --dry-run --json report.json
    tm-tune model.onnx                           # on a GPU: time, write the records
    tm-tune model.onnx --scheduler tcp://host:8786   # compile on a Dask cluster
    tm-tune model.onnx --precision fp16 --dry-run    # a float32 model's matmuls on tensor cores

Every tunable kernel of the model (a matmul on SIMT, or on tensor cores for f16/bf16
operands from sm_80; an implicit-GEMM convolution), one per signature, has its whole
schedule space compiled for ``--arch`` (no GPU needed) and filtered on
``ptxas -v``: no spills, no local memory, occupancy at least ``--min-occupancy``. A dry
run stops there and reports, per kernel and in total, the candidates kept and rejected
(by reason), the wall time and the candidates compiled per second. Otherwise the kept
candidates are checked against the default candidate's output and timed on GPU 0, and
each kernel's fastest is written to the records file (``--records``, default
``$TMLIR_TUNING_RECORDS`` or the cache directory), where later compiles for that device
find it (``lower-to-cuda{target-device=...}``; see docs/tuning.md).

Errors are one line, ``tm-tune: error: ...``: exit status 2 for a bad input (a missing
or unreadable model, a bad option), 1 when the work fails (no GPU, a compile error).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from tmlir.backends.ptx import SUPPORTED_ARCHS
from tmlir.tools.cli import ToolParser, one_line_failures, positive_int


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got '{text}'") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {value}")
    return value


def _input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    name, sep, dims = text.partition("=")
    try:
        shape = tuple(int(d) for d in dims.split(","))
    except ValueError:
        shape = ()
    if not sep or not name or not shape or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=D1,D2,... with positive dims, got '{text}'")
    return name, shape


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(prog="tm-tune", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="the ONNX model")
    parser.add_argument("--dry-run", action="store_true",
                        help="compile and filter only (no GPU needed), write no records")
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE")
    parser.add_argument("--records", metavar="FILE",
                        help="tuning records file (default $TMLIR_TUNING_RECORDS, else the "
                             "cache directory's tuning_records.jsonl)")
    parser.add_argument("--arch", choices=SUPPORTED_ARCHS, default=None,
                        help="compile for this arch (default: the GPU's, else sm_90)")
    parser.add_argument("--device-name", default=None,
                        help="file the records under this device name (default: the GPU's)")
    parser.add_argument("--min-occupancy", type=_fraction, default=None,
                        help="reject candidates below this occupancy (default 0.125)")
    parser.add_argument("--jobs", type=positive_int, default=None,
                        help="compiler processes (default: CPU count)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="compile on the Dask cluster at ADDRESS instead")
    parser.add_argument("--input-shape", type=_input_shape, action="append", default=[],
                        metavar="NAME=D1,D2,...", help="fix a dynamic input's shape")
    parser.add_argument("--no-fusion", action="store_true",
                        help="tune the kernels of the unfused model")
    parser.add_argument("--precision", choices=("fp32", "fp16", "bf16", "tf32"), default="fp32",
                        help="tune the kernels of a compile at this precision: fp16/bf16/tf32 give "
                             "a float32 model's matmuls tensor cores (lower-to-cuda's option)")
    parser.add_argument("--limit", type=positive_int, default=None,
                        help="only the LIMIT candidates of each space the latency model estimates "
                             "fastest on the target GPU (and the default)")
    parser.add_argument("--warmup", type=positive_int, default=3, help="runs before timing")
    parser.add_argument("--repeat", type=positive_int, default=20,
                        help="timed runs per candidate (the median counts)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or progress lines")
    return parser


def print_report(report) -> None:
    rows = [(str(i), str(k.occurrences), str(k.candidates), str(k.kept),
             ", ".join(f"{n} {why}" for why, n in sorted(k.rejected.items())) or "-",
             k.signature) for i, k in enumerate(report.kernels)]
    header = ("#", "ops", "candidates", "kept", "rejected", "signature")
    widths = [max(len(h), *(len(r[c]) for r in rows)) if rows else len(h)
              for c, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header[:-1], widths)) + "  " + header[-1])
    for r in rows:
        print("  ".join(v.rjust(w) for v, w in zip(r[:-1], widths)) + "  " + r[-1])
    rejected = ", ".join(f"{n} {why}" for why, n in report.rejected.items()) or "none"
    print(f"{len(report.kernels)} unique kernels for "
          f"{sum(k.occurrences for k in report.kernels)} ops; {report.candidates} candidates, "
          f"{report.kept} kept, rejected: {rejected}")
    print(f"compiled for {report.arch} in {report.compile_seconds:.1f} s "
          f"({report.compiled_per_second:.1f} candidates/s); wall time {report.wall_seconds:.1f} s")
    for k in report.kernels:
        if k.best is not None:
            speedup = f", {k.default_seconds / k.best_seconds:.2f}x the default" \
                if k.default_seconds else ""
            print(f"  {k.signature}: {k.best_seconds * 1e6:.1f} us{speedup}")
    if report.records:
        print(f"records: {report.records}")


@one_line_failures("tm-tune")
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tmlir.frontends.onnx_common import FrontendError
    from tmlir.tuning.compile import MIN_OCCUPANCY
    from tmlir.tuning.records import TuningTarget
    from tmlir.tuning.tuner import tune_model

    def fail(message: str, status: int) -> int:
        print(f"tm-tune: error: {message}", file=sys.stderr)
        return status

    if not Path(args.model).is_file():
        return fail(f"no such model file: {args.model}", 2)
    if args.json and not Path(args.json).resolve().parent.is_dir():
        return fail(f"--json {args.json}: no such directory", 2)
    if args.dry_run:
        target = TuningTarget(args.device_name or "", args.arch or "sm_90")
    else:
        from tmlir.backends.cuda_runtime import CudaRuntimeError

        try:
            gpu = TuningTarget.current()
        except CudaRuntimeError as exc:
            return fail(f"tuning times kernels on a GPU and found none ({exc}); "
                        "use --dry-run to compile and filter only", 1)
        if args.arch and args.arch != gpu.arch:
            return fail(f"--arch {args.arch} is not the GPU's ({gpu.arch})", 2)
        target = TuningTarget(args.device_name or gpu.device_name, gpu.arch)
    executor, client = None, None
    if args.scheduler:
        try:
            from distributed import Client

            client = Client(args.scheduler, timeout="10s")
        except (ImportError, OSError) as exc:
            return fail(f"--scheduler {args.scheduler}: {exc}", 2)
        executor = client.get_executor()
    try:
        report = tune_model(
            args.model, target, dry_run=args.dry_run, records=args.records, executor=executor,
            jobs=args.jobs, input_shapes=dict(args.input_shape) or None,
            min_occupancy=MIN_OCCUPANCY if args.min_occupancy is None else args.min_occupancy,
            fusion=not args.no_fusion, warmup=args.warmup, repeats=args.repeat, limit=args.limit,
            progress=not args.quiet, precision=args.precision)
    except (FrontendError, ValueError) as exc:  # a model that cannot be imported or built
        return fail(str(exc).splitlines()[0], 2)
    except (RuntimeError, OSError) as exc:  # CudaCompileError, CudaRuntimeError, I/O
        return fail(str(exc).splitlines()[0], 1)
    finally:
        if client is not None:
            client.close()
    print_report(report)
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(report.to_json(), indent=2) + "\n")
        except OSError as exc:
            return fail(f"--json {args.json}: {exc.strerror}", 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
