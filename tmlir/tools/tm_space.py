"""``tm-space``: list a schedule template's hardware-centric space for a problem.

    tm-space matmul --m 1024 --n 1024 --k 1024            # a readable table
    tm-space matmul --m 257 --n 131 --k 75 --batch 4 --json
    tm-space matmul --m 1024 --n 1024 --k 1024 --pin 17    # candidate 17, to paste
    tm-space matmul_tc --m 4096 --n 4096 --k 4096 --dtype bf16  # the tensor-core template
    tm-space gemv --m 1 --n 4096 --k 4096 --trans-b        # the small-M template, B stored N x K

The space is the one of the target (``--arch``, default sm_90: the SIMT template's
cp.async pipeline from sm_80 and the shared memory a block may opt in to), and every valid
candidate is compiled for it with ``ptxas -v`` — no GPU needed — and reported with its
parameters, ``registers``, ``spill_bytes`` and ``shared_bytes`` (static and dynamic); the
candidate the compiler uses without tuning has ``"default": true``. ``--json`` prints one
JSON object per line per candidate.
``--pin INDEX`` compiles nothing: it prints candidate INDEX as the ``schedule`` attribute
that pins it on a ``graph.matmul`` in IR and as the ``matmul`` option of
``convert-graph-to-tm`` (see docs/schedules.md). ``matmul_tc`` is the tensor-core template
(f16 or bf16 operands, ``--dtype``; batches and ``--trans-b`` too, not ``--trans-a``): the
template a ``graph.matmul`` on f16/bf16 operands takes from sm_80; its ``--pin`` prints the
attribute only (there is no pass option for it). ``gemv`` is the small-M template
(``matmul_gemv``: at most 16 rows, an unbatched B; ``--trans-b`` for B stored ``N x K``),
the one a ``graph.matmul`` of so few rows takes; its ``--pin`` prints the attribute and the
``gemv`` option. User errors are one line, ``tm-space: error: ...``, and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from tmlir.backends.ptx import SUPPORTED_ARCHS, CudaCompileError
from tmlir.schedules.matmul_gemv import MatmulGemvParams
from tmlir.schedules.matmul_gemv import takes as gemv_takes
from tmlir.schedules.matmul_simt import MatmulProblem
from tmlir.schedules.pinned import option_text, schedule_attr_text
from tmlir.tools.cli import ToolParser, one_line_failures, positive_int
from tmlir.tuning.space import TunableKernel

TEMPLATES = ("matmul", "matmul_tc", "gemv")
#: The template of each choice of the command line, and the pass option that changes its
#: defaults (None: none).
TEMPLATE_NAMES = {"matmul": "matmul_simt", "matmul_tc": "matmul_tc", "gemv": "matmul_gemv"}
OPTION_NAMES = {"matmul_simt": "matmul", "matmul_gemv": "gemv"}


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(prog="tm-space", description=__doc__.split("\n\n")[0],
                        status=1)
    parser.add_argument("template", choices=TEMPLATES, help="schedule template")
    parser.add_argument("--m", type=positive_int, required=True, help="rows of C")
    parser.add_argument("--n", type=positive_int, required=True, help="columns of C")
    parser.add_argument("--k", type=positive_int, required=True, help="contraction length")
    parser.add_argument("--batch", type=positive_int, default=1, help="batch size (default 1)")
    parser.add_argument("--trans-a", action="store_true", help="A is stored k x m")
    parser.add_argument("--trans-b", action="store_true", help="B is stored n x k")
    parser.add_argument("--arch", default="sm_90", choices=SUPPORTED_ARCHS,
                        help="ptxas target (default sm_90)")
    parser.add_argument("--jobs", type=positive_int, default=None,
                        help="compiler processes (default: CPU count)")
    parser.add_argument("--limit", type=positive_int, default=None,
                        help="compile only the first LIMIT candidates (and the default)")
    parser.add_argument("--dtype", default="f16", choices=("f16", "bf16"),
                        help="operand type of matmul_tc (default f16)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--pin", type=int, default=None, metavar="INDEX",
                        help="print candidate INDEX as the IR attribute and the pass option "
                             "that pin it (compiles nothing)")
    return parser


def problem_of(args: argparse.Namespace) -> MatmulProblem:
    m, n, k, batch = args.m, args.n, args.k, args.batch
    lead = (batch,) if batch > 1 else ()
    lhs = (*lead, k, m) if args.trans_a else (*lead, m, k)
    rhs = (*lead, n, k) if args.trans_b else (*lead, k, n)
    return MatmulProblem(lhs, rhs, (*lead, m, n), transpose_lhs=args.trans_a,
                         transpose_rhs=args.trans_b)


def tunable(args: argparse.Namespace) -> TunableKernel:
    """The template and problem the arguments name; NoTemplate (a ValueError) for a
    problem the tensor-core template does not cover."""
    from xdsl.dialects.builtin import BFloat16Type, Float16Type

    from tmlir.schedules.matmul_tc import check_problem

    problem = problem_of(args)
    if args.template == "matmul":
        return TunableKernel("matmul_simt", problem, arch=args.arch)
    if args.template == "gemv":
        if not gemv_takes(problem):
            raise ValueError("gemv takes at most 16 rows of an unbatched B (use the matmul template)")
        return TunableKernel("matmul_gemv", problem, arch=args.arch)
    check_problem(problem, Float16Type() if args.dtype == "f16" else BFloat16Type())
    return TunableKernel("matmul_tc", problem, args.dtype, args.arch)


def pin_text(args: argparse.Namespace) -> str:
    """Candidate ``args.pin`` as the attribute (and, for the SIMT and small-M templates,
    the option) that pins it; ValueError for an index outside the space."""
    kernel = tunable(args)
    candidates = kernel.candidates()
    if not 0 <= args.pin < len(candidates):
        raise ValueError(f"--pin {args.pin}: the space has candidates 0 to {len(candidates) - 1}")
    params = candidates[args.pin].params
    option = OPTION_NAMES.get(kernel.template)
    if option is None:
        return schedule_attr_text(params)
    return (f"{schedule_attr_text(params)}\n"
            f"-p 'convert-graph-to-tm{{{option}=\"{option_text(params)}\"}}'")  # type: ignore[arg-type]


def rows(args: argparse.Namespace) -> list[dict]:
    """Every valid candidate (or the first --limit and the default), compiled with
    ``ptxas -v`` over --jobs processes."""
    from tmlir.tuning import ptxas_report

    kernel = tunable(args)
    candidates = kernel.candidates()
    if args.limit is not None:
        candidates = [c for c in candidates if c.index < args.limit or c.default]
    stats = ptxas_report(kernel, candidates, args.arch, args.jobs)
    out = []
    for c in candidates:
        s = stats[c.index]
        described = c.params.describe(kernel.gemm) if isinstance(c.params, MatmulGemvParams) \
            else c.params.describe()
        out.append({
            "index": c.index, "template": kernel.template, **described,
            "registers": s.registers, "spill_bytes": s.spill_bytes,
            "shared_bytes": s.shared_bytes, "default": c.default,
        })
    return out


COLUMNS = ("index", "block_m", "block_n", "block_k", "stages", "split_k", "threads", "block_warps", "warp_outer",
           "lanes", "thread_inner", "registers", "spill_bytes", "shared_bytes", "default")
TC_COLUMNS = ("index", "block_m", "block_n", "block_k", "warps", "stages", "split_k", "threads", "registers",
              "spill_bytes", "shared_bytes", "default")
GEMV_COLUMNS = ("index", "layout", "warps", "vector", "unroll", "block_n", "block_k", "k_slices", "k_steps",
                "threads", "registers", "spill_bytes", "shared_bytes", "default")
COLUMNS_OF = {"matmul_simt": COLUMNS, "matmul_tc": TC_COLUMNS, "matmul_gemv": GEMV_COLUMNS}


def print_table(table: list[dict], args: argparse.Namespace) -> None:
    shape = f"{args.batch} x " if args.batch > 1 else ""
    listed = "" if args.limit is None else " listed"
    template = TEMPLATE_NAMES[args.template]
    columns = COLUMNS_OF[template]
    dtype = f" ({args.dtype})" if args.template == "matmul_tc" else ""
    print(f"{template} space for {shape}{args.m} x {args.n} x {args.k}{dtype} on {args.arch}: "
          f"{len(table)}{listed} candidates, {sum(r['spill_bytes'] > 0 for r in table)} spill")
    if not table:
        return
    widths = {c: max(len(c), *(len(str(r[c])) for r in table)) for c in columns}
    print("  ".join(c.rjust(widths[c]) for c in columns))
    for r in table:
        cells = {**r, "default": "*" if r["default"] else ""}
        print("  ".join(str(cells[c]).rjust(widths[c]) for c in columns))


@one_line_failures("tm-space")
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.pin is not None:
        try:
            print(pin_text(args))
        except ValueError as exc:
            print(f"tm-space: error: {exc}", file=sys.stderr)
            return 1
        return 0
    try:
        table = rows(args)
    except CudaCompileError as exc:
        print(f"tm-space: error: {exc.summary}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a problem the template does not cover (NoTemplate), bad flags
        print(f"tm-space: error: {exc}", file=sys.stderr)
        return 1
    try:
        if args.json:
            for r in table:
                print(json.dumps(r))
        else:
            print_table(table, args)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `tm-space ... | head`
        sys.stdout = None  # type: ignore[assignment]  # nothing more can be written
    return 0


if __name__ == "__main__":
    sys.exit(main())
